"""The deadline rule's keys (planner.plan.deadline_order and ranking(..., "deadline")), numpy only: a GPU count
meets a deadline where its layout ranked first by time (the one `plan/train --gpus N` answers: the slow end with
failures, planner.plan.ranked_seconds_per_token) does, and the answer is that layout. Until s24 (helper PL2) the
cheapest row meeting it on the fewest GPUs answered, a layout `--gpus N` could rank below: qwen2.5-7b on 16.7T
tokens of B200 under deepspeed, `--days 26.2` solved 368 on dp368 (25.5 days with failures) where `--gpus 368`
answered dp184 tp2 (28.4: 0.66 s ±9% against 0.59 s ±22%, first at its slow end); now 384 (dp384, 24.49 days)."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.sorted_runs import run_bounds


def firsts_by_count(gpus: np.ndarray, ranked: np.ndarray) -> np.ndarray:
    """Whether each row is its GPU count's first by ``ranked`` (seconds a sequence as time ranks them; the earlier
    row on a tie), as a bool array in the rows' order."""
    first = np.zeros(len(gpus), dtype=bool)
    if len(gpus):
        order = np.lexsort((np.arange(len(gpus)), ranked, gpus))
        starts, _ = run_bounds(gpus[order])
        first[order[starts]] = True
    return first


def deadline_rows_order(gpus: np.ndarray, cheapest: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The deadline rule's order of rows that all meet the deadline: the counts whose first row (``first``) is among
    them, fewest GPUs first, each count's first row, then its others, cheapest first (``cheapest``: cost, or
    GPU-hours unpriced); then the rows of counts whose first row misses it, fewest GPUs, then cheapest."""
    first = first.astype(bool)
    counted = np.isin(gpus, gpus[first])
    return np.lexsort((cheapest, ~first, gpus, ~counted))
