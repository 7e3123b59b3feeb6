"""The layout search behind ``gpuplan plan``, ``train``/``budget`` (their layout) and the web page:
the Evaluator a job's inputs describe, the search over the GPU counts asked (a count where nothing
fits falls back to smaller ones that work, the rest idle: planner.fallback), and days, GPU-hours and
cost for every layout that fits; for a deadline, a second search over the counts between the common
sizes that bracket its answer (jobs.plan.deadline)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from gpuplan.core.time.attention_core import execution_kernel
from gpuplan.core.parallel import check_model_degrees
from gpuplan.core.precision import check_recipe_runs_on
from gpuplan.core.memory.device_memory import with_ep_dispatcher
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.units import SECONDS_PER_DAY, format_bytes, plural
from gpuplan.errors import InputError
from gpuplan.schema.precision_rules import check_dtype_runs_on
from gpuplan.schema.shard_group import fixed_shard_group, searches_shard_groups  # --shard-group auto
from gpuplan.schema.te_kernels import DEFAULT_FLEX_BACKEND
from gpuplan.jobs.memory.settings import training_memory_settings  # memory's builder too
from gpuplan.jobs.plan.ramp_days import with_ramp_days
from gpuplan.jobs.plan.completes import check_offer_pick, with_completing_shares
from gpuplan.jobs.plan.no_fit import no_fit_refusal
from gpuplan.jobs.plan.offer import offers_answering_batch
from gpuplan.jobs.plan.deadline import counts_between, deadline_counts, deadline_rows
from gpuplan.jobs.plan.step_settings import _uncalibrated_step
from gpuplan.planner.plan import (Plan, alternative_counts, asked_column, evaluate_layout, search_smaller_first,
                                  no_layout_error, ranking, row_layout, smallest_fitting_count)
from gpuplan.planner.framework_rules import (COMBINED_1F1B_REFUSED_RECOMPUTE, CPU_OFFLOAD_PP, CPU_OFFLOAD_RECOMPUTE,
                                              MODEL_PARALLEL_DEGREES, optimizer_zero_stages, rules_for)
from gpuplan.planner.fallback import exact_batch_counts, fallback_groups, with_fallbacks
from gpuplan.planner.search import Evaluator, LayoutTable, UncertaintyTable, counts_label, rule_refusal, search_layouts
from gpuplan.planner.space import RECOMPUTE_MODES, SpaceLimits, batch_target, is_common_size, sequence_split_note

if TYPE_CHECKING:  # `train` searches its layout here too: it need not build plan's schema (~2 ms)
    from gpuplan.jobs.plan.schema import PlanInputs


def __getattr__(name: str):
    """``PlanInputs``, still importable from here (as before), built on first use."""
    if name == "PlanInputs":
        from gpuplan.jobs.plan.schema import PlanInputs
        return PlanInputs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _gap_words(share: float, framework: str, pools: bool = False) -> str:
    """The fit rule's framework gap in words, for the no-fit message ('' without one); ``pools``: FSDP2's
    stream pools taken as a ZeRO-3 layout's reserved peak (planner.framework_rules)."""
    return (" and FSDP2's stream pools" if pools else "") + (f" and {share:.0%} of the reserved peak beyond the model "
                                                             f"states kept free ({framework}'s published gap)" if share else "")


def evaluator_for(inputs, leave_out: str | None = None, kind_correction_rows: int = 0) -> Evaluator:
    """The model, cluster and settings a training job's inputs describe (PlanInputs or
    TrainingInputs: both carry the setup and step fields), calibrated when a calibration is given
    (``leave_out``, ``kind_correction_rows``: uncertainty_table's)."""
    spec = inputs.spec()
    gpu = _checked_gpu(inputs, spec)
    cluster = cluster_for(gpu, inputs.gpus_per_node, inputs.nic_gbit_per_gpu)
    kernel = execution_kernel(inputs.attention_kernel, spec.model_type, inputs.framework,
                              inputs.implementation_name)  # transformers' modules: SDPA_REFUSED eager
    step, tp_overlap = _uncalibrated_step(inputs, spec, gpu, kernel)
    # flex: its backend's buffers (DeepEP by default, as the step) in place of NCCL all-to-all peers (as memory)
    overheads = with_ep_dispatcher(inputs.overheads().on_device(gpu), inputs.ep_dispatcher,
                                   inputs.seq_len, spec, gpu, inputs.flex_backend or DEFAULT_FLEX_BACKEND)
    scale = 1.0
    if inputs.calibration is not None:
        from gpuplan.calibrate.apply import apply_to_cluster, apply_to_overheads, apply_to_step_settings

        cal = inputs.calibration
        step = apply_to_step_settings(cal, step, gpu.id)
        cluster = apply_to_cluster(cal, cluster)
        overheads = apply_to_overheads(cal, overheads)
        scale = cal.activation_memory.value
    memory = training_memory_settings(inputs, spec, gpu, kernel, activation_scale=scale)
    return Evaluator(spec, cluster, memory, step, overheads, uncertainty_table(spec, inputs.dtype, leave_out,
                     kind_correction_rows), rules_for(inputs.framework).published_reserve, tp_overlap,
                     shard_group=fixed_shard_group(inputs.shard_group))  # auto: None, each row's own (its column)


def _checked_gpu(inputs, spec):
    """The GPU the inputs name, with what it must run checked: the degrees the user fixed against the
    model (before any GPU count is searched), the dtype, recipe, MX FP8 and TE kernels on the part."""
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.schema.te_kernels import check_kernels_run_on

    fixed = {k: v for k, v in inputs.fixed_degrees().items() if k in ("tp", "pp", "vpp", "ep", "cp")}
    check_model_degrees(spec, **fixed, seq_len=inputs.seq_len, framework=inputs.framework,
                        kv_subsharding=rules_for(inputs.framework).kv_subsharding)
    gpu = resolve_gpu(inputs.gpu)
    check_dtype_runs_on(inputs, gpu)  # --dtype, --fp8-recipe mxfp8 on the part (memory's rule too)
    check_recipe_runs_on(inputs.recipe_name, gpu)
    check_kernels_run_on(inputs, gpu, spec)  # FP8 attention, the fused grouped MLP (schema.te_kernels)
    return gpu


def uncertainty_table(spec, dtype: str, leave_out: str | None = None,
                      kind_correction_rows: int = 0) -> UncertaintyTable:
    """The published layouts of this search's precision class and the growth of the model's error
    away from them (planner.uncertainty); ``leave_out``: a group of published runs the planner must
    not know (the planner check scores its choice against that group); ``kind_correction_rows``:
    UncertaintyTable's (0: none)."""
    from gpuplan.core.model.spec import count_parameters
    from gpuplan.core.time.step import precision_class
    from gpuplan.planner.uncertainty import COORDINATES, KnownLayouts

    cls = "moe" if spec.moe is not None else ("bf16" if precision_class(dtype) == "bf16" else "fp8")
    widest, entry = _uncertainty_class(cls)
    entry = entry if entry is not None else {"rms": widest, "growth": 0.0, "points": []}
    points = np.array([p["x"] for p in entry["points"]], dtype=float).reshape(-1, len(COORDINATES))
    kinds = np.array([p["kind"] for p in entry["points"]], dtype=np.int64)
    known = KnownLayouts(float(entry["rms"]), float(entry["growth"]), points, kinds,
                         tuple(p["group"] for p in entry["points"]),
                         np.array([p.get("e", np.nan) for p in entry["points"]], dtype=float),
                         np.array([p.get("b", np.nan) for p in entry["points"]], dtype=float))
    if leave_out is not None:
        known = known.without(leave_out)
    return UncertaintyTable(known, widest, float(count_parameters(spec).active), kind_correction_rows)


@cache
def _uncertainty_class(cls: str) -> tuple[float, dict | None]:
    """(the widest class RMS, the entry of class ``cls`` or None) of catalog/reference/layout_uncertainty.json,
    decoding only those two values: json's raw_decode from where the generated file opens them (a top-level
    key a line, jobs.validation.uncertainty). The file holds three classes, 94 KB: ~1.5 ms to parse whole on
    the 2-core machine, ~0.7 ms for one (issue 39). Anything unexpected: the whole file, as before."""
    import json

    from gpuplan.catalog.paths import CATALOG

    text = (CATALOG / "reference" / "layout_uncertainty.json").read_text("utf-8")
    decode = json.JSONDecoder().raw_decode
    try:
        widest = decode(text, text.index(WIDEST_KEY) + len(WIDEST_KEY))[0]
        opening = f'\n  "{cls}": '  # as WIDEST_KEY
        at = text.find(opening)
        entry = decode(text, at + len(opening))[0] if at >= 0 else None
        if isinstance(widest, (int, float)) and (entry is None or isinstance(entry, dict)):
            return float(widest), entry
    except ValueError:
        pass
    data = json.loads(text)
    return float(data["widest"]), data.get(cls)


WIDEST_KEY = '\n  "widest": '
"""How layout_uncertainty.json's writer opens its top-level widest RMS (jobs.validation.uncertainty)."""


def space_limits(inputs, exhaustive: bool = False) -> SpaceLimits:
    """The degrees the user fixed narrow the search to them (`plan --tp 8 --pp 4`: that layout)."""
    combined = bool(getattr(inputs, "ep_a2a_overlap", False))  # Megatron's combined 1F1B (framework_rules)
    modes = tuple(m for m in RECOMPUTE_MODES if (m != "selective" or inputs.profile.selective != "none")
                  and m in inputs.profile.recompute_modes and not (combined and m in COMBINED_1F1B_REFUSED_RECOMPUTE))
    recompute = (inputs.recompute_given,) if inputs.recompute_given is not None else modes
    only_data = dict.fromkeys(MODEL_PARALLEL_DEGREES, 1) if rules_for(inputs.framework).data_parallel_only else {}
    if getattr(inputs, "offload_layers", 0):  # Megatron-Core's CPU offloading: no pipeline, no recompute
        only_data, recompute = {**only_data, "pp": CPU_OFFLOAD_PP}, (CPU_OFFLOAD_RECOMPUTE,)
    fixed = {**only_data, **inputs.fixed_degrees()}
    zero = (0, 1, 2, 3) if "zero" in fixed else optimizer_zero_stages(inputs.framework, inputs.optimizer)
    return SpaceLimits(fixed=fixed, zero=zero, recompute=recompute, exact_batch=inputs.global_batch is not None,
                       max_zero_with_pp=inputs.profile.max_zero_with_pp,
                       interleaved_pipeline=inputs.profile.interleaved_pipeline,
                       interleaved_needs_pp_micro_batches=inputs.profile.interleaved_needs_pp_micro_batches,
                       combined_1f1b=combined, sequence_split=inputs.sequence_parallel, etp=inputs.etp,
                       batch_per_gpu=inputs.batch_per_gpu(inputs.seq_len), framework=inputs.framework,  # HSDP: the
                       shard_group=fixed_shard_group(inputs.shard_group),  # layouts it divides (planner.space); auto:
                       shard_group_search=searches_shard_groups(inputs.shard_group))  # planner.shard_group_search


@dataclass(frozen=True)
class PlanSearch:
    """The searched layouts of a plan: ``table`` holds those that fit (timed, with days, GPU-hours
    and cost), ``all`` every layout considered."""

    evaluator: Evaluator
    table: LayoutTable
    all: LayoutTable
    seconds: float
    price: float | None
    price_source: str
    counts: tuple[int, ...]
    target_batch: float
    """Sequences per step asked for (before the default's per-GPU floor: ``target_for``)."""
    limits: SpaceLimits
    missed_default_deadline: str = ""
    """Set when the article's default week (no --days, no --gpus) is met on no searched count: the
    answer is then the fastest layout, and this says so (a note)."""

    @property
    def searched(self) -> int:
        return len(self.all)

    def target_for(self, gpus: int) -> float:
        """Sequences per step asked for on ``gpus`` GPUs."""
        return batch_target(self.target_batch, gpus, self.limits)


def max_tp(evaluator: Evaluator) -> int:
    """Tensor parallelism stays inside the scale-up domain."""
    return evaluator.cluster.gpus_per_node


def price_of(inputs, gpu_id: str) -> tuple[float | None, str]:
    """On-demand USD per GPU-hour as the budget prices it (--price, --provider, else the median
    over providers in the price catalog)."""
    from gpuplan.jobs.budget.model import resolve_prices

    prices = resolve_prices(gpu_id, inputs.budget_settings())
    return prices.on_demand, prices.on_demand_source


def _with_fallbacks(ev: Evaluator, counts: tuple[int, ...], table: LayoutTable, target: float,
                    limits: SpaceLimits, exhaustive: bool) -> LayoutTable:
    """Each asked count where nothing fits gets the rows of the first group of smaller counts with a
    fitting layout (planner.fallback: its rows carry ``gpus_asked``, the difference stays idle). A common
    cluster size whose layouts exist but do not fit gets none: fewer GPUs hold more per GPU."""
    waiting, known = {}, {}  # known: has_layout by count, one target and limits for every count here
    for count in counts:
        mine = table["gpus_asked"] == count if len(table) else np.zeros(0, dtype=bool)
        if (table["fits"] & mine).any() if len(table) else False:
            continue
        if is_common_size(count) and mine.any():
            continue
        below = min((count,) + alternative_counts(count, ev.cluster.gpus_per_node))  # what was searched for it
        waiting[count] = fallback_groups(ev, count, below, target, max_tp(ev), limits, known)
    return with_fallbacks(ev, waiting, table, target, max_tp(ev), limits, exhaustive)


@offers_answering_batch  # the batch a no-completion refusal offers answers on this door (wave 10 review M1)
def search(inputs: PlanInputs, progress=None, leave_out: str | None = None,
           kind_correction_rows: int = 0) -> PlanSearch:
    """Every layout on the counts asked, those that fit timed and costed; a deadline keeps only
    the layouts that meet it (``leave_out``: a group of published runs the ranking must not know;
    ``kind_correction_rows``: planner.search.UncertaintyTable's, 0 = none)."""
    return search_on(inputs, evaluator_for(inputs, leave_out, kind_correction_rows), inputs.exhaustive, progress)


def search_on(inputs, ev: Evaluator, exhaustive: bool = False, progress=None) -> PlanSearch:
    """search on the Evaluator ``ev``: `plan`'s search, and for a deadline (--days, or the article's week with
    neither --gpus nor --days) the one that answers it for `plan` and for `train --mfu predicted`
    (jobs.training.layout.layout_for_deadline): the common cluster sizes, the counts between the two that
    bracket the answer, each row's own days with failures, the deadline rule's order (jobs.plan.deadline).
    ``inputs``: PlanInputs, or any inputs with the budget's fields (BudgetInputs) and neither --rank-by nor
    --exhaustive (``exhaustive`` stands for it)."""
    price, price_source = price_of(inputs, ev.cluster.gpu.id)
    if getattr(inputs, "rank_by", None) == "cost" and price is None:
        raise InputError("rank_by", "cost", f"needs a price, and there is no published on-demand price for "
                         f"{ev.cluster.gpu.id}: give --price (USD per GPU-hour), or rank by time or gpus")
    target = inputs.target_batch(inputs.seq_len)
    limits = space_limits(inputs)
    counts = deadline_counts(inputs, ev.cluster.gpus_per_node)
    start = time.perf_counter()
    # more GPUs asked never slower (A9 w14): each count weighs the smaller ones an exact batch allows; a range those
    # inside it, each its own ask (s25 R2 S1-1: 512-1024 answered 5.54 h on 1,024 where 1,024 alone found 2.95 h on
    # 1,000); not the default counts (power_counts: they name the counts their user means), nor another ranking
    given = getattr(inputs, "gpus", None)
    ranged = bool(getattr(given, "span", False))
    default = not given and counts == tuple(getattr(inputs, "gpu_counts", ()))
    below = () if default or getattr(inputs, "rank_by", "time") != "time" else tuple(
        b for b in exact_batch_counts(ev, max(counts), target, max_tp(ev), limits) if not ranged or b >= min(counts))
    smaller = (lambda c: tuple(b for b in below if b < c)) if below else None
    searched, asked, table = search_smaller_first(lambda tried: search_layouts(
        ev, tried, target, max_tp(ev), limits, exhaustive, progress,
        counts_label(len(tried), len(counts)) if inputs.gpus else f"the default range, {len(tried):,} GPU count(s)"),
        counts, ev.cluster.gpus_per_node, smaller)
    table.columns["gpus_asked"] = asked_column(table, searched, asked)
    if ranged and len(table):  # any count inside a range is asked: none of it idle, no idle rule (planner.idle_rule)
        table.columns["gpus_asked"] = np.where(table["gpus"] >= min(counts), table["gpus"], table["gpus_asked"])
    table = _with_fallbacks(ev, counts, table, target, limits, exhaustive)
    seconds = time.perf_counter() - start
    if not len(table):
        raise (rule_refusal(ev.spec, tuple(counts), ev.memory.seq_len, target, max_tp(ev), limits)
               or no_layout_error(limits, tuple(counts), target))
    fitting = table.take(table["fits"])
    if not len(fitting):
        best = int(np.nanargmin(table["total_bytes"]))
        enough = smallest_fitting_count(ev, max(counts), target, max_tp(ev), limits)
        gpu, gap = ev.cluster.gpu, _gap_words(ev.fit_reserve, inputs.framework, ev.fsdp2_pools)
        raise no_fit_refusal(inputs, enough, f"no layout fits {gpu.name} ({format_bytes(gpu.memory_bytes)}) with the "
                             f"{ev.overheads.margin:.0%} margin{gap} on {plural(max(counts), 'GPU')} (at best "
                             f"{table['total_bytes'][best] / 2**30:,.1f} GiB a GPU)",
                             sequence_split_note(ev.spec, max(counts), ev.memory.seq_len, max_tp(ev), limits))
    if given:  # ranking by cost pays for the GPUs given a row leaves idle (planner.idle_rule.idle_charged)
        fitting.columns["charged_gpus"] = fitting["gpus_asked"]
    fitting = _with_days(inputs, ev, fitting, price)
    between = counts_between(inputs, fitting, counts, ev.cluster.gpus_per_node)
    held = set(np.unique(table["gpus"]).tolist()) if between else set()  # not again where a fallback has (w15 W5)
    between, counts = tuple(c for c in between if c not in held), tuple(sorted(counts + between))
    if between:  # the common sizes bracket a deadline's answer: the counts between them, in one search
        more = search_layouts(ev, between, target, max_tp(ev), limits, exhaustive,
                              label=f"{len(between):,} GPU count(s) between the common sizes")
        more.columns["gpus_asked"] = more["gpus"] if len(more) else np.zeros(0, dtype=np.int64)
        table = LayoutTable.concat([table, more])
        if len(more) and more["fits"].any():
            # every row kept (no most_days): a count's time-first row decides (planner.plan.deadline_order)
            fitting = LayoutTable.concat([fitting, _with_days(inputs, ev, more.take(more["fits"]), price)])
        seconds = time.perf_counter() - start
    fitting, missed = deadline_rows(inputs, fitting, counts)
    found = PlanSearch(ev, fitting, table, seconds, price, price_source, counts, target, limits, missed)
    check_offer_pick(inputs, found, best_index)  # an offer's re-run: the row picked within 2x of failure-free (review w11 r4 S2)
    return found


def _with_days(inputs: PlanInputs, ev: Evaluator, fitting: LayoutTable, price: float | None) -> LayoutTable:
    """``fitting`` (timed rows) with days, GPU-hours and cost (USD at ``price`` per GPU-hour; NaN unpriced),
    less the rows whose run never completes with failures, with each row's failure shares (with_completing_shares).
    Every row is kept before failures, slow ones too: a count's first row decides the deadline (planner.plan)."""
    wall = inputs.tokens / fitting["tokens_per_second"]
    fitting.columns["days"] = wall / SECONDS_PER_DAY
    fitting.columns["gpu_hours"] = wall * fitting["gpus"] / 3600
    fitting.columns["cost"] = fitting["gpu_hours"] * (price if price is not None else np.nan)
    fitting, point_share = with_completing_shares(inputs, ev, fitting)  # the rows that finish with failures
    fitting, point_share = with_ramp_days(inputs, ev, fitting, point_share, space_limits(inputs))
    fitting.columns["days_with_failures"] = fitting["days"] * point_share  # the answer's, row by row
    return fitting


def best_index(result: PlanSearch, rank_by: str) -> int:
    """Row of ``result.table`` ranked first."""
    return int(ranking(result.table, rank_by, result.table["cost"])[0])


def chosen_plan(result: PlanSearch, i: int) -> Plan:
    """Row ``i`` of the search as a Plan (re-evaluated on the single-layout path: same numbers)."""
    layout, recompute = row_layout(result.table, i)
    return evaluate_layout(result.evaluator, layout, recompute, result.target_for(layout.world),
                           int(result.table["gpus_asked"][i]))


def idle_told(plan: Plan, gpus_given: object) -> int:
    """GPUs of ``plan``'s count the answer says it leaves idle: only of a count the user gave (``gpus_given``: the
    ask's --gpus; None where the count was a deadline's or the default range's search count, a cluster nobody has:
    review w14 R3 S1, `--global-batch 8300 --days 5` printed '3,988 of 12,288' left idle, 12,288 never asked).
    plan's and train's printers both say it (jobs.plan.estimate, jobs.training.sections)."""
    return plan.idle_gpus if gpus_given is not None else 0
