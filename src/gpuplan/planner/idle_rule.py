"""When ranking by time may leave GPUs of a common-size count asked idle (session 25, helper PM2), numpy only: a row
on fewer GPUs than the count it stands for (``gpus_asked``: the counts an exact batch or a step of few sequences
allows below it, planner.plan.counts_with_alternatives) ranks ahead of the count's own best row only where the model
is confident it is faster: the whole count's point time (with failures at the high end of their range, the ranked
time / (1 + u): planner.plan.ranked_seconds_per_token) is more than 1 + sqrt(u_fewer^2 + u_whole^2) times the
fewer's (u: each layout's ± model, planner.uncertainty; the spread of the difference of two independent estimates).
Otherwise the user's whole cluster answers: a win inside the model's own band is no reason to leave GPUs idle. A
count that is not a common size (2^k, 3 x 2^k) keeps ranking its alternatives as ranked: its own layouts are forced
(1,113 = 3 x 7 x 53 allows dp 371 x pp 3; 257 TPU v4 chips, prime, need ZeRO-3 and full recompute where 256 run
without, 63.9 against 50.7 days: 26%, inside MoE's ±30.7% combined), the counts below are the ones its user would
run. Where no row uses the whole count (no layout, none fits, none completes with failures) the rows below answer,
as before (planner.fallback). Ranking by cost pays for the GPUs given that a row leaves idle (idle_charged).

Measured (docs/training.md, 'What the answers guarantee'): `train llama-3.1-405b --gpus 16384 --global-batch 2048
--seq-len 8192 --mfu predicted` answered 14,336 GPUs after 208a97ae (dp64 tp8 pp7 vpp18 cp4, 49.1% MFU, above any
published dense bf16 Hopper MFU) where the best layout of all 16,384 runs at 40.3% (Meta's published 38-43%): 8.4%
faster with failures, inside sqrt(0.082^2 + 0.217^2) = 23.2%, so 16,384 answers; `plan llama-3.1-8b --gpu h100
--global-batch 1000 --gpus 1024` still runs on 1,000 (1.88x, beyond 16.3%). Tried first and not taken: the fewer's
slow end below the whole's fast end (u_fewer + u_whole, about): it moved 165 irregular asks of the session's sweep
(500 asked deepseek-v2-lite on H100: 0.133 days on 496 -> 0.196 on all 500) and 12 common ones (768 asked
llama-3.1-8b --global-batch 1000: 0.209 on 640 -> 0.301), 163 pairs slower than a smaller ask against 23."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.space import is_common_size


def idle_charged(table, cost: np.ndarray) -> np.ndarray:
    """``cost`` (each row's, of the GPUs it uses) x charged_gpus / gpus where the table carries ``charged_gpus`` (the
    count given that the row stands for: jobs.plan.search.search_on sets it where --gpus was given), else ``cost``:
    ranking by cost pays for the GPUs given that a row leaves idle, as whoever holds them does (session 26). Before,
    `plan llama-3.1-8b --gpu h100 --tokens 1T --gpus 3000 --rank-by cost` answered 2,048 GPUs in 17.29 h ($141,278
    for the 2,048; 3,000 x 17.29 h x $3.99 = $206,961 for the cluster) where 2,944 run it in 13.20 h ($158,004 for
    the 3,000): cost fell with the count used, so the cheapest row was the fewest GPUs whatever it left idle. Not a
    default range's or a deadline's count: nobody holds those (jobs.plan.search.idle_told)."""
    if "charged_gpus" not in table.columns or not len(table):
        return cost
    return cost * (table["charged_gpus"] / table["gpus"])


def combined_band(table, other: int) -> np.ndarray:
    """Each row's ± model combined with row ``other``'s, sqrt(u^2 + u_other^2) (two layouts' errors taken as
    independent: the spread of the difference of two estimates), 0 where the table carries no ``uncertainty``."""
    if "uncertainty" not in table.columns:
        return np.zeros(len(table))
    u = np.asarray(table["uncertainty"], dtype=float)
    return np.hypot(u, u[other])


def point_seconds(table, ranked: np.ndarray) -> np.ndarray:
    """The ranked time without the slow end: ``ranked`` / (1 + u) (the point estimate with failures at the high end
    of their range, x any kind correction and ramp factor the ranking takes)."""
    return ranked / (1 + np.asarray(table["uncertainty"], dtype=float)) if "uncertainty" in table.columns else ranked


def held_idle_rows(table, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the time ranking by time sorts by, whether each row is held behind its count's own best row) for ``ranked``
    (each row's ranked seconds a sequence). A row on fewer GPUs than its ``gpus_asked`` is held unless the best row on
    all of them (by ranked time) takes more than 1 + combined_band of its time at the point (point_seconds): its key
    is raised to that row's ranked time and it sorts after it (the bool, the tie-break before its own ranked time:
    planner.plan.ranking). Tables without ``gpus_asked``, or with no such row, come back unchanged."""
    return _held(table, ranked)[:2]


def moved_rows(table, ranked: np.ndarray) -> np.ndarray:
    """The held rows whose place the rule moved: ranked at or below their count's best row on all of it (a held row
    slower than it sorts where its own time puts it). Off the Pareto front (jobs.plan.ranked_columns.front_rows):
    ranking answers none of them while the count is asked whole."""
    return _held(table, ranked)[2]


def _held(table, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, held, moved): held_idle_rows' two and moved_rows'."""
    held = np.zeros(len(table), dtype=bool)
    if not len(table) or "gpus_asked" not in table.columns:
        return ranked, held, held
    gpus, asked = np.asarray(table["gpus"]), np.asarray(table["gpus_asked"])
    idle = gpus < asked
    if not idle.any():
        return ranked, held, held
    key, point, moved = np.array(ranked, dtype=float), point_seconds(table, ranked), held.copy()
    for count in sorted(set(asked[idle].tolist())):  # not np.unique: it imports numpy.ma (tests/test_startup.py)
        whole = np.flatnonzero((gpus == count) & (asked == count))
        if not len(whole) or not is_common_size(count):  # nothing on all of them ranked (planner.fallback), or an
            continue  # irregular count, whose own layouts are forced (1,113 = 3 x 7 x 53): the rows below as ranked
        best = whole[np.argmin(ranked[whole])]
        rows = idle & (asked == count) & ~(point * (1 + combined_band(table, best)) < point[best])
        held |= rows
        moved |= rows & (ranked <= ranked[best])
        key[rows] = np.maximum(key[rows], ranked[best])
    return key, held, moved
