"""Planner speed (issue 13, item 10), each figure also as a ratio to a fixed reference workload
(numpy sorting 10^6 seeded float64s), so a slower or faster machine compares.

    OMP_NUM_THREADS=1 python benchmarks/bench_planner.py [--write docs/performance.md]

Goals: a whole `gpuplan plan` over the default GPU range (8-16,384, 12 counts) in-process in
< 0.2 s; the complete (exhaustive: every layout timed in every recompute mode) space for a 70B
on 512-4,096 H100 in < 0.5 s; >= 1,000,000 layouts evaluated per second on one core.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from results import median_seconds, publish  # noqa: E402  (benchmarks/results.py, on sys.path)


def reference_seconds() -> float:
    """The fixed reference workload: np.sort of 10^6 float64 (seed 0), median of 21."""
    import numpy as np

    values = np.random.default_rng(0).random(1_000_000)
    return median_seconds(lambda: np.sort(values), 21)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write")
    args = parser.parse_args()
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for, max_tp
    from gpuplan.planner.search import search_layouts
    from gpuplan.planner.space import range_counts

    reference = reference_seconds()
    default_plan = PlanInputs(model="llama-3.1-70b", tokens="15T", gpu="h100")
    plan_report(default_plan)  # warm: catalog files parsed, modules imported
    plan_s = median_seconds(lambda: plan_report(default_plan), 15)

    inputs = PlanInputs(model="llama-3.1-70b", tokens="15T", gpu="h100", gpus="512-4096")
    ev = evaluator_for(inputs)
    counts, target = range_counts(512, 4096), inputs.target_batch(inputs.seq_len)
    table = search_layouts(ev, counts, target, max_tp(ev), exhaustive=True)
    complete_s = median_seconds(lambda: search_layouts(ev, counts, target, max_tp(ev), exhaustive=True), 9)
    rate = len(table) / complete_s

    odd = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=100_000)
    plan_report(odd)
    odd_s = median_seconds(lambda: plan_report(odd), 9)

    long_context = PlanInputs(model="qwen3-30b-a3b", gpu="h100", seq_len=65536, gpus=8191)
    plan_report(long_context)
    long_s = median_seconds(lambda: plan_report(long_context), 5)

    def ratio(seconds: float) -> str:
        return f"{seconds / reference:.1f}x"

    rows = [
        ("reference workload: np.sort of 10^6 float64", f"{reference * 1e3:.1f} ms", "1.0x"),
        ("`plan` 70B over the default range (12 counts, 8-16,384), in-process",
         f"{plan_s * 1e3:.0f} ms ({ratio(plan_s)})", "< 200 ms"),
        (f"complete space, 70B on 512-4,096 H100 ({len(table):,} layout x recompute rows, all timed)",
         f"{complete_s * 1e3:.0f} ms ({ratio(complete_s)})", "< 500 ms"),
        ("layouts evaluated per second (that search, one core)", f"{rate:,.0f}", ">= 1,000,000"),
        ("`plan` 405B on 100,000 H100 (alternatives 99,840 / 98,304 / 65,536 weighed)",
         f"{odd_s * 1e3:.0f} ms ({ratio(odd_s)})", "-"),
        ("`plan` qwen3-30b-a3b on 8,191 H100 at seq 65,536 (FEW_SEQUENCES: every smaller count, 784,902 layouts)",
         f"{long_s * 1e3:.0f} ms ({ratio(long_s)})", "-"),
    ]
    publish(rows, args.write, "Planner (`OMP_NUM_THREADS=1 python benchmarks/bench_planner.py`)")


if __name__ == "__main__":
    main()
