"""Weights of a served model: storage formats (fp16/bf16, fp8, int8, group-wise int4, MXFP4,
NVFP4), the parameter groups that stay in 16-bit, and the bytes per GPU and per decode step.

Units: bytes, parameter counts. Sources are named next to each format and formula.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.model.spec import ModelSpec, count_parameters, expert_bias_params
from gpuplan.core.parallel import layers_per_stage
from gpuplan.errors import InputError


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
    """The routers, and the routed experts' biases where they have them (GPT-OSS: quantised
    checkpoints keep them in 16-bit, only the weight matrices are MXFP4 blocks)."""
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
    # routed experts' biases (MoESpec.expert_bias) are stored 16-bit, with the routers
    biases = 0 if spec.moe is None else (spec.num_moe_layers * spec.moe.num_experts
                                         * expert_bias_params(spec.moe, spec.hidden_size))
    return ParamGroups(c.embedding + c.position_embedding, c.lm_head, c.norms, c.router + biases, linear,
                       c.routed_experts - biases, spec.tie_embeddings, attention)


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


def kv_replica_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int, pp: int = 1) -> float:
    """Bytes a GPU holds beyond weight_bytes_per_gpu's 1/tp share of the k/v projections where tp > the KV heads:
    vLLM's QKVParallelLinear keeps one whole KV head's k_proj and v_proj on each rank (num_kv_heads = 1,
    num_kv_head_replicas = tp / KV heads: model_executor/layers/linear.py@v0.23.0:1026-1041; SGLang's copy,
    layers/linear.py@v0.5.6:818-820), where the 1/tp split counts KV heads / tp of one: (1 - KV heads / tp) x 2 x
    hidden x head_dim a layer on the fullest stage (biases left out), in the attention's bytes (16-bit where the
    format keeps attention unquantized, as layer_linear_bytes). Llama-3.1-405B bf16 at tp 16 (8 KV heads, 126 layers,
    hidden 16,384, head_dim 128): 0.5 x 2 x 16,384 x 128 x 126 x 2 B = 0.528 GB. 0 at tp <= KV heads and for MLA."""
    attn = spec.attention
    if attn.is_mla or tp <= attn.num_kv_heads:
        return 0.0
    per_param = 2.0 if fmt.quantized in ("experts", "mlp") else fmt.bits_per_weight / 8
    return (layers_per_stage(spec.num_layers, pp) * (1 - attn.num_kv_heads / tp) * 2 * spec.hidden_size
            * attn.head_dim * per_param)


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
    return ((layer_linear_bytes(groups, fmt, routed) + (groups.router + head) * fmt.other_bytes) / tp
            + groups.norms * fmt.other_bytes + kv_replica_bytes(spec, fmt, tp))  # every layer's replicated k/v head


def _round_up(value: float, multiple: int) -> float:
    return -(-value // multiple) * multiple


def mxfp4_padding_bytes(spec: ModelSpec, groups: ParamGroups, fmt: WeightFormat, tp: int, pp: int = 1) -> float:
    """Bytes vLLM adds per GPU when it lays MXFP4 experts out for its MoE kernels on NVIDIA GPUs:
    each expert's intermediate size per TP rank rounded up to 128 and the hidden size to 256
    (vllm/model_executor/layers/quantization/mxfp4.py create_weights, the Marlin layout: 'n % 256
    == 0 and k % 128 == 0'). gpt-oss's 2,880 becomes 2,944 x 3,072 at tp 1, 1,536 x 3,072 at tp 2.
    0 for other formats and dense models."""
    if fmt.quantized != "experts" or spec.moe is None or not groups.routed:
        return 0.0
    inner = spec.moe.expert_intermediate_size / tp
    scale = (_round_up(inner, 128) / inner) * (_round_up(spec.hidden_size, 256) / spec.hidden_size)
    frac = layers_per_stage(spec.num_layers, pp) / spec.num_layers
    return groups.routed * fmt.bits_per_weight / 8 * (scale - 1) * frac / tp
