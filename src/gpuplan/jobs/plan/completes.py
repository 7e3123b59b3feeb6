"""Which GPU counts of a layout search finish a run at all once failures are counted: the budget
(core.economics.reliability.expected_wall_seconds) refuses a count whose failures come faster than a
checkpoint period plus a restart, so the search must not answer with one (wave 6c: `plan
llama-3.1-405b --gpus 1-10000000` picked 8,388,608 GPUs, then refused, although 1,024 completes)."""

from __future__ import annotations

import numpy as np

from gpuplan.errors import InputError


def completing_rows(inputs, evaluator, fitting) -> np.ndarray:
    """Row indices of ``fitting`` (a LayoutTable with days) on GPU counts where the expected run with
    failures completes, on-demand and on spot, at the budget's point failure rate and both ends of its
    range (jobs.budget.compute.failure_ranges: the answer shows all three), judged, as
    planner.plan.deadline_order does, once per count on its fastest row (the failure rate is the
    count's; the rows' checkpoints differ little). Raises InputError naming gpus when no count does."""
    counts = fitting["gpus"]
    kept = []
    for count in sorted(set(counts.tolist())):  # not np.unique: it imports numpy.ma (tests/test_startup.py)
        rows = np.flatnonzero(counts == count)
        if _completes(inputs, evaluator, fitting, int(rows[np.argmin(fitting["days"][rows])])):
            kept.append(rows)
    if not kept:
        raise InputError("gpus", _asked(inputs),
                         f"a GPU count where the run completes with failures: on {int(counts.min()):,} GPUs and more "
                         "failures come faster than a checkpoint period plus a restart (fewer GPUs, a lower "
                         "--failure-rate or a shorter --restart)")
    return np.sort(np.concatenate(kept))


def _completes(inputs, evaluator, table, i: int) -> bool:
    """Row i's run finishes at the point failure rate and at both ends of R.FAILURE_RATE_RANGE."""
    from gpuplan.core.economics.reliability import FAILURE_RATE_RANGE
    from gpuplan.jobs.budget.model import run_facts, scenario

    tp, pp, gpus = int(table["tp"][i]), int(table["pp"][i]), float(table["gpus"][i])
    work = inputs.tokens / float(table["tokens_per_second"][i])
    run = run_facts(evaluator.spec, evaluator.cluster.gpu, gpus=gpus, wall_seconds=work, gpu_hours=work * gpus / 3600,
                    tokens=inputs.tokens, global_batch_tokens=float(table["global_batch"][i]) * inputs.seq_len,
                    step_seconds=float(table["step_seconds"][i]), recipe=inputs.recipe_name,
                    zero=int(table["zero"][i]), model_parallel=tp * pp)
    settings = inputs.budget_settings()
    return all(scenario(run, settings, gpus, rate=rate).completes for rate in (None, *FAILURE_RATE_RANGE))


def _asked(inputs) -> str:
    """--gpus as the search read it (a range shows as its counts' span)."""
    counts = inputs.gpu_counts
    return f"{counts[0]:,}" if len(counts) == 1 else f"{min(counts):,}-{max(counts):,}"
