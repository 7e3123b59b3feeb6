"""Evaluate every valid layout for a model on a GPU type in bulk, and pick among them.

The layouts come from planner.space (divisors: any GPU count). Each is evaluated with the same
core formulas as a single estimate — core.time.step.step_time and core.memory.training.peak_allocated run on
whole numpy arrays — so the planner's numbers for a layout are the numbers `gpuplan memory` and
the training report give for it.

Pruning, and why it is sound: memory falls and step time rises from no recompute to selective to
full, so for each layout only the least recompute that fits can be the fastest (or the cheapest
on the same GPUs); the others are not timed. Layouts that do not fit are not timed either, and
memory never falls as the micro-batch grows, so micro-batches past the first that fits in no mode
are not evaluated at all (micro_batch_prefix). ``exhaustive=True`` times every mode of every
layout and every micro-batch; tests/test_planner_space.py and
tests/test_hostile_inputs_2026_12_05.py check both give the same best step time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpuplan.core.expert_layout import EXPERTS_REPLICATED_OVER_TP
from gpuplan.core.memory import training as M
from gpuplan.core.model.finetune import peft_counts_experts
from gpuplan.core.model.flops import training_flops_per_token
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.memory.recompute import block_recompute_share, recomputed_forward_flops_per_token
from gpuplan.core.time.step import StepSettings, step_time
from gpuplan.core.comm.topology import Cluster
from gpuplan.errors import InputError
from gpuplan.planner.framework_rules import rules_for  # space imports it already
from gpuplan.planner.shard_group_refusal import shard_group_refusal
from gpuplan.planner.shard_group_search import with_shard_groups
from gpuplan.planner.pareto import pareto_front  # noqa: F401 (re-exported: jobs.plan.estimate, the tests)
from gpuplan.core.comm.fsdp2_reshard import fsdp2_no_reshard
from gpuplan.planner.uncertainty import KnownLayouts, fsdp_traffic_uncertainty, layout_kinds, layout_uncertainty
from gpuplan.planner.space import (DEGREES, RECOMPUTE_MODES, SpaceLimits, check_fixed_in_range, enumerate_layouts,
                                   sequence_split_refusal)

MAX_CANDIDATES = 6_000_000
"""Candidate layouts (x recompute modes) one search may consider: bounds its time and memory.
More GPU counts than that allows are refused, naming the limit."""
SEARCH_MEMORY_BUDGET = 960e6
"""Bytes one search may hold (the evaluated table and its temporaries): the 800,000-layout limit kept from before
x the 1,200 B a layout below, so the measured worst case (1,097 B x 800,000 = 878 MB) stays within it."""
BYTES_PER_EVALUATED_LAYOUT = 1_200
"""Peak bytes per layout counted against MAX_EVALUATED, measured (tracemalloc peak of the search over
the count, seq_len 1, 256 counts 2^20-1 down, 2026-12-05). Pruned (each layout counted once,
its memory taken in up to 3 modes): llama-2-7b 1,097 B (122,522 layouts), deepseek-v3 936 B (109,121),
llama-2-7b 1e12 tokens on the 29 deadline counts 882 B (340,378). Exhaustive (a layout x mode counted):
llama-2-7b 688 B (82,068 and 375,564), deepseek-v3 690 B (326,730 and 779,280). An MoE layout's table
row has the same 31 columns as a dense one (241 B; ep and ep_comm_seconds are columns of every layout)
and no larger peak, so one figure serves both kinds: the largest measured, with 9% to spare.
tests/test_hostile_wave5b.py measures both kinds both ways again."""
MAX_EVALUATED = int(SEARCH_MEMORY_BUDGET // BYTES_PER_EVALUATED_LAYOUT)
"""Layouts one search evaluates once the micro-batches that cannot fit are dropped (x recompute
modes when exhaustive), 800,000: layouts x BYTES_PER_EVALUATED_LAYOUT <= SEARCH_MEMORY_BUDGET. ~3.5 s
and ~0.6-0.95 GB in all on a busy 2-core machine (deepseek-v3 on 256 counts near 2^20, seq_len 1, exhaustive:
779,280 layouts, 4.8 s and 606 MB maximum resident for the whole CLI process; 340,378 took 1.3 s and 357 MB
in all; 703,532 2.3 s and 695 MB). Every catalog model's default plan (the deadline search over 29
counts, --framework megatron) on every catalog GPU stays under it: the largest are gpt-oss-120b,
703,532 on b300 / mi325x / mi355x, and qwen3-30b-a3b, 691,615 (600,000 refused both bare plans;
tests/test_search_limit_one_verdict.py); 735,134,400 one-token sequences reached 1,046,771
layouts, 11 s and 1 GB before. --framework generic (every degree with every ZeRO stage) gives
these MoE models 1.3-1.8 M and is refused, naming --gpus."""
MIN_PRUNED_RUN = 16
"""Runs of micro-batch choices shorter than this are searched whole (micro_batch_prefix)."""
STEP_PARTS = ("compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "cp_comm", "ep_comm", "optimizer")


@dataclass(frozen=True)
class LayoutTable:
    """Evaluated layouts as parallel numpy arrays (one entry per layout)."""

    columns: dict

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def take(self, index) -> LayoutTable:
        return LayoutTable({k: v[index] for k, v in self.columns.items()})

    @staticmethod
    def concat(parts: list[LayoutTable]) -> LayoutTable:
        parts = [p for p in parts if len(p)]
        if not parts:
            return LayoutTable({})
        return LayoutTable({k: np.concatenate([p[k] for p in parts]) for k in parts[0].columns})


@dataclass(frozen=True)
class UncertaintyTable:
    """The published layouts of this search's precision class and the error growth away from them
    (catalog/reference/layout_uncertainty.json; planner.uncertainty)."""

    known: KnownLayouts
    widest: float
    """The uncertainty of a class with no published layout (the widest class RMS)."""
    active_params: float
    """The model's active parameters (a coordinate of its layouts)."""
    kind_correction_rows: int = 0
    """Published layouts a kind needs before its signed error (KnownLayouts.kind_bias) multiplies its
    layouts' time in the ranking; 0: no correction (the default: measured leave-one-group-out by
    jobs/validation/planner_choice.kind_correction_table, it does not make the planner's choice more
    accurate; docs/step.md, Planner)."""


def settings_in_mode(step: StepSettings, tp_overlap_by_recompute: tuple[tuple[str, float], ...] | None,
                     recompute: str) -> StepSettings:
    """``step`` in ``recompute`` mode, with that mode's TP overlap where one is given per mode (Evaluator's)."""
    step = replace(step, recompute=recompute)
    return step if tp_overlap_by_recompute is None else replace(step, tp_overlap=dict(tp_overlap_by_recompute)[recompute])


@dataclass(frozen=True)
class Evaluator:
    """What every layout of one search shares: the model, the cluster and the settings."""

    spec: ModelSpec
    cluster: Cluster
    memory: M.MemorySettings
    step: StepSettings
    overheads: M.Overheads
    uncertainty: UncertaintyTable | None = None
    """How far each layout is from published ones, as an error (planner.uncertainty); None = no per-layout figure."""
    fit_reserve: float = 0.0
    """Share of the reserved peak the fit rule keeps free beyond the model's (planner.framework_rules
    published_reserve: what the framework's published runs held beyond gpuplan's estimate)."""
    tp_overlap_by_recompute: tuple[tuple[str, float], ...] | None = None
    """(recompute mode, StepSettings.tp_overlap) where the framework's own TP overlap applies (core.frameworks
    FrameworkProfile.tp_overlap_for: its share falls under full recompute); None: step's tp_overlap in every mode."""
    shard_group: int | None = None
    """--shard-group (HSDP): every layout's model states sharded within this many data-parallel ranks (the search
    keeps the layouts whose dp x cp it divides: planner.space); None: over all of them (--shard-group auto: None
    here, each variant's copy holds its group, planner.shard_group_search)."""

    @property
    def fsdp2_pools(self) -> bool:
        """Whether the fit rule takes FSDP2's stream pools as a ZeRO-3 layout's reserved peak (framework_rules)."""
        return rules_for(self.memory.framework).fsdp2_stream_pools

    @property
    def cp_attention_untimed(self) -> bool:
        """Whether the framework's CP layouts take the widest uncertainty (framework_rules)."""
        return rules_for(self.memory.framework).cp_attention_untimed

    @property
    def budget(self) -> float:
        return self.overheads.budget_bytes(self.cluster.gpu.memory_bytes)

    def fits(self, total, excess) -> np.ndarray:
        """Whether reserved + runtime (``total``) plus the fit rule's ``excess`` stays within the budget."""
        return total + excess <= self.budget

    def layout(self, g: dict) -> ParallelLayout:
        return self.with_expert_layout(ParallelLayout(
            dp=g["dp"], tp=g["tp"], pp=g["pp"], vpp=g["vpp"], cp=g["cp"], ep=g["ep"], zero=g["zero"],
            micro_batch=g["micro_batch"], global_batch=g["global_batch"],
            sequence_parallel=self.step.sequence_parallel))  # memory: core.memory.activations (shard group: below)

    def with_expert_layout(self, layout: ParallelLayout) -> ParallelLayout:
        """``layout`` with the experts laid out as the step times them (StepSettings.expert_tp, None = tp) and as
        the framework groups them (core.expert_layout): memory and time read one expert TP; with the search's HSDP
        shard group where it has one (else the layout's own)."""
        return replace(layout, etp=self.step.expert_tp, shard_group=self.shard_group or layout.shard_group,  # HSDP
                       experts_replicated_over_tp=self.memory.framework in EXPERTS_REPLICATED_OVER_TP)

    def step_settings(self, recompute: str) -> StepSettings:
        """The step settings of a layout in ``recompute`` mode."""
        return settings_in_mode(self.step, self.tp_overlap_by_recompute, recompute)

    def memory_of(self, g: dict, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(allocated peak, reserved peak + CUDA context + NCCL buffers, the fit rule's excess) per layout."""
        layout = self.layout(g)
        peak, excess = M.peak_and_framework_gap(self.spec, layout, replace(self.memory, recompute=mode), self.overheads,
                                                self.fit_reserve, self.fsdp2_pools)
        peak = np.asarray(peak, dtype=float)
        return peak, self.overheads.device_bytes(peak, layout), np.asarray(excess, dtype=float)

    def time_of(self, g: dict, mode: str) -> dict[str, np.ndarray]:
        f = {k: g[k].astype(float) for k in ("dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch", "micro_batches")}
        t = step_time(self.spec, self.cluster, self.step_settings(mode), dp=f["dp"], tp=f["tp"], pp=f["pp"],
                      vpp=f["vpp"], cp=f["cp"], ep=f["ep"], zero=g["zero"], micro_batch=f["micro_batch"],
                      micro_batches=f["micro_batches"], shard_group=self.shard_group)
        ones = np.ones(len(g["dp"]))
        parts = {f"{name}_seconds": np.asarray(getattr(t, name), dtype=float) * ones for name in STEP_PARTS}
        return parts | {"step_seconds": np.asarray(t.total) * ones, "exposed_comm_seconds": t.exposed_comm * ones,
                        "comm_seconds": t.comm_total * ones, "dp_traffic_seconds": np.asarray(t.dp_traffic) * ones}

    def evaluate(self, g: dict, mode: str, timed: bool = True,
                 memory: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> LayoutTable:
        """Memory (or the ``memory`` already computed for these rows), and the step time when
        ``timed`` (else NaN), of every layout ``g`` in recompute ``mode``."""
        peak, total, excess = memory if memory is not None else self.memory_of(g, mode)
        columns = dict(g) | {"recompute": np.full(len(peak), RECOMPUTE_MODES.index(mode)), "peak_bytes": peak,
                             "total_bytes": total, "fits": self.fits(total, excess)}
        if timed:
            columns |= self.time_of(g, mode)
        else:
            columns |= {name: np.full(len(peak), np.nan) for name in self._time_columns()}
        return LayoutTable(columns)

    @staticmethod
    def _time_columns() -> tuple[str, ...]:
        return tuple(f"{n}_seconds" for n in STEP_PARTS) + ("step_seconds", "exposed_comm_seconds", "comm_seconds",
                                                             "dp_traffic_seconds")

    def rates(self, table: LayoutTable) -> LayoutTable:
        """MFU (on the compute dtype's dense peak), HFU and tokens/s of each timed layout."""
        if not len(table):
            return table
        seq = self.memory.seq_len
        tokens = table["global_batch"] * seq
        base = training_flops_per_token(self.spec, seq, "full", "none", self.step.finetune, self.step.lora_rank,
                                        peft_experts=peft_counts_experts(self.step))
        flops = base.model * tokens  # core.time.step.model_flops_per_token's numerator, peft's expert fold as timed
        peak = self.cluster.gpu.peak(self.step.dtype)
        mfu = flops / (table["step_seconds"] * table["gpus"] * peak)
        extra = np.array([recomputed_forward_flops_per_token(self.spec, seq, mode, self.step.recompute_modules)
                          for mode in RECOMPUTE_MODES])[table["recompute"]]
        if self.step.recompute_layers is not None:  # Megatron's block method: a share of each chunk
            share = block_recompute_share(self.step.recompute_layers, self.spec.num_layers / table["pp"], table["vpp"])
            extra = np.where(table["recompute"] == RECOMPUTE_MODES.index("full"), extra * share, extra)
        ratio = (base.model + extra) / base.model
        columns = {"mfu": mfu, "hfu": mfu * ratio, "tokens_per_second": tokens / table["step_seconds"]}
        if self.uncertainty is not None and "dp" in table.columns:
            u = self.uncertainty
            domain, moe = self.cluster.gpus_per_node, self.spec.moe is not None
            columns["uncertainty"] = layout_uncertainty(table.columns, u.active_params, domain, moe, u.known, u.widest,
                                                        self.step.expert_tp)
            if self.step.dp_schedule == "fsdp2" and "dp_traffic_seconds" in table.columns:  # FSDP2 beyond what ran
                columns["uncertainty"] = columns["uncertainty"] + fsdp_traffic_uncertainty(
                    table["dp_traffic_seconds"], table["compute_seconds"], table["zero"],
                    fsdp2_no_reshard(self.step, table["zero"]))  # torchtitan's ZeRO-2 is FSDP2 too
            if self.cp_attention_untimed:  # CP on an attention kernel no published run checks
                columns["uncertainty"] = np.where(table["cp"] > 1, np.maximum(columns["uncertainty"], u.widest),
                                                  columns["uncertainty"])
            if u.kind_correction_rows:
                kinds = layout_kinds(table.columns, domain, moe, self.step.expert_tp)
                columns["kind_bias"] = u.known.kind_bias(kinds, u.kind_correction_rows)[0]
        return LayoutTable(table.columns | columns)


def _take(g: dict, index) -> dict:
    return {k: v[index] for k, v in g.items()}


def _fits_any(evaluator: Evaluator, g: dict, modes: tuple[str, ...]) -> np.ndarray:
    """Whether each layout of ``g`` fits in at least one of ``modes``."""
    fits = np.zeros(len(g["gpus"]), dtype=bool)
    for mode in reversed(modes):  # the least memory first: most rows are settled by it
        left = np.flatnonzero(~fits)
        if not len(left):
            break
        _, total, excess = evaluator.memory_of(_take(g, left), mode)
        fits[left] = evaluator.fits(total, excess)
    return fits


def micro_batch_runs(grid: dict) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the runs of ``grid``'s rows (non-empty) that differ only in the micro-batch, ascending."""
    mb, n = grid["micro_batch"], len(grid["micro_batch"])
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = mb[1:] <= mb[:-1]
    for column in (grid[k] for k in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero", "global_batch")):
        new_run[1:] |= column[1:] != column[:-1]
    starts = np.flatnonzero(new_run)
    return starts, np.diff(np.append(starts, n))


def micro_batch_prefix(evaluator: Evaluator, grid: dict, modes: tuple[str, ...]) -> np.ndarray:
    """Rows of ``grid`` worth evaluating: in each run of rows that differ only in the micro-batch
    (enumerate_layouts lists a structure's micro-batches ascending), those up to and including
    the smallest micro-batch that fits in no recompute mode.

    Sound because a layout's memory never falls as its micro-batch grows, the rest fixed: the
    activations held are micro_batch x min(in-flight, micro-batches) = min(in-flight x mb, batch
    per rank) (core.memory.activations.pipeline_micro_batches_in_flight), the logits and
    buffers grow with it, the model states do not depend on it. So once a micro-batch fits in no
    mode, no larger one does; tests/test_hostile_inputs_2026_12_05.py checks the pruned rows
    against the full grid. Found per run by galloping then bisection (a few dozen memory
    evaluations of one row per run), not by evaluating every divisor of the batch per rank: a
    1e12-token batch gave llama-2-7b 938,378 layouts, 337 distinct micro-batches up to 244M."""
    n = len(grid["micro_batch"])
    if not n:
        return np.zeros(0, dtype=bool)
    starts, lengths = micro_batch_runs(grid)
    # low = the leading micro-batches of each run known to fit (a prefix: see above), high = those
    # that may; a run's largest micro-batch is tried first (in most runs of a usual batch all fit),
    # and runs of fewer than MIN_PRUNED_RUN are kept whole (little to save)
    last = np.flatnonzero(lengths >= MIN_PRUNED_RUN)
    all_fit = _fits_any(evaluator, _take(grid, starts[last] + lengths[last] - 1), modes)
    open_runs = last[~all_fit]
    low, high = lengths.copy(), lengths.copy()
    low[open_runs], high[open_runs] = 0, lengths[open_runs] - 1
    step = np.ones(len(starts), dtype=np.int64)
    galloping = np.ones(len(starts), dtype=bool)
    while True:
        active = low < high
        if not active.any():
            break
        probe = np.where(galloping, np.minimum(low + step - 1, high - 1), (low + high) // 2)
        rows = starts[active] + probe[active]
        fits = np.zeros(len(starts), dtype=bool)
        fits[active] = _fits_any(evaluator, _take(grid, rows), modes)
        fit_now, miss_now = active & fits, active & ~fits
        low = np.where(fit_now, probe + 1, low)
        high = np.where(miss_now, probe, high)
        galloping &= ~miss_now
        step = np.where(galloping, step * 2, step)
    keep_upto = np.minimum(low + 1, lengths)  # the fitting ones and the first that does not fit
    position = np.arange(n) - np.repeat(starts, lengths)
    return position < np.repeat(keep_upto, lengths)


def counts_label(searched: int, asked: int | None = None) -> str:
    """How a search-size refusal names ``searched`` GPU counts of which the user ``asked`` (None:
    all): the counts the planner weighs below irregular ones (planner.plan.alternative_counts) apart."""
    if asked is None or asked >= searched:
        return f"{searched:,} GPU count(s)"
    return f"{asked:,} GPU count(s) asked + {searched - asked:,} the planner weighs below irregular ones"


def layouts_to_evaluate(evaluator: Evaluator, counts: tuple[int, ...], target_batch: float, max_tp: int,
                        limits: SpaceLimits | None = None, exhaustive: bool = False, label: str | None = None) -> dict:
    """The layouts a search of ``counts`` evaluates (micro-batches past the first that fits in no
    mode dropped unless ``exhaustive``), refused naming ``gpus`` (``label``: how to name the counts,
    counts_label) past MAX_CANDIDATES enumerated or MAX_EVALUATED evaluated. The one size limit of a
    search: the CLI, plan files, the web API and the Python API all reach it through search_layouts."""
    limits = limits or SpaceLimits()
    label = label or counts_label(len(counts))
    modes = tuple(m for m in RECOMPUTE_MODES if m in limits.recompute)
    grid = enumerated_layouts(evaluator, counts, target_batch, max_tp, limits, label)
    if not exhaustive:
        grid = _take(grid, micro_batch_prefix(evaluator, grid, modes))
    evaluated = len(grid["gpus"]) * (len(modes) if exhaustive else 1)
    if evaluated > MAX_EVALUATED:
        raise InputError("gpus", label, f"the search would evaluate {evaluated:,} layouts"
                         f"{' x recompute modes' if exhaustive else ''}, more than {MAX_EVALUATED:,}; "
                         f"{'leave --exhaustive off (the pruned search finds the same best), ' if exhaustive else ''}"
                         "give fewer GPU counts (--gpus), a smaller global batch or fix some degrees (--tp, --pp, "
                         "--micro-batch)")
    return grid


def enumerated_layouts(evaluator: Evaluator, counts: tuple[int, ...], target_batch: float, max_tp: int,
                       limits: SpaceLimits, label: str) -> dict:
    """Every layout on ``counts`` before pruning (layouts_to_evaluate's grid), refused naming ``gpus`` by ``label``
    past MAX_CANDIDATES (x recompute modes) enumerated."""
    modes = tuple(m for m in RECOMPUTE_MODES if m in limits.recompute)
    check_fixed_in_range(limits.fixed, max_tp, limits.max_cp)
    try:
        return enumerate_layouts(evaluator.spec, counts, evaluator.memory.seq_len, target_batch, max_tp, limits,
                                 MAX_CANDIDATES // max(1, len(modes)))
    except InputError as exc:  # its only refusal: past max_rows; named with the counts' label
        raise InputError(exc.field, label, exc.expected) from None


def rule_refusal(spec: ModelSpec, counts: tuple[int, ...], seq_len: int, target_batch: float, max_tp: int,
                 limits: SpaceLimits | None) -> InputError | None:
    """Why a search found no layout at all on ``counts`` where a layout rule is the cause (None: not one of these):
    the framework's sequence split (space.sequence_split_refusal) or the shard group (shard_group_refusal)."""
    return (sequence_split_refusal(spec, counts, seq_len, target_batch, max_tp, limits)
            or shard_group_refusal(spec, counts, seq_len, target_batch, max_tp, limits, MAX_CANDIDATES))


def search_layouts(evaluator: Evaluator, counts: tuple[int, ...], target_batch: float, max_tp: int,
                   limits: SpaceLimits | None = None, exhaustive: bool = False, progress=None,
                   label: str | None = None) -> LayoutTable:
    """Every valid layout on ``counts`` GPUs with its memory, and the step time and rates of those
    that fit (pruned: the least recompute that fits, micro-batches past the first that fits in
    no mode dropped (micro_batch_prefix); ``exhaustive``: every mode of every layout timed).
    Layouts that fit in no mode are kept untimed (step NaN), so a caller can say how close they came.
    ``label``: how a refusal for size names the counts (layouts_to_evaluate)."""
    limits = limits or SpaceLimits()
    modes = tuple(m for m in RECOMPUTE_MODES if m in limits.recompute)
    grid = layouts_to_evaluate(evaluator, counts, target_batch, max_tp, limits, exhaustive, label)
    parts, remaining = [], grid
    for done, mode in enumerate(modes):
        if progress is not None:
            progress(done, len(modes))
        if not len(remaining["gpus"]):
            break
        if exhaustive:
            parts.append(evaluator.evaluate(grid, mode))
            continue
        peak, total, excess = evaluator.memory_of(remaining, mode)
        fits = evaluator.fits(total, excess)
        if fits.any():
            parts.append(evaluator.evaluate(_take(remaining, fits), mode, memory=(peak[fits], total[fits], excess[fits])))
        if done == len(modes) - 1 and not fits.all():  # fits in no mode: kept, untimed
            parts.append(evaluator.evaluate(_take(remaining, ~fits), mode, False,
                                            (peak[~fits], total[~fits], excess[~fits])))
        remaining = _take(remaining, ~fits)
    table = LayoutTable.concat(parts)
    table = evaluator.rates(table) if len(table) else table  # untimed rows: NaN rates
    return with_shard_groups(evaluator, table, limits, exhaustive) if limits.shard_group_search else table  # auto


def candidate_count(evaluator: Evaluator, counts: tuple[int, ...], target_batch: float, max_tp: int,
                    limits: SpaceLimits | None = None) -> int:
    """Layouts x recompute modes a search would consider."""
    grid = enumerate_layouts(evaluator.spec, counts, evaluator.memory.seq_len, target_batch, max_tp, limits)
    return len(grid["gpus"]) * len((limits or SpaceLimits()).recompute)


__all__ = ["DEGREES", "RECOMPUTE_MODES", "Evaluator", "LayoutTable", "MAX_CANDIDATES", "MAX_EVALUATED",
           "SpaceLimits", "candidate_count", "counts_label", "layouts_to_evaluate", "pareto_front", "search_layouts"]
