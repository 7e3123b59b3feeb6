"""Start-up and single-estimate latency. Run: python benchmarks/bench_startup.py [--write docs/performance.md]

Measures, on this machine:
  * `python -c "import gpuplan"` wall time (subprocess, median of N)
  * `gpuplan train ... --json` cold start (subprocess, median of N)
  * one training estimate in-process (catalog cached), median over many calls
Goals: CLI cold start < 0.5 s, one estimate < 50 ms. (Issue #2 set 0.3 s and 1 ms for an
estimate that did arithmetic only; since issue 13 every training estimate stands on a planned
layout: numpy's import, ~110 ms here, and one layout search, ~15 ms.) Issue 39's whole-command
goals, as ratios to `python -c pass` and to llm-analysis's CLI, are measured by bench_cli.py.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time

from results import (
    publish,  # benchmarks/results.py; a script's own folder is on sys.path
)


def wall(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_modules_imported() -> list[str]:
    code = ("import sys, gpuplan.cli; "
            "print(','.join(m for m in ('torch','transformers','matplotlib','fastapi','pydantic','yaml') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return [m for m in out.strip().split(",") if m]


def estimate_latency(calls: int) -> float:
    from gpuplan import TrainingInputs, estimate_training

    inputs = TrainingInputs(model="llama-3.1-70b", tokens=15e12, gpu="h100", gpus=2048, mfu=0.4)
    estimate_training(inputs)  # warm the catalog cache
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        estimate_training(inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--write", help="append the result table to this Markdown file")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "gpuplan.cli", "train", "--model", "llama-3.1-8b", "--tokens", "15T",
           "--gpu", "h100", "--gpus", "1024", "--json"]
    rows = [
        ("import gpuplan", f"{wall([sys.executable, '-c', 'import gpuplan'], args.repeats) * 1e3:.0f} ms", "-"),
        ("python -c pass (interpreter alone)", f"{wall([sys.executable, '-c', 'pass'], args.repeats) * 1e3:.0f} ms", "-"),
        ("gpuplan train ... --json (cold start)", f"{wall(cli, args.repeats) * 1e3:.0f} ms", "< 500 ms"),
        ("one training estimate incl. its layout search (in-process)",
         f"{estimate_latency(200) * 1e3:.1f} ms", "< 50 ms"),
        ("import numpy (part of the cold start)",
         f"{wall([sys.executable, '-c', 'import numpy'], args.repeats) * 1e3:.0f} ms", "-"),
        ("heavy modules after importing the CLI", ", ".join(heavy_modules_imported()) or "none", "none"),
    ]
    preface = (f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
               f"median of {args.repeats} runs")
    publish(rows, args.write, preface=preface)


if __name__ == "__main__":
    main()
