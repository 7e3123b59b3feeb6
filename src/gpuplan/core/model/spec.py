"""ModelSpec: the shape of a decoder-only transformer, and exact parameter counting.

Counting follows the modules that Hugging Face transformers instantiates for each architecture
(`modeling_llama.py`, `modeling_gpt2.py`, `modeling_gpt_neox.py`, `modeling_deepseek_v3.py`, ...):
every weight matrix, bias and norm weight, so catalog entries match published counts (the
safetensors totals) to well under 0.5%. Units: parameter counts (plain integers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

NormKind = Literal["rmsnorm", "layernorm"]
QKNorm = Literal["none", "per_head", "full"]


@dataclass(frozen=True)
class AttentionSpec:
    """Self-attention projections of one layer.

    Standard attention (MHA / GQA / MQA) uses ``num_heads``, ``num_kv_heads`` and ``head_dim``.
    DeepSeek's multi-head latent attention (MLA) is selected by ``kv_lora_rank``; then the
    query/key width per head is ``qk_nope_head_dim + qk_rope_head_dim`` and values use
    ``v_head_dim`` (DeepSeek-V2 paper, arXiv:2405.04434, Sec. 2.1).
    """

    num_heads: int
    num_kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    """Bias on the q, k, v projections (GPT-2, GPT-NeoX, Qwen2)."""
    out_bias: bool = False
    """Bias on the output projection (GPT-2, GPT-NeoX)."""
    attention_sinks: bool = False
    """One learned sink logit a head (GPT-OSS: GptOssAttention.sinks, modeling_gpt_oss.py@5.25.0 L283)."""
    qk_norm: QKNorm = "none"
    """RMSNorm on q and k: 'per_head' = one head_dim weight each (Qwen3, Gemma 3),
    'full' = over all heads (OLMo 2)."""
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    rope_attention_factor: float = 1.0
    """YaRN's attention factor ("concentration", "mscale") on the rotary cos and sin: 0.1 ln(factor)
    + 1, or the ratio of the mscale / mscale_all_dim terms where both are given (transformers
    modeling_rope_utils._compute_yarn_parameters; Megatron-Core _yarn_get_concentration_factor);
    1 without YaRN (core.time.eager_fallbacks)."""

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def kind(self) -> str:
        """'mla', 'mha' (kv heads = heads), 'mqa' (one kv head) or 'gqa'."""
        if self.is_mla:
            return "mla"
        if self.num_kv_heads == self.num_heads:
            return "mha"
        return "mqa" if self.num_kv_heads == 1 else "gqa"

    @property
    def qk_head_dim(self) -> int:
        """Width of one query/key head (MLA: nope + rope part)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.is_mla else self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim if self.is_mla else self.head_dim


@dataclass(frozen=True)
class MLPSpec:
    """The feed-forward block of a dense layer."""

    intermediate_size: int
    gated: bool = True
    """Gated (SwiGLU / GeGLU: gate, up and down matrices) vs plain two-matrix MLP (GPT-2, NeoX)."""
    bias: bool = False
    activation: str = "silu"


@dataclass(frozen=True)
class MoESpec:
    """Mixture-of-experts feed-forward (Mixtral, Qwen3-MoE, DeepSeek). Experts are gated MLPs."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0
    """Total width of the always-active shared expert(s): DeepSeek n_shared_experts x
    moe_intermediate_size; Qwen2-MoE shared_expert_intermediate_size; 0 = none."""
    shared_expert_gate: bool = False
    """Qwen2-MoE's sigmoid gate on the shared expert (a hidden_size x 1 matrix)."""
    router_bias: bool = False
    """One value per expert: DeepSeek-V3's e_score_correction_bias, GPT-OSS's router bias."""
    expert_bias: bool = False
    """The routed experts' linears carry biases (GPT-OSS: gate_up_proj_bias, down_proj_bias)."""
    activation_clamp: float | None = None
    """The experts' gated activation clamps its inputs at this limit (GPT-OSS ``swiglu_limit`` 7.0:
    the gate at most +limit, the linear half within +-limit; GptOssExperts); None = no clamp."""


@dataclass(frozen=True)
class ModelSpec:
    """Shape of a decoder-only transformer language model. Sizes are element counts."""

    name: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    attention: AttentionSpec
    mlp: MLPSpec
    moe: MoESpec | None = None
    moe_layers: tuple[bool, ...] = ()
    """Per layer: True where the MLP is an MoE block (empty = no MoE layers)."""
    tie_embeddings: bool = False
    learned_positions: int = 0
    """Rows of a learned absolute position table (GPT-2: n_positions); 0 for RoPE/ALiBi."""
    max_position_embeddings: int = 4096
    norm: NormKind = "rmsnorm"
    norm_bias: bool = True
    """LayerNorm with a bias (GPT-2, NeoX); DBRX's LayerNorms have none (modeling_dbrx.py)."""
    norms_per_layer: int = 2
    """Norm modules per layer: 2 usual; 1 Falcon-7B (shared by parallel attn/MLP); 4 Gemma 2/3."""
    final_norm: bool = True
    parallel_residual: bool = False
    """Attention and MLP read the same input (GPT-NeoX, Falcon); no effect on counts."""
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()
    """Per layer 'full' or 'sliding'; empty = every layer full attention."""
    dtype: str = "bfloat16"
    dropout: float = 0.0
    """Residual/attention dropout the config trains with (GPT-2 defaults to 0.1; modern LLMs 0)."""
    eager_softmax_fp32: bool = True
    """Eager attention upcasts the softmax to fp32 (Llama family) or not (GPT-2)."""
    fused_qkv: bool = False
    """One q/k/v projection (GPT-2 c_attn, GPT-NeoX, Falcon, Phi-3) rather than three."""
    fused_gate_up: bool = False
    """One gate/up projection (Phi-3) rather than two."""
    rotary: bool = True
    """RoPE on q and k (False: learned absolute positions, GPT-2)."""
    gemma_norm: bool = False
    """Gemma's RMSNorm computes in fp32 throughout and scales by (1 + weight)."""
    attn_logit_softcap: float | None = None
    final_logit_softcap: float | None = None
    mtp_layers: int = 0
    """Multi-token-prediction modules the config declares (HF ``num_nextn_predict_layers``:
    DeepSeek-V3 1). Not in the parameter count (the main model's, the published N); training
    runs them where the framework does (core.model.mtp), serving only with --speculative mtp."""
    model_type: str = ""
    """The config's ``model_type`` (transformers' family name: which modeling code runs the model;
    core.time.op_profile); empty for a bare ``--params`` model."""
    declared_params: float | None = None
    """Set only for a bare ``--params`` model: the user's N, used for 6ND instead of the count."""
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def is_dense_gated(self) -> bool:
        """No experts and a gated MLP in every block (Llama-like): the blocks torchtitan's op list
        (core.time.titan_ops) times, so the one rule --compile is checked against."""
        return self.moe is None and self.mlp.gated

    @property
    def num_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def num_dense_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def num_sliding_layers(self) -> int:
        return sum(t == "sliding" for t in self.layer_types) if self.sliding_window else 0


@dataclass(frozen=True)
class ParameterCount:
    """Parameters by component (counts). ``active`` = used per token (MoE: top-k + shared)."""

    embedding: int
    position_embedding: int
    lm_head: int
    attention: int
    dense_mlp: int
    routed_experts: int
    shared_experts: int
    router: int
    norms: int
    active: int

    @property
    def total(self) -> int:
        return (self.embedding + self.position_embedding + self.lm_head + self.attention
                + self.dense_mlp + self.routed_experts + self.shared_experts + self.router
                + self.norms)

    @property
    def non_embedding(self) -> int:
        """Total minus input embeddings, learned positions and an untied LM head (Kaplan 2020)."""
        return self.total - self.embedding - self.position_embedding - self.lm_head


def norm_params(spec: ModelSpec, width: int) -> int:
    """One norm module over ``width`` features: RMSNorm has a weight, LayerNorm weight + bias."""
    return width * (2 if spec.norm == "layernorm" and spec.norm_bias else 1)


def attention_params(attn: AttentionSpec, hidden: int) -> int:
    """Weights, biases and q/k norms of one attention block (HF modeling_* modules)."""
    if attn.is_mla:
        return _mla_params(attn, hidden)
    q_width = attn.num_heads * attn.head_dim
    kv_width = attn.num_kv_heads * attn.head_dim
    params = hidden * q_width + 2 * hidden * kv_width + q_width * hidden
    if attn.qkv_bias:
        params += q_width + 2 * kv_width
    if attn.out_bias:
        params += hidden
    params += attn.num_heads if attn.attention_sinks else 0
    if attn.qk_norm == "per_head":
        params += 2 * attn.head_dim
    elif attn.qk_norm == "full":
        params += q_width + kv_width
    return params


def _mla_params(attn: AttentionSpec, hidden: int) -> int:
    """DeepSeek MLA (modeling_deepseek_v3.py): q via optional low-rank, joint kv latent."""
    q_out = attn.num_heads * attn.qk_head_dim
    if attn.q_lora_rank:  # q_a_proj, q_a_layernorm, q_b_proj
        q = hidden * attn.q_lora_rank + attn.q_lora_rank + attn.q_lora_rank * q_out
    else:  # q_proj
        q = hidden * q_out
    kv_latent = attn.kv_lora_rank or 0
    kv_a = hidden * (kv_latent + attn.qk_rope_head_dim) + kv_latent  # kv_a_proj_with_mqa + norm
    kv_b = kv_latent * attn.num_heads * (attn.qk_nope_head_dim + attn.v_head_dim)
    out = attn.num_heads * attn.v_head_dim * hidden
    return q + kv_a + kv_b + out


def mlp_params(intermediate: int, hidden: int, gated: bool, bias: bool = False) -> int:
    """A feed-forward block: 3 (gated) or 2 matrices of hidden x intermediate, plus biases."""
    params = (3 if gated else 2) * hidden * intermediate
    if bias:
        params += (2 if gated else 1) * intermediate + hidden
    return params


def expert_params(moe: MoESpec, hidden: int) -> int:
    """One routed expert: a gated MLP, with biases where the model has them (MoESpec.expert_bias)."""
    return mlp_params(moe.expert_intermediate_size, hidden, gated=True, bias=moe.expert_bias)


def expert_matrix_params(moe: MoESpec, hidden: int) -> int:
    """One routed expert's three weight matrices: what its matmuls multiply by (no biases)."""
    return mlp_params(moe.expert_intermediate_size, hidden, gated=True)


def expert_bias_params(moe: MoESpec, hidden: int) -> int:
    """One routed expert's biases (0 unless MoESpec.expert_bias)."""
    return expert_params(moe, hidden) - expert_matrix_params(moe, hidden)


def count_parameters(spec: ModelSpec) -> ParameterCount:
    """Exact parameter count of ``spec`` by component."""
    if not isinstance(spec, ModelSpec):  # the public API: an AttributeError on .hidden_size before
        from gpuplan.errors import InputError

        raise InputError("spec", type(spec).__name__, "expected a ModelSpec, e.g. resolve_model('llama-3.1-8b')")
    h, moe = spec.hidden_size, spec.moe
    embedding = spec.vocab_size * h
    lm_head = 0 if spec.tie_embeddings else spec.vocab_size * h
    attention = spec.num_layers * attention_params(spec.attention, h)
    dense_mlp = spec.num_dense_layers * mlp_params(
        spec.mlp.intermediate_size, h, spec.mlp.gated, spec.mlp.bias)
    routed = shared = router = 0
    active_routed = 0
    if moe is not None and spec.num_moe_layers:
        n = spec.num_moe_layers
        routed = n * moe.num_experts * expert_params(moe, h)
        active_routed = n * moe.experts_per_token * expert_params(moe, h)
        shared = n * (mlp_params(moe.shared_intermediate_size, h, gated=True)
                      + (h if moe.shared_expert_gate else 0))
        router = n * (h * moe.num_experts + (moe.num_experts if moe.router_bias else 0))
    norms = spec.num_layers * spec.norms_per_layer * norm_params(spec, h)
    if spec.final_norm:
        norms += norm_params(spec, h)
    position = spec.learned_positions * h
    total_without_routed = (embedding + position + lm_head + attention + dense_mlp + shared
                            + router + norms)
    return ParameterCount(
        embedding=embedding, position_embedding=position, lm_head=lm_head, attention=attention,
        dense_mlp=dense_mlp, routed_experts=routed, shared_experts=shared, router=router,
        norms=norms, active=total_without_routed + active_routed)


def params_for_6nd(spec: ModelSpec) -> float:
    """N in the article's 6·N·D: the user's declared N, else the active parameter count
    (all parameters for a dense model; top-k + shared experts for MoE, as in DeepSeek-V3's
    '37B activated')."""
    if spec.declared_params is not None:
        return spec.declared_params
    return float(count_parameters(spec).active)
