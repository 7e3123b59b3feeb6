"""The API under load. Run: python benchmarks/bench_server.py [--write docs/performance.md]

1. Many distinct large requests, in-process: 100 plan requests (a different token budget each, so
   nothing is served from the cache twice; top 100 layouts and 12 GPU counts, so each answer is
   large); the slowest request, the resident memory before and after, and the result cache's
   bytes against its bound (gpuplan.web.service.CACHE_BYTES).
2. Many clients at once, over HTTP (issue 40): `gpuplan serve` in a subprocess and 32 clients
   (asyncio, one kept-alive HTTP/1.1 connection each) sending 3 rounds of 500 requests: the page's
   default plan request (identical: the case of many people opening the page), then distinct
   plans (a different token budget each: every request an estimate). Per round: requests
   answered 200, turned away (503), any other status or connection error, and the latency
   p50 / p99 / max seen by the clients. Clients and server share this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time

from results import publish

DEFAULT_PLAN = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100-sxm", "gpus": "32-512"}
"""The plan request of the page's default form (web/static/index.html: model, tokens, GPU, the
'GPUs to try' range)."""


def rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def distinct_large(requests: int) -> list[tuple[str, str, str]]:
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app, service

    client = TestClient(create_app())
    warm = {"model": "llama-3.1-70b", "tokens": "15T", "gpu": "h100", "gpus": "8-16384", "top": 100}
    client.post("/api/plan", json=warm)
    before, times, sizes = rss_mib(), [], []
    for i in range(requests):
        body = warm | {"tokens": f"{10 + i / 10:.1f}T"}
        start = time.perf_counter()
        response = client.post("/api/plan", json=body)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, response.text
        sizes.append(len(response.content))
    after = rss_mib()
    return [
        ("distinct plan requests (70B, 12 GPU counts, top 100)", f"{requests}", "-"),
        ("response size, mean", f"{sum(sizes) / len(sizes) / 1024:,.0f} KiB", "<= 8 MiB"),
        ("slowest request", f"{max(times):.2f} s", "< 10 s"),
        ("median request", f"{sorted(times)[len(times) // 2]:.2f} s", "-"),
        ("resident memory before -> after", f"{before:,.0f} -> {after:,.0f} MiB", "bounded"),
        ("result cache", f"{service._CACHE.total_bytes / 2**20:,.1f} MiB in {len(service._CACHE._items)} entries",
         f"<= {service.CACHE_BYTES >> 20} MiB, <= {service.CACHE_SIZE} entries"),
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(port: int, log) -> subprocess.Popen:
    """`gpuplan serve` on ``port`` (PYTHONPATH is passed on: point it at another checkout to
    measure that code); returns once /api/health answers."""
    import httpx

    server = subprocess.Popen([sys.executable, "-m", "gpuplan", "serve", "--port", str(port)],
                              stdout=log, stderr=log, env=os.environ.copy())
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("gpuplan serve did not start")


async def post(reader, writer, port: int, path: str, payload: bytes) -> int:
    """One HTTP/1.1 POST on a kept-alive connection; its status (a minimal client: httpx spends
    ~2 ms of CPU per request, which on 2 shared cores would be measured as server latency)."""
    writer.write(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    await reader.readexactly(length)
    if b"connection: close" in head.lower():
        raise ConnectionResetError("the server closed the connection")
    return status


async def one_round(port: int, path: str, clients: int, total: int, body_of) -> dict[str, object]:
    """``total`` requests from ``clients`` workers, each on its own kept-alive connection."""
    import json

    latencies: list[float] = []
    statuses: dict[str, int] = {}
    issued = iter(range(total))

    async def worker() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in issued:
            payload = json.dumps(body_of(i)).encode()
            start = time.perf_counter()
            try:
                status = str(await post(reader, writer, port, path, payload))
            except (OSError, asyncio.IncompleteReadError) as exc:
                status = type(exc).__name__
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            latencies.append(time.perf_counter() - start)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    wall = time.perf_counter() - start
    latencies.sort()
    return {"statuses": statuses, "wall": wall, "p50": latencies[len(latencies) // 2],
            "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], "max": latencies[-1]}


def many_clients(clients: int, rounds: int, per_round: int) -> list[tuple[str, str, str]]:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        server = start_server(port, log)
        try:
            scenarios = [("default plan", lambda i: DEFAULT_PLAN),
                         ("distinct plans", lambda i: DEFAULT_PLAN | {"tokens": f"{1 + (i + 1) / 1e4:.4f}T"})]
            rows = []
            for label, body_of in scenarios:
                for r in range(rounds):
                    offset = r * per_round  # distinct plans stay distinct across rounds
                    got = asyncio.run(one_round(port, "/api/plan", clients, per_round, lambda i: body_of(i + offset)))
                    rows.append(_row(f"{label}, round {r + 1}", clients, per_round, got))
        finally:
            server.terminate()
            server.wait(10)
    return rows


def _row(label: str, clients: int, total: int, got: dict) -> tuple[str, str, str]:
    statuses = got["statuses"]
    ok, busy = statuses.get("200", 0), statuses.get("503", 0)
    other = {k: v for k, v in statuses.items() if k not in ("200", "503")}
    text = (f"{ok}/{total} answered, {busy} turned away (503){', other ' + str(other) if other else ''}; "
            f"p50 {got['p50']:.2f} s, p99 {got['p99']:.2f} s, max {got['max']:.2f} s ({got['wall']:.1f} s wall)")
    goal = "0% turned away; p99 < 1 s" if label.startswith("default") else "0% turned away"
    return (f"{clients} clients, {label}", text, goal)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=500)
    parser.add_argument("--only", choices=("distinct", "clients"))
    parser.add_argument("--write")
    args = parser.parse_args()
    if args.only != "clients":
        publish(distinct_large(args.requests), args.write,
                heading="API under 100 distinct large requests (`python benchmarks/bench_server.py`)")
    if args.only != "distinct":
        publish(many_clients(args.clients, args.rounds, args.per_round), args.write,
                heading="API with 32 clients at once (`python benchmarks/bench_server.py --only clients`)")


if __name__ == "__main__":
    main()
