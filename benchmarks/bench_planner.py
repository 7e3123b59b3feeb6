"""Planner speed: layouts evaluated per second on one core, and a full 405B / 16,384-GPU search.

    OMP_NUM_THREADS=1 python benchmarks/bench_planner.py [--write docs/performance.md]

Goals (issue #4): >= 1,000,000 layouts/s on one core; the 405B search on 16,384 GPUs in < 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from results import publish  # benchmarks/results.py; a script's own folder is on sys.path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write")
    args = parser.parse_args()
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.memory import MemorySettings, Overheads
    from gpuplan.core.step import StepSettings
    from gpuplan.core.topology import cluster_for
    from gpuplan.jobs.plan.estimate import plan_report
from gpuplan.jobs.plan.search import PlanInputs
    from gpuplan.planner.search import SearchSpace, evaluate_layouts

    spec, cluster = load_model("llama-3.1-70b"), cluster_for(load_accelerator("h100"))
    space = SearchSpace(gpu_counts=tuple(2**k for k in range(3, 15)), global_batch=1024, seq_len=8192)
    memory = MemorySettings(seq_len=8192, recipe="megatron", implementation="megatron")
    rates, count = [], 0
    for _ in range(7):
        start = time.perf_counter()
        table = evaluate_layouts(spec, cluster, space, memory, StepSettings(), Overheads())
        rates.append(len(table) / (time.perf_counter() - start))
        count = len(table)
    full = []
    for _ in range(5):
        start = time.perf_counter()
        plan_report(PlanInputs(tokens=15.6e12, model="llama-3.1-405b", gpu="h100", gpu_counts=(16384,),
                               global_batch_tokens=16e6, seq_len=8192))
        full.append(time.perf_counter() - start)
    rows = [(f"layouts evaluated per second (70B, 12 GPU counts, {count:,} valid layouts)",
             f"{statistics.median(rates):,.0f}", ">= 1,000,000"),
            ("full search + report, 405B on 16,384 H100", f"{statistics.median(full) * 1e3:.0f} ms", "< 2 s")]
    publish(rows, args.write, "Planner (`OMP_NUM_THREADS=1 python benchmarks/bench_planner.py`)")


if __name__ == "__main__":
    main()
