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
    """Adapters on every linear of a layer (q, k, v, o and the MLP): r·(in + out) each."""
    h, a = spec.hidden_size, spec.attention
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    attn = (h + q) + 2 * (h + kv) + (a.num_heads * a.value_head_dim + h)
    mlp = (3 if spec.mlp.gated else 2) * (h + spec.mlp.intermediate_size)
    return rank * (attn + mlp) / tp


def adapter_flops_per_token(spec: ModelSpec, finetune: str, rank: int) -> float:
    """Training FLOPs per token of the adapters themselves (0 for full fine-tuning)."""
    if finetune == "full":
        return 0.0
    return TRAINED_FLOPS_PER_WEIGHT * spec.num_layers * lora_params_per_layer(spec, rank)
