"""Which GPU counts have a layout that fits, without the search's table: planner.plan.smallest_fitting_count asks only
that, of up to ~20 common cluster sizes up to 64x the count refused (planner.plan.larger_counts), and a full
search_layouts there took ~1 s of CPU in `plan --params 1e15 --tokens 1e18 --gpu h100` (helper S, s22).

The answer is the pruned search's own, row for row, with no property of the memory model assumed beyond what
search_layouts already evaluates: a row of search_layouts' table fits iff it fits in some recompute mode (_fits_any's
test), and its rows are micro_batch_prefix's. In a run of micro-batches (micro_batch_runs) shorter than
MIN_PRUNED_RUN every row is kept; in a longer one micro_batch_prefix first tries the last row — fitting, it keeps the
whole run, so the run has a fitting row — and otherwise probes the first row (its galloping starts at index 0): where
that fits it is kept (fitting), where not the run is cut to that one row, which does not fit. So a long run holds a
fitting row of the table iff its first or its last row fits: only those are evaluated here, and every row of a
short run. Where the search would refuse for its size (more rows than MAX_EVALUATED before pruning, so perhaps after)
or add shard-group variants (--shard-group auto), None: the caller runs the search itself."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.search import (MAX_EVALUATED, MIN_PRUNED_RUN, Evaluator, _fits_any, _take, counts_label,
                                    enumerated_layouts, micro_batch_runs)
from gpuplan.planner.space import RECOMPUTE_MODES, SpaceLimits


def deciding_rows(grid: dict) -> np.ndarray:
    """Row indices of ``grid`` (non-empty) that decide whether each run of micro-batches holds a row the pruned search
    finds fitting: every row of a run shorter than MIN_PRUNED_RUN, the first and last of a longer one."""
    starts, lengths = micro_batch_runs(grid)
    position = np.arange(len(grid["micro_batch"])) - np.repeat(starts, lengths)
    length = np.repeat(lengths, lengths)
    return np.flatnonzero((length < MIN_PRUNED_RUN) | (position == 0) | (position == length - 1))


def counts_that_fit(ev: Evaluator, counts: tuple[int, ...], target_batch: float, max_tp: int,
                    limits: SpaceLimits | None = None) -> np.ndarray | None:
    """The counts of ``counts`` (sorted, unique) where search_layouts(ev, counts, target_batch, max_tp, limits) has a
    row that fits, with its refusals for enumerating too many layouts; None where the caller must run that search
    (see the module's docstring)."""
    limits = limits or SpaceLimits()
    if limits.shard_group_search:
        return None
    grid = enumerated_layouts(ev, counts, target_batch, max_tp, limits, counts_label(len(counts)))
    if len(grid["gpus"]) > MAX_EVALUATED:  # the pruned search may refuse for its size: it decides
        return None
    if not len(grid["gpus"]):
        return np.zeros(0, dtype=np.int64)
    modes = tuple(m for m in RECOMPUTE_MODES if m in limits.recompute)
    rows = deciding_rows(grid)
    fits = _fits_any(ev, _take(grid, rows), modes)
    return np.unique(grid["gpus"][rows][fits])
