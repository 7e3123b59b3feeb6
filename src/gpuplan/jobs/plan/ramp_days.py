"""`plan`'s rows with --batch-ramp: each candidate layout's ramp factor (planner.batch_ramp.with_ramp_factors)
multiplies its days, GPU-hours and cost, and planner.plan.slow_end_seconds_per_token ranks by it. The rows the
answer's own ranking puts first (--rank-by time / cost / gpus, or a deadline's rule on each row's ramp-inclusive
days with failures) are timed until the leaders are all timed (planner.batch_ramp.settle_ramp; `plan`'s top-N
table's rows too), so no row wins on the factor 1 an untimed row holds (review w16 R6 M1)."""

from __future__ import annotations

import numpy as np

from gpuplan.jobs.plan.deadline import deadline_of
from gpuplan.planner.batch_ramp import with_ramp_factors
from gpuplan.planner.plan import count_first_rows, ranking
from gpuplan.schema.batch_ramp_field import typed_text

SCALED = ("days", "gpu_hours", "cost")
"""The columns a row's ramp factor multiplies (its wall-clock and what follows it)."""


def with_ramp_days(inputs, ev, fitting, point_share=1.0, limits=None):
    """(``fitting`` (rows with days, gpu_hours, cost) with ``ramp_factor`` and those three x it, ``point_share``
    of the rows kept); both unchanged without a ramp. The deadline (the ask's: deadline_of):
    a row meets it on its ramp-inclusive days x ``point_share`` (days with failures, jobs.plan.completes), and the
    deadline rule orders the rows that do. ``limits``: the search's SpaceLimits; rows whose ramp phase the
    framework's pipeline schedule refuses are dropped (planner.batch_ramp.phase_refused)."""
    phases = inputs.ramp_phases() if hasattr(inputs, "ramp_phases") else []
    if not phases or not len(fitting):
        return fitting, point_share
    for name in SCALED:
        fitting.columns["steady_" + name] = fitting[name]
    fitting.columns["point_share"] = np.broadcast_to(np.asarray(point_share, dtype=float), (len(fitting),)).copy()
    hold_evaluation_shares(inputs, ev, fitting)
    fitting = with_ramp_factors(ev, fitting, float(inputs.tokens), phases, typed=typed_text(inputs.batch_ramp),
                                order=_order(inputs, deadline_of(inputs)),
                                lead=int(getattr(inputs, "top", 1) or 1), limits=limits, on_factors=_scale)
    for name in SCALED:
        fitting.columns.pop("steady_" + name)
    drop_evaluation_shares(fitting)
    return fitting, fitting.columns.pop("point_share")


def _scale(fitting) -> None:
    """days, gpu_hours and cost: the steady ones x the row's ramp factor; the failure share's in-loop evaluations
    (1 + e, work over the steady steps: jobs.budget.evaluation.work_factors) beside the ramp, not under it: each
    evaluation runs the full batch at the steady step, so days x share = steady days x (ramp + e) x the failures'
    share, as the chosen layout's budget counts it (jobs.budget.estimate._steady_step; review s20 M1)."""
    for name in SCALED:
        fitting.columns[name] = fitting["steady_" + name] * fitting["ramp_factor"]
    evaluation_beside_ramp(fitting)


SHARES = ("point_share", "failure_share")
"""The failure shares a ramped row carries (its days with failures at the point rate, and at the slow end the ranking
compares: jobs.plan.completes), each with the in-loop evaluations in it as 1 + e over the steady work."""


def hold_evaluation_shares(inputs, ev, fitting) -> None:
    """Before a ramp is timed: each row's evaluation work e (eval_work) and its shares as they stand, steady_<share>."""
    fitting.columns["eval_work"] = _evaluation_work(inputs, ev, fitting)
    for name in SHARES:
        if name in fitting.columns:
            fitting.columns["steady_" + name] = fitting[name].copy()


def evaluation_beside_ramp(fitting) -> None:
    """Each share with its evaluations beside the row's ramp factor, not under it: share x (1 + e / ramp) / (1 + e),
    so days x share = steady days x (ramp + e) x the failures' share (review s20 M1 for the point share, s20b M1
    for the slow end's: the ranking and 'ranked days' charged e x the ramp). A row's factor 1 leaves it as held."""
    work, ramp = fitting["eval_work"], fitting["ramp_factor"]
    for name in SHARES:
        if "steady_" + name in fitting.columns:
            fitting.columns[name] = fitting["steady_" + name] * (1 + work / ramp) / (1 + work)


def drop_evaluation_shares(fitting) -> None:
    """The columns hold_evaluation_shares added, once the ramp is settled."""
    fitting.columns.pop("eval_work")
    for name in SHARES:
        fitting.columns.pop("steady_" + name, None)


def _evaluation_work(inputs, ev, fitting) -> np.ndarray:
    """Each row's in-loop evaluation work over its steady training work, e: work_factors' factor less 1 (its 1.0
    without --eval-interval gives 0 on every row)."""
    from gpuplan.jobs.budget.evaluation import work_factors

    factors = work_factors(inputs, ev.spec, fitting, inputs.budget_settings())
    return np.broadcast_to(np.asarray(factors, dtype=float) - 1.0, (len(fitting),)).copy()


def _order(inputs, deadline: float | None):
    """The ranking the answer takes (jobs.plan.deadline.rank_by_of; planner.plan.ranking), on the rows as they
    stand: a deadline's rule over the rows meeting it (or, none meeting the article's default week, the fastest
    count's rows, as jobs.plan.deadline.deadline_rows answers)."""
    told = "rank_by" in getattr(inputs, "given", ())
    rank_by = getattr(inputs, "rank_by", "time") if told or deadline is None else "deadline"

    def order(t) -> np.ndarray:
        if deadline is None:
            return ranking(t, rank_by, t["cost"])
        with_failures = t["days"] * t["point_share"]
        rows = np.flatnonzero(with_failures <= deadline)
        missed = not len(rows)
        if missed:
            rows = np.flatnonzero(t["gpus"] == t["gpus"][int(np.argmin(with_failures))])
        part = t.take(rows)
        if rank_by == "deadline":  # each count's first by time over all its rows, as jobs.plan.deadline marks it
            part.columns["time_first"] = np.zeros(len(rows), dtype=bool) if missed else count_first_rows(t)[rows]
        return rows[ranking(part, rank_by, t["cost"][rows])]

    return order
