"""Serving: weight bytes by format, runtime memory, and the prefill / decode roofline.

Units: bytes, bytes/s, FLOPs, FLOP/s, seconds, tokens. The KV cache itself is in
``core/kv_cache.py``. Sources are named next to each formula and constant; the engine modelled is
vLLM (PagedAttention, ``gpu_memory_utilization``); other engines differ in the overheads only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.core.flops import (
    attention_core_flops_per_token,
    layer_matmul_weights_per_token,
)
from gpuplan.core.model import ModelSpec, count_parameters
from gpuplan.core.parallel import layers_per_stage
from gpuplan.errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class WeightFormat:
    """How matmul weights are stored. ``bits`` is the payload; group-wise formats add one
    ``scale_bits`` scale and one ``zero_bits`` zero point per ``group_size`` weights."""

    name: str
    bits: float
    compute_dtype: str
    """Dtype whose dense peak the matmuls run at (weight-only int4 dequantizes to fp16)."""
    group_size: int | None = None
    scale_bits: int = 0
    zero_bits: int = 0
    keep_16bit: bool = True
    """Embeddings, LM head, norms and router stay in 16-bit (GPTQ/AWQ/FP8 checkpoints skip
    them: AutoGPTQ/AutoAWQ quantize nn.Linear inside the blocks only; vLLM Fp8LinearMethod)."""
    quantized: str = "all"
    """Which layer matmuls are stored in this format, the rest in 16-bit: 'all', 'mlp' (the
    checkpoint's ignore list keeps attention in 16-bit) or 'experts' (only routed experts)."""
    source: str = ""

    @property
    def bits_per_weight(self) -> float:
        overhead = (self.scale_bits + self.zero_bits) / self.group_size if self.group_size else 0.0
        return self.bits + overhead

    @property
    def other_bytes(self) -> float:
        """Bytes per embedding / LM-head / norm parameter."""
        if self.keep_16bit:
            return 2.0
        return self.bits_per_weight / 8


FORMATS = {
    "fp32": WeightFormat("fp32", 32, "fp32", keep_16bit=False, source="IEEE fp32: 4 bytes/parameter"),
    "bf16": WeightFormat("bf16", 16, "bf16", source="the article: FP16/BF16 = 2 bytes/parameter"),
    "fp16": WeightFormat("fp16", 16, "fp16", source="the article: FP16/BF16 = 2 bytes/parameter"),
    # per-channel or 128x128 block scales: 32 bits per 16,384 weights, < 0.01% (DeepSeek-V3 tech. report Sec. 3.3)
    "fp8": WeightFormat("fp8", 8, "fp8", source="W8A8 FP8 (vLLM fp8 / compressed-tensors); scales negligible"),
    # SmoothQuant W8A8 (Xiao et al. 2023): int8 weights, one fp16 scale per output channel (negligible)
    "int8": WeightFormat("int8", 8, "int8", source="W8A8 INT8 (SmoothQuant, arXiv:2211.10438)"),
}
# OCP Microscaling Formats (MX) v1.0: MXFP4 = E2M1 elements with one E8M0 (8-bit) scale per 32.
MXFP4 = WeightFormat("mxfp4", 4, "bf16", 32, 8, 0, source="OCP MX v1.0 MXFP4: 4-bit E2M1 + one 8-bit E8M0 scale per "
                     "32 weights = 4.25 bits; served weight-only (dequantised to bf16) where no FP4 tensor cores")
# NVIDIA NVFP4 (TensorRT Model Optimizer; Blackwell FP4 tensor cores): E2M1 with one FP8 E4M3 scale per
# 16 weights plus one fp32 scale per tensor (negligible) = 4.5 bits.
NVFP4 = WeightFormat("nvfp4", 4, "fp4", 16, 8, 0, source="NVIDIA NVFP4: 4-bit E2M1 + one FP8 E4M3 scale per 16 "
                     "weights (+ an fp32 per-tensor scale) = 4.5 bits")
INT4_SOURCE = ("GPTQ/AWQ packing (AutoGPTQ qweight/qzeros/scales; AutoAWQ): 4-bit weights, one fp16 scale and "
               "one packed 4-bit zero point per group -> 4 + (16 + 4)/group bits (4.156 at group 128)")


def weight_format(name: str, group_size: int | None = 128, zero_point: bool = True) -> WeightFormat:
    """A named format: fp32, bf16, fp16, fp8, int8 or int4 (group-wise, GPTQ/AWQ style)."""
    key = name.strip().lower()
    if key == "int4":
        return WeightFormat("int4" + (f"-g{group_size}" if group_size else ""), 4, "fp16", group_size,
                            16 if group_size else 0, 4 if (zero_point and group_size) else 0, source=INT4_SOURCE)
    if key not in FORMATS:
        raise InputError("quantization", name, f"must be one of {', '.join([*FORMATS, 'int4'])} (or auto)")
    return FORMATS[key]


@dataclass(frozen=True)
class ParamGroups:
    """Parameters by how they are stored and read (counts). ``routed`` = MoE routed experts."""

    embedding: float
    lm_head: float
    norms: float
    router: float
    dense_linear: float
    routed: float
    tied: bool
    attention: float = 0.0
    """The attention projections' share of ``dense_linear``."""

    @property
    def layer_params(self) -> float:
        return self.dense_linear + self.routed + self.router + self.norms


def param_groups(spec: ModelSpec) -> ParamGroups:
    """Split the exact count; a bare ``--params N`` puts N minus the shape's embeddings in layers."""
    c = count_parameters(spec)
    linear = c.attention + c.dense_mlp + c.shared_experts
    if spec.declared_params is not None:  # the user's N, not the generic shape's count
        linear = spec.declared_params - c.embedding - c.position_embedding - c.lm_head - c.norms - c.router
        linear -= c.routed_experts
    attention = c.attention * (linear / (c.attention + c.dense_mlp + c.shared_experts or 1))
    return ParamGroups(c.embedding + c.position_embedding, c.lm_head, c.norms, c.router, linear,
                       c.routed_experts, spec.tie_embeddings, attention)


def layer_linear_bytes(groups: ParamGroups, fmt: WeightFormat, routed: float | None = None) -> float:
    """Bytes of the layer matmuls (dense + ``routed`` experts, default all of them) in ``fmt``,
    the groups it leaves unquantized in 16-bit."""
    routed = groups.routed if routed is None else routed
    q = fmt.bits_per_weight / 8
    if fmt.quantized == "experts":
        return groups.dense_linear * 2.0 + routed * q
    if fmt.quantized == "mlp":
        return groups.attention * 2.0 + (groups.dense_linear - groups.attention + routed) * q
    return (groups.dense_linear + routed) * q


def weight_bytes_total(groups: ParamGroups, fmt: WeightFormat) -> float:
    """Bytes of the whole model in ``fmt`` (one copy)."""
    quantized = layer_linear_bytes(groups, fmt)
    return quantized + (groups.embedding + groups.lm_head + groups.norms + groups.router) * fmt.other_bytes


def weight_bytes_per_gpu(groups: ParamGroups, fmt: WeightFormat, num_layers: int, tp: int = 1,
                         pp: int = 1) -> float:
    """Bytes on the fullest GPU: layers split over pp stages (ceil(L/pp) on the fullest), every
    matmul and the vocab-parallel embedding / LM head split over tp (Megatron-LM, Shoeybi et al.
    2019, Sec. 3; vLLM VocabParallelEmbedding); norms replicated. Tied embeddings are kept on the
    last stage too when pp > 1 (vLLM PP: the LM head needs them)."""
    frac = layers_per_stage(num_layers, pp) / num_layers
    quantized = layer_linear_bytes(groups, fmt)
    layers = (quantized + groups.router * fmt.other_bytes) * frac / tp + groups.norms * fmt.other_bytes * frac
    embedding = groups.embedding * fmt.other_bytes / tp
    head = (groups.embedding if groups.tied else groups.lm_head) * fmt.other_bytes / tp
    if pp == 1:
        return layers + embedding + (0.0 if groups.tied else head)
    return layers + max(embedding, head)


def expected_expert_fraction(experts: int, top_k: int, batch) -> float:
    """Share of routed experts a decode step of ``batch`` tokens touches, routing uniform and
    independent: 1 - (1 - k/E)^b (each expert is missed by one token with probability 1 - k/E)."""
    return 1.0 - (1.0 - top_k / experts) ** batch


def decode_weight_bytes_read(spec: ModelSpec, groups: ParamGroups, fmt: WeightFormat, tp: int, batch) -> float:
    """Weight bytes one TP rank reads per decode step, summed over pipeline stages: every layer
    weight except untouched experts, plus the LM head; the input embedding is a row lookup."""
    routed = groups.routed
    if spec.moe is not None and routed:
        routed *= expected_expert_fraction(spec.moe.num_experts, spec.moe.experts_per_token, batch)
    head = groups.embedding if groups.tied else groups.lm_head
    return (layer_linear_bytes(groups, fmt, routed)
            + (groups.router + head) * fmt.other_bytes) / tp + groups.norms * fmt.other_bytes


def activation_elements_per_token(spec: ModelSpec, tp: int = 1) -> float:
    """Peak live activation elements per prefill token in one layer, one TP rank.

    Dense: gate+up output (2I/tp), the activated product (I/tp) and three hidden-size tensors
    (residual, normed input, layer output) = 3I/tp + 3h. Fitted exactly by vLLM's profile of
    Llama-3.1-8B (vllm-project/vllm#10517: peak_torch - weights = 2.07 GiB at 20,000 tokens and
    2.99 GiB at 29,000; 3·14336 + 3·4096 elements x 2 bytes gives 2.06 and 2.99 GiB).
    MoE: vLLM fused_moe intermediate caches [M, k, 2N], [M·k, N], [M, k, h] with N = I_e/tp,
    plus a shared expert, plus the 3h hidden tensors.
    """
    h = spec.hidden_size
    dense = 3 * spec.mlp.intermediate_size / tp + 3 * h
    if spec.moe is None or not spec.num_moe_layers:
        return dense
    moe = spec.moe
    routed = moe.experts_per_token * (3 * moe.expert_intermediate_size / tp + h)
    moe_layer = routed + 3 * moe.shared_intermediate_size / tp + 3 * h
    return max(moe_layer, dense if spec.num_dense_layers else 0.0)


def activation_peak_bytes(spec: ModelSpec, prefill_tokens: int, max_num_seqs: int, tp: int = 1,
                          act_bytes: int = 2) -> float:
    """vLLM's profiled activation peak: the larger of a ``prefill_tokens`` forward
    (max_num_batched_tokens) and the sampler on ``max_num_seqs`` rows of fp32 logits (four
    [seqs, vocab] fp32 buffers: logits, probabilities, log-probabilities, sort; gpu_model_runner
    profiles the sampler with max_num_seqs dummy requests)."""
    forward = prefill_tokens * act_bytes * activation_elements_per_token(spec, tp)
    sampler = max_num_seqs * spec.vocab_size * 4 * 4
    return max(forward, sampler)


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
    driver_reserved: float = 0.5 * GiB
    """Memory CUDA does not report as the device total: vLLM logs total_gpu_memory 23.58 GiB on a
    24 GiB RTX 3090 (vllm#10517), 79.11-79.25 GiB on an H100 of 79.65 GiB, 79.15 GiB on an A100 80GB."""
    non_torch: float = 0.35 * GiB
    """CUDA context, cuBLAS workspace: vLLM 'non_torch_memory=0.35GiB' (vllm#10517, TP 1)."""
    comm_buffers: float = 0.25 * GiB
    """NCCL / custom all-reduce buffers when tp·pp > 1 (vllm#16570 logs 0.34-0.43 GiB non-torch per
    rank at TP 4; NCCL's per-communicator buffers, NVIDIA/nccl#864). A gpuplan assumption."""
    cuda_graphs: float = 0.5 * GiB
    """CUDA-graph pool, counted before the KV cache since vLLM 0.21 (log in noonghunna/club-3090#104:
    utilization 0.88 behaves as 0.8592 without it, 0.49 GiB of a 24 GiB card). 0 when eager or on
    vLLM <= 0.20 (graphs came out of the 1 - utilization headroom then)."""
    prefill_tokens: int | None = None
    """max_num_batched_tokens the activation profile runs; None = vLLM serve's default for the GPU."""
    max_num_seqs: int | None = None
    """Sequences per step (the sampler profile); None = vLLM serve's default for the GPU."""

    def fixed_bytes(self, gpus: int) -> float:
        return self.non_torch + (self.comm_buffers if gpus > 1 else 0.0) + self.cuda_graphs

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

    @property
    def total(self) -> float:
        return max(self.memory_s, self.compute_s) + self.comm_s

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


@dataclass(frozen=True)
class ServingSetup:
    """Everything about how the model is served, apart from the GPU, layout and load."""

    fmt: WeightFormat
    kv_bytes: float
    """Bytes per cached K/V element (kv_cache.KV_DTYPE_BYTES)."""
    runtime: Runtime = Runtime()
    efficiency: Efficiency = Efficiency()
    block_size: int = 16


@dataclass(frozen=True)
class Memory:
    """Bytes per GPU (the fullest pipeline stage) and what is left for the KV cache."""

    weights: float
    activations: float
    fixed: float
    usable: float
    """(device total - driver reserve) x gpu_memory_utilization."""
    kv_budget: float
    """What vLLM leaves for the KV cache (worker determine_available_memory): usable - weights -
    activation peak - non-torch memory."""


def serving_memory(spec: ModelSpec, groups: ParamGroups, memory_bytes: float, setup: ServingSetup,
                   tp: int, pp: int, gpu_name: str = "") -> Memory:
    runtime = setup.runtime
    weights = weight_bytes_per_gpu(groups, setup.fmt, spec.num_layers, tp, pp)
    if runtime.engine == "sglang":  # weights + KV pool = mem_fraction_static x device memory; its
        # activations and CUDA graphs live in the rest (ModelRunner.profile_max_num_token)
        from gpuplan.core.engines import sglang_mem_fraction_static

        fraction = runtime.mem_fraction_static or sglang_mem_fraction_static(memory_bytes, tp, pp)
        usable = memory_bytes * fraction
        fixed = runtime.fixed_bytes(tp * pp) - runtime.cuda_graphs  # graphs are in SGLang's reserve
        return Memory(weights, 0.0, fixed, usable, usable - weights - fixed)
    tokens, seqs = runtime.batch_limits(memory_bytes, gpu_name)
    activations = activation_peak_bytes(spec, tokens, seqs, tp)
    usable = (memory_bytes - runtime.driver_reserved) * runtime.gpu_memory_utilization
    fixed = runtime.fixed_bytes(tp * pp)
    return Memory(weights, activations, fixed, usable, usable - weights - activations - fixed)


def decode_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, kv_per_sequence: float, *,
                tp: int, pp: int, batch, context, bandwidth: float, peak: float, link: float | None,
                which: int = 0) -> StepTime:
    """Time per output token at ``batch`` sequences of ``context`` cached tokens: weights (+ the
    experts the batch touches) and every sequence's KV read once per step, or the FLOPs when
    the batch is large, plus the TP all-reduces. ``which``: 0 expected, 1 low, 2 high efficiency."""
    eff = setup.efficiency
    kv_read = batch * kv_per_sequence * pp  # kv_per_sequence is per stage; a token crosses all stages
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, batch) + kv_read
    flops = batch * decode_flops_per_token(spec, context)
    return step_time(bytes_read, flops, batch, spec, tp=tp, pp=pp, bandwidth=bandwidth, peak=peak, link=link,
                     bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which], latency_s=eff.latency(link))


def prefill_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, *, tp: int, pp: int, prompt,
                 bandwidth: float, peak: float, link: float | None, which: int = 0) -> StepTime:
    """Time to first token for one prompt: compute-bound matmuls + attention, weights read once."""
    eff = setup.efficiency
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, prompt)
    return step_time(bytes_read, prefill_flops(spec, prompt), prompt, spec, tp=tp, pp=pp, bandwidth=bandwidth,
                     peak=peak, link=link, bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which],
                     latency_s=eff.latency(link))


def batch_sizes(limit: int, cap: int = 1024) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (and ``limit`` itself): the throughput-vs-batch curve's points."""
    top = min(limit, cap)
    sizes = [1 << i for i in range(0, 11) if (1 << i) <= top]
    return sizes + ([top] if top > 0 and top not in sizes else [])
