"""Training FLOPs: the article's 6·N·D and an exact per-token count.

Exact count per token, forward pass (each multiply-accumulate = 2 FLOPs):
  * every matmul weight used by the token: 2 FLOPs per weight (q/k/v/o or MLA projections,
    the dense MLP or the router + top-k + shared experts, and the LM head). The input
    embedding is a lookup (0 FLOPs); norms, biases, activations and softmax are ignored
    (< 1% at these sizes, as in Kaplan et al. 2020 Table 1 and PaLM App. B).
  * attention scores QK^T and context AV: 2·heads·(d_qk + d_v) FLOPs per attended key.
    'full' convention counts every key of the sequence (PaLM App. B: 6N + 12·L·H·Q·T per
    token for training; Megatron, Narayanan et al. 2021 eq. 3); 'causal' counts only the
    keys a causal mask lets through, (s+1)/2 on average, as flash-attention kernels execute.
    Sliding-window layers attend to at most `window` keys.
Backward = 2 x forward for both matmuls and attention (PaLM App. B, Megatron), so model
FLOPs = 3 x forward. Fine-tuning with a frozen base (LoRA/QLoRA) skips the weight gradients of
the base's matmuls: 2 x forward for them, 3 x for attention and the adapters (core/model/finetune.py). Hardware FLOPs add recomputation: full recompute re-runs each layer's
forward (LM head excluded) -> ~4/3 x model FLOPs, the article's "about 33% more compute";
selective recompute (Korthikanti et al. 2022) re-runs only the attention core.
Units: FLOPs. Functions accept Python numbers or numpy arrays for seq_len.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpuplan.core.bulk import minimum
from gpuplan.core.model.spec import AttentionSpec, ModelSpec, expert_matrix_params, mlp_params

AttentionConvention = Literal["full", "causal"]
Recompute = Literal["none", "selective", "full"]


def flops_6nd(n_params: float, tokens: float) -> float:
    """The article's total training compute: 6 FLOPs per parameter per token (Kaplan 2020:
    2 forward + 4 backward per weight)."""
    return 6.0 * n_params * tokens


def attention_matmul_weights(attn: AttentionSpec, hidden: int) -> int:
    """Weights of the attention projections that take part in matmuls (no biases, no norms)."""
    if attn.is_mla:
        q_out = attn.num_heads * attn.qk_head_dim
        q = hidden * attn.q_lora_rank + attn.q_lora_rank * q_out if attn.q_lora_rank else hidden * q_out
        latent = attn.kv_lora_rank or 0
        kv = hidden * (latent + attn.qk_rope_head_dim) + latent * attn.num_heads * (
            attn.qk_nope_head_dim + attn.v_head_dim)
        return q + kv + attn.num_heads * attn.v_head_dim * hidden
    q_width = attn.num_heads * attn.head_dim
    return 2 * hidden * q_width + 2 * hidden * attn.num_kv_heads * attn.head_dim


def mlp_matmul_weights_per_token(spec: ModelSpec, moe_layer: bool) -> int:
    """Matmul weights one token passes through in one layer's MLP: the dense MLP, or the router,
    the top-k routed experts and the shared expert of an MoE layer."""
    h = spec.hidden_size
    if not moe_layer:
        return mlp_params(spec.mlp.intermediate_size, h, spec.mlp.gated)
    moe = spec.moe
    return (h * moe.num_experts + moe.experts_per_token * expert_matrix_params(moe, h)
            + mlp_params(moe.shared_intermediate_size, h, gated=True))


def layer_matmul_weights_per_token(spec: ModelSpec) -> int:
    """Matmul weights one token passes through in all transformer layers (MoE: active only)."""
    weights = spec.num_layers * attention_matmul_weights(spec.attention, spec.hidden_size)
    weights += spec.num_dense_layers * mlp_matmul_weights_per_token(spec, moe_layer=False)
    if spec.moe is not None and spec.num_moe_layers:
        weights += spec.num_moe_layers * mlp_matmul_weights_per_token(spec, moe_layer=True)
    return weights


def layer_gemm_widths_per_token(spec: ModelSpec) -> float:
    """Input + output widths of the matmuls one token passes through in an average layer
    (elements per token; MoE: the routed experts and shared expert), for FP8 operand casts."""
    h, a = spec.hidden_size, spec.attention
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    out = a.num_heads * a.value_head_dim
    attention = (h + q + 2 * kv) + (out + h)  # fused qkv, output projection

    def mlp(i: float, gated: bool) -> float:
        return (h + (2 if gated else 1) * i) + (i + h)

    dense = mlp(spec.mlp.intermediate_size, spec.mlp.gated)
    total = spec.num_layers * attention + spec.num_dense_layers * dense
    if spec.moe is not None and spec.num_moe_layers:
        moe = spec.moe
        experts = moe.experts_per_token * mlp(moe.expert_intermediate_size, True)
        shared = mlp(moe.shared_intermediate_size, True) if moe.shared_intermediate_size else 0.0
        total += spec.num_moe_layers * (experts + shared)
    return total / spec.num_layers


def mean_attended_keys(seq_len, window: int | None, convention: AttentionConvention):
    """Keys each query attends to, averaged over the sequence.

    'full': s (or the window). 'causal': position i sees min(i, window) keys, so the mean is
    (s+1)/2 without a window and (w(w+1)/2 + (s-w)·w)/s when w < s.
    """
    if convention == "full":
        return seq_len if window is None else minimum(seq_len, window)
    if window is None:
        return (seq_len + 1) / 2
    w = minimum(seq_len, window)
    return (w * (w + 1) / 2 + (seq_len - w) * w) / seq_len


def attention_core_flops_per_token(spec: ModelSpec, seq_len, convention: AttentionConvention = "full"):
    """Forward FLOPs of QK^T and AV per token, summed over layers (sliding layers capped)."""
    attn = spec.attention
    per_key = 2 * attn.num_heads * (attn.qk_head_dim + attn.value_head_dim)
    sliding = spec.num_sliding_layers
    full_layers = spec.num_layers - sliding
    total = full_layers * per_key * mean_attended_keys(seq_len, None, convention)
    if sliding:
        total = total + sliding * per_key * mean_attended_keys(seq_len, spec.sliding_window, convention)
    return total


@dataclass(frozen=True)
class FlopsPerToken:
    """Training FLOPs per token by part. ``model`` counts forward+backward once; ``hardware``
    adds recomputation. Units: FLOPs per token."""

    layer_matmuls_forward: float
    attention_core_forward: float
    lm_head_forward: float
    recompute_forward: float
    frozen_base: bool = False
    """LoRA/QLoRA: the base's weights get no gradient (2 x forward for its matmuls, not 3)."""
    adapter_forward: float = 0.0

    @property
    def forward(self) -> float:
        return self.layer_matmuls_forward + self.attention_core_forward + self.lm_head_forward + self.adapter_forward

    @property
    def model(self) -> float:
        weights = self.layer_matmuls_forward + self.lm_head_forward
        return (2.0 if self.frozen_base else 3.0) * weights + 3.0 * (self.attention_core_forward + self.adapter_forward)

    @property
    def hardware(self) -> float:
        return self.model + self.recompute_forward


def training_flops_per_token(spec: ModelSpec, seq_len, convention: AttentionConvention = "full",
                             recompute: Recompute = "none", finetune: str = "full",
                             lora_rank: int = 16, peft_experts: bool = False) -> FlopsPerToken:
    """Exact training FLOPs per token for sequences of ``seq_len`` tokens (``finetune`` lora or
    qlora: a frozen base plus rank-``lora_rank`` adapters on every linear). ``peft_experts``: peft's
    adapters on an MoE's fused experts (--framework hf, i.e. StepSettings.eager_ops set, the rule
    core.time.trained_params.trained_params_per_gpu reads), folded into the expert weights once a step rather than
    multiplied per token (core.model.finetune.adapter_flops_per_token), so they add no per-token FLOPs."""
    from gpuplan.core.model.finetune import adapter_flops_per_token

    layers = 2.0 * layer_matmul_weights_per_token(spec)
    attention = attention_core_flops_per_token(spec, seq_len, convention)
    lm_head = 2.0 * spec.vocab_size * spec.hidden_size
    extra = {"none": 0.0, "selective": attention, "full": layers + attention}[recompute]
    adapters = adapter_flops_per_token(spec, finetune, lora_rank, peft_experts) / 3.0  # forward share of 6 per weight
    return FlopsPerToken(layers, attention, lm_head, extra, frozen_base=finetune != "full", adapter_forward=adapters)
