"""LoRA on a MoE model as peft 0.21 runs transformers 5.x (``--framework hf``): the expert weights peft rebuilds
every forward. transformers 5.x keeps a MoE layer's experts as 3-D parameters (gate_up_proj E x 2Ie x h, down_proj
E x h x Ie) and its router weight as a parameter; peft's "all-linear" adapts them as parameters and folds each
adapter into its weight on every forward, W' = baddbmm(W, B, A) with autocast off, in W's dtype
(_LoraFactorsProxy.forward, tuners/lora/layer.py@0.21.0 L2292-2296). W' is a fresh tensor the size of the expert
stack. The grouped GEMM keeps it for its input gradient until the layer's backward (torch 2.13
include/torch/csrc/autograd/generated/Functions.h L4467-4472, GroupedMmBackward0: SavedVariable mat2_ and
self_; the router's linear keeps its weight the same way), and the backward makes W''s gradient on its way to
B and A (baddbmm's backward keeps only B and A: BaddbmmBackward0 saves batch1_, batch2_). Units: bytes.
The adapters' own count is core.model.finetune.lora_params."""

from __future__ import annotations

import numpy as np

from gpuplan.core.model.spec import ModelSpec


def peft_fold_bytes(spec: ModelSpec, weight_bytes: float) -> float:
    """Bytes of W' in one MoE layer: E x h x (3 Ie + 1) elements (gate_up, down and the router's E x h) of
    ``weight_bytes`` each (the frozen base's dtype). Qwen3-30B-A3B in bf16: 128 x 2048 x 2305 x 2 = 1.209 GB."""
    m = spec.moe
    if m is None:
        return 0.0
    return weight_bytes * m.num_experts * spec.hidden_size * (3 * m.expert_intermediate_size + 1)


def peft_fold_memory(spec: ModelSpec, weight_bytes: float, moe_layers, in_flight, recompute: str):
    """(held at the end of the forward, the backward's transient) bytes of a stage with ``moe_layers`` MoE layers
    and ``in_flight`` micro-batches whose forward has run. Without recompute every MoE layer's W' is held per
    micro-batch. The MoE layer being backpropagated runs down_proj's backward first: dW'_down (1/3 of W') beside
    W'; then GroupedMmBackward0 releases W'_down and gate_up's backward makes dW'_gate_up (2/3) beside
    W'_gate_up: either way W' / 3 more (the autograd engine frees a node's saved tensors after it runs and a
    gradient once its consumer, BaddbmmBackward0, has). Under full recompute (transformers' gradient
    checkpointing) and selective (op-level SAC: gpuplan.profile.recompute saves only aten.mm and aten.max
    outputs; baddbmm and _grouped_mm are recomputed) the checkpointed layer keeps none and rebuilds W' in the
    backward: 4/3 W' then."""
    fold = peft_fold_bytes(spec, weight_bytes)
    has = np.asarray(moe_layers) > 0
    if recompute != "none":
        return 0.0 * fold, np.where(has, 4.0 / 3.0 * fold, 0.0)
    return moe_layers * fold * in_flight, np.where(has, fold / 3.0, 0.0)
