"""The ranking's own measures as columns of a search table: `plan`'s layouts table, its Pareto front and the
--shard-group auto line (jobs.plan.shard_group_told, for plan, train and budget alike) read them."""

from __future__ import annotations

from gpuplan.planner.plan import ranked_cost, ranked_seconds_per_token, seconds_per_sequence
from gpuplan.planner.search import LayoutTable


def with_ranked_columns(t: LayoutTable) -> LayoutTable:
    """The table (a PlanSearch's, with days and cost) with the ranking's time in days (ranked_days: days x ranked /
    failure-free seconds per token, planner.plan.ranked_seconds_per_token) and cost with the same failure share
    (ranked_cost, as --rank-by cost compares it): the Pareto front's objectives, so a count fast only before
    failures is not on it (wave 7: 405B over 1-10000000 GPUs listed 262,144 to 2,097,152, 7,910 days with failures
    at the last). Set on ``t`` itself (its columns dict) and returned."""
    ramp = t["ramp_factor"] if "ramp_factor" in t.columns else 1.0  # in days and in the ranking's time: once
    t.columns["ranked_days"] = t["days"] * (ranked_seconds_per_token(t) / seconds_per_sequence(t)) / ramp
    t.columns["ranked_cost"] = ranked_cost(t, t["cost"])
    return t
