"""The API under many distinct large requests: response time and server memory stay bounded.
Run: python benchmarks/bench_server.py [--write docs/performance.md]

Posts 100 distinct plan requests (a different token budget each, so nothing is served from the
cache twice; top 100 layouts and 12 GPU counts, so each answer is large) to the app in-process,
and reports the slowest request, the resident memory before and after, and the result cache's
bytes against its bound (gpuplan.web.service.CACHE_BYTES).
"""

from __future__ import annotations

import argparse
import time

from results import publish


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--write")
    args = parser.parse_args()
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app, service

    client = TestClient(create_app())
    warm = {"model": "llama-3.1-70b", "tokens": "15T", "gpu": "h100", "gpus": "8-16384", "top": 100}
    client.post("/api/plan", json=warm)
    before, times, sizes = rss_mib(), [], []
    for i in range(args.requests):
        body = warm | {"tokens": f"{10 + i / 10:.1f}T"}
        start = time.perf_counter()
        response = client.post("/api/plan", json=body)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text
        sizes.append(len(response.content))
    after = rss_mib()
    rows = [
        ("distinct plan requests (70B, 12 GPU counts, top 100)", f"{args.requests}", "-"),
        ("response size, mean", f"{sum(sizes) / len(sizes) / 1024:,.0f} KiB", "<= 8 MiB"),
        ("slowest request", f"{max(times):.2f} s", "< 10 s"),
        ("median request", f"{sorted(times)[len(times) // 2]:.2f} s", "-"),
        ("resident memory before -> after", f"{before:,.0f} -> {after:,.0f} MiB", "bounded"),
        ("result cache", f"{service._CACHE.total_bytes / 2**20:,.1f} MiB in {len(service._CACHE._items)} entries",
         f"<= {service.CACHE_BYTES >> 20} MiB, <= {service.CACHE_SIZE} entries"),
    ]
    publish(rows, args.write, heading="API under 100 distinct large requests (`python benchmarks/bench_server.py`)")


if __name__ == "__main__":
    main()
