"""Wave 16 A3's leftovers from the fourteenth session's final read: the one run-splitting helper
(planner.sorted_runs.run_bounds) and the words items 7 and 9 changed. Hand-worked numbers only."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.sorted_runs import run_bounds


# ---- item 5: one helper splits a sorted array into runs (planner.pareto x2, planner.fallback.rows_by_count) --------

def test_run_bounds_hand_worked():
    """[1, 1, 2, 5, 5, 5] has runs [0:2], [2:3], [3:6]; NaN != NaN, so two NaNs are two runs."""
    starts, stops = run_bounds(np.array([1, 1, 2, 5, 5, 5]))
    assert starts.tolist() == [0, 2, 3] and stops.tolist() == [2, 3, 6]
    starts, stops = run_bounds(np.array([0.5, np.nan, np.nan]))
    assert starts.tolist() == [0, 1, 2] and stops.tolist() == [1, 2, 3]
    assert [len(b) for b in run_bounds(np.zeros(0))] == [0, 0]
    assert [b.tolist() for b in run_bounds(np.array([7]))] == [[0], [1]]


def test_rows_by_count_uses_the_runs():
    """planner.fallback.rows_by_count groups a table's rows by GPU count, each group in table order."""
    from gpuplan.planner.fallback import rows_by_count
    from gpuplan.planner.search import LayoutTable

    table = LayoutTable({"gpus": np.array([8, 4, 8, 16, 4]), "row": np.arange(5)})
    groups = rows_by_count(table)
    assert list(groups) == [4, 8, 16]
    assert {c: t["row"].tolist() for c, t in groups.items()} == {4: [1, 4], 8: [0, 2], 16: [3]}
