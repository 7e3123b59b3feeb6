"""--shard-group auto: the planner searches HSDP's shard group itself (issue 37 point 3).

For every layout the plain search (planner.search.search_layouts) evaluated, whose framework runs a shard group at
its ZeRO stage (framework_rules.HSDP_ZERO_STAGES), the candidate groups are the GPUs a node (Cluster.gpus_per_node:
the catalog's, or --gpus-per-node) times a power of two that divide dp x cp and are smaller than it (node_groups):
a group of whole nodes (core.time.step: a group rides NVLink when it spans no more than a node), as every group
gpuplan's published HSDP rows ran is (jobs.validation.gpu_hours: OLMo 3's 8, one node, and 64; BloombergGPT's MiCS
128). Each
variant is evaluated by the same Evaluator with that group (memory: core.memory.model_states.state_shards; time:
core.comm.dp_costs' HSDP all-reduce), and ranked with the plain rows by the same estimate: the table gains a
``shard_group`` column (0: plain, every data-parallel rank shards), which planner.plan.row_layout reads.

Which rows: a shard group smaller than dp x cp holds each model state on fewer ranks, so
per GPU it needs at least the memory plain sharding needs (state_shards; the activations do not depend on it).
A layout that fits in no recompute mode plainly fits in none with a group, so only the rows that fit are varied
(pruned search: from the row's own recompute mode up; exhaustive: each (layout, mode) row in its own mode), and of
those (pruned search) only the rows whose variant could rank first at their GPU count by the steady slow end
(RankBound: a bound on that measure, not on the failure share or a ramp's factor).

The bound: one evaluation pass per distinct group (and recompute mode) of a search (two under --exhaustive), at most
log2(largest dp x cp / node) groups -- 14 for the 131,072-GPU deadline range on 8-GPU nodes, 6 for 512 GPUs --; at
most that many variants a row that could win, and no more than MAX_SHARD_GROUP_VARIANTS in all. The groups are taken
from the smallest up (one node, two, ...), first on the rows that could rank first (both searches): a group whose
rows would pass the cap is left out and the larger ones, with fewer rows, still tried; then (--exhaustive) on every
other row, a group at a time while the cap allows, so --exhaustive never answers worse than the pruned search for
the cap. `plan`'s answer names the groups cut (capped_groups, jobs.plan.shard_group_told).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuplan.planner.framework_rules import HSDP_ZERO_STAGES
from gpuplan.planner.space import DEGREES, RECOMPUTE_MODES, SpaceLimits, expert_region_ranks

MAX_SHARD_GROUP_VARIANTS = 400_000
"""HSDP variants one search evaluates beyond its plain rows: half the plain search's own evaluated-layout limit
(planner.search.MAX_EVALUATED, 800,000, set by its memory budget), so the two together stay within 1.5x of the
plain search's worst case in time and memory."""


def node_groups(data: int, node: int) -> tuple[int, ...]:
    """Shard groups searched for a layout with ``data`` = dp x cp data-parallel ranks on ``node``-GPU nodes: a node
    times a power of two (1, 2, 4, ... nodes) that divides ``data`` and is smaller than it, ascending (() where
    ``data`` is not a multiple of a node). 512 ranks on 8-GPU nodes: 8, 16, 32, 64, 128, 256; 192: 8, 16, 32, 64
    (not 24, 48 or 96: a fixed --shard-group 24 times one); on 1-GPU nodes (--gpus-per-node 1) from 2 up, 16 ranks:
    2, 4, 8 (a group of 1 shards nothing: DDP, which --shard-group 1 is refused as). The powers of two bound the
    distinct groups of a whole search to log2(largest dp x cp / node), 14 on 131,072 GPUs, each one evaluation pass
    (module docstring)."""
    if node < 1 or data % node:
        return ()
    return tuple(node * 2**k for k in range((data // node).bit_length()) if (data // node) % 2**k == 0
                 and 2 <= node * 2**k < data)  # >= 2: a group of 1 is DDP, refused as a number (framework_rules)


def with_shard_groups(evaluator, table, limits: SpaceLimits, exhaustive: bool = False):
    """``table`` (a plain search's LayoutTable, rates applied) with a ``shard_group`` column (0 on its rows) and the
    HSDP variants of its rows that fit, timed and rated by the same Evaluator with the group (module docstring)."""
    plain = _with_column(table, 0)
    if not len(table):
        return plain
    stages = HSDP_ZERO_STAGES.get(limits.framework, HSDP_ZERO_STAGES["generic"])
    rows = np.flatnonzero(np.isin(table["zero"], [z for z in stages if z >= 1]) & (table["fits"] | exhaustive))
    if not len(rows):
        return plain
    data = table["dp"][rows] * table["cp"][rows]
    node = evaluator.cluster.gpus_per_node
    groups = sorted({g for d in np.unique(data).tolist() for g in node_groups(int(d), node)})
    modes = tuple(m for m in RECOMPUTE_MODES if m in limits.recompute)
    bound, varied = RankBound(table), {}
    parts, spent, capped = [plain], 0, 0
    for group in groups:  # the smallest first: the rows that could rank first (both searches; a group the cap
        divides = (data % group == 0) & (data > group)  # cannot hold is left out, the larger ones still tried)
        mine = _with_experts_fit(evaluator, table, rows[divides & bound.could_win(rows)], group, limits)
        if spent + len(mine) > MAX_SHARD_GROUP_VARIANTS:
            capped |= 1 << _bit(group, node)  # said so: capped_groups
            continue
        spent += len(mine)
        varied[group] = mine
        parts.append(_variants(evaluator, table, mine, group, modes, exhaustive, bound))
    for group in varied if exhaustive else ():  # then every other row, while the cap allows: --exhaustive never
        divides = (data % group == 0) & (data > group)  # answers worse than the pruned search for the cap
        rest = np.setdiff1d(_with_experts_fit(evaluator, table, rows[divides], group, limits), varied[group])
        if spent + len(rest) > MAX_SHARD_GROUP_VARIANTS:
            capped |= BOUND_ONLY << _bit(group, node)
            continue
        spent += len(rest)
        parts.append(_variants(evaluator, table, rest, group, modes, exhaustive, bound))
    joined = type(table).concat(parts)
    joined.columns[CAPPED_COLUMN][:] = capped
    return joined


CAPPED_COLUMN = "shard_groups_capped"
"""The column (every row of one search alike, 0 where the cap never acted) saying which groups
MAX_SHARD_GROUP_VARIANTS cut: bit k (a group of a node x 2^k) set where the group was left out, bit 32 + k where the
exhaustive search varied only the rows that could rank first (RankBound), as the pruned search does. capped_groups
reads it; `plan`'s shard-group line says so (jobs.plan.shard_group_told)."""
BOUND_ONLY = 1 << 32


def _bit(group: int, node: int) -> int:
    """k of a group of node x 2^k (node_groups)."""
    return (group // node).bit_length() - 1


def capped_groups(table, node: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(groups left out, groups the exhaustive search varied only on the rows that could rank first) by the cap in
    any search that made ``table`` (CAPPED_COLUMN; ``node``: GPUs a node), ascending; ((), ()) where it never acted."""
    if CAPPED_COLUMN not in table.columns or not len(table):
        return (), ()
    mask = int(np.bitwise_or.reduce(table[CAPPED_COLUMN]))  # several searches (counts, fallbacks): any cut named
    left = mask & (BOUND_ONLY - 1)
    return tuple(tuple(node * 2**k for k in range(32) if part >> k & 1) for part in (left, mask >> 32 & ~left))


def _with_experts_fit(evaluator, table, rows: np.ndarray, group: int, limits: SpaceLimits) -> np.ndarray:
    """``rows`` less the MoE ones whose experts do not lay out within ``group`` (_experts_fit)."""
    return rows[_experts_fit(table, rows, group, limits)] if evaluator.spec.moe is not None else rows


class RankBound:
    """Which rows' HSDP variants could still rank first at their GPU count (the pruned search varies only those).

    A row's lower bound is (plain step - plain exposed data-parallel comm) / global batch; the count's best is the
    least step x (1 + uncertainty) / global batch (the ranking's slow end, planner.plan.slow_end_seconds_per_token)
    over its plain rows and the variants found so far. The lower bound holds because a group changes the step's
    data-parallel collectives and nothing that can fall below the plain row's: fewer shards hold more optimizer
    work a GPU (core.time.step optimizer_shards) and more memory, so the same or a heavier recompute mode
    (tests/test_shard_group_search.py checks it on every variant of three exhaustive searches), and the uncertainty
    is >= 0. What it guarantees is about the steady slow end only: the ranking's other factors are not in the bound
    (each row's failure share, which a ZeRO-0 row's one-replica checkpoint or a MiCS group's writers change; a batch
    ramp's factor; validate's kind correction), so where they reorder a count's rows a pruned variant could have
    ranked first (none found: review R1 N4, ~20 asks; --exhaustive varies every row). NaN (untimed) rows never win."""

    def __init__(self, table) -> None:
        self.counts, self.at = np.unique(table["gpus"], return_inverse=True)
        self.best = np.full(len(self.counts), np.inf)
        self.lower = (table["step_seconds"] - table["dp_comm_seconds"]) / table["global_batch"]
        self.found(table)

    def found(self, table) -> None:
        """Lowers each count's best with the fitting rows of ``table`` (plain or a group's variants)."""
        per_sequence = table["step_seconds"] / table["global_batch"]
        slow = per_sequence * (1 + table["uncertainty"]) if "uncertainty" in table.columns else per_sequence
        at = np.searchsorted(self.counts, table["gpus"])
        np.fmin.at(self.best, at, np.where(table["fits"], slow, np.inf))

    def could_win(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of ``rows`` could still rank first at its count with a group."""
        return self.lower[rows] < self.best[self.at[rows]]


def _variants(evaluator, table, rows: np.ndarray, group: int, modes: tuple[str, ...], exhaustive: bool, bound):
    """The HSDP variants of ``rows`` with ``group`` (_evaluate), with their column; ``bound`` learns them."""
    variant = _evaluate(replace(evaluator, shard_group=group), table, rows, modes, exhaustive) if len(rows) else rows
    if not len(variant):
        return type(table)({})
    bound.found(variant)
    return _with_column(variant, group)


def _with_column(table, group: int):
    """``table`` with the shard_group column set to ``group`` (0: plain sharding) and CAPPED_COLUMN's 0."""
    return type(table)(table.columns | {"shard_group": np.full(len(table), group, dtype=np.int64),
                                        CAPPED_COLUMN: np.zeros(len(table), dtype=np.int64)})


def _experts_fit(table, rows: np.ndarray, group: int, limits: SpaceLimits) -> np.ndarray:
    """Which MoE ``rows`` lay their experts out within ``group`` (space.expert_region_ranks with the group: ep
    divides the group's ranks x tp / etp; DeepSpeed's MiCS: ep 1), as a fixed --shard-group's search keeps them."""
    grouped = replace(limits, shard_group=group)
    region = {}
    keep = np.zeros(len(rows), dtype=bool)
    for k, i in enumerate(rows.tolist()):
        key = (int(table["dp"][i]), int(table["cp"][i]), int(table["tp"][i]))
        if key not in region:
            region[key] = expert_region_ranks(*key, grouped)
        keep[k] = region[key] > 0 and region[key] % int(table["ep"][i]) == 0
    return keep


def _evaluate(evaluator, table, rows: np.ndarray, modes: tuple[str, ...], exhaustive: bool):
    """The rows ``rows`` of ``table`` evaluated by ``evaluator`` (with its group): in their own recompute mode
    (exhaustive), else from it up to the first mode that fits; the fitting ones timed and rated."""
    grid = {name: table[name][rows] for name in DEGREES}
    start = table["recompute"][rows]
    parts = []
    if exhaustive:
        for index, mode in enumerate(RECOMPUTE_MODES):
            _fitting_part(evaluator, grid, np.flatnonzero(start == index), mode, parts)
        return _rated(evaluator, table, parts)
    waiting = np.zeros(len(rows), dtype=bool)
    for mode in modes:
        waiting |= start == RECOMPUTE_MODES.index(mode)  # a row joins at its plain mode: less cannot fit
        left = np.flatnonzero(waiting)
        if not len(left):
            continue
        fitted = _fitting_part(evaluator, grid, left, mode, parts)
        waiting[left[fitted]] = False
    return _rated(evaluator, table, parts)


def _fitting_part(evaluator, grid: dict, index: np.ndarray, mode: str, parts: list) -> np.ndarray:
    """Evaluates rows ``index`` of ``grid`` in ``mode``; appends the fitting ones (timed) to ``parts``; returns
    which fitted."""
    if not len(index):
        return np.zeros(0, dtype=bool)
    sub = {k: v[index] for k, v in grid.items()}
    peak, total, excess = evaluator.memory_of(sub, mode)
    fits = evaluator.fits(total, excess)
    if fits.any():
        parts.append(evaluator.evaluate({k: v[fits] for k, v in sub.items()}, mode,
                                        memory=(peak[fits], total[fits], excess[fits])))
    return fits


def _rated(evaluator, table, parts: list):
    """The evaluated parts as one table, rated (MFU, tokens/s, uncertainty) as the plain rows are."""
    joined = type(table).concat(parts)
    return evaluator.rates(joined) if len(joined) else joined
