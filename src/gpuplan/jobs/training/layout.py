"""The layout a training estimate stands on: the planner's best for the GPUs (or the user's own
degrees), or — to meet a deadline with a predicted MFU — the fewest GPUs whose best layout meets
it. The memory verdict, and in predicted mode the step time and MFU, come from this one Plan."""

from __future__ import annotations

import numpy as np

from gpuplan.core.units import SECONDS_PER_DAY, format_duration
from gpuplan.errors import InputError
from gpuplan.jobs.plan.completes import completing_rows, with_completing_shares
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.planner.plan import (Plan, best_plan, deadline_counts_between, deadline_order, evaluate_layout, row_layout,
                                  slow_end_seconds_per_token)
from gpuplan.planner.search import LayoutTable, search_layouts
from gpuplan.planner.space import DEADLINE_COUNTS_MAX, batch_target, range_counts


def layout_for_gpus(inputs: TrainingInputs, gpus: int, rank_by: str = "time") -> Plan:
    """The planner's best layout on ``gpus`` GPUs with the degrees the user fixed; where ``inputs`` carry
    the budget's settings (`gpuplan train` / `budget`: BudgetInputs), ranked with each row's failure share
    as `plan --gpus` ranks them (with_failure_shares), so the two answer the same count and layout."""
    ev = evaluator_for(inputs)
    weigh = with_failure_shares(inputs, ev, gpus, rank_by == "time") if hasattr(inputs, "budget_settings") else None
    plan, _ = best_plan(ev, gpus, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs), rank_by,
                        weigh)
    return plan


def with_failure_shares(inputs, ev, gpus: int, first_only: bool = False):
    """The weighing step best_plan ranks `train`'s rows through: plan's (jobs.plan.search._with_days) — the rows
    whose run completes with failures, each with its failure_share at the failure rate's high end
    (jobs.plan.completes.with_completing_shares, the one implementation), all standing for the ``gpus`` asked
    (gpus_asked: the plateau rule keeps their time order, planner.plan._fewest_on_plateau); ``first_only``
    (ranking by time, where best_plan takes the first row only): just the rows that could come first. Where no row
    completes the rows stay unweighed: the budget's Failures section then says why (commit 875dd94's open
    point: train weighed the counts below an irregular N without the share)."""
    def weigh(fitting: LayoutTable) -> LayoutTable:
        try:
            fitting = _could_win(inputs, ev, fitting) if first_only else fitting
            kept, _ = with_completing_shares(inputs, ev, fitting)
        except InputError:
            return fitting
        kept.columns["gpus_asked"] = np.full(len(kept), gpus, dtype=np.int64)
        return kept

    return weigh


def layout_for_deadline(inputs: TrainingInputs, days: float, after_allowances=None) -> Plan:
    """The fewest GPUs whose layouts train ``inputs.tokens`` within ``days`` after every allowance the
    answer adds (``after_allowances``: the budget's failures and checkpoints; planner.plan.deadline_order),
    and the cheapest such layout on it: the common cluster sizes first, then the counts between the two that
    bracket the answer (planner.plan.deadline_counts_between), as `plan` searches them (jobs.plan.deadline)."""
    ev = evaluator_for(inputs)
    target, limits = inputs.target_batch(inputs.seq_len), space_limits(inputs)
    counts = range_counts(ev.cluster.gpus_per_node, DEADLINE_COUNTS_MAX)
    table = search_layouts(ev, counts, target, max_tp(ev), limits)
    fitting = table.take(table["fits"]) if len(table) else table
    if not len(fitting):
        raise InputError("days", days, f"no layout fits {ev.cluster.gpu.name} at any GPU count up to "
                         f"{DEADLINE_COUNTS_MAX:,}")
    order = _meeting(ev, inputs, fitting, days, after_allowances)
    if not len(order):
        days_of = _days_of(inputs, fitting)
        quickest = int(np.argmin(days_of))
        raise InputError("days", days, "no layout meets it" + (" with failures and checkpoints" if after_allowances
                                                                  else "") + f": the fastest needs "
                         f"{format_duration(days_of[quickest] * SECONDS_PER_DAY)} before them on {int(fitting['gpus'][quickest]):,} GPUs")
    # the common sizes bracket the answer: the counts between them, in one search, as plan's (jobs.plan.search)
    between = deadline_counts_between(counts, int(fitting["gpus"][order[0]]), ev.cluster.gpus_per_node)
    more = search_layouts(ev, between, target, max_tp(ev), limits) if between else LayoutTable({})
    more = more.take(more["fits"]) if len(more) else more
    if len(more):
        found = _meeting(ev, inputs, more, days, after_allowances)
        if len(found):
            return _plan_of(ev, more, int(found[0]), target, limits)
    return _plan_of(ev, fitting, int(order[0]), target, limits)


def _could_win(inputs, ev, fitting: LayoutTable) -> LayoutTable:
    """The rows of ``fitting`` that ranking with failure shares could put first: a share is >= 1 (failures
    only add time), so a row slower before it than the fastest row is after it cannot win; only these need
    their share (completing_rows: 4.7 ms for the 10,590 rows of `gpuplan train`'s default search). All rows
    where the fastest does not complete."""
    seconds = slow_end_seconds_per_token(fitting)
    fastest = int(np.argmin(seconds))
    try:
        bound = seconds[fastest] * float(completing_rows(inputs, ev, fitting.take(np.array([fastest]))).slow_share[0])
    except InputError:  # the fastest never completes with failures: every row is weighed
        return fitting
    near = seconds <= bound * (1 + 1e-12)
    return fitting.take(np.flatnonzero(near)) if not near.all() else fitting


def _days_of(inputs: TrainingInputs, table: LayoutTable) -> np.ndarray:
    """Each row's days to train ``inputs.tokens`` before allowances."""
    return inputs.tokens / table["tokens_per_second"] / SECONDS_PER_DAY


def _plan_of(ev, fitting: LayoutTable, i: int, target, limits) -> Plan:
    """Row ``i`` of ``fitting`` evaluated as a Plan (``target``, ``limits``: the search's batch target and
    space limits)."""
    layout, recompute = row_layout(fitting, i)
    return evaluate_layout(ev, layout, recompute, batch_target(target, layout.world, limits))


def _meeting(ev, inputs: TrainingInputs, fitting: LayoutTable, days: float, after_allowances) -> np.ndarray:
    """planner.plan.deadline_order on ``fitting``: each row's days before allowances, or with the budget's
    failures and checkpoints (``after_allowances`` given: jobs.budget.estimate, whose inputs carry the budget's
    settings) each row's own days with failures, as `plan --days` weighs them (jobs.plan.deadline.deadline_rows:
    days x completing_rows' point share)."""
    if after_allowances is not None:
        return deadline_order(fitting, _days_with_failures(inputs, ev, fitting, days), days)
    return deadline_order(fitting, _days_of(inputs, fitting), days)


def _days_with_failures(inputs, ev, fitting: LayoutTable, deadline: float) -> np.ndarray:
    """Each row's expected days with failures and checkpoints at the point failure rate (jobs.plan.completes,
    plan's "w/ failures"), inf where the run never completes; worked out only for the rows that meet
    ``deadline`` before failures (they only add time)."""
    days = _days_of(inputs, fitting)
    found = np.full(len(fitting), np.inf)
    soon = np.flatnonzero(days <= deadline)
    if not len(soon):
        return found
    try:
        done = completing_rows(inputs, ev, fitting.take(soon))
    except InputError:  # no row that could meet it completes
        return found
    found[soon[done.rows]] = days[soon[done.rows]] * done.point_share
    return found
