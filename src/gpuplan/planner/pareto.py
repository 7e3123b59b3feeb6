"""The Pareto front of a search table (planner.search re-exports pareto_front): the layouts no other
layout beats on every objective, all minimised -- `gpuplan plan`'s (GPUs, days[, cost]) table."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.sorted_runs import run_bounds


PREFILTER_MIN_ROWS = 2_000
"""From this many rows the front is taken among the rows no row of their own first objective beats
(_beaten_in_group): the default-range `plan` weighs ~38,000 rows, whose three-key lexsort alone took
~11 ms of the front's 13.5 (2026-12-05, 2-core machine); a 1,024-GPU plan's ~3,300 take 0.3 ms either way."""


def pareto_front(table, objectives: tuple[str, ...]) -> np.ndarray:
    """Indices of layouts no other layout beats on every objective (all minimised), in
    lexicographic order of the objectives; among layouts with identical objective values the
    first is kept. Two or three objectives, vectorised: a sweep over the first objective's
    distinct values against the staircase (the 2-D front of the other two) of the points so far. The
    prefilter (_beaten_in_group) sorts by the first objective and loops over its distinct values (a numpy call or
    two each): put a few-valued objective first (`plan` puts the GPU count: ~29 values, ~760 under an exact
    batch's fallbacks), not a continuous one."""
    values = np.stack([np.asarray(table[o], dtype=float) for o in objectives], axis=1)
    if not len(values):
        return np.zeros(0, dtype=int)
    if values.shape[1] not in (2, 3):
        raise ValueError("pareto_front takes two or three objectives")
    if len(values) < PREFILTER_MIN_ROWS:
        return _front(values)
    left = np.flatnonzero(~_beaten_in_group(values))
    return left[_front(values[left])]


def _beaten_in_group(values: np.ndarray) -> np.ndarray:
    """Rows that the best row of their own first objective (lexicographically least on the others, the
    lowest index among equals) equals or beats on every objective. None of them is on the front, and
    dropping them first leaves the front and its order as they were: a row the sweep drops is matched or
    beaten by a row before it in the lexicographic order, and following dropped rows back ends at a kept
    one that matches or beats it too; the stable sort keeps the rest in their order. NaN: never dropped."""
    beaten = np.zeros(len(values), dtype=bool)
    first = values[:, 0]
    order = np.argsort(first, kind="stable")  # each value's rows a run of it, in index order (NaN last, each its
    # own run, skipped); not a `first == value` pass over every row per value: O(distinct x rows), 1.8 s of
    # `plan qwen3-30b-a3b --global-batch 1000 --days 120` (2.4 M rows on ~760 counts; w15 W4)
    ordered = first[order]
    for start, stop in zip(*run_bounds(ordered)):
        if np.isnan(ordered[start]):
            continue
        rows = order[start:stop]
        best = rows
        for column in range(1, values.shape[1]):
            part = values[best, column]
            best = best[part == part.min()] if len(best) else best
        if len(best):
            beaten[rows] = np.all(values[rows, 1:] >= values[best[0], 1:], axis=1) & (rows != best[0])
    return beaten


def _front(values: np.ndarray) -> np.ndarray:
    """pareto_front of the rows of ``values`` (two or three columns), as indices into them."""
    order = np.lexsort(values.T[::-1])
    v = values[order]
    if v.shape[1] == 2:  # sorted by (o1, o2): kept iff o2 beats every earlier point's o2
        earlier = np.concatenate(([np.inf], np.minimum.accumulate(v[:-1, 1])))
        return order[v[:, 1] < earlier]
    keep = np.zeros(len(v), dtype=bool)
    stair_b = stair_c = np.zeros(0)
    for start, stop in zip(*run_bounds(v[:, 0])):
        b, c = v[start:stop, 1], v[start:stop, 2]  # one value of o1, sorted by (o2, o3)
        alive = c < np.concatenate(([np.inf], np.minimum.accumulate(c[:-1])))  # within the group
        if len(stair_b):  # dominated by an earlier group: the staircase point at or left of b
            at = np.searchsorted(stair_b, b, side="right") - 1
            alive &= ~((at >= 0) & (stair_c[np.maximum(at, 0)] <= c))
        keep[start:stop] = alive
        if alive.any():
            stair_b, stair_c = _staircase(np.concatenate((stair_b, b[alive])), np.concatenate((stair_c, c[alive])))
    return order[keep]


def _staircase(b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2-D front of points (b, c): b ascending, c strictly descending."""
    order = np.lexsort((c, b))
    b, c = b[order], c[order]
    best = np.concatenate(([np.inf], np.minimum.accumulate(c[:-1])))
    keep = c < best
    return b[keep], c[keep]
