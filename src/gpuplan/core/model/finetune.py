"""Fine-tuning with adapters: LoRA (Hu et al. 2021) and QLoRA (Dettmers et al. 2023) — the adapter
parameters, the frozen base's bytes, and the FLOPs of a step with a frozen base.

A frozen weight needs no weight gradient: its backward computes only the gradient with respect to
its input (one matmul of the forward's size instead of two), so a frozen matmul costs 2 (forward)
+ 2 (input gradient) = 4 FLOPs per weight per token instead of 6; the adapters, being trained,
cost the usual 6. Hu et al. 2021 (LoRA, Sec. 4.2) report the consequence: "a 25% speedup during
training on GPT-3 175B compared to full fine-tuning" (4/6 of the matmul work is 33% less).
Units: parameters, bytes, FLOPs per token.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec

# QLoRA (Dettmers et al. 2023, Sec. 3): NF4 with double quantisation costs 4.127 bits per weight.
QLORA_BASE_BYTES = 4.127 / 8
# forward 2 + input-gradient 2 (no weight gradient), and with the weight gradient 2 more: the frozen / trained
# ratio core.model.flops.FlopsPerToken.model applies (2 or 3 x the forward's matmul FLOPs)
FROZEN_FLOPS_PER_WEIGHT = 4.0
TRAINED_FLOPS_PER_WEIGHT = 6.0  # forward 2 + input-gradient 2 + weight-gradient 2


def lora_params_per_layer(spec: ModelSpec, rank: int, tp=1):
    """Adapters on every linear of a layer (q, k, v, o and the MLP): r·(in + out) each. The rule of every
    framework but peft on a MoE model (lora_params)."""
    return rank * (_qkvo_widths(spec) + _mlp_widths(spec)) / tp


def _qkvo_widths(spec: ModelSpec) -> float:
    """Σ (in + out) over q, k, v and o as separate linears (MLA's too, at its head widths: the dense rule)."""
    h, a = spec.hidden_size, spec.attention
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    return (h + q) + 2 * (h + kv) + (a.num_heads * a.value_head_dim + h)


def _mlp_widths(spec: ModelSpec) -> float:
    """Σ (in + out) over the dense MLP's linears: gate, up and down (gated) or up and down."""
    return (3 if spec.mlp.gated else 2) * (spec.hidden_size + spec.mlp.intermediate_size)


def peft_attention_widths(spec: ModelSpec) -> float:
    """Σ (in + out) over a layer's attention linears as peft's "all-linear" finds them: q, k, v, o; for MLA
    (DeepSeek-V2/V3, transformers 5.17 modeling_deepseek_v3.py L383-411) q_proj or q_a_proj + q_b_proj,
    kv_a_proj_with_mqa, kv_b_proj and o_proj (each an nn.Linear: all-linear adapts every linear but the
    LM head)."""
    a, h = spec.attention, spec.hidden_size
    if not a.is_mla:
        return _qkvo_widths(spec)
    q_out = a.num_heads * a.qk_head_dim
    q = (h + a.q_lora_rank) + (a.q_lora_rank + q_out) if a.q_lora_rank else h + q_out
    kv_a = h + (a.kv_lora_rank or 0) + a.qk_rope_head_dim
    kv_b = (a.kv_lora_rank or 0) + a.num_heads * (a.qk_nope_head_dim + a.value_head_dim)
    return q + kv_a + kv_b + (a.num_heads * a.value_head_dim + h)


def peft_moe_layer_params(spec: ModelSpec, rank: int) -> tuple[float, float]:
    """(per-token, folded) LoRA parameters of one MoE layer as peft 0.21 puts them on transformers 5.x, whose
    experts are 3-D parameters: "all-linear" adapts the attention linears (peft_attention_widths) and the shared
    experts' gate, up and down as linears (applied per token), and the experts' gate_up_proj and down_proj as
    parameters, one (r x in, out x r) pair per expert, gate_up at rank 2r (gate's and up's adapters
    fused: peft/utils/transformers_weight_conversion.py@0.21.0 L474), folded into the weight each forward
    (tuners/lora/layer.py@0.21.0 L2292-2296), not applied per token; the router's weight is a parameter too and
    is folded the same way. Checked against peft's own count
    (tests/test_hf_families_moe.py: 278,528 + 34,816 + 14,680,064 + 5,767,168 = 20,760,576 for a Qwen3-30B-A3B
    layer at r 16). DeepSeek's (MLA, its router and 3-D experts as Qwen3-MoE's in modeling_deepseek_v3.py@5.17.0
    L137, L181-182) is this rule, not checked against peft."""
    h, m = spec.hidden_size, spec.moe
    ie = m.expert_intermediate_size
    shared = 3 * (h + m.shared_intermediate_size) if m.shared_intermediate_size else 0  # gate, up, down linears
    per_token = rank * (peft_attention_widths(spec) + shared)
    router = h + m.num_experts  # a 2-D nn.Parameter (modeling_qwen3_moe.py@5.17.0 L256): folded like the experts
    return per_token, rank * (router + m.num_experts * (2 * (h + 2 * ie) + (ie + h)))


def peft_dense_layer_params(spec: ModelSpec, rank: int) -> float:
    """LoRA parameters of a dense layer under peft's "all-linear": its attention linears
    (peft_attention_widths) and the MLP's; lora_params_per_layer's count where attention is not MLA."""
    return rank * (peft_attention_widths(spec) + _mlp_widths(spec))


def peft_counts_experts(settings) -> bool:
    """Does peft train the experts' adapters (peft_moe_layer_params)? Only under --framework hf (peft on
    transformers 5.x): the step's StepSettings say so by carrying hf's eager op profile (eager_ops, set by
    jobs.eager_stack), the memory settings and the training inputs by their framework. The one rule the
    adapter count, the FLOPs numerator and peft's expert-fold memory read."""
    return getattr(settings, "eager_ops", None) is not None or getattr(settings, "framework", None) == "hf"


def lora_layer_params(spec: ModelSpec, rank: int, moe_layer: bool = False, peft_experts: bool = False,
                      per_token: bool = False) -> float:
    """Trained adapter parameters of one decoder layer (undivided by TP): the one per-layer rule lora_params sums
    and the hf op profile's R feature reads (core.time.op_profile.adapter_params). ``peft_experts`` (peft on
    transformers 5.x, peft_counts_experts) on a model with MoE layers: a MoE layer (``moe_layer``) at
    peft_moe_layer_params (``per_token``: without its folded expert and router adapters), a dense layer at
    peft_dense_layer_params (its MLA linears as peft finds them); otherwise every layer at the dense rule
    (lora_params_per_layer)."""
    if not (peft_experts and rank and spec.moe is not None and spec.num_moe_layers > 0):
        return lora_params_per_layer(spec, rank)
    if not moe_layer:
        return peft_dense_layer_params(spec, rank)
    lin, folded = peft_moe_layer_params(spec, rank)
    return lin + (0.0 if per_token else folded)


def lora_params(spec: ModelSpec, rank: int, layers=None, tp=1, peft_experts: bool = False, per_token: bool = False,
                moe_layers=None):
    """Trained adapter parameters of ``layers`` decoder layers (None: all), the single count the memory, step,
    communication and FLOPs models share. ``peft_experts`` (--framework hf on a model with MoE layers: peft on
    transformers 5.x): ``moe_layers`` of the ``layers`` (None: the model's proportion, spec.num_moe_layers of
    spec.num_layers) at peft's count (peft_moe_layer_params), the rest at the dense rule; otherwise the dense
    rule on every layer. ``per_token``: only the adapters a token multiplies (peft's folded expert adapters are a
    per-step fold, not per-token work: adapter_flops_per_token). ``tp``: divides the count as Megatron shards a
    layer's adapters; --framework hf, the only caller with ``peft_experts``, is data-parallel only
    (planner.framework_rules 'hf': tp = ep = pp = 1), so peft's count is always one GPU's whole layer there."""
    layers = spec.num_layers if layers is None else layers
    if not (peft_experts and rank and spec.moe is not None and spec.num_moe_layers > 0):
        return layers * lora_params_per_layer(spec, rank, tp)
    moe_layers = layers * spec.num_moe_layers / spec.num_layers if moe_layers is None else moe_layers
    moe, dense = (lora_layer_params(spec, rank, flag, True, per_token) for flag in (True, False))
    return (moe_layers * moe + (layers - moe_layers) * dense) / tp


def adapter_flops_per_token(spec: ModelSpec, finetune: str, rank: int, peft_experts: bool = False) -> float:
    """Training FLOPs per token of the adapters themselves (0 for full fine-tuning): 6 per adapter parameter a
    token multiplies (peft's folded expert adapters are not: their fold is per step, core.time.eager_step)."""
    if finetune == "full":
        return 0.0
    return TRAINED_FLOPS_PER_WEIGHT * lora_params(spec, rank, peft_experts=peft_experts, per_token=True)
