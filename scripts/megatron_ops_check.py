#!/usr/bin/env python3
"""Megatron-Core + TE's op list (core/time/megatron_ops.py, opt-in: StepSettings.megatron_ops)
against the fitted element-wise model the answer uses, on the published NeMo / Megatron-Bridge rows.

For every published-throughput family (docs/accuracy.md's grouping: source, hardware, dense / MoE,
precision) it prints the rows, mean |error|, max |error| and bias of tokens/s/GPU predicted with
the fitted model (``before``) and with the op list (``after``); torchtitan rows keep their own op
list (unchanged). Each NeMo / Megatron-Bridge row's op list: ``megatron_ops.default_ops`` (None for
MoE and MLA models, which stay unchanged), DelayedScaling for the tables' recipe-less 'FP8'
(NeMo 24.07-25.04: Megatron-Core's default recipe, megatron/core/transformer/transformer_config.py
fp8_recipe = "delayed" at core_v0.12.0, the only one before) and 'fp8-delayed', current scaling
for 'FP8-CS'. ``--rows`` lists the
dense rows one by one. Nothing is fitted. ~15 s.

    python scripts/megatron_ops_check.py [--rows]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace


def row_ops(spec, precision: str):
    """The op list of one NeMo / Megatron-Bridge row (module docstring)."""
    from gpuplan.core.time.megatron_ops import default_ops

    ops = default_ops(spec)
    return None if ops is None else replace(ops, fp8_delayed=precision in ("fp8", "fp8-delayed"))


def family(run, moe: bool) -> str:
    """docs/accuracy.md's family of a published row: jobs/validation/estimate.py's throughput_family."""
    from gpuplan.jobs.validation.estimate import throughput_family
    from gpuplan.jobs.validation.published_throughput import PRECISION

    return throughput_family(run["family"], moe, PRECISION[run["precision"]])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="list the dense NeMo / Megatron-Bridge rows")
    args = parser.parse_args()
    from gpuplan.jobs.validation.published_throughput import (
        predict_tokens_per_gpu_s,
        published_throughput_rows,
        why_not,
    )
    from gpuplan.jobs.validation.throughput import run_spec

    errors = defaultdict(lambda: ([], []))
    for run in published_throughput_rows():
        if why_not(run):
            continue
        spec = run_spec(run["model"])
        measured = float(run["measured"]["tokens_per_s_per_gpu"])
        ops = None if run["family"].startswith("torchtitan") else row_ops(spec, run["precision"])
        before = predict_tokens_per_gpu_s(run) / measured - 1
        after = predict_tokens_per_gpu_s(run, megatron_ops=ops) / measured - 1 if ops else before
        before_list, after_list = errors[family(run, spec.moe is not None)]
        before_list.append(before)
        after_list.append(after)
        if args.rows and ops is not None:
            print(f"{run['id']:56s} {100 * before:+6.1f}% -> {100 * after:+6.1f}%")
    print(f"{'family':58s} {'rows':>4s}  {'before: mean / max / bias':>26s}  {'after: mean / max / bias':>26s}")
    for name, (b, a) in sorted(errors.items()):
        stat = lambda e: f"{100 * sum(map(abs, e)) / len(e):5.1f}% {100 * max(map(abs, e)):5.1f}% {100 * sum(e) / len(e):+6.1f}%"
        print(f"{name:58s} {len(b):4d}  {stat(b):>26s}  {stat(a):>26s}")


if __name__ == "__main__":
    main()
