"""The ranking's own measures as columns of a search table: `plan`'s layouts table, its Pareto front and the
--shard-group auto line (jobs.plan.shard_group_told, for plan, train and budget alike) read them."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.idle_rule import moved_rows
from gpuplan.planner.pareto import pareto_front
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


def moved(t: LayoutTable, rank_by: str) -> np.ndarray:
    """The rows ranking by ``rank_by`` places after their count's whole best though ranked faster (planner.idle_rule
    .moved_rows: by time only), all False for another ranking."""
    return moved_rows(t, ranked_seconds_per_token(t)) if rank_by == "time" else np.zeros(len(t), dtype=bool)


def front_rows(t: LayoutTable, objectives: tuple[str, ...], rank_by: str) -> np.ndarray:
    """The Pareto front of ``objectives`` over the rows ranking by ``rank_by`` can answer: the moved rows left off
    (s25 R2 S2-1: `plan qwen3-30b-a3b --global-batch 120 --gpus 128` answers 128 GPUs at 2.0 ranked days, the idle
    rule holding a 120-GPU row at 1.7, inside the model's band, that ended the front), so the answer is on it."""
    free = np.flatnonzero(~moved(t, rank_by))
    return free[pareto_front(t.take(free), objectives)]


FRONT_SHOWN = 20
"""Most points of the Pareto front `plan` prints (and its chart draws: report.plots.layout_series)."""


def shown_front(front: np.ndarray, best: int, most: int = FRONT_SHOWN) -> tuple[np.ndarray, str]:
    """(rows, words): ``front`` (fewest GPUs first) as printed, all of it up to ``most`` points, else ``most`` - 1
    spread evenly along it, both ends kept, and the answer (row ``best``) where on it; words '' or how they were
    taken (s25 R2 S2-1: the first 20 of llama-3.1-70b --global-batch 2000 --gpus 3072's front ended at 96 GPUs, its
    3,072-GPU answer neither printed nor drawn)."""
    if len(front) <= most:
        return front, ""
    picked = set(np.round(np.linspace(0, len(front) - 1, most - 1)).astype(int).tolist())  # no np.unique / union1d:
    shown = front[sorted(picked | set(np.flatnonzero(front == best).tolist()))]  # they import numpy.ma (test_startup)
    return shown, f"; {len(shown)} of its {len(front):,} points, spread along it, the answer among them"
