"""Serving: runtime memory, and the prefill / decode roofline (weight formats and bytes:
``core/weights.py``, re-exported here).

Units: bytes, bytes/s, FLOPs, FLOP/s, seconds, tokens. The KV cache itself is in
``core/kv_cache.py``. Sources are named next to each formula and constant; the engine modelled is
vLLM (PagedAttention, ``gpu_memory_utilization``); other engines differ in the overheads only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuplan.core import engines as E
from gpuplan.core import lora_serving as L
from gpuplan.core.engines import (  # noqa: F401 (re-exported: callers use I.<name>)
    DEFAULT_SAMPLER,
    SAMPLER_BYTES_PER_LOGIT,
    SAMPLERS,
    activation_elements_per_token,
    activation_peak_bytes,
)
from gpuplan.core.flops import (
    attention_core_flops_per_token,
    layer_matmul_weights_per_token,
)
from gpuplan.core.model import ModelSpec
from gpuplan.core.speculative import Speculation
from gpuplan.core.weights import (  # noqa: F401 (re-exported: callers use I.<name>)
    FORMATS,
    INT4_SOURCE,
    MXFP4,
    NVFP4,
    ParamGroups,
    WeightFormat,
    decode_weight_bytes_read,
    expected_expert_fraction,
    layer_linear_bytes,
    param_groups,
    weight_bytes_per_gpu,
    weight_bytes_total,
    weight_format,
)

GiB = 2**30


@dataclass(frozen=True)
class Runtime:
    """The engine's memory settings and the memory outside weights and KV cache, bytes per GPU."""

    gpu_memory_utilization: float = 0.90
    """vLLM default 0.9 (engine args; newer releases 0.92): the share of the GPU's memory the
    instance may use for weights + activations + KV cache."""
    engine: str = "vllm"
    """'vllm' or 'sglang' (core/engines.py): how the memory is split."""
    mem_fraction_static: float | None = None
    """SGLang: (weights + KV pool) / device memory; None = SGLang's own default for the GPU."""
    free_gpu_memory_fraction: float | None = None
    """TensorRT-LLM: share of the memory left after weights and activations that goes to the KV
    cache; None = its default 0.9."""
    driver_reserved: float = 0.5 * GiB
    """Memory CUDA does not report as the device total: vLLM logs total_gpu_memory 23.58 GiB on a
    24 GiB RTX 3090 (vllm#10517), 79.11-79.25 GiB on an H100 of 79.65 GiB, 79.15 GiB on an A100 80GB."""
    non_torch: float = 0.35 * GiB
    """CUDA context, cuBLAS workspace: vLLM 'non_torch_memory=0.35GiB' (vllm#10517, TP 1)."""
    comm_buffers: float | None = None
    """NCCL buffers when tp·pp > 1; None = derived (comm_bytes): on NVLink, the engine's
    communicators (core.engines.ENGINE_COMMUNICATORS) x NCCL's per-communicator buffers, the figure
    training uses (core.device_memory.nccl_group_bytes); without NVLink 0.25 GiB (PCIE_COMM_BYTES)."""
    cuda_graphs: float = 0.5 * GiB
    """CUDA-graph pool, counted before the KV cache since vLLM 0.21 (log in noonghunna/club-3090#104:
    utilization 0.88 behaves as 0.8592 without it, 0.49 GiB of a 24 GiB card). 0 when eager or on
    vLLM <= 0.20 (graphs came out of the 1 - utilization headroom then)."""
    prefill_tokens: int | None = None
    """max_num_batched_tokens the activation profile runs; None = vLLM serve's default for the GPU."""
    max_num_seqs: int | None = None
    """Sequences per step (the sampler profile); None = vLLM serve's default for the GPU."""
    sampler: str = DEFAULT_SAMPLER
    """Which sampler the profile runs (SAMPLER_BYTES_PER_LOGIT): 'estimate' or 'torch-sort'."""
    holds_allreduce_inputs: bool = False
    """vLLM 0.2.x after PR 2031 (before 0.3.3): the profile counts the all-reduce inputs the caching
    allocator cannot reuse yet (core.engines.held_allreduce_input_bytes) in its peak."""

    profile_counts_runtime: bool = True
    """False for vLLM <= 0.2.4, whose profile counted PyTorch's allocated peak only (worker.py
    torch.cuda.max_memory_allocated, replaced by PR 2031): the KV cache is sized as if the CUDA
    context, NCCL buffers and CUDA graphs took nothing."""

    def comm_bytes(self, tp: int, pp: int = 1, scale_up_bandwidth: float | None = None) -> float:
        """NCCL buffers per GPU: the tensor-parallel group's communicators and, with pipeline
        stages, the neighbouring pairs' (one or two per stage)."""
        rule = E.comm_rule(tp * pp, self.comm_buffers, scale_up_bandwidth)
        if rule != "nvlink":
            return {"none": 0.0, "given": self.comm_buffers, "pcie": E.PCIE_COMM_BYTES}[rule]
        # imported here: device_memory pulls in numpy, which importing core.inference does not
        from gpuplan.core.device_memory import nccl_group_bytes

        pairs = min(2, pp - 1)
        groups = nccl_group_bytes(tp, scale_up_bandwidth) + pairs * nccl_group_bytes(2, scale_up_bandwidth)
        return E.ENGINE_COMMUNICATORS[self.engine] * float(groups)

    def batch_limits(self, memory_bytes: float, gpu_name: str = "") -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs): the user's, else vLLM ``vllm serve`` defaults
        (engine/arg_utils.py get_batch_defaults, OPENAI_API_SERVER): 8192 and 1024 on GPUs with
        >= 70 GiB that are not A100s, else 2048 and 256."""
        big = memory_bytes >= 70 * GiB and "a100" not in gpu_name.lower()
        tokens, seqs = (8192, 1024) if big else (2048, 256)
        return self.prefill_tokens or tokens, self.max_num_seqs or seqs


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of the peaks (expected, low, high); calibrate from a measurement."""

    bandwidth: tuple[float, float, float] = (0.65, 0.45, 0.85)
    """Decode weight/KV streaming vs peak HBM bandwidth (MBU). Six published batch-1 decodes imply
    0.51-0.82, median 0.67 (llama.cpp#4766 RTX 3090 F16 0.69, Q4_0 0.51; mlc-ai/llm-perf-bench#1 RTX 4090:
    MLC 0.75/0.82, ExLlama 0.56/0.65; docs/inference.md); eager PyTorch on H100 only 0.27 (arXiv 2605.30571)."""
    compute: tuple[float, float, float] = (0.5, 0.3, 0.7)
    """Prefill / large-batch matmul FLOPs vs dense peak (MFU). A gpuplan prior, like training's 0.4."""
    allreduce_latency_s: float = 8e-6
    """Small-message all-reduce latency over NVLink: vLLM custom all-reduce 8.5-11.8 us at 4-32 KB on
    H100, TP 2-8 (sgl-project/sglang#2904)."""
    pcie_latency_factor: float = 3.0
    """Without NVLink (scale-up link < 100 GB/s: PCIe) NCCL goes through the host bridge; latency x3
    is a gpuplan assumption (no published measurement found)."""

    def latency(self, link_bytes_per_s: float | None) -> float:
        slow = link_bytes_per_s is None or link_bytes_per_s < 100e9
        return self.allreduce_latency_s * (self.pcie_latency_factor if slow else 1.0)


def allreduce_seconds(message_bytes, tp: int, link_bytes_per_s: float | None, latency_s: float):
    """Ring all-reduce: latency + 2(tp-1)/tp x message / per-direction link bandwidth
    (Patarasuk & Yuan 2009; NCCL's 'bus bandwidth' convention). 0 when tp = 1."""
    if tp <= 1:
        return 0.0
    per_direction = (link_bytes_per_s or 64e9) / 2
    return latency_s + 2 * (tp - 1) / tp * message_bytes / per_direction


def forward_allreduces(spec: ModelSpec) -> int:
    """Megatron TP: one all-reduce after attention and one after the MLP, per layer (Sec. 3)."""
    return 2 * spec.num_layers


@dataclass(frozen=True)
class StepTime:
    """One forward step on one GPU: memory time, compute time, communication; seconds."""

    memory_s: float
    compute_s: float
    comm_s: float
    draft_s: float = 0.0
    """Speculative decoding: the proposer's k draft steps before this (verify) step."""
    tokens_per_step: float = 1.0
    """Output tokens the step yields per sequence (speculative decoding: the mean accepted length)."""

    @property
    def total(self) -> float:
        """Seconds per output token."""
        return (max(self.memory_s, self.compute_s) + self.comm_s + self.draft_s) / self.tokens_per_step

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


def decode_flops_per_token(spec: ModelSpec, context) -> float:
    """FLOPs of one generated token: 2 per active matmul weight + LM head, and the new query
    against ``context`` cached keys (every key: the 'full' convention for a single query)."""
    return (2.0 * layer_matmul_weights_per_token(spec) + 2.0 * spec.vocab_size * spec.hidden_size
            + attention_core_flops_per_token(spec, context, "full"))


def prefill_flops(spec: ModelSpec, prompt_tokens) -> float:
    """FLOPs of a prompt's forward: matmuls per token, causal attention ((s+1)/2 keys on average,
    as flash kernels run it), LM head for the last token only (vLLM computes logits for it)."""
    per_token = 2.0 * layer_matmul_weights_per_token(spec) + attention_core_flops_per_token(spec, prompt_tokens,
                                                                                            "causal")
    return prompt_tokens * per_token + 2.0 * spec.vocab_size * spec.hidden_size


def step_time(bytes_read: float, flops: float, tokens: float, spec: ModelSpec, *, tp: int, pp: int,
              bandwidth: float, peak: float, link: float | None, bw_eff: float, compute_eff: float,
              latency_s: float, act_bytes: int = 2) -> StepTime:
    """Roofline for one forward over ``tokens`` tokens on a TP rank (summed over pp stages):
    max(bytes / (HBM bandwidth x eff), FLOPs / (peak x eff)) + TP all-reduces + pipeline hops."""
    message = tokens * spec.hidden_size * act_bytes
    comm = forward_allreduces(spec) * allreduce_seconds(message, tp, link, latency_s)
    comm += (pp - 1) * (latency_s + message / ((link or 64e9) / 2)) if pp > 1 else 0.0
    return StepTime(bytes_read / (bandwidth * bw_eff), flops / tp / (peak * compute_eff), comm)


def tokens_per_second(batch, step_seconds) -> float:
    return batch / step_seconds


def cost_per_million_tokens(price_per_gpu_hour: float, gpus: int, tokens_per_s: float) -> float:
    """USD per 1e6 generated tokens: GPU-hours per token x price (3600 s per hour)."""
    if tokens_per_s <= 0:
        return math.inf
    return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6


DECODE_ATTENTION = ("grouped", "per-query-head")
"""How the decode attention kernel reads the KV cache (kv_reads_per_step)."""


def kv_reads_per_step(spec: ModelSpec, decode_attention: str = "grouped") -> float:
    """How many times one decode step reads each cached K/V element from HBM.

    'grouped': once — the kernel serves every query head of a KV head from one load
    (FlashAttention / FlashInfer decode, TensorRT-LLM's XQA, "reducing data loading": its blog
    docs/source/blogs/XQA-kernel.md). 'per-query-head': num_heads / num_kv_heads times — the
    kernel runs one thread block per (query head, sequence) and each loads its KV head's cache:
    TensorRT-LLM's masked multi-head attention before XQA (decoderMaskedMultiheadAttention
    mmha_launch_kernel_ex, grid {num_heads, batch_size}) and vLLM's paged attention kernels
    (csrc/attention paged_attention_v1/v2 launchers, grid (num_heads, num_seqs)). MHA and MLA
    read once either way."""
    a = spec.attention
    if decode_attention == "grouped" or a.is_mla:
        return 1.0
    return a.num_heads / a.num_kv_heads


@dataclass(frozen=True)
class ServingSetup:
    """Everything about how the model is served, apart from the GPU, layout and load."""

    fmt: WeightFormat
    kv_bytes: float
    """Bytes per cached K/V element (kv_cache.KV_DTYPE_BYTES)."""
    runtime: Runtime = Runtime()
    efficiency: Efficiency = Efficiency()
    block_size: int = 16
    speculation: Speculation | None = None
    """Speculative decoding (core/speculative.py); None = plain decoding."""
    prefix_hit: float = 0.0
    """Share of each prompt found in the prefix cache (vLLM automatic prefix caching, SGLang
    RadixAttention, Zheng et al. 2024, arXiv:2312.07104): those tokens skip prefill compute and,
    coming from a prefix every sequence shares, are cached once (an assumption: hits from
    per-user history are not shared)."""
    lora: L.LoraServing | None = None
    """Multi-LoRA serving (core/lora_serving.py): adapter slots on every GPU; None = no LoRA."""
    decode_attention: str = "grouped"
    """How the decode kernel reads the KV cache of a GQA / MQA model (kv_reads_per_step)."""


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
    from gpuplan.core.kv_cache import kv_layout

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


def decode_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, kv_per_sequence: float, *,
                tp: int, pp: int, batch, context, bandwidth: float, peak: float, link: float | None,
                which: int = 0) -> StepTime:
    """Time per output token at ``batch`` sequences of ``context`` cached tokens: weights (+ the
    experts the batch touches) and every sequence's KV read once per step, or the FLOPs when
    the batch is large, plus the TP all-reduces. ``which``: 0 expected, 1 low, 2 high efficiency."""
    eff = setup.efficiency
    s = setup.speculation
    positions = 1 + (s.tokens if s else 0)  # a verify step scores k proposed tokens + one of its own
    # kv_per_sequence is per stage (a token crosses all stages); a per-query-head kernel reads it
    # once per query head of each KV head
    kv_read = batch * kv_per_sequence * pp * kv_reads_per_step(spec, setup.decode_attention)
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, batch * positions) + kv_read
    flops = batch * positions * decode_flops_per_token(spec, context)
    if setup.lora is not None:  # the active adapter slots are read too, and shrink + expand run per token
        bytes_read += L.step_bytes(spec, setup.lora, tp, batch)
        flops += batch * positions * L.flops_per_token(spec, setup.lora)
    step = step_time(bytes_read, flops, batch * positions, spec, tp=tp, pp=pp, bandwidth=bandwidth, peak=peak,
                     link=link, bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which],
                     latency_s=eff.latency(link))
    if s is None:
        return step
    draft_s = 0.0
    if s.draft is not None:  # k proposer steps at the batch, plain decoding of the draft shape
        plain = replace(setup, speculation=None, lora=None)  # adapters wrap the target only
        draft_groups = param_groups(s.draft)
        if s.shares_embeddings:  # EAGLE / MTP read the target's LM head, not a head of their own
            draft_groups = replace(draft_groups, embedding=groups.embedding, lm_head=groups.lm_head,
                                   tied=groups.tied)
        share = draft_kv_share(spec, s, setup.kv_bytes, tp, pp)
        draft_kv = kv_per_sequence * share / (1 - share) if share < 1 else 0.0
        draft_s = s.tokens * decode_step(s.draft, draft_groups, plain, draft_kv, tp=tp, pp=1, batch=batch,
                                         context=context, bandwidth=bandwidth, peak=peak, link=link,
                                         which=which).total
    return StepTime(step.memory_s, step.compute_s, step.comm_s, draft_s, s.mean_accepted_length)


def prefill_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, *, tp: int, pp: int, prompt,
                 bandwidth: float, peak: float, link: float | None, which: int = 0) -> StepTime:
    """Time to first token for one prompt: compute-bound matmuls + attention, weights read once.
    With prefix caching only the uncached suffix is computed: causal FLOPs of the whole prompt
    minus those of the cached prefix (the suffix still attends to every cached key)."""
    eff = setup.efficiency
    cached = math.floor(setup.prefix_hit * prompt)
    new = max(1, prompt - cached)
    flops = prefill_flops(spec, prompt) - (prefill_flops(spec, cached) - 2.0 * spec.vocab_size * spec.hidden_size
                                           if cached else 0.0)
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, new)
    if setup.lora is not None:
        bytes_read += L.step_bytes(spec, setup.lora, tp, 1)
        flops += new * L.flops_per_token(spec, setup.lora)
    return step_time(bytes_read, flops, new, spec, tp=tp, pp=pp, bandwidth=bandwidth,
                     peak=peak, link=link, bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which],
                     latency_s=eff.latency(link))


def batch_sizes(limit: int, cap: int = 1024) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (and ``limit`` itself): the throughput-vs-batch curve's points."""
    top = min(limit, cap)
    sizes = [1 << i for i in range(0, 11) if (1 << i) <= top]
    return sizes + ([top] if top > 0 and top not in sizes else [])
