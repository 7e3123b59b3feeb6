"""Which GPU counts of a layout search finish a run at all once failures are counted: the budget
(core.economics.reliability.expected_wall_seconds) refuses a count whose failures come faster than a
checkpoint period plus a restart, so the search must not answer with one (wave 6c: `plan
llama-3.1-405b --gpus 1-10000000` picked 8,388,608 GPUs, then refused, although 1,024 completes);
nor, ranking by time, with one that completes slowly (wave 7: the same range then picked 2,097,152
GPUs, 4.35 h failure-free but 7,910 days expected with failures): each count's failure share lets
planner.plan.ranking compare counts with failures."""

from __future__ import annotations

import numpy as np

from gpuplan.errors import InputError


def completing_rows(inputs, evaluator, fitting) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of ``fitting`` (a LayoutTable with days) on GPU counts where the expected run with
    failures completes, on-demand and on spot, at the budget's point failure rate and both ends of its
    range (jobs.budget.compute.failure_ranges: the answer shows all three), and each kept row's
    failure shares, on-demand expected wall-clock with failures and checkpoints / failure-free
    wall-clock: the slowest of those three (the ranking's, planner.plan.ranking) and the point rate's
    (the answer's "expected wall-clock with failures"). All are judged
    once per count on the row the ranking puts first within it (its fastest at the slow end,
    planner.plan.slow_end_seconds_per_token): the failure rate is the count's; its rows' checkpoints
    differ little, and the share does not depend on the run's length (Daly's expected wall-clock is
    work x a factor of the interval, checkpoint, restart and MTBI). Raises InputError naming gpus when
    no count completes."""
    from gpuplan.planner.plan import slow_end_seconds_per_token

    counts, key = fitting["gpus"], slow_end_seconds_per_token(fitting)
    kept, shares, points = [], [], []
    for count in sorted(set(counts.tolist())):  # not np.unique: it imports numpy.ma (tests/test_startup.py)
        rows = np.flatnonzero(counts == count)
        found = _failure_shares(inputs, evaluator, fitting, int(rows[np.argmin(key[rows])]))
        if found is not None:
            kept.append(rows)
            shares.append(np.full(len(rows), found[0]))
            points.append(np.full(len(rows), found[1]))
    if not kept:
        raise InputError("gpus", _asked(inputs),
                         f"a GPU count where the run completes with failures: on {int(counts.min()):,} GPUs and more "
                         "failures come faster than a checkpoint period plus a restart (fewer GPUs, a lower "
                         "--failure-rate or a shorter --restart)")
    rows = np.concatenate(kept)
    order = np.argsort(rows, kind="stable")
    return rows[order], np.concatenate(shares)[order], np.concatenate(points)[order]


def _failure_shares(inputs, evaluator, table, i: int) -> tuple[float, float] | None:
    """Row i's on-demand expected wall-clock with failures / its failure-free wall-clock: the slowest at
    the point failure rate and both ends of its range (R.failure_rate_range: the ends the answer prints,
    jobs.budget.compute.failure_ranges, which follow --failure-rate), and the point rate's; None when the run
    does not finish at one of them (on-demand or on spot)."""
    from gpuplan.core.economics.reliability import failure_rate_range
    from gpuplan.jobs.budget.model import run_facts, scenario

    tp, pp, gpus = int(table["tp"][i]), int(table["pp"][i]), float(table["gpus"][i])
    work = inputs.tokens / float(table["tokens_per_second"][i])
    run = run_facts(evaluator.spec, evaluator.cluster.gpu, gpus=gpus, wall_seconds=work, gpu_hours=work * gpus / 3600,
                    tokens=inputs.tokens, global_batch_tokens=float(table["global_batch"][i]) * inputs.seq_len,
                    step_seconds=float(table["step_seconds"][i]), recipe=inputs.recipe_name,
                    zero=int(table["zero"][i]), model_parallel=tp * pp)
    settings = inputs.budget_settings()
    scenarios = [scenario(run, settings, gpus, rate=rate) for rate in (None, *failure_rate_range(settings.failure_rate))]
    if not all(s.completes for s in scenarios):
        return None
    return max(s.on_demand.wall_seconds for s in scenarios) / work, scenarios[0].on_demand.wall_seconds / work


def _asked(inputs) -> str:
    """--gpus as the search read it (a range shows as its counts' span)."""
    counts = inputs.gpu_counts
    return f"{counts[0]:,}" if len(counts) == 1 else f"{min(counts):,}-{max(counts):,}"
