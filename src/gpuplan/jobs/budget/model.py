"""The rest of a training budget: data loading, checkpoints, failures, money and contingency.

``budget_sections(spec, gpu, gpus=..., wall_seconds=..., gpu_hours=..., tokens=...)`` takes the
numbers a training estimate already has and returns the report sections "Data loading",
"Checkpoints", "Failures and goodput", "Cost (on-demand vs spot)" and "Contingency budget";
``budget_sections.budget_assumptions(settings)`` lists every default they use with its source and flag.
``compute_budget`` returns sections, assumptions, tables and notes together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuplan.catalog.storage import storage_spec
from gpuplan.core.economics import checkpoint as C
from gpuplan.core.economics import cost as K
from gpuplan.core.economics import io as IO
from gpuplan.core.economics.evaluation import MAX_EVAL_INTERVAL, MAX_EVAL_ITERS
from gpuplan.core.memory import training as M
from gpuplan.core.economics import reliability as R
from gpuplan.jobs.budget.bounds import MAX_FAILURE_RATE, MAX_RESTART_SECONDS, MAX_SPOT_PREEMPTIONS
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.units import format_percent, format_usd_per_gpu_hour
from gpuplan.errors import InputError, whole_or
from gpuplan.report.model import Assumption, Section, Table
from gpuplan.schema.bound_words import bound_words

# Llama 2 (arXiv:2307.09288, Sec. 2.2): "a global batch-size of 4M tokens".
DEFAULT_GLOBAL_BATCH_TOKENS = 4 * 2**20
DEFAULT_DEVICES_PER_NODE = 8  # when the hardware catalog names no host size (DGX/HGX: 8)
SCALING_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


@dataclass(frozen=True)
class BudgetSettings:
    """Every assumption of the budget sections; each is a flag of `gpuplan budget`."""

    storage: str = "parallel_fs"
    """Where training data is read from: local_nvme, parallel_fs or object_store."""
    checkpoint_storage: str | None = None
    """Where checkpoints go (default: the data storage)."""
    storage_read: float | None = None
    """Override: effective read bytes/s per node."""
    storage_write: float | None = None
    """Override: effective write bytes/s per node."""
    token_bytes: int | None = None
    """Bytes per stored token id; None = 2 below 65,500 vocabulary ids, else 4 (Megatron)."""
    tokenize_on_the_fly: bool = False
    raw_bytes_per_token: float = IO.DEFAULT_RAW_BYTES_PER_TOKEN
    tokens_per_s_per_core: float = IO.DEFAULT_TOKENS_PER_S_PER_CORE
    cpu_cores_per_node: int = IO.DEFAULT_CPU_CORES_PER_NODE
    optimizer: str = "adamw"
    checkpoint_interval: float | None = None
    """Seconds of training between checkpoints; None = Young/Daly optimum."""
    async_checkpoint: bool = False
    keep_checkpoints: int = C.DEFAULT_KEEP_CHECKPOINTS
    checkpoint_writer_group: int | None = None
    """Data-parallel ranks whose model-parallel ranks write the checkpoint (None: every rank, under ZeRO >= 1):
    DeepSpeed's MiCS shard group (core.economics.checkpoint.mics_writer_group)."""
    host_copy: float = C.DEFAULT_HOST_COPY_BYTES_PER_S
    """Device-to-host bytes/s per GPU (async checkpoint staging)."""
    failure_rate: float = R.DEFAULT_FAILURE_RATE
    """Job interruptions per GPU-hour."""
    restart_seconds: float = R.DEFAULT_RESTART_SECONDS
    provider: str | None = None
    """Price one provider; None = median over providers."""
    price: float | None = None
    """Override: on-demand USD per GPU-hour."""
    spot_price: float | None = None
    spot_discount: float | None = None
    spot_preemptions: float = K.DEFAULT_SPOT_PREEMPTIONS_PER_NODE_MONTH
    """Spot reclaims per node-month."""
    contingency: tuple[tuple[str, float | None], ...] = field(default=(
        ("restarts", 0.05), ("tuning", 0.05), ("failures", None), ("evaluation", 0.05)))
    """Named shares of compute GPU-hours; None = the failure model's estimate."""
    eval_interval: int | None = None
    """Optimizer steps between in-loop evaluations; None = no evaluation (core.economics.evaluation)."""
    eval_iters: int | None = None
    """Forward-only iterations of the global batch per evaluation; None with an interval = 100 (Megatron)."""
    eval_ramp: tuple[tuple[float, float], ...] = ()
    """The batch ramp's phases as (tokens, tokens a step), in order (--batch-ramp): the steps the evaluations are
    counted over (core.economics.evaluation.ramp_run_steps); () without a ramp."""


def validate_settings(s: BudgetSettings) -> None:
    storage_spec(s.storage)
    if s.checkpoint_storage:
        storage_spec(s.checkpoint_storage)
    M.lookup(M.OPTIMIZERS, s.optimizer, "optimizer")
    if s.token_bytes is not None and s.token_bytes not in (1, 2, 4, 8):
        raise InputError("token_bytes", s.token_bytes, "must be 2 or 4 (1 or 8 for unusual formats)")
    positive = ("tokens_per_s_per_core", "cpu_cores_per_node", "host_copy", "failure_rate",
                "keep_checkpoints", "storage_read", "storage_write", "checkpoint_interval", "price", "spot_price")
    for name in positive:
        value = getattr(s, name)
        if value is not None and not value > 0:
            raise InputError(name, value, "must be a positive number")
    # The schema's bounds (jobs.budget.fields), in the schema's words (schema.bound_words), for a BudgetSettings built
    # directly: the rates in bytes/s here (the schema's 1e-6 to 1e6 GB/s, fields.GBps), the failure rate as its field.
    for name, per in (("storage_read", "a node"), ("storage_write", "a node"), ("host_copy", "a GPU")):
        if getattr(s, name) is not None and not 1e3 <= getattr(s, name) <= 1e15:
            raise InputError(name, getattr(s, name), bound_words(1e3, 1e15, False, name, f"bytes/s {per}"))
    if not IO.MIN_RAW_BYTES_PER_TOKEN <= s.raw_bytes_per_token <= IO.MAX_RAW_BYTES_PER_TOKEN:  # the schema's bounds
        raise InputError("raw_bytes_per_token", s.raw_bytes_per_token, bound_words(
            IO.MIN_RAW_BYTES_PER_TOKEN, IO.MAX_RAW_BYTES_PER_TOKEN, False, "bytes_per_token"))
    if not R.MIN_FAILURE_RATE <= s.failure_rate <= MAX_FAILURE_RATE:
        raise InputError("failure_rate", s.failure_rate,
                         bound_words(R.MIN_FAILURE_RATE, MAX_FAILURE_RATE, False, "failure_rate"))
    if not 0 <= s.spot_preemptions <= MAX_SPOT_PREEMPTIONS:
        raise InputError("spot_preemptions", s.spot_preemptions,
                         bound_words(0, MAX_SPOT_PREEMPTIONS, False, "spot_preemption"))
    if not 0 < s.restart_seconds <= MAX_RESTART_SECONDS:  # NaN fails too (review s21 R3 S3: NaN, 1e30, 0 passed)
        raise InputError("restart_seconds", s.restart_seconds, bound_words(0, MAX_RESTART_SECONDS, True, "restart", "s"))
    if s.spot_discount is not None and not 0 <= s.spot_discount < 1:
        raise InputError("spot_discount", s.spot_discount, "must be a fraction in [0, 1)")
    for name, share in s.contingency:
        if share is not None and not 0 <= share <= 5:
            raise InputError(f"contingency_{name}", share, "must be a fraction between 0 and 5")
    _check_evaluation(s.eval_interval, s.eval_iters)
    for tokens, batch in s.eval_ramp:  # the schema's --batch-ramp phases in tokens (fields._eval_ramp), for BudgetSettings
        if not (0 < tokens < float("inf") and 0 < batch < float("inf")):
            raise InputError("batch_ramp", (tokens, batch), "each phase needs positive, finite tokens and batch tokens")
    if s.provider is not None:
        from gpuplan.catalog.pricing import resolve_provider

        resolve_provider(s.provider)




def _check_evaluation(interval, iters) -> None:
    """--eval-interval / --eval-iters: whole numbers of steps, iters only with an interval (the Python API's door;
    the schema's fields refuse the same first)."""
    for name, value, high in (("eval_interval", interval, MAX_EVAL_INTERVAL), ("eval_iters", iters, MAX_EVAL_ITERS)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value != value
                                  or not 1 <= value <= high):  # the schema's words (fields.EvalCount, bound_words)
            raise InputError(name, value, bound_words(1, high, False, name))
        if value is not None and value != int(value):
            raise InputError(name, value, "must be a whole number")
    if iters is not None and interval is None:
        raise InputError("eval_iters", iters, "needs eval_interval (--eval-interval, steps between evaluations): "
                         "without it no "
                         "evaluation runs")


@dataclass(frozen=True)
class Prices:
    """USD per GPU-hour with their sources; None where nothing is published or given."""

    on_demand: float | None
    on_demand_source: str
    spot: float | None
    spot_source: str
    reserved: float | None = None
    reserved_source: str = ""
    on_demand_low: float | None = None
    on_demand_high: float | None = None


def resolve_prices(gpu_id: str, s: BudgetSettings) -> Prices:
    """On-demand from the catalog (or --price); spot published for the provider, else on-demand
    less the published spot discount (this GPU's, else the catalog's), else the article's 60%."""
    from gpuplan.catalog.pricing import lookup_price, provider_prices, spot_discount

    found = lookup_price(gpu_id, "on_demand", s.provider)
    od, od_src = (s.price, "given (--price)") if s.price else (found if found else (None, "no published price"))
    per_provider = provider_prices(gpu_id) if s.provider is None and not s.price else {}
    values = [v for v, _ in per_provider.values()]
    low, high = (min(values), max(values)) if values else (od, od)
    reserved = lookup_price(gpu_id, "reserved", s.provider) if s.provider and not s.price else \
        _discounted_reserved(od, gpu_id, s.provider, "--price" if s.price else "the median on-demand price")
    spot, spot_src = (s.spot_price, "given (--spot-price)") if s.spot_price else (None, "")
    if spot is not None and od is not None and spot > od:  # a negative discount: --spot-discount takes 0-99.9%
        raise InputError("spot_price", whole_or(spot), f"must be at most the on-demand "
                         f"price, {format_usd_per_gpu_hour(od)} ({_spot_bound_basis(gpu_id, s, per_provider)}): spot is sold at a "
                         "discount off on-demand")
    least = od * (1 - K.MAX_SPOT_DISCOUNT) if od is not None else 0.0  # a discount past --spot-discount's bound
    if spot is not None and spot < least * (1 - 1e-9):
        shown = math.ceil(least / 10 ** (e := math.floor(math.log10(least)) - 2) - 1e-6) * 10**e  # 3 digits, up
        raise InputError("spot_price", spot, f"must be at least ${shown:.3g}/GPU-h, "
                         f"{1 - K.MAX_SPOT_DISCOUNT:.1%} of the on-demand price {format_usd_per_gpu_hour(od)} "
                         f"({_spot_bound_basis(gpu_id, s, per_provider)}), as --spot-discount takes at most "
                         f"{K.MAX_SPOT_DISCOUNT:.1%}")
    if spot is None and s.provider is not None and s.spot_discount is None:
        spot, spot_src = lookup_price(gpu_id, "spot", s.provider) or (None, "")
    if spot is None and od is not None:
        discount = (s.spot_discount, "given (--spot-discount)") if s.spot_discount is not None else \
            spot_discount(gpu_id, s.provider) or (K.ARTICLE_SPOT_DISCOUNT, "the article: spot can cost 60%+ less")
        spot, spot_src = K.spot_price(od, discount[0]), f"on-demand x (1 - {format_percent(discount[0])}); {discount[1]}"
    return Prices(od, od_src, spot, spot_src or "no on-demand price to discount",
                  reserved[0] if reserved else None, reserved[1] if reserved else "", low, high)


def _discounted_reserved(od: float | None, gpu_id: str, provider: str | None, basis: str) -> tuple[float, str] | None:
    """The reserved price beside an on-demand price ``od`` that is not one provider's own (--price, or the median over
    providers): ``od`` less the published reserved discount (catalog.pricing.published_discount: the median of
    1 - reserved / on-demand over this GPU's rows that publish both, the provider's only if given), as spot takes its
    published discount; None where no row publishes both (no reserved line). The median of the reserved prices alone
    is other providers' discount off other on-demand prices: `budget --gpu h100 --price 1` priced reserved at that
    $3.82, $15,548 against $4,072 on demand, and a100's default priced it above on-demand ($1.77 median reserved of 2
    providers, $1.71 median on-demand of 5; session 24, helper MT2)."""
    from gpuplan.catalog.pricing import published_discount

    found = published_discount(gpu_id, "reserved", provider)
    if od is None or found is None:
        return None
    off, pairs = found
    detail = ", ".join(f"{r.provider} {r.sku} {d:.0%}" for r, d in pairs)
    return od * (1 - off), f"{basis} x (1 - {format_percent(off)}); median reserved discount: {detail}"


def _spot_bound_basis(gpu_id: str, s: BudgetSettings, per_provider: dict) -> str:
    """Which on-demand price bounds --spot-price, as the refusal names it: the one this answer prices on-demand
    at and computes the spot saving from (--price; else the --provider's; else the median over providers). Review
    w10 r2 S2: with neither, a provider's real spot price may exceed the median (a100: $1.71; AWS on-demand $3.43);
    taken, it printed 'spot saving vs on-demand -17.2%' against a price the user does not pay. So the bound stays
    the answer's own price and the line names it as the median, the dearest provider's price, and the options
    that price the user's own on-demand (--provider, --price)."""
    if s.price:
        return "--price"
    if not per_provider:
        from gpuplan.catalog.pricing import provider_prices, resolve_provider

        rows = provider_prices(gpu_id)[resolve_provider(s.provider)][1]
        return f"{rows[0].provider}'s on-demand in the price catalog; --price sets yours"
    if len(per_provider) == 1:
        return "the price catalog's only provider; --price sets yours"
    top_value, top_rows = max(per_provider.values(), key=lambda entry: entry[0])
    return (f"the median of {len(per_provider)} providers' on-demand prices, which this answer uses; the dearest "
            f"is {top_rows[0].provider} at ${top_value:,.2f}: --provider or --price prices yours")


@dataclass(frozen=True)
class RunFacts:
    """The numbers the training estimate already has, plus what the budget derives from them."""

    spec: ModelSpec
    gpu: Accelerator
    gpus: float
    wall_seconds: float
    gpu_hours: float
    tokens: float
    global_batch_tokens: float
    step_seconds: float
    step_given: bool
    recipe: str
    zero: int
    model_parallel: int
    eval_seconds: float = 0.0
    """Failure-free wall-clock of the in-loop evaluations on these GPUs (core.economics.evaluation), s."""

    @property
    def devices_per_node(self) -> int:
        return self.gpu.devices_per_node or DEFAULT_DEVICES_PER_NODE

    @property
    def nodes(self) -> int:
        return IO.nodes_for(self.gpus, self.devices_per_node)


@dataclass(frozen=True)
class Scenario:
    """One cluster size: checkpoint cost, failure plans and billed hours on-demand and on spot."""

    gpus: float
    nodes: int
    size: C.CheckpointSize
    write_seconds: float
    write_bandwidth: float
    stall_sync: float
    stall_async: float
    on_demand: R.FailurePlan
    spot: R.FailurePlan

    @property
    def billed_on_demand(self) -> float:
        return K.billed_gpu_hours(self.gpus, self.on_demand.wall_seconds)

    @property
    def billed_spot(self) -> float:
        return K.billed_gpu_hours(self.gpus, self.spot.wall_seconds)

    @property
    def completes(self) -> bool:
        """The run finishes on-demand and on spot: R.expected_wall_seconds refuses where failures come faster
        than a checkpoint period plus a restart."""
        try:
            return bool(self.on_demand.wall_seconds < float("inf") and self.spot.wall_seconds < float("inf"))
        except InputError:
            return False


def scenario(run: RunFacts, s: BudgetSettings, gpus: float, rate: float | None = None) -> Scenario:
    """Checkpointing and failures for ``gpus`` GPUs doing the run's work (work scales as 1/GPUs)."""
    return scenarios(run, s, gpus, (rate,))[0]


def scenarios(run: RunFacts, s: BudgetSettings, gpus: float, rates: tuple[float | None, ...]) -> list[Scenario]:
    """scenario at each failure rate of ``rates`` (None: the settings'), the checkpoint and storage facts worked out
    once (they do not depend on the rate): the given count's door reads three rates (jobs/plan/completes._plans_of);
    the planner's search reads the same plans for every (count, writers) group at once from
    jobs/plan/failure_plans.group_plan_columns, which mirrors this function operation for operation (a branch added
    here goes there too: tests/test_failure_plan_columns.py checks them bit for bit)."""
    nodes = IO.nodes_for(gpus, run.devices_per_node)
    work = (run.wall_seconds + run.eval_seconds) * run.gpus / gpus  # evaluations: forward work, failures hit it too
    writers = C.checkpoint_writers(int(round(gpus)), run.zero, run.model_parallel, s.checkpoint_writer_group)
    # the table's recipe, not --grad-dtype / --moment-dtype's: gradients are not saved, and Megatron's distributed
    # checkpoint writes a precision-aware optimizer's bf16 moments as fp32 (distrib_optimizer.py
    # _get_main_param_and_optimizer_states: optimizer.get_unscaled_state(), which TE's FusedAdam returns .float())
    size = C.checkpoint_size(run.spec, M.RECIPES[run.recipe], M.OPTIMIZERS[s.optimizer], writers)
    write_per_node, shared = s.storage_write, None  # --storage-write: each writing node's effective rate, uncapped
    if write_per_node is None:
        store = storage_spec(s.checkpoint_storage or s.storage)
        write_per_node, shared = store.node_write, store.shared_write_total(nodes)
    bandwidth = C.write_bandwidth(C.writer_nodes(writers, run.devices_per_node, nodes), write_per_node, shared)
    write_s = C.write_seconds(size.total, bandwidth)
    host_copy = size.shard / s.host_copy
    stall = host_copy if s.async_checkpoint else write_s
    restart = s.restart_seconds + (write_s if s.async_checkpoint else 0.0)  # async: durable copy lags
    floor = run.step_seconds  # at most one checkpoint per step
    if s.async_checkpoint and s.checkpoint_interval is None:
        floor = max(floor, write_s)  # the optimum waits for the background write to finish
    elif s.async_checkpoint:  # a given interval shorter than the write stalls on the previous save
        stall = C.async_stall_seconds(size.shard, s.host_copy, write_s, s.checkpoint_interval)
    spot_extra = K.spot_interruptions_per_hour(nodes, s.spot_preemptions)
    out = []
    for rate in rates:
        rate = s.failure_rate if rate is None else rate
        plans = [R.plan_failures(work, gpus, rate, stall, restart, s.checkpoint_interval, floor, extra)
                 for extra in (0.0, spot_extra)]
        out.append(Scenario(gpus, nodes, size, write_s, bandwidth, write_s, host_copy, plans[0], plans[1]))
    return out


def run_facts(spec: ModelSpec, gpu: Accelerator, *, gpus: float, wall_seconds: float, gpu_hours: float,
              tokens: float, global_batch_tokens: float | None = None, step_seconds: float | None = None,
              recipe: str = "mixed", zero: int = 1, model_parallel: int = 1) -> RunFacts:
    """Check the inputs and derive the step time: global batch / (tokens / wall-clock) unless given."""
    for name, value in (("gpus", gpus), ("wall_seconds", wall_seconds), ("gpu_hours", gpu_hours),
                        ("tokens", tokens), ("global_batch_tokens", global_batch_tokens),
                        ("step_time", step_seconds), ("model_parallel", model_parallel)):
        if value is not None and not value > 0:
            raise InputError(name, value, "must be a positive number")
    M.lookup(M.RECIPES, recipe, "recipe")
    if zero not in (0, 1, 2, 3):
        raise InputError("zero", zero, "must be 0, 1, 2 or 3")
    batch = float(global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS)
    if step_seconds:
        _check_step_time(spec, gpu, gpus, batch, step_seconds)
    step = step_seconds if step_seconds else batch / (tokens / wall_seconds)
    return RunFacts(spec, gpu, float(gpus), float(wall_seconds), float(gpu_hours), float(tokens), batch, step,
                    step_seconds is not None, recipe, zero, model_parallel)


def _check_step_time(spec: ModelSpec, gpu: Accelerator, gpus: float, batch_tokens: float, step: float) -> None:
    """A given --step-time no faster than the GPUs' largest dense peak (any dtype) allows for 6 FLOPs
    per active non-embedding parameter per token (Kaplan et al. 2020 Sec. 2.1, as calibrate's
    log_checks.check_step_flops): `--step-time 1e-300s` printed a 300-digit input rate, exit 0."""
    from gpuplan.core.model.spec import count_parameters

    counts = count_parameters(spec)
    flops = 6 * (counts.active - counts.embedding - counts.position_embedding) * batch_tokens
    peak = max(f for dtype, f in gpu.peak_flops if not dtype.startswith("int"))
    if flops / (step * gpus) > peak:
        raise InputError("step_time", f"{step:.3g} s", f"a step of {batch_tokens:,.0f} tokens on {gpus:,.0f} GPUs "
                         f"needs at least {flops / (gpus * peak):.3g} s at the {gpu.name}'s peak "
                         f"{peak / 1e12:,.0f} TFLOP/s (6 FLOPs per active parameter per token)")


@dataclass(frozen=True)
class Budget:
    sections: tuple[Section, ...]
    assumptions: tuple[Assumption, ...]
    tables: tuple[Table, ...]
    notes: tuple[str, ...]
