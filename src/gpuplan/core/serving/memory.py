"""Serving memory per GPU: the engine's split between weights, its profiled activation peak,
runtime memory and the KV budget (vLLM ``gpu_memory_utilization``, SGLang ``mem_fraction_static``,
TensorRT-LLM ``free_gpu_memory_fraction``), with speculative proposers and LoRA slots.

Units: bytes. Sources are named next to each formula and constant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.model import ModelSpec
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import lora as L
from gpuplan.core.serving.engines import activation_peak_bytes
from gpuplan.core.serving.setup import ServingSetup
from gpuplan.core.serving.speculative import Speculation
from gpuplan.core.serving.weights import (
    ParamGroups,
    WeightFormat,
    param_groups,
    weight_bytes_per_gpu,
)


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU (the fullest pipeline stage) and what is left for the KV cache."""

    weights: float
    activations: float
    fixed: float
    usable: float
    """(device total - driver reserve) x gpu_memory_utilization; SGLang: (that - CUDA context and
    communicators) x mem_fraction_static, the budget of weights + KV pool."""
    kv_budget: float
    """What vLLM leaves for the KV cache (worker determine_available_memory): usable - weights -
    activation peak - non-torch memory; with a speculative proposer, the target's share of it."""
    headroom: float = 0.0
    """Memory the engine leaves unused on purpose (vLLM: 1 - utilization of the device; SGLang:
    the reserve outside mem_fraction_static, where activations and CUDA graphs also live;
    TensorRT-LLM: 1 - free_gpu_memory_fraction of what was free)."""
    draft_weights: float = 0.0
    """A speculative proposer's weights (included in ``weights``)."""
    draft_kv: float = 0.0
    """The proposer's share of the KV memory (its cache grows with the target's, token for token)."""
    lora_slots: float = 0.0
    """Multi-LoRA adapter slots (included in ``weights``: engines allocate them at model load)."""
    comm: float = 0.0
    """NCCL buffers (included in ``fixed``: Runtime.comm_bytes)."""
    cuda_graphs: float = 0.0
    """CUDA-graph memory the engine counts (included in ``fixed``; vLLM only)."""


def draft_weight_bytes_per_gpu(s: Speculation, fmt: WeightFormat, tp: int) -> float:
    """The proposer's weights per GPU, split over tp like the target (vLLM runs the draft at the
    target's TP): a draft model whole, an EAGLE / MTP layer without the shared embedding and head."""
    if s.draft is None:
        return 0.0
    groups = param_groups(s.draft)
    if s.shares_embeddings:
        groups = ParamGroups(0.0, 0.0, groups.norms, groups.router, groups.dense_linear, groups.routed, True,
                             groups.attention)
    return weight_bytes_per_gpu(groups, fmt, s.draft.num_layers, tp, 1)


def draft_kv_share(spec: ModelSpec, s: Speculation | None, kv_bytes: float, tp: int, pp: int) -> float:
    """Share of the KV memory the proposer's cache takes: its bytes per token over the sum of
    both (vLLM allocates both caches from one pool, block for block)."""
    if s is None or s.draft is None:
        return 0.0
    from gpuplan.core.serving.kv_cache import kv_layout

    target = kv_layout(spec, kv_bytes, tp, pp).bytes_per_token
    draft = kv_layout(s.draft, kv_bytes, tp, 1).bytes_per_token
    return draft / (target + draft)


def serving_memory(spec: ModelSpec, groups: ParamGroups, memory_bytes: float, setup: ServingSetup,
                   tp: int, pp: int, gpu_name: str = "", scale_up_bandwidth: float | None = None) -> Memory:
    """Memory per GPU and the KV budget on tp x pp GPUs of ``memory_bytes`` (``gpu_name`` picks
    vLLM's batch defaults; ``scale_up_bandwidth``, bytes/s both directions, its NCCL buffers)."""
    memory = _engine_memory(spec, groups, memory_bytes, setup, tp, pp, gpu_name, scale_up_bandwidth)
    if setup.lora is not None:  # slots are allocated with the weights, before the KV cache is sized
        slots = L.slot_bytes_per_gpu(spec, setup.lora, tp, pp)
        memory = replace(memory, weights=memory.weights + slots, kv_budget=memory.kv_budget - slots,
                         lora_slots=slots)
    s = setup.speculation
    if s is None or s.draft is None:
        return memory
    draft_w = draft_weight_bytes_per_gpu(s, setup.fmt, tp)
    left = memory.kv_budget - draft_w
    share = draft_kv_share(spec, s, setup.kv_bytes, tp, pp) if left > 0 else 0.0  # a shortfall is the target's
    return replace(memory, weights=memory.weights + draft_w, kv_budget=left * (1 - share), draft_weights=draft_w,
                   draft_kv=left * share)


def _engine_memory(spec: ModelSpec, groups: ParamGroups, memory_bytes: float, setup: ServingSetup,
                   tp: int, pp: int, gpu_name: str = "", scale_up_bandwidth: float | None = None) -> Memory:
    runtime = setup.runtime
    weights = weight_bytes_per_gpu(groups, setup.fmt, spec.num_layers, tp, pp)
    comm = runtime.comm_bytes(tp, pp, scale_up_bandwidth)
    if runtime.engine == "sglang":  # KV pool = free after loading - total x (1 - mem_fraction_static)
        # (ModelRunner.profile_max_num_token), total = the memory free once the CUDA context and the
        # communicators exist: the pool is fraction x total - weights; activations and CUDA graphs
        # live in the rest
        fraction = runtime.mem_fraction_static or E.sglang_mem_fraction_static(memory_bytes, tp, pp)
        fixed = runtime.non_torch + comm  # graphs are in SGLang's reserve
        usable = (memory_bytes - runtime.driver_reserved - fixed) * fraction
        return Memory(weights, 0.0, fixed, usable, usable - weights,
                      memory_bytes - runtime.driver_reserved - fixed - usable, comm=comm)
    if runtime.engine == "trtllm":  # KV = fraction x what is free after engine, context, buffers
        visible = memory_bytes - runtime.driver_reserved
        activations = activation_peak_bytes(spec, runtime.prefill_tokens or E.TRTLLM_MAX_NUM_TOKENS, 0, tp)
        fixed = runtime.non_torch + comm + E.TRTLLM_RUNTIME_BUFFERS
        free = visible - weights - activations - fixed
        fraction = runtime.free_gpu_memory_fraction or E.TRTLLM_FREE_FRACTION
        return Memory(weights, activations, fixed, visible, free * fraction, free * (1 - fraction), comm=comm)
    tokens, seqs = runtime.batch_limits(memory_bytes, gpu_name)
    activations = activation_peak_bytes(spec, tokens, seqs, tp, sampler=runtime.sampler)
    if runtime.holds_allreduce_inputs:
        activations += E.held_allreduce_input_bytes(spec, tokens, tp)
    usable = (memory_bytes - runtime.driver_reserved) * runtime.gpu_memory_utilization
    fixed = runtime.non_torch + comm + runtime.cuda_graphs
    counted = fixed if runtime.profile_counts_runtime else 0.0
    return Memory(weights, activations, fixed, usable, usable - weights - activations - counted,
                  memory_bytes - runtime.driver_reserved - usable, comm=comm, cuda_graphs=runtime.cuda_graphs)
