"""How often ZeRO-3 / FSDP gathers each parameter per micro-batch, by framework.

Every ZeRO-3 implementation all-gathers a layer's parameters before its forward and again before
its backward (Rajbhandari et al. 2020, ZeRO, Sec. 7.2.2: 1.5x the data-parallel volume with the
gradient reduce-scatter). Under full activation recomputation the frameworks differ:

- FSDP (PyTorch FSDP1 and FSDP2): the recomputed forward runs while the pre-backward hook holds the
  unsharded parameters; the pre-forward hook returns early in that state
  (torch/distributed/fsdp/_fully_shard/_fsdp_state.py ``_pre_forward``: "When composing with
  module-hook-based activation checkpointing, the pre-backward hook is responsible for the
  unshard"). Two gathers.
- DeepSpeed ZeRO-3: module hooks fire on the recomputed forward as on the first one: the pre-forward
  hook fetches (all-gathers) each submodule's parameters and the post-forward hook releases them,
  so backward fetches them again (deepspeed/runtime/zero/parameter_offload.py
  ``pre_sub_module_forward_function`` / ``post_sub_module_forward_function``; the recompute-aware
  release of partitioned_param_coordinator.py ``update_recompute_parameters`` covers frozen
  parameters only, DeepSpeed PR #8148; the re-partition after the recomputed forward is traced in
  huggingface/transformers#47254). A parameter whose next use lies within
  ``stage3_max_reuse_distance`` parameters (default 1e9, deepspeed/runtime/zero/config.py) is not
  released (``__params_to_release``): within one recomputed layer, the submodule i whose own
  numel plus twice the numel of the submodules after it stays below that distance is kept until
  its backward.

Units: parameters (elements), gathers per micro-batch. ``tp`` may be a number or a numpy array (the
planner evaluates layouts in bulk).
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.model.spec import ModelSpec, expert_params

DEEPSPEED_MAX_REUSE_DISTANCE = 1e9  # stage3_max_reuse_distance default (deepspeed/runtime/zero/config.py)


def layer_submodule_params(spec: ModelSpec) -> tuple[int, ...]:
    """Weights of one layer's linear submodules in forward order (before tensor parallelism): q, k, v
    (or one fused qkv), the output projection, then the MLP's gate, up, down (or up, down). For a
    MoE model every layer is taken as a MoE layer whose MLP is its routed experts, one module each
    (an approximation: shared experts and leading dense layers are left out). Norms are left out
    (h parameters each)."""
    h, a = spec.hidden_size, spec.attention
    q = h * a.num_heads * a.qk_head_dim
    k = h * a.num_kv_heads * a.qk_head_dim
    v = h * a.num_kv_heads * a.value_head_dim
    attention = [q + k + v] if spec.fused_qkv else [q, k, v]
    attention.append(a.num_heads * a.value_head_dim * h)
    i = spec.mlp.intermediate_size
    mlp = ([2 * h * i] if spec.fused_gate_up else [h * i, h * i]) if spec.mlp.gated else [h * i]
    mlp.append(i * h)
    if spec.moe is not None and spec.num_moe_layers:
        per_expert = expert_params(spec.moe, h)
        mlp = [per_expert] * spec.moe.num_experts
    return tuple(attention + mlp)


def deepspeed_regathered_share(spec: ModelSpec, tp=1, max_reuse_distance: float = DEEPSPEED_MAX_REUSE_DISTANCE):
    """Share of a layer's weights DeepSpeed ZeRO-3 gathers a third time under full recompute: the
    submodules released after the recomputed forward because their backward lies further than
    ``max_reuse_distance`` parameters ahead in the trace (submodule i's backward comes after its
    own forward, the forward of every later submodule and their backward, in reverse order)."""
    sizes = np.asarray(layer_submodule_params(spec), dtype=float)
    later = np.cumsum(sizes[::-1])[::-1] - sizes  # numel of the submodules after each one
    distance = sizes + 2 * later
    tp = np.asarray(tp, dtype=float)
    released = (sizes * (distance / tp[..., None] >= max_reuse_distance)).sum(axis=-1)
    return released / sizes.sum()


def gathers_per_micro_batch(spec: ModelSpec, framework_regathers: bool, recompute: str, tp=1):
    """Parameter all-gathers per micro-batch under ZeRO-3: 2 (forward, backward), plus the share
    DeepSpeed re-gathers for the recomputed forward (``framework_regathers``) under full recompute."""
    if framework_regathers and recompute == "full":
        return 2.0 + deepspeed_regathered_share(spec, tp)
    return 2.0
