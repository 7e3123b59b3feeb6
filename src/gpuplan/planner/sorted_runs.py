"""Runs of equal values in a sorted array: the planner's group-by (one O(n) pass and one slice a group, not a
``values == v`` mask over every row per distinct value; planner.pareto, planner.fallback.rows_by_count)."""

from __future__ import annotations

import numpy as np


def run_bounds(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, stops): the half-open index bounds ``ordered[starts[i]:stops[i]]`` of each run of equal values in
    the 1-D ``ordered`` (sorted, or at least grouped), in order; both empty for an empty array. NaN != NaN, so each
    NaN is a run of its own."""
    if not len(ordered):
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return starts, np.append(starts[1:], len(ordered))
