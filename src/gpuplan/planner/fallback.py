"""The smaller GPU counts the planner falls back to when no layout uses (or fits) every GPU asked, the rest
left idle: planner.plan.best_plan (`train`, `budget`) and jobs.plan.search (`plan`) take them from here.

Not just the largest smaller count where something fits: that made more GPUs answer slower. `train gpt2-xl --gpu
tpu-v4 --tokens 7.05e13 --global-batch 8300 --tp 1` (4,096 chips a node) answered 61.4 days on 22,754 GPUs asked
(20,480 used: the node multiple below it) but 126.1 days on 24,576 or 32,768 asked (6,144 used): 8,300 sequences
split over no layout of 16,384 or 12,288, the common sizes tried first, and 20,480 = 5 x 4,096 was never tried
(A9 w14). The first group here is the largest few counts below the ask that have a layout at all (enumerated,
nothing timed), searched together and ranked, from the node multiples and multiples of 64 and 256 down to half
the largest count already searched (the ask or the common size below an irregular ask, whose own fallbacks are
the same window) and the common sizes; then, one at a time as before, the rest of fallback_counts."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.search import Evaluator, LayoutTable, search_layouts
from gpuplan.planner.sorted_runs import run_bounds
from gpuplan.planner.space import SpaceLimits, batch_target, divisors, enumerate_layouts, range_counts

STEPS_BELOW = 16
"""Multiples of each step (the node, 64, 256) below a count that the first group may draw on: the 16 below
24,576 on 4,096-chip TPU v4 nodes reach 20,480 (A9 w14); more only adds enumeration time (~1 ms a count)."""

FIRST_GROUP = 4
"""Counts with a layout in the first group, searched together: the largest usable ones; a 4th-largest count
below is already at most the 4th multiple of the node below, slower wherever the step time scales."""


EXACT_BATCH_COUNTS_MAX = 1024
"""Most counts exact_batch_counts hands the search: gpt2-xl's 8,300 sequences on up to 32,768 TPU v4 chips have
666 (71,766 layouts enumerated in 43 ms, searched in 0.17 s), up to 131,072 (a deadline's range) 830; past it
none (the fallbacks above stand), so a batch with many divisors (735,134,400 one-token sequences, 1,875 counts up
to 131,072: tests/test_hostile_inputs_2026_12_05.py) keeps the search it had, not a MAX_CANDIDATES refusal."""


FEW_SEQUENCES = 64
"""Without an exact batch, a step of at most this many sequences (dp <= it) makes the counts a layout can use few
enough to weigh them all as an exact batch's are: deepseek-v2-lite at seq 131,072 (32 sequences a step) on L40S
answered 15.38 days on 2,304 asked, 16.96 on 2,048 and 12.93 on 1,536 (1,512 = dp21 tp8 pp9 used): more asked,
slower (helper PL2, s24)."""

FEW_SEQUENCES_COUNTS_MAX = 4096
"""Most counts weighed so (FEW_SEQUENCES): dp <= 64 x tp x cp x pp stays below it for the catalog's models (that
ask has 1,419 up to 8,191); past it none, as EXACT_BATCH_COUNTS_MAX. The cost, measured whole process (review R2 S1,
session 24; before -> after this rule, same CPU): qwen3-30b-a3b h100 seq 65,536 `plan --gpus 8191` 0.39 -> 4.0 s,
`--gpus 3000` 0.86 -> 4.5 s; deepseek-v3 h200 seq 131,072 `--gpus 10000` 0.35 -> 3.5 s (same answer); llama-3.1-8b
a100 seq 131,072 `--gpus 3000` 0.60 -> 1.7 s. Long-context asks on many GPUs pay it; the README asks do not. Since
session 25 the failure plans of its ~11,000 (count, writers) groups are worked out over arrays (jobs/plan/failure_plans):
4.4 -> 3.2 s, 3.5 -> 2.9 s and 1.7 -> 1.4 s for the first, third and fourth (docs/performance.md)."""


def exact_batch_counts(ev: Evaluator, gpus: int, target: float, max_tp: int,
                       limits: SpaceLimits | None) -> tuple[int, ...]:
    """Under an exact global batch (--global-batch: dp divides it), the counts up to ``gpus`` a layout can use:
    dp x tp x cp x pp with dp a divisor of the batch, tp a divisor of the heads up to ``max_tp``, cp up to
    ``limits.max_cp`` and pp up to the layers (planner.space.structures' ranges, or the degree fixed; a superset:
    the search drops what its rules refuse). Searched beside the count asked, the rest idle, so more GPUs
    asked never answer slower than fewer: each smaller ask's answer is among them (A9 w14: gpt2-xl on TPU v4
    answered 61.4 days on 20,480 asked, 18.8 on 16,384). () without an exact batch unless a step holds at most
    FEW_SEQUENCES sequences (dp then ranges over 1 to that): dp may otherwise be any count and the fallbacks stand."""
    if limits is None:
        return ()
    fixed, spec, sequences = limits.fixed, ev.spec, batch_target(target, gpus, limits)
    if not limits.exact_batch and target > FEW_SEQUENCES:
        return ()
    dps = [d for d in (divisors(max(1, round(sequences))) if limits.exact_batch else
                       range(1, min(int(sequences), FEW_SEQUENCES) + 1)) if fixed.get("dp", d) == d]
    tps = [t for t in range(1, max_tp + 1) if spec.attention.num_heads % t == 0 and fixed.get("tp", t) == t]
    cps = [c for c in range(1, limits.max_cp + 1) if (c == 1 or ev.memory.seq_len % (2 * c) == 0)
           and fixed.get("cp", c) == c]
    pps = [p for p in range(1, spec.num_layers + 1) if fixed.get("pp", p) == p]
    found = {d * t * c * p for d in dps for t in tps for c in cps for p in pps if d * t * c * p <= gpus}
    most = EXACT_BATCH_COUNTS_MAX if limits.exact_batch else FEW_SEQUENCES_COUNTS_MAX
    return tuple(sorted(found)) if len(found) <= most else ()


def has_layout(ev: Evaluator, gpus: int, target: float, max_tp: int, limits: SpaceLimits | None) -> bool:
    """Whether any layout uses all ``gpus`` for ``target`` sequences a step under ``limits``: enumerated, nothing
    timed (~1 ms a count); fallback_groups' test and jobs.plan.fallbacks_told's."""
    return bool(len(enumerate_layouts(ev.spec, (gpus,), ev.memory.seq_len, target, max_tp, limits)["gpus"]))


def fallback_counts(gpus: int, per_node: int) -> list[int]:
    """Smaller counts to try when no layout uses all ``gpus``: multiples of the node, of 64, and
    the common cluster sizes below it, largest first."""
    found = {gpus - gpus % step for step in (per_node, 64, 256) if gpus - gpus % step > 0}
    found |= {c for c in range_counts(1, gpus)}
    return sorted((c for c in found if 0 < c < gpus), reverse=True)[:12]


def counts_below(gpus: int, below: int, per_node: int) -> tuple[int, ...]:
    """Candidates under ``below`` (the smallest count already searched for ``gpus``): the STEPS_BELOW
    multiples of the node, of 64 and of 256 under ``below`` down to half of it, the common sizes under it and
    fallback_counts(gpus); largest first. below 24,576 on 4,096-chip TPU v4 nodes: 20,480, 16,384, 12,288, ..."""
    found = {c for c in fallback_counts(gpus, per_node) if c < below}
    for step in {per_node, 64, 256}:
        top = (below - 1) // step * step
        found |= {top - i * step for i in range(STEPS_BELOW) if top - i * step >= max(1, below // 2)}
    found |= set(range_counts(1, below - 1))
    return tuple(sorted((c for c in found if 0 < c < below), reverse=True))


def windows_below(gpus: int, below: int, per_node: int) -> tuple[int, ...]:
    """counts_below(gpus, below) with the stepped counts of each lower window (counts_below of below // 2,
    below // 4, ...), largest first: where a window holds no count with a layout, the next one down is the window a
    smaller ask draws on. Without them 8,192 L40S asked for deepseek-v2-lite at seq 131,072 (dp at most 32) fell to
    the common sizes (768: 16.19 days) while 4,096 asked found 2,304 = 9 x 256 in its own window (15.38 days): more
    GPUs asked, slower (helper PL2, s24). fallback_groups tests them in order (has_layout, ~1 ms a count) and stops
    at FIRST_GROUP usable counts: at most 48 more a window, log2(below) windows."""
    found: set[int] = set()
    top = below
    while top > 1:
        found.update(counts_below(gpus, top, per_node))
        top //= 2
    return tuple(sorted(found, reverse=True))


def fallback_groups(ev: Evaluator, gpus: int, below: int, target: float, max_tp: int,
                    limits: SpaceLimits | None, known: dict[int, bool] | None = None) -> list[tuple[int, ...]]:
    """The groups of counts to search in turn for ``gpus`` where nothing fits on the counts from ``below``
    up: the FIRST_GROUP largest counts_below with any layout, together with the counts an exact batch allows below
    ``below`` (exact_batch_counts: a common size no layout uses weighs them as an irregular one does, so 24,576
    asked answers no slower than 22,754) (enumerated only; plan's and train's alike, at a given MFU too), then each
    remaining fallback_counts(gpus) under them on its own (fewer GPUs hold more per GPU), largest first. ``known``:
    has_layout's answers by count for this ``target`` and ``limits``, shared by a caller that asks for many counts
    (their windows overlap: `plan --seq-len 16M` on 256 counts with no layout tested 47,277 counts, 9.5 s; hostile
    wave 29)."""
    usable: list[int] = []
    known = {} if known is None else known
    exact = exact_batch_counts(ev, below - 1, target, max_tp, limits) if below > 1 else ()
    for count in windows_below(gpus, below, ev.cluster.gpus_per_node):
        if count not in known:
            known[count] = has_layout(ev, count, target, max_tp, limits)
        if known[count]:
            usable.append(count)
            if len(usable) == FIRST_GROUP:
                break
    rest = [(c,) for c in fallback_counts(gpus, ev.cluster.gpus_per_node) if c < min(usable, default=below)]
    return ([tuple(sorted(set(usable) | set(exact), reverse=True))] if usable or exact else []) + rest


def rows_by_count(table: LayoutTable) -> dict[int, LayoutTable]:
    """The rows of each GPU count in ``table``, in their order there."""
    if not len(table):
        return {}
    order = np.argsort(table["gpus"], kind="stable")
    counts = table["gpus"][order]
    ordered = table.take(order)  # one gather, then each count's rows a slice of it (views, not ~700 gathers:
    # 1.2 s of `plan qwen3-30b-a3b --global-batch 1000 --days 120`, 976,059 rows on 758 counts; w15 W4)
    return {int(counts[a]): ordered.take(slice(a, b)) for a, b in zip(*run_bounds(counts))}


def with_fallbacks(ev: Evaluator, waiting: dict[int, list[tuple[int, ...]]], table: LayoutTable, target: float,
                   max_tp: int, limits: SpaceLimits, exhaustive: bool) -> LayoutTable:
    """``table`` plus, for each asked count in ``waiting`` (its fallback_groups), the rows of the first group
    with a fitting layout (carrying ``gpus_asked``: the difference stays idle). In rounds, each round's new
    counts searched at once and a count already searched taken from its rows: `plan --gpus 1,2,...,4096`
    ran 647 one-count searches. A smaller count's rows enter the table once, whichever asked counts fell back
    on it: not again where the table already holds that count (searched for itself, or standing for a count
    asked) nor for a second asked count whose group holds it too (the first keeps them: its ``gpus_asked``
    and its place, so a tie broken by position breaks as before). `plan qwen3-30b-a3b --gpu h100 --tokens 2T
    --global-batch 1000 --days 120`: 65,536, 98,304 and 131,072 GPUs (no layout) fell back on 694, 732 and
    756 counts, 2.88 M rows, each of its 24-GPU layouts four times in the top-10 table; now 0.98 M once (w15 W5)."""
    extra: list[LayoutTable] = []
    waiting = {count: groups for count, groups in waiting.items() if groups}
    rows_of = rows_by_count(table) if waiting else {}  # split only when a count needs a fallback
    held = set(rows_of)  # the counts whose rows the table (or extra) already holds
    parts_of: dict[tuple[int, ...], list[tuple[int, LayoutTable]]] = {}  # a group's rows, per count
    while waiting:
        tries = {count: groups.pop(0) for count, groups in waiting.items()}
        new = tuple(sorted({c for group in tries.values() for c in group} - set(rows_of)))
        if new:
            rows_of |= dict.fromkeys(new, LayoutTable({})) | rows_by_count(
                search_layouts(ev, new, target, max_tp, limits, exhaustive,
                               label=f"{len(new):,} smaller GPU count(s) tried where nothing fit"))
        for count, group in tries.items():
            if group not in parts_of:  # the same group serves many counts (an exact batch's counts below each)
                parts_of[group] = _group_parts(rows_of, group)
            parts = parts_of[group]
            if any(p["fits"].any() for _, p in parts):  # the group's rows go into the table once, in the one
                # concat below (not gathered per group first: ~2.3 M rows copied twice; w15 W4)
                extra += [LayoutTable(p.columns | {"gpus_asked": np.full(len(p), count)})
                          for c, p in parts if c not in held]
                held |= {c for c, _ in parts}
                del waiting[count]
        waiting = {count: groups for count, groups in waiting.items() if groups}
    return LayoutTable.concat([table] + extra) if extra else table


def _group_parts(rows_of: dict[int, LayoutTable], group: tuple[int, ...]) -> list[tuple[int, LayoutTable]]:
    """(count, its rows) of ``group``'s counts with rows (``rows_of``: each count's rows, all searched), on the
    columns they all have but ``gpus_asked``."""
    parts = [(c, rows_of[c]) for c in group if len(rows_of[c])]
    shared = set.intersection(*(set(p.columns) for _, p in parts)) - {"gpus_asked"} if parts else set()
    return [(c, LayoutTable({k: p[k] for k in shared})) for c, p in parts]
