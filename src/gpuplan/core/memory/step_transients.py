"""Transient memory of a training step beyond the saved activations: the optimizer step's
buffers by kernel, the FSDP/ZeRO-3 unsharded working set, and the eager-attention backward peak.
Degrees may be numbers or numpy arrays. Units: bytes (elements where named)."""

from __future__ import annotations

import numpy as np

from gpuplan.core.memory import activations as A
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.memory.model_states import StageParams, state_shards
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import PrecisionRecipe

OPTIMIZER_IMPLS = ("foreach", "fused", "forloop")


def largest_tensor_elements(spec: ModelSpec, layout: ParallelLayout) -> float:
    """Elements of the largest single parameter tensor on a rank: the embedding / LM head, an MLP
    matrix (fused gate/up: both), or a fused expert tensor (HF transformers 5 and torchtitan keep
    each MoE layer's experts as one [E, 2i, h] tensor), split by tp (the experts by ep x etp: core.expert_layout)."""
    h = spec.hidden_size
    largest = max(spec.vocab_size * h, (2 if spec.fused_gate_up else 1) * spec.mlp.intermediate_size * h)
    moe = spec.moe
    if moe is not None:
        experts = moe.num_experts * (2 if spec.mlp.gated else 1) * moe.expert_intermediate_size * h
        return np.maximum(largest / layout.tp, experts / (layout.expert_tp * layout.ep))
    return largest / layout.tp


def optimizer_step_temp_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                              largest_tensor: float, impl: str | None = None):
    """Transient memory inside optimizer.step(), by kernel (``impl``; None = the recipe's):
    PyTorch's foreach AdamW materialises one intermediate as large as the parameters it updates
    (measured: 2N bytes on pure-bf16 Llama-2-7B, 4N with fp32 params); the for-loop version two
    intermediates of one tensor at a time (measured on the CPU oracle: 2 x the largest tensor,
    the embedding of Llama-2-7B, Mixtral's fused expert tensor); fused kernels none.
    ``largest_tensor``: elements of the largest parameter tensor on the rank before sharding."""
    impl = impl or recipe.optimizer_impl
    shards = np.where(layout.zero >= 1, state_shards(layout), 1)
    updated = params.total / shards
    element = max(recipe.state_bytes, recipe.master_bytes or recipe.weight_bytes)
    if impl == "foreach":
        return updated * element
    if impl in ("forloop", "for-loop"):
        return 2 * largest_tensor / shards * element
    return 0.0


def fsdp_working_set_bytes(params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe):
    """ZeRO-3/FSDP unsharded working set at the start of backward: the root unit (embeddings,
    final norm, head) gathered in compute dtype, plus the all-gather buffer of the layer being
    prefetched for backward. Measured with FSDP2 (fully_shard per block + root, world 8) on
    Llama-2-7B: 0.488 GiB unsharded root + 0.377 GiB all-gather = exactly these two terms."""
    on = np.logical_and(layout.zero >= 3, state_shards(layout) > 1)
    return np.where(on, recipe.compute_bytes * (params.root + params.largest_layer), 0.0)


def eager_attention_backward(spec: ModelSpec, recipe: PrecisionRecipe, layout: ParallelLayout, per_token, layers,
                             tokens, activations, outside, *, seq_len: int, recompute: str, scale: float, **kw):
    """Eager attention: the backward of the last layer's attention core, when the s x s gradients
    exist while every earlier layer's activations are still held. Returns (activations held,
    transient bytes). Measured on the CPU oracle (Llama shapes, fp32 softmax): the softmax
    backward holds 2 x 4·a·s bytes per token (its fp32 input and output gradients) plus a 4h
    incoming gradient; the layer being backpropagated keeps its fp32 probabilities, their bf16
    copy and its norms' tensors, the rest of it and the outside-layer tensors (logits, loss) are
    already freed (Llama-2-7B, s 4,096: measured 117.47 + 4.06 GiB at that moment)."""
    a, s = spec.attention, seq_len
    softmax_bytes = A.FP32 if spec.eager_softmax_fp32 else recipe.compute_bytes
    if recompute == "full":  # the layer being backpropagated was just recomputed
        layer = A.recomputed_layer_bytes_per_token(spec, s, 0, **kw)
        base = activations
    else:
        layer = per_token / np.maximum(layers, 1)
        base = activations - layer * tokens * scale - outside
    norms = A.layer_activations(spec, s, impl=kw["impl"], kernel="eager", compute_bytes=recipe.compute_bytes,
                                autocast=kw["autocast"]).norms
    probabilities = softmax_bytes + (recipe.compute_bytes if spec.eager_softmax_fp32 else 0)  # + its bf16 copy
    kept = (probabilities * a.num_heads * s + norms) / layout.tp
    held = base + kept * tokens * scale
    transient = (2 * softmax_bytes * a.num_heads * s / layout.tp + A.FP32 * spec.hidden_size) * tokens * scale
    return held, transient
