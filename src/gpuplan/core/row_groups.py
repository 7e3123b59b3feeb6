"""Rows of a layout search grouped by an integer key, so that a costly per-row function runs once per
group and its answer is broadcast back (issue 39): the data-parallel and TP collectives
(core.comm.dp_costs, core.comm.step_comm) and the layout uncertainty (planner.uncertainty).

The contract is the caller's: the key must hold every per-row input of what is costed on the groups
(core.comm.dp_costs.seconds_by_rows says which); a column left out gives its group's first row's answer to
every row. tests/test_search_dedup.py runs whole searches with the grouping on and off, column by column."""

from __future__ import annotations

import numpy as np

GROUP_MIN_ROWS = 64
"""Fewer rows than this are costed row by row: finding the groups would cost more than it saves."""


def group_rows(*columns, floats=()):
    """(one representative row of each distinct combination, each row's combination) of the integer-valued
    ``columns`` (numbers or arrays of one length), or None where every row is costed (no array of
    GROUP_MIN_ROWS rows or more; non-integer, non-finite or too large values; a key past int64). The
    columns are packed into one int64 key (mixed radix over their ranges) and sorted once (issue 39: a warm
    `train` times 10,394 fitting layouts that hold 272 distinct data-parallel groups and 424 distinct TP
    ones; ~0.3 ms each against ~25 ms of collectives row by row). ``floats``: arrays the key must
    determine too, checked (a row whose value differs from its representative's: None)."""
    key, span, rows = None, 1, 0
    for column in columns:
        values = np.asarray(column)
        if values.ndim == 0:
            continue
        with np.errstate(invalid="ignore"):  # NaN, inf, |x| >= 2^63: cast to other integers, refused below
            ints = values.astype(np.int64)
        if not len(ints) or not np.array_equal(ints, values):
            return None
        low = int(ints.min())
        width = int(ints.max()) - low + 1
        span, rows = span * width, len(ints)
        if span >= 2**62:
            return None
        key = ints - low if key is None else key * width + (ints - low)
    if key is None or rows < GROUP_MIN_ROWS:
        return None
    # stable: numpy's timsort is fastest on the search's presorted runs of equal keys (sorting the runs'
    # heads first was slower)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.empty(rows, dtype=bool)  # the runs' starts as a mask, its cumsum the inverse (planner.sorted_runs.
    starts[0], starts[1:] = True, ordered[1:] != ordered[:-1]  # run_bounds gives the same runs as bounds)
    inverse = np.empty(rows, dtype=np.intp)
    inverse[order] = np.cumsum(starts) - 1
    first = order[starts]
    for values in floats:
        if np.ndim(values) and not np.array_equal(np.asarray(values)[first][inverse], values):
            return None
    return first, inverse
