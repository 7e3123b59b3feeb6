#!/usr/bin/env python3
"""Published-row error against the communication the step model hides (issue 37 diagnostic).

For every held-out NeMo / Megatron-Bridge and torchtitan family (docs/accuracy.md's grouping) it
fits, by least squares over the family's rows, error = a + b x hidden, where error is predicted over
measured tokens/s/GPU minus 1 and hidden is the share of the predicted step the model's
communication runs behind compute (StepBreakdown.comm_total - exposed_comm, over total). It prints
the slope b, the intercept a, their correlation and the family's mean |error| before and after
its own line (an upper bound of what any hidden-communication term could take out). ``--rows FILTER``
lists the rows of the families whose name contains FILTER. ``--pairs`` splits the model's
FP8-CS / MXFP8 tokens/s ratio of configurations published with both recipes into the recipe at one
layout and the layout at one recipe. ``--split`` fits the dense FP8 families' error on hidden TP and
hidden DP apart. Nothing is fitted into the model. ~5 s.

    python scripts/hidden_comm_check.py [--rows "Blackwell dense FP8"] [--pairs] [--split]
"""

from __future__ import annotations

import argparse
import copy
from collections import defaultdict

import numpy as np


def family(run, moe: bool) -> str:
    """docs/accuracy.md's family of a published row: jobs/validation/estimate.py's throughput_family."""
    from gpuplan.jobs.validation.estimate import throughput_family
    from gpuplan.jobs.validation.published_throughput import PRECISION

    return throughput_family(run["family"], moe, PRECISION[run["precision"]])


def predicted_with_breakdown(run):
    """(tokens/s/GPU, StepBreakdown) at the row's layout: the validation's own prediction, with the
    breakdown step_time returned to it kept (published_throughput.step_time wrapped while it runs)."""
    import gpuplan.jobs.validation.published_throughput as pt

    kept, original = [], pt.step_time
    pt.step_time = lambda *a, **k: kept.append(original(*a, **k)) or kept[-1]
    try:
        return pt.predict_tokens_per_gpu_s(run), kept[-1]
    finally:
        pt.step_time = original


def family_rows():
    """{family: [(hidden share, error, row id)]} over the scored published rows."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not
    from gpuplan.jobs.validation.throughput import run_spec

    out = defaultdict(list)
    for run in published_throughput_rows():
        if why_not(run):
            continue
        tokens, step = predicted_with_breakdown(run)
        hidden = (step.comm_total - step.exposed_comm) / step.total
        error = tokens / run["measured"]["tokens_per_s_per_gpu"] - 1
        out[family(run, run_spec(run["model"]).moe is not None)].append((hidden, error, run["id"]))
    return out


def print_families(rows, listed: str | None) -> None:
    """One line per family (module docstring); the rows of the families matching ``listed``."""
    print(f"{'family':52} rows  hidden share   slope  intercept  corr   mean|e| -> off its line")
    for name, v in sorted(rows.items()):
        h, e = np.array([x[0] for x in v]), np.array([x[1] for x in v])
        if len(v) < 4 or h.std() < 0.01:
            print(f"{name:52} {len(v):4}  (too few rows or no spread of hidden share)")
            continue
        slope, intercept = np.polyfit(h, e, 1)
        rest = e - (intercept + slope * h)
        print(f"{name:52} {len(v):4}  {h.min():.2f}..{h.max():.2f}  {slope:+6.2f}  {intercept * 100:+7.1f}%  "
              f"{np.corrcoef(h, e)[0, 1]:+.2f}  {np.abs(e).mean() * 100:5.1f}% -> {np.abs(rest).mean() * 100:4.1f}%")
        if listed and listed.lower() in name.lower():
            for hid, err, rid in sorted(v):
                print(f"    hidden {hid:.3f}  error {err * 100:+6.1f}%  {rid}")


def print_pairs() -> None:
    """FP8-CS / MXFP8 pairs of one release, model and part: measured ratio, model ratio, and the
    model's ratio split into the recipe at the MXFP8 row's layout x the layout at FP8-CS."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not

    rows = {r["id"]: r for r in published_throughput_rows() if not why_not(r)}
    print(f"\n{'FP8-CS row':56} measured  model  recipe@MX-layout  layout(CS/MX)@FP8-CS")
    for cs_id, cs in sorted(rows.items()):
        mx = rows.get(cs_id.replace("-fp8cs", "-mxfp8"))
        if not cs_id.endswith("-fp8cs") or mx is None:
            continue
        at_mx_layout = copy.deepcopy(mx)
        at_mx_layout["precision"] = cs["precision"]
        cs_pred, mx_pred = predicted_with_breakdown(cs)[0], predicted_with_breakdown(mx)[0]
        recipe = predicted_with_breakdown(at_mx_layout)[0] / mx_pred
        measured = cs["measured"]["tokens_per_s_per_gpu"] / mx["measured"]["tokens_per_s_per_gpu"]
        print(f"{cs_id:56} {measured:8.3f} {cs_pred / mx_pred:6.3f}  {recipe:16.3f}  {cs_pred / mx_pred / recipe:20.3f}")


def print_split() -> None:
    """Dense FP8 families: error = a + b_tp x hidden TP + b_dp x hidden DP, each hidden share the
    tokens/s the model loses without that overlap (tp_overlap 0 and tp_comm_overlap off; dp_overlap 0)."""
    from gpuplan.jobs.validation.published_throughput import (
        predict_tokens_per_gpu_s,
        published_throughput_rows,
        why_not,
    )
    from gpuplan.jobs.validation.throughput import run_spec

    rows = defaultdict(list)
    for run in published_throughput_rows():
        if why_not(run) or "dense FP8" not in family(run, run_spec(run["model"]).moe is not None):
            continue
        name = family(run, run_spec(run["model"]).moe is not None)
        tokens = predict_tokens_per_gpu_s(run)
        tp = tokens / predict_tokens_per_gpu_s(run, tp_overlap=0.0, tp_comm_overlap=False) - 1
        dp = tokens / predict_tokens_per_gpu_s(run, dp_overlap=0.0) - 1
        rows[name].append((tp, dp, tokens / run["measured"]["tokens_per_s_per_gpu"] - 1))
    print(f"\n{'dense FP8 family':52} rows  intercept  b_tp   b_dp   mean|e| -> off the fit")
    for name, v in sorted(rows.items()):
        a = np.array(v)
        x = np.column_stack([np.ones(len(a)), a[:, 0], a[:, 1]])
        coef = np.linalg.lstsq(x, a[:, 2], rcond=None)[0]
        rest = a[:, 2] - x @ coef
        print(f"{name:52} {len(v):4}  {coef[0] * 100:+7.1f}%  {coef[1]:+.2f}  {coef[2]:+.2f}  "
              f"{np.abs(a[:, 2]).mean() * 100:5.1f}% -> {np.abs(rest).mean() * 100:4.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", metavar="FILTER", help="list the rows of the families whose name contains FILTER")
    parser.add_argument("--pairs", action="store_true", help="split the FP8-CS / MXFP8 ratios")
    parser.add_argument("--split", action="store_true", help="hidden TP and hidden DP apart (dense FP8)")
    args = parser.parse_args()
    print_families(family_rows(), args.rows)
    if args.pairs:
        print_pairs()
    if args.split:
        print_split()


if __name__ == "__main__":
    main()
