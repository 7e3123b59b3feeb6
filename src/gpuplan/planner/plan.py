"""A plan: one evaluated layout — its memory, step time, MFU and what a run of N tokens takes —
from the same functions the layout search uses, so the search's figure for a layout and the
plan's are the same number. ``best_plan`` is the planner's choice for a GPU count (any count:
when no layout can use all of them, smaller counts that work, with the rest idle: planner.fallback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.time.step import StepBreakdown, step_time
from gpuplan.core.units import SECONDS_PER_DAY, plural
from gpuplan.errors import InputError, NoLayoutFits
from gpuplan.planner.deadline_rule import deadline_rows_order, firsts_by_count
from gpuplan.planner.fallback import exact_batch_counts, fallback_groups
from gpuplan.planner.fit_count import counts_that_fit
from gpuplan.planner.idle_rule import held_idle_rows, idle_charged
from gpuplan.planner.search import Evaluator, LayoutTable, rule_refusal, search_layouts
from gpuplan.planner.space import RECOMPUTE_MODES, SpaceLimits, batch_target, is_common_size, range_counts

RANK_BY = ("time", "cost", "gpus")


@dataclass(frozen=True)
class Plan:
    """One layout on one cluster, evaluated."""

    layout: ParallelLayout
    recompute: str
    step: StepBreakdown
    memory: M.MemoryBreakdown
    fixed_bytes: float
    """CUDA context + NCCL buffers (outside the allocator)."""
    budget_bytes: float
    """Capacity x (1 - margin)."""
    fragmentation: float
    """The caching allocator's reserve over the allocated peak (core.memory.device_memory)."""
    mfu: float
    hfu: float
    seq_len: int
    target_batch: float
    """Sequences per step asked for (the layout's global batch is it rounded to a multiple of dp)."""
    gpus_asked: int
    fit_excess_bytes: float = 0.0
    """What the fit rule keeps free beyond the model's memory (core.memory.training.peak_and_framework_gap)."""

    @property
    def gpus(self) -> int:
        return self.layout.world

    @property
    def idle_gpus(self) -> int:
        return max(0, self.gpus_asked - self.gpus)

    @property
    def global_batch(self) -> int:
        return self.layout.batch

    @property
    def step_seconds(self) -> float:
        return float(self.step.total)

    @property
    def reserved_bytes(self) -> float:
        return self.memory.allocated * (1 + self.fragmentation)

    @property
    def total_bytes(self) -> float:
        """What the GPU must hold: reserved + runtime."""
        return self.reserved_bytes + self.fixed_bytes

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0

    @property
    def headroom_bytes(self) -> float:
        """What stays free within the budget after reserved + runtime and the fit rule's excess (< 0: over)."""
        return self.budget_bytes - self.total_bytes - self.fit_excess_bytes

    @property
    def tokens_per_second(self) -> float:
        return self.global_batch * self.seq_len / self.step_seconds

    def days(self, tokens: float) -> float:
        return tokens / self.tokens_per_second / SECONDS_PER_DAY

    def gpu_hours(self, tokens: float) -> float:
        return self.days(tokens) * 24 * self.gpus

    @property
    def batch_difference(self) -> float:
        """(chosen - asked) / asked sequences per step."""
        return self.global_batch / self.target_batch - 1

    def text(self) -> str:
        return layout_text(self.layout, self.recompute)

    def degrees(self) -> dict[str, int | str]:
        """The layout as the fields of a request (gpus, dp, tp, pp, vpp, cp, ep, zero, micro_batch,
        recompute, global_batch; etp where experts are split otherwise than tp) plus the GPUs left idle: what
        `gpuplan memory` takes to check it."""
        lay = self.layout
        return {"gpus": self.gpus, "dp": lay.dp, "tp": lay.tp, "pp": lay.pp, "vpp": lay.vpp, "cp": lay.cp,
                "ep": lay.ep, "zero": lay.zero, "micro_batch": lay.micro_batch, "recompute": self.recompute,
                "global_batch": self.global_batch, "idle_gpus": self.idle_gpus,
                **({"etp": int(lay.expert_tp)} if lay.ep > 1 and lay.expert_tp != lay.tp else {}),
                **({"shard_group": lay.shard_group} if lay.shard_group is not None else {})}


def layout_text(layout: ParallelLayout, recompute: str) -> str:
    parts = [f"dp{layout.dp}", f"tp{layout.tp}", f"pp{layout.pp}"]
    parts += [f"vpp{layout.vpp}"] if layout.vpp > 1 else []
    parts += [f"cp{layout.cp}"] if layout.cp > 1 else []
    parts += [f"ep{layout.ep}"] if layout.ep > 1 else []
    parts += [f"etp{layout.expert_tp}"] if layout.ep > 1 and layout.expert_tp != layout.tp else []  # core.expert_layout
    again = "no recompute" if recompute == "none" else f"{recompute} recompute"
    hsdp = f" (HSDP: shard {layout.shard_group})" if layout.shard_group and layout.shard_group < layout.dp * layout.cp \
        else ""  # a group of every data-parallel rank is plain sharding
    return " ".join(parts) + f" ZeRO-{layout.zero} mb{layout.micro_batch}{hsdp}, {again}"


def evaluate_layout(ev: Evaluator, layout: ParallelLayout, recompute: str, target_batch: float,
                    gpus_asked: int | None = None) -> Plan:
    """The plan of exactly ``layout`` (the single-layout path of the same formulas)."""
    layout = ev.with_expert_layout(layout)  # the experts as the search laid them out (one expert TP)
    step = step_time(ev.spec, ev.cluster, ev.step_settings(recompute), dp=layout.dp, tp=layout.tp,
                     pp=layout.pp, vpp=layout.vpp, cp=layout.cp, ep=layout.ep, zero=layout.zero,
                     micro_batch=layout.micro_batch, micro_batches=layout.micro_batches_per_step,
                     shard_group=layout.shard_group)
    memory = M.peak_memory(ev.spec, layout, replace(ev.memory, recompute=recompute))
    excess = float(M.peak_and_framework_gap(ev.spec, layout, replace(ev.memory, recompute=recompute), ev.overheads,
                                            ev.fit_reserve, ev.fsdp2_pools)[1])
    rated = ev.rates(LayoutTable({"global_batch": np.array([layout.batch]), "gpus": np.array([layout.world]),
                                  "step_seconds": np.array([float(step.total)]), "pp": np.array([layout.pp]),
                                  "vpp": np.array([layout.vpp]),
                                  "recompute": np.array([RECOMPUTE_MODES.index(recompute)])}))
    return Plan(layout, recompute, step, memory, float(ev.overheads.fixed_bytes(layout)), ev.budget, ev.overheads.reserve,
                float(rated["mfu"][0]), float(rated["hfu"][0]), ev.memory.seq_len, target_batch,
                gpus_asked or layout.world, excess)


def row_layout(table: LayoutTable, i: int, expert_tp=None, shard_group=None) -> tuple[ParallelLayout, str]:
    """The layout and recompute mode of row ``i`` of a search table (``expert_tp``: the search's
    StepSettings.expert_tp, so its text names an etp other than tp; ``shard_group``: the search's HSDP group, so its
    text names it, or the row's own where the table has the column (auto); evaluate_layout sets both from the
    Evaluator)."""
    def get(name: str) -> int:
        return int(table[name][i])

    if "shard_group" in table.columns:  # --shard-group auto: each row's own (0: plain; planner.shard_group_search)
        shard_group = get("shard_group") or None

    layout = ParallelLayout(dp=get("dp"), tp=get("tp"), pp=get("pp"), vpp=get("vpp"), cp=get("cp"), ep=get("ep"),
                            etp=expert_tp, zero=get("zero"), micro_batch=get("micro_batch"),
                            global_batch=get("global_batch"), shard_group=shard_group)
    return layout, RECOMPUTE_MODES[get("recompute")]


PLATEAU_SHARE = 0.01
"""Counts whose ranking time (with failures) is within this share of the best one's are a plateau, where fewer GPUs
are preferred: a difference that small is well inside every layout's ± model (5% to 45%) and the failure rate's
range, while more GPUs cost GPU-hours in proportion and bring more interruptions. 1%: a tie-break."""


def seconds_per_sequence(table: LayoutTable) -> np.ndarray:
    """Each row's step time / global batch, s a sequence (the ranking's time before its slow end and failures)."""
    return table["step_seconds"] / (table["global_batch"] * 1.0)


def ranked_cost(table: LayoutTable, cost: np.ndarray | None) -> np.ndarray | None:
    """``cost`` as ranking by cost compares it: x each row's failure_share where the table carries it
    (ranked_seconds_per_token's failures at the high end of their range); None stays None."""
    return cost * table["failure_share"] if cost is not None and "failure_share" in table.columns else cost


def slow_end_seconds_per_token(table: LayoutTable) -> np.ndarray:
    """Each row's step time per sequence at its slow end, step / global batch x (1 + u) where the table carries the
    layout's uncertainty (planner.uncertainty) and x (1 + kind_bias) where it carries that (the checked kind first)."""
    seconds_per_token = seconds_per_sequence(table)
    if "uncertainty" in table.columns:
        seconds_per_token = seconds_per_token * (1 + table["uncertainty"])
    if "kind_bias" in table.columns:  # only where the search asked for it (UncertaintyTable.kind_correction_rows)
        seconds_per_token = seconds_per_token * (1 + table["kind_bias"])
    if "ramp_factor" in table.columns:  # a --batch-ramp's time over the steady batch's (planner.batch_ramp)
        seconds_per_token = seconds_per_token * table["ramp_factor"]
    return seconds_per_token


def ranked_seconds_per_token(table: LayoutTable) -> np.ndarray:
    """The time ranking by time compares, s per sequence: slow_end_seconds_per_token x the row's
    failure_share (its expected wall-clock with failures / failure-free, at the highest rate of the
    range the answer prints: jobs.plan.completes) where the table carries it. The Pareto front takes it over the
    rows ranking can answer (idle_rule.moved_rows off: jobs.plan.ranked_columns.front_rows): the answer is on it."""
    seconds_per_token = slow_end_seconds_per_token(table)
    return seconds_per_token * table["failure_share"] if "failure_share" in table.columns else seconds_per_token


def ranking(table: LayoutTable, rank_by: str, cost: np.ndarray | None = None) -> np.ndarray:
    """Row order, best first: by time (slow_end_seconds_per_token), cost, GPUs then time, or the deadline rule
    (deadline_order). Where the table carries ``failure_share`` (with failures and checkpoints / failure-free, each
    layout's own: jobs.plan.completes.completing_rows), time and cost are taken with failures and by time, counts within
    PLATEAU_SHARE of the best go to the fewest asked; a row leaving GPUs idle needs confidence (idle_rule)."""
    seconds_per_token, cost = ranked_seconds_per_token(table), ranked_cost(table, cost)
    if rank_by == "deadline":  # time_first: count_first_rows before the deadline's cut (jobs.plan.deadline)
        first = _time_first(table)
        return deadline_rows_order(table["gpus"], _cheapest_key(table, cost, seconds_per_token), first)
    if rank_by == "gpus":
        return np.lexsort((seconds_per_token, table["gpus"]))
    if rank_by == "cost" and cost is not None and not np.isnan(cost).all():
        return np.argsort(idle_charged(table, cost), kind="stable")  # the GPUs given left idle paid for too
    key, held = held_idle_rows(table, seconds_per_token)  # GPUs asked left idle only where confident (idle_rule)
    if "failure_share" not in table.columns or not len(table):
        return np.lexsort((table["gpus"], seconds_per_token, held, key))
    return _fewest_on_plateau(table, key, held, seconds_per_token)


def _fewest_on_plateau(table: LayoutTable, key: np.ndarray, held: np.ndarray, own: np.ndarray) -> np.ndarray:
    """By ``key`` (``held`` rows after the others on a tie, by their ``own`` time: s25 R2 S2-2), except that the rows
    within PLATEAU_SHARE of the fastest come first, the fewest GPUs asked first (gpus_asked: a count and the counts
    weighed for it stay one choice)."""
    asked = table["gpus_asked"] if "gpus_asked" in table.columns else table["gpus"]
    order = np.lexsort((table["gpus"], own, held, key))
    near = (key <= key.min() * (1 + PLATEAU_SHARE))[order]
    first = order[near]  # few rows: re-sorted by the count asked, their time order kept within it (stable)
    return np.concatenate((first[np.argsort(asked[first], kind="stable")], order[~near]))


def _cheapest_key(table: LayoutTable, cost: np.ndarray | None, seconds_per_token: np.ndarray) -> np.ndarray:
    """What 'cheapest' compares: the cost when priced, else GPU-hours (GPUs x time per token)."""
    if cost is not None and len(cost) and not np.isnan(cost).all():
        return cost
    return table["gpus"] * seconds_per_token


def _time_first(table: LayoutTable) -> np.ndarray:
    """count_first_rows: the ``time_first`` column jobs.plan.deadline stored (before the deadline's cut), else it."""
    return table["time_first"] if "time_first" in table.columns else count_first_rows(table)


def count_first_rows(table: LayoutTable) -> np.ndarray:
    """Whether each row is its GPU count's first by time (ranked_seconds_per_token: `--gpus N`'s pick of N's rows)."""
    return firsts_by_count(table["gpus"], ranked_seconds_per_token(table)) if len(table) else np.zeros(0, bool)


def deadline_order(table: LayoutTable, days: np.ndarray, deadline: float,
                   cost: np.ndarray | None = None) -> np.ndarray:
    """The deadline rule (planner.deadline_rule): the fewest GPUs N whose first layout by time (count_first_rows:
    `--gpus N`'s) meets ``deadline`` (``days``: each row's own days with failures, jobs.plan.deadline.deadline_rows),
    and that layout, then the other rows meeting it (deadline_rows_order). Returns row indices in that order."""
    candidates = np.flatnonzero(days <= deadline)
    key = _cheapest_key(table, cost, seconds_per_sequence(table))[candidates]
    first = _time_first(table)[candidates]
    return candidates[deadline_rows_order(table["gpus"][candidates], key, first)]


DEADLINE_STEPS = 8
"""A deadline's answer is sought this finely between two common sizes (deadline_counts_between): 1/8 of the gap
(32 GPUs between 512 and 768): from 128 GPUs up at most ~6% more GPUs than the smallest count meeting it, where
the common sizes alone could ask for a third more (docs/training.md)."""


def deadline_counts_between(searched, meets: int, per_node: int) -> tuple[int, ...]:
    """The counts between the largest ``searched`` count below ``meets`` (the smallest count meeting a
    deadline; the one below it misses) and ``meets``: the gap in DEADLINE_STEPS equal steps, each rounded
    down to whole nodes of ``per_node``; 512 -> 768: 544, 576, ..., 736; () when nothing was searched below."""
    below = [c for c in searched if c < meets]
    if not below:
        return ()
    low = max(below)
    found = {int(low + i * (meets - low) / DEADLINE_STEPS) // per_node * per_node for i in range(1, DEADLINE_STEPS)}
    return tuple(sorted(c for c in found if low < c < meets))


def search_smaller_first(search: Callable[[tuple[int, ...]], LayoutTable], counts: tuple[int, ...], per_node: int,
                         smaller: Callable[[int], tuple[int, ...]] | None):
    """(searched, asked column, table) of ``search`` on counts_with_alternatives(counts, per_node, smaller), and,
    where that passes the search's limits (InputError), again without the smaller counts: best_plan's and
    jobs.plan.search's one rule."""
    if smaller is not None:
        searched, asked = counts_with_alternatives(counts, per_node, smaller)
        try:
            return searched, asked, search(searched)
        except InputError:
            pass  # past the search's limits with them: the counts asked and their alternatives alone
    searched, asked = counts_with_alternatives(counts, per_node)
    return searched, asked, search(searched)


def larger_counts(gpus: int, most: int = 2**24) -> tuple[int, ...]:
    """Common cluster sizes above ``gpus`` (up to 64x it, at most ``most``), smallest first: where to look for the
    smallest cluster that holds a model when nothing fits on ``gpus``."""
    return tuple(c for c in range_counts(gpus + 1, min(64 * gpus, most)) if is_common_size(c))


def alternative_counts(gpus: int, per_node: int) -> tuple[int, ...]:
    """Counts just below an irregular ``gpus`` that the search also weighs, leaving the rest idle:
    1,113 = 3 x 7 x 53 allows only layouts like dp 371 x pp 3, while 1,024 of them run dp 1,024
    faster. The largest multiple of the node, of 64 and of 256, and the largest common cluster
    size (2^k, 3 x 2^k) below it; none for a count that is itself a common size. A count within one node is
    weighed too: 257 TPU v4 chips (4,096 a node) allow only dp 257 for Mixtral-8x7B and answered 63.9 days where
    256 of them answer 50.7 (A3 w15)."""
    if is_common_size(gpus):
        return ()
    below = max(c for c in range_counts(1, gpus - 1) if is_common_size(c))
    found = {gpus - gpus % step for step in (per_node, 64, 256)} | {below}
    return tuple(sorted((c for c in found if 0 < c < gpus), reverse=True))


def counts_with_alternatives(counts: tuple[int, ...], per_node: int,
                             smaller: Callable[[int], tuple[int, ...]] | None = None
                             ) -> tuple[tuple[int, ...], np.ndarray]:
    """The counts to search for ``counts`` asked, with the asked count each stands for (an asked
    count stands for itself; an alternative for the asked count it is below; ``smaller(c)``: more counts
    below ``c`` to weigh, each standing for the smallest asked count above it: planner.fallback's
    exact_batch_counts, a common size's too since session 25 (`plan llama-3.1-8b --gpu h100 --global-batch 1000`
    answered 0.231 days on 1,024 asked, 0.123 on 1,000); ranking takes one only where confident (planner.idle_rule))."""
    asked_of: dict[int, int] = {c: c for c in counts}
    for c in counts:
        for alt in alternative_counts(c, per_node):
            asked_of.setdefault(alt, c)
    for c in sorted(counts) if smaller is not None else ():
        for below in smaller(c):
            asked_of.setdefault(below, c)
    searched = tuple(sorted(asked_of))
    return searched, np.array([asked_of[c] for c in searched], dtype=np.int64)


def asked_column(table: LayoutTable, searched: tuple[int, ...], asked: np.ndarray) -> np.ndarray:
    """For each row, the GPU count asked that its count stands for."""
    if not len(table):
        return np.zeros(0, dtype=np.int64)
    return asked[np.searchsorted(np.array(searched), table["gpus"])]


def smallest_fitting_count(ev: Evaluator, gpus: int, target_batch: float, max_tp: int,
                           limits: SpaceLimits | None = None) -> int | None:
    """The smallest common cluster size above ``gpus`` (larger_counts) with a layout that fits, from
    one pruned search over those sizes (its fitting counts alone: planner.fit_count); None when none does."""
    counts = larger_counts(gpus)
    fitting = counts_that_fit(ev, counts, target_batch, max_tp, limits) if counts else None
    if fitting is not None:
        return int(fitting[0]) if len(fitting) else None
    rows = search_layouts(ev, counts, target_batch, max_tp, limits) if counts else None
    if rows is None or not len(rows) or not rows["fits"].any():
        return None
    return int(rows["gpus"][rows["fits"]].min())


def more_gpus_hint(enough: int | None) -> str:
    """What to try when nothing fits: the smallest common cluster size that does, when one was found."""
    if enough is None:
        return "use more GPUs, more memory per GPU or a shorter sequence"
    return (f"the smallest common cluster size that fits is {enough:,} GPUs (--gpus {enough}); or use more memory "
            "per GPU or a shorter sequence")


def best_plan(ev: Evaluator, gpus: int, target_batch: float, max_tp: int, limits: SpaceLimits | None = None,
              rank_by: str = "time", weigh: Callable[[LayoutTable], LayoutTable] | None = None
              ) -> tuple[Plan, LayoutTable]:
    """The planner's best layout on ``gpus`` GPUs — weighed against the counts just below an
    irregular ``gpus`` (alternative_counts) and, under an exact batch, every smaller count one allows
    (planner.fallback.exact_batch_counts), or on the smaller counts where some layout fits (fallback_groups)
    — and the fitting rows it was chosen from. ``weigh``: the fitting rows as ranking should see them
    (`train`'s: jobs.training.layout adds plan's failure_share, jobs.plan.completes). The counts are plan's
    (jobs.plan.search.search_on), whatever times the answer, at a given MFU too (s24: `train llama-3.1-70b --gpus
    1000 --global-batch 1536` ran on 960 where `plan` answered 984)."""
    smaller = (lambda c: exact_batch_counts(ev, c, target_batch, max_tp, limits)) if rank_by == "time" else None
    searched, _, table = search_smaller_first(lambda counts: search_layouts(ev, counts, target_batch, max_tp, limits),
                                              (gpus,), ev.cluster.gpus_per_node, smaller)
    tables = [(searched, table)]
    tried = list(searched)
    tables += [(group, None) for group in fallback_groups(ev, gpus, min(searched), target_batch, max_tp, limits)]
    for counts, table in tables:
        table = table if table is not None else search_layouts(ev, counts, target_batch, max_tp, limits)
        fitting = table.take(table["fits"]) if len(table) else table
        fitting = weigh(fitting) if weigh is not None and len(fitting) else fitting
        if len(fitting):
            fitting.columns.setdefault("gpus_asked", np.full(len(fitting), gpus, dtype=np.int64))  # idle_rule's
            i = int(ranking(fitting, rank_by)[0])
            layout, recompute = row_layout(fitting, i)
            return evaluate_layout(ev, layout, recompute, batch_target(target_batch, layout.world, limits),
                                   gpus), fitting
        tried += [c for c in counts if c not in tried]
        if is_common_size(gpus) and len(table):
            break  # layouts exist but none fits: fewer GPUs hold more per GPU
    if not len(tables[0][1]):  # no layout at all on the count asked (a rule, not memory): plan's reason
        raise (rule_refusal(ev.spec, (gpus,), ev.memory.seq_len, target_batch, max_tp, limits)  # + the shard group
               or no_layout_error(limits, (gpus,), target_batch))
    enough = smallest_fitting_count(ev, gpus, target_batch, max_tp, limits)
    refused = NoLayoutFits("gpus", gpus, f"no layout fits {ev.cluster.gpu.name} on {plural(gpus, 'GPU')} or fewer "
                           f"(tried {', '.join(f'{c:,}' for c in sorted(tried, reverse=True)[:6])}); "
                           + more_gpus_hint(enough))
    refused.enough = enough
    raise refused


def no_layout_error(limits: SpaceLimits | None, counts: tuple[int, ...], batch: float | None = None) -> InputError:
    """Why the search found no layout at all on ``counts`` GPUs (rather than none that fits): the degrees given need
    more GPUs, or a rule (Megatron-Core's interleaved schedule needs a multiple of pp micro-batches a step,
    megatron/core/pipeline_parallel/schedules.py) leaves none: named by a --global-batch given (``batch``), else gpus."""
    fixed = {k: v for k, v in (limits.fixed if limits else {}).items() if k in ("tp", "pp", "cp")}
    needed = int(np.prod(list(fixed.values()))) if fixed else 1
    if needed > max(counts):  # the degrees given already need more GPUs than asked
        name = max(fixed, key=fixed.get)
        return InputError(name, fixed[name], f"with {' x '.join(f'{k} {v}' for k, v in fixed.items())} a layout "
                          f"needs at least {needed:,} GPUs; --gpus gave at most {max(counts):,}")
    interleaved = limits is not None and limits.fixed.get("vpp", 1) > 1 and (
        limits.interleaved_needs_pp_micro_batches or limits.combined_1f1b)
    why = (f"; Megatron-Core's interleaved schedule needs {'a multiple of' if limits.combined_1f1b else 'at least'} "
           "pp micro-batches per step (global batch / (dp x micro-batch))") if interleaved else ""
    if interleaved and batch and limits.exact_batch:  # the batch given is what the rule refuses: memory's field
        return InputError("global_batch", int(batch) if batch == int(batch) else batch, "no layout on " + " or ".join(
            map(str, counts)) + f" GPUs with the degrees given runs it{why}; give such a global batch, or fewer stages")
    return InputError("gpus", ",".join(map(str, counts)), "no layout can use these GPU counts (or any smaller usable "
                      "count) for this model" + (" with the degrees given" if limits and limits.fixed else "") + why)
