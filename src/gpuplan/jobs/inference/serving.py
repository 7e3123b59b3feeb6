"""One serving configuration evaluated (memory, capacity, speed with its low / high), the price
of a GPU-hour, and the search over catalog GPUs for configurations that hold a load.
Formulas: core/serving/ (memory.py, roofline.py, kv_cache.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.serving import engines as E
from gpuplan.core.serving import memory as M
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.tp_span import host_gpus, node_ranks
from gpuplan.errors import InputError
from gpuplan.jobs.inference.resolve import Plan, group_tp_check, plan_on_gpu
from gpuplan.jobs.inference.tpu_serving import modelled_on

SEARCH_TP = (1, 2, 4, 8, 16)
"""TP degrees the serving searches try, each up to tp_reach of the part: 16 only inside a scale-up domain of 16
or more (GB200 / GB300 NVL72); on 8-GPU servers (HGX H100 / B200) the searches stop at 8, as before."""


def tp_reach(gpu: Accelerator) -> int:
    """The largest TP group a serving search puts on ``gpu``: its host's GPUs, or on an NVIDIA NVLink domain that
    spans hosts (GB200 / GB300 NVL72: 72 GPUs over NVLink switches, 4 a compute tray; core.serving.tp_span.node_ranks)
    that domain, where vLLM, SGLang and TensorRT-LLM all run one TP group across trays with a multi-node launch
    (sizing_text.multi_node_launch). Other vendors' pods (TPU slices, Ascend supernodes) keep the host: no engine's
    launch across their hosts was read. A PCIe part's 'domain' is its server (node_ranks), so it keeps the host too."""
    return max(host_gpus(gpu), node_ranks(gpu)) if gpu.vendor == "NVIDIA" else host_gpus(gpu)


def search_tps(gpu: Accelerator) -> tuple[int, ...]:
    """SEARCH_TP up to tp_reach(gpu): (1, 2, 4, 8, 16) on GB200 NVL72, (1, 2, 4, 8) on HGX H100 / B200, (1, 2, 4)
    on a 4-GPU MI250X node."""
    return tuple(tp for tp in SEARCH_TP if tp <= tp_reach(gpu))


@dataclass(frozen=True)
class Serving:
    """One configuration evaluated: memory, capacity, speed (expected, low, high)."""

    tp: int
    pp: int
    memory: M.Memory
    layout: K.KVLayout
    max_sequences: int
    max_context: float
    kv_tokens: int
    ttft: tuple[R.StepTime, R.StepTime, R.StepTime]
    tpot: tuple[R.StepTime, R.StepTime, R.StepTime]

    @property
    def gpus(self) -> int:
        return self.tp * self.pp


def evaluate(plan: Plan, gpu: Accelerator, tp: int, pp: int, batch: int) -> Serving:
    """Memory, capacity and speed of ``plan`` on tp x pp ``gpu``s with ``batch`` sequences (an FP8 plan as
    ``gpu`` runs it: resolve.plan_on_gpu)."""
    plan = plan_on_gpu(plan, gpu)
    spec, setup = plan.spec, plan.setup
    group_tp_check(spec, setup.fmt, tp)
    memory = M.serving_memory_on(spec, plan.groups, setup, tp, pp, gpu)
    layout = K.kv_layout(spec, setup.kv_bytes, tp, pp, setup.block_size)
    common = dict(tp=tp, pp=pp, **R.gpu_keywords(gpu, setup))
    kv_seq = layout.bytes_per_sequence(plan.decode_context)
    tpot = tuple(R.decode_step(spec, plan.groups, setup, kv_seq, batch=batch, context=plan.decode_context,
                               which=w, **common) for w in (0, 1, 2))
    ttft = tuple(RP.served(R.prefill_step(spec, plan.groups, setup, prompt=plan.prompt, which=w, **common),
                           setup.runtime, plan.prompt) for w in (0, 1, 2))  # + the server's hold at its endpoint (request_path)
    return Serving(tp, pp, memory, layout, max_sequences(plan, layout, memory.kv_budget),
                   K.max_context(layout, memory.kv_budget, batch), K.tokens_in(layout, memory.kv_budget),
                   ttft, tpot)


def max_sequences(plan: Plan, layout: K.KVLayout, kv_budget: float) -> int:
    """Sequences of the plan's context whose cache fits; with prefix caching the cached share of
    the prompt is stored once (shared blocks, vLLM automatic prefix caching) and each sequence
    holds only the rest."""
    shared = int(plan.setup.prefix_hit * plan.prompt)
    if not shared:
        return K.max_sequences(layout, kv_budget, plan.context)
    return K.max_sequences(layout, kv_budget - layout.bytes_per_sequence(shared), plan.context - shared)


def price_for(gpu_id: str, given: float | None) -> tuple[float | None, str]:
    """USD per GPU-hour: the user's, else the price catalog's (gpuplan.catalog.pricing when installed)."""
    if given is not None:
        return given, "--price"
    try:
        from gpuplan.catalog.pricing import lookup_price
    except ImportError:
        return None, "no price catalog (gpuplan.catalog.pricing) in this version"
    try:
        found = lookup_price(gpu_id, "on_demand")
    except InputError:  # the price catalog does not know this accelerator
        found = None
    if found is None:
        return None, f"no on-demand price for {gpu_id} in the price catalog"
    return float(found[0]), str(found[1])


def serves(plan: Plan, gpu: Accelerator) -> bool:
    """Whether a catalog ``gpu`` runs the plan at all: its weight format's compute dtype, and an
    engine built for its vendor (TensorRT-LLM: NVIDIA only, core/serving/engines.py ENGINE_VENDORS), modelled
    there (no TPU: jobs/inference/tpu_serving.py). An FP8 plan is taken as ``gpu`` runs it (resolve.plan_on_gpu):
    an sm80-sm88 part serves it where the release has the weight-only FP8 Marlin path."""
    return (gpu.has_dtype(plan_on_gpu(plan, gpu).setup.fmt.compute_dtype)
            and E.runs_on(plan.setup.runtime.engine, gpu.vendor)
            and modelled_on(gpu))


def scheduler_refusal(plan: Plan, gpu: Accelerator) -> int | None:
    """vLLM's default token budget on ``gpu`` where it would not start with the user's --max-num-seqs
    (None: it would start). With no
    --prefill-tokens, max_num_batched_tokens is that GPU's default (2,048 below 70 GiB and on A100s at
    0.9+, 8,192 above), and vLLM raises a ValueError at start-up when it is below max_num_seqs
    (vllm/config/scheduler.py @v0.19.0:273-278, 'max_num_batched_tokens (...) must be greater than or
    equal to max_num_seqs'); it does not lower either setting, so such a GPU is left out of the sizing."""
    runtime = plan.setup.runtime
    if runtime.engine != "vllm" or runtime.max_num_seqs is None or runtime.prefill_tokens is not None:
        return None
    tokens, seqs = runtime.batch_limits(gpu.memory_bytes, gpu.name, plan.spec.max_position_embeddings)
    return tokens if tokens < seqs else None


def serving_gpus(plan: Plan):
    """The catalog GPUs that run the plan (serves) and where its engine would start with the settings
    given (scheduler_refusal): the candidates of every search over GPU types."""
    from gpuplan.catalog import hardware_entries, load_accelerator

    for gpu_id in hardware_entries():
        gpu = load_accelerator(gpu_id)
        if serves(plan, gpu) and not scheduler_refusal(plan, gpu):
            yield gpu


def max_sequences_at(plan: Plan, gpu: Accelerator, tp: int) -> int:
    """evaluate(plan, gpu, tp, 1, ...)'s max_sequences without its timing (the memory and the KV layout only): the
    searches time only the setups they keep (search_configurations, sizing._tp_steps)."""
    plan = plan_on_gpu(plan, gpu)
    group_tp_check(plan.spec, plan.setup.fmt, tp)
    memory = M.serving_memory_on(plan.spec, plan.groups, plan.setup, tp, 1, gpu)
    return max_sequences(plan, K.kv_layout(plan.spec, plan.setup.kv_bytes, tp, 1, plan.setup.block_size),
                         memory.kv_budget)


def search_configurations(plan: Plan, batch: int) -> list[tuple[Accelerator, Serving, float | None, str]]:
    """For every catalog GPU that runs the format: the smallest TP of search_tps (1, 2, 4, 8 within an HGX node;
    16 too inside a GB200 / GB300 NVL72 domain) whose KV cache holds ``batch`` sequences of the plan's context."""
    found = []
    for gpu in serving_gpus(plan):
        on_gpu = plan_on_gpu(plan, gpu)  # once a GPU type: max_sequences_at and evaluate take it as it is
        for tp in search_tps(gpu):
            try:
                if max_sequences_at(on_gpu, gpu, tp) < batch:  # timed only where kept: a 16M-token prefill is ~8,000
                    continue  # chunks per setup; pythia-70m at 16M tries 99 setups and keeps 28 (31.5 -> 6.3 s, wave 9)
                serving = evaluate(on_gpu, gpu, tp, 1, batch)
            except InputError:  # tp does not fit the heads
                continue
            if serving.max_sequences >= batch:
                price, source = price_for(gpu.id, None)
                found.append((gpu, serving, price, source))
                break
    return sorted(found, key=lambda r: (r[1].gpus, r[1].gpus * r[0].memory_bytes))
