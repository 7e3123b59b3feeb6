"""Serving memory per GPU: the engine's split between weights, its profiled activation peak,
runtime memory and the KV budget (vLLM ``gpu_memory_utilization``, SGLang ``mem_fraction_static``,
TensorRT-LLM ``free_gpu_memory_fraction``), with speculative proposers and LoRA slots.

Units: bytes. Sources are named next to each formula and constant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import layers_per_stage
from gpuplan.core.serving import attention_backend as AB
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import lora as L
from gpuplan.core.serving import profile as P
from gpuplan.core.serving.setup import ServingSetup
from gpuplan.core.serving.speculative import Speculation
from gpuplan.core.serving.weights import (
    ParamGroups,
    WeightFormat,
    kv_replica_bytes,
    mxfp4_padding_bytes,
    param_groups,
    weight_bytes_per_gpu,
)


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU (the fullest pipeline stage) and what is left for the KV cache."""

    weights: float
    activations: float
    """The profiled activation peak the engine subtracts (SGLang: 0, it lives in the reserve)."""
    fixed: float
    """Non-torch memory, NCCL buffers and (where counted) CUDA graphs the engine subtracts."""
    usable: float
    """vLLM: (device total - driver reserve) x gpu_memory_utilization; SGLang: the memory free at
    start-up x mem_fraction_static (weights + KV pool); TensorRT-LLM: what CUDA sees."""
    kv_budget: float
    """What the engine leaves for the KV cache; with a speculative proposer, the target's share."""
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
    mxfp4_padding: float = 0.0
    """vLLM's MXFP4 expert padding (weights.mxfp4_padding_bytes; included in ``weights``)."""
    kv_replicas: float = 0.0
    """The k/v projections a GPU holds whole where tp > the KV heads (weights.kv_replica_bytes; included in
    ``weights``)."""
    kv_head_replicas: int = 1
    """GPUs each KV head's k/v projections are on: tp / KV heads past the KV heads (vLLM QKVParallelLinear
    num_kv_head_replicas, model_executor/layers/linear.py@v0.23.0:1026-1041), else 1."""
    comm: float = 0.0
    """Non-torch memory of the tensor / pipeline groups (included in ``fixed``)."""
    cuda_graphs: float = 0.0
    """CUDA-graph memory (estimated or given), counted in ``fixed`` only when ``graphs_counted``."""
    graphs_counted: bool = False
    non_torch: float = 0.0
    """Non-torch memory on one GPU (included in ``fixed`` where the profile counts it)."""
    total: float = 0.0
    """Device memory visible to CUDA (device total - driver reserve)."""
    forward_peak: float = 0.0
    """vLLM: the profile forward's activations at max_num_batched_tokens."""
    sampler_peak: float = 0.0
    """vLLM: the profiled sampler step on max_num_seqs rows (with the forward's hidden states)."""
    batch_limits: tuple[int, int] = (0, 0)
    """vLLM: (max_num_batched_tokens, max_num_seqs) the profile ran."""
    counts_runtime: bool = True
    """False for vLLM <= 0.2.4, whose profile counted PyTorch's allocated peak only."""
    fraction: float = 0.0
    """The engine's share: gpu_memory_utilization, mem_fraction_static or free_gpu_memory_fraction."""
    sampler: str = ""
    """vLLM: the profiled sampler (profile.SAMPLER_BYTES_PER_LOGIT's name, 'auto' resolved)."""
    attention_backend: tuple[str, str] = ("", "")
    """vLLM: (backend, why) of attention_backend.vllm_attention_backend, which the graph estimate uses."""


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
                   tp: int, pp: int, gpu_name: str = "", scale_up_bandwidth: float | None = None,
                   gpu_arch: str | None = None, tensor_core_dtypes: tuple[str, ...] | None = None) -> Memory:
    """Memory per GPU and the KV budget on tp x pp GPUs of ``memory_bytes`` (``gpu_name`` picks
    vLLM's batch defaults; ``scale_up_bandwidth``, bytes/s both directions, its NCCL buffers;
    ``gpu_arch``, Accelerator.collective_arch, PyTorch's cuBLAS workspace in the graph estimate;
    ``tensor_core_dtypes``, the dtypes of Accelerator.peak_flops, whether an fp8 / int8 format's
    GEMMs quantize their activations there, profile.quantizes_activations)."""
    memory = _engine_memory(spec, groups, memory_bytes, setup, tp, pp, gpu_name, scale_up_bandwidth, gpu_arch,
                            tensor_core_dtypes)
    replicas = kv_replica_bytes(spec, setup.fmt, tp, pp)  # in the weights already (_engine_memory): named
    if replicas:
        memory = replace(memory, kv_replicas=replicas, kv_head_replicas=tp // spec.attention.num_kv_heads)
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


def serving_memory_on(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, tp: int, pp: int,
                      gpu: Accelerator) -> Memory:
    """serving_memory on tp x pp ``gpu``s, with every GPU fact it reads taken from the part: its memory,
    name, scale-up bandwidth, collective_arch and the dtypes of its peak_flops."""
    return serving_memory(spec, groups, gpu.memory_bytes, setup, tp, pp, gpu.name, gpu.scale_up_bandwidth,
                          gpu.collective_arch, tuple(d for d, _ in gpu.peak_flops))


def _engine_memory(spec: ModelSpec, groups: ParamGroups, memory_bytes: float, setup: ServingSetup,
                   tp: int, pp: int, gpu_name: str = "", scale_up_bandwidth: float | None = None,
                   gpu_arch: str | None = None, tensor_core_dtypes: tuple[str, ...] | None = None) -> Memory:
    weights = weight_bytes_per_gpu(groups, setup.fmt, spec.num_layers, tp, pp) + kv_replica_bytes(spec, setup.fmt, tp, pp)
    engine = setup.runtime.engine
    if engine == "sglang":
        return _sglang_memory(weights, memory_bytes, setup, tp, pp, scale_up_bandwidth)
    if engine == "trtllm":
        return _trtllm_memory(spec, weights, memory_bytes, setup, tp, pp, scale_up_bandwidth)
    padding = mxfp4_padding_bytes(spec, groups, setup.fmt, tp, pp)  # vLLM pads MXFP4 experts for its MoE kernels
    return replace(_vllm_memory(spec, weights + padding, memory_bytes, setup, tp, pp, gpu_name, scale_up_bandwidth,
                                gpu_arch, tensor_core_dtypes), mxfp4_padding=padding)


def _vllm_memory(spec: ModelSpec, weights: float, memory_bytes: float, setup: ServingSetup, tp: int, pp: int,
                 gpu_name: str, scale_up_bandwidth: float | None, gpu_arch: str | None = None,
                 tensor_core_dtypes: tuple[str, ...] | None = None) -> Memory:
    """vLLM (worker determine_available_memory): KV = total x gpu_memory_utilization - weights -
    the profiled activation peak - the non-torch memory its profile counts (- CUDA graphs from
    0.21), each term as the release's rules say (core/serving/releases.py)."""
    runtime = setup.runtime
    rules = runtime.vllm_rules(moe=spec.moe is not None)
    tokens, seqs = runtime.batch_limits(memory_bytes, gpu_name, spec.max_position_embeddings)
    act_bytes = 4 if setup.fmt.compute_dtype == "fp32" else 2
    peak = P.profiled_peak(spec, tokens, seqs, tp, rules, runtime.sampler, act_bytes=act_bytes,
                           moe_workspace=setup.fmt.quantized != "experts")
    total = memory_bytes - runtime.driver_reserved
    util = runtime.utilization()
    usable = total * util
    non_torch = runtime.non_torch if runtime.non_torch is not None else rules.non_torch
    comm = P.comm_bytes(rules, "vllm", tp, pp, scale_up_bandwidth, runtime.comm_buffers, runtime.p2p)
    backend = AB.vllm_attention_backend(spec, act_bytes, gpu_arch, setup.mm_prefix_lm, runtime.release.version)
    graphs = (runtime.cuda_graphs if runtime.cuda_graphs is not None
              else P.graph_bytes(spec, seqs, tp, layers_per_stage(spec.num_layers, pp), act_bytes,
                                 P.cublas_workspace_bytes(gpu_arch),
                                 P.quantizes_activations(setup.fmt.compute_dtype, tensor_core_dtypes), tokens,
                                 backend[0], AB.flash_attn_version(gpu_arch),
                                 P.vllm_moe_experts(rules, setup.fmt.quantized)))
    counted = rules.counts_graphs and graphs > 0
    fixed = non_torch + comm + (graphs if counted else 0.0)
    counts_runtime = rules.profile != "allocated"
    kv = usable - weights - peak.peak - (fixed if counts_runtime else 0.0)
    return Memory(weights, peak.peak, fixed, usable, kv, total - usable, comm=comm, cuda_graphs=graphs,
                  graphs_counted=counted, non_torch=non_torch, total=total, forward_peak=peak.forward,
                  sampler_peak=peak.sampler, batch_limits=(tokens, seqs), counts_runtime=counts_runtime,
                  fraction=util, sampler=P.sampler_name(runtime.sampler, rules), attention_backend=backend)


def _sglang_memory(weights: float, memory_bytes: float, setup: ServingSetup, tp: int, pp: int,
                   scale_up_bandwidth: float | None) -> Memory:
    """SGLang (ModelRunner.profile_max_num_token): KV pool = memory free after loading - total x
    (1 - mem_fraction_static), total = the memory free once the CUDA context and the communicators
    exist: fraction x total - weights; activations and CUDA graphs live in the rest."""
    runtime = setup.runtime
    fraction = runtime.mem_fraction_static or E.sglang_mem_fraction_static(memory_bytes, tp, pp,
                                                                           runtime.release.version)
    context = runtime.context_bytes()
    comm = P.comm_bytes(None, "sglang", tp, pp, scale_up_bandwidth, runtime.comm_buffers, runtime.p2p)
    fixed = context + comm
    start = memory_bytes - runtime.driver_reserved - fixed
    usable = start * fraction
    return Memory(weights, 0.0, fixed, usable, usable - weights, start - usable, comm=comm, non_torch=context,
                  total=memory_bytes - runtime.driver_reserved, fraction=fraction)


def _trtllm_memory(spec: ModelSpec, weights: float, memory_bytes: float, setup: ServingSetup, tp: int, pp: int,
                   scale_up_bandwidth: float | None) -> Memory:
    """TensorRT-LLM: KV = free_gpu_memory_fraction x (device total - the peak of its memory
    profile). From 1.0 (PyTorch backend, _util.py KvCacheCreator._cal_max_memory:
    (total - peak + temporary KV) x fraction) the peak is the weights, a context batch of
    max_num_tokens, the CUDA context and communicators, and any CUDA graphs given; before it
    (TensorRT engines, kvCacheManager.cpp calculateFreeMemBytes) the engine, its execution
    context and the runtime buffers and decoder state."""
    runtime = setup.runtime
    visible = memory_bytes - runtime.driver_reserved
    tokens = runtime.prefill_tokens or E.TRTLLM_MAX_NUM_TOKENS
    activations = tokens * 2 * P.activation_elements_per_token(spec, tp)
    context = runtime.context_bytes()
    comm = P.comm_bytes(None, "trtllm", tp, pp, scale_up_bandwidth, runtime.comm_buffers, runtime.p2p)
    graphs = runtime.cuda_graphs or 0.0
    buffers = E.TRTLLM_RUNTIME_BUFFERS if runtime.release.version < (1, 0, 0) else 0.0
    fixed = context + comm + graphs + buffers
    free = visible - weights - activations - fixed
    fraction = runtime.free_gpu_memory_fraction or E.TRTLLM_FREE_FRACTION
    return Memory(weights, activations, fixed, visible, free * fraction, free * (1 - fraction), comm=comm,
                  cuda_graphs=graphs, graphs_counted=graphs > 0, non_torch=context, total=visible,
                  forward_peak=activations, batch_limits=(tokens, 0), fraction=fraction)
