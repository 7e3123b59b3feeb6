"""Megatron-Core with Transformer Engine: the step's terms beside the layers' kernels
(core.time.megatron_ops has the layer's op classes and the loss).

* **FP8 weight casts, once a step.** Megatron's TE wrappers pass ``is_first_microbatch`` to every
  TE linear (megatron/core/extensions/transformer_engine.py, TELinear.forward, core_v0.15.0), True
  only for the step's first micro-batch (pipeline_parallel/schedules.py ``set_is_first_microbatch``);
  TE then quantises the weight (and its transpose) and caches it for the other micro-batches
  (transformer_engine/pytorch/module/layernorm_linear.py v2.9: ``update_workspace =
  is_first_microbatch is None or is_first_microbatch``). Bytes per weight: one quantisation
  without a norm in front (megatron_ops.quantize_cost), four weight tensors a layer.
* **The distributed optimizer** (megatron/core/optimizer/distrib_optimizer.py; Adam from TE's
  ``FusedAdam`` / apex ``multi_tensor_adam``, multi-tensor apply over the shard): per parameter of
  the GPU's shard, Adam reads the fp32 main parameter, gradient and two moments and writes three
  (28 B); the gradient norm for clipping reads the fp32 gradient (4 B, optimizer/clip_grads.py
  ``get_grad_norm_fp32``, multi_tensor_l2norm); ``_copy_main_params_to_model_params`` writes the
  bf16 parameter (4 + 2 B). The gradient buffer of every local parameter is zeroed once a step
  (distributed/param_and_grad_buffer.py ``zero_grad``: 4 B per local parameter; fp32 gradients,
  Megatron-Bridge's bf16_mixed ``grad_reduce_in_fp32``). Gradients accumulate into that buffer
  inside the weight-gradient GEMM (gradient_accumulation_fusion): no kernel of their own.
* **Host time.** A TE module's forward costs 2.69x a torch ``nn.Linear``'s on the same host
  (TransformerEngine#2053: te.Linear 99.66 us vs torch 37.08 us on GB200's Grace; 90.53 vs 33.17 on
  GH200), carried to the lent H200's host by its measured 16.44 us torch Linear under autograd
  (core.time.host): 44.2 us. A layer issues 4 TE linears and TE's DotProductAttention (taken at
  the same cost: no published figure) and ~10 other dispatched ops (split, reshape, fused RoPE x2,
  bias-dropout-add x2, SwiGLU, views) at the host's measured 6.21 us per op. No published figure
  exists for TE's backward on the host: it is taken equal to the forward (each module's backward
  quantises and issues the same GEMM count plus one). The host runs ahead while kernels are long;
  a phase waits only for what its GPU work does not cover (as core.time.titan_ops). Under CUDA
  graphs the layer is one graph launch: no host term.

Units: bytes, seconds, parameters.
"""

from __future__ import annotations

from gpuplan.core.bulk import maximum
from gpuplan.core.model import flops as F
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time import megatron_ops as MO
from gpuplan.core.time.host import GPU_HOST_ADD_SECONDS, GPU_HOST_LINEAR_SECONDS
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.optimizer import FOREACH_ELEMENTS_PER_LAUNCH

WEIGHTS_PER_LAYER = 4  # linear_qkv, linear_proj, linear_fc1, linear_fc2
ADAM_BYTES_PER_SHARD_PARAM = 7 * 4.0
GRAD_NORM_BYTES_PER_SHARD_PARAM = 4.0
PARAM_COPY_BYTES_PER_SHARD_PARAM = 4.0 + 2.0
GRAD_ZERO_BYTES_PER_LOCAL_PARAM = 4.0
TE_MODULE_OVER_TORCH_LINEAR = 99.66 / 37.08
"""TransformerEngine#2053 (2025-08): te.Linear / torch.nn.Linear forward CPU time on GB200's Grace."""
TE_MODULE_HOST_SECONDS = TE_MODULE_OVER_TORCH_LINEAR * GPU_HOST_LINEAR_SECONDS
TE_MODULES_PER_LAYER = 5  # 4 linears + DotProductAttention
OTHER_OPS_PER_LAYER = 10


def weight_cast_seconds(spec: ModelSpec, recipe, non_tn: bool, hbm_bytes_per_s: float, tp, stage_layers):
    """Seconds a step spends quantising the stage's linear weights (once a step; 0 in 16 bits)."""
    if recipe is None or not MO.covers(spec):
        return 0.0
    per_byte, kernels = MO.quantize_cost(recipe, False, non_tn)
    weights = F.layer_matmul_weights_per_token(spec) / spec.num_layers / tp * stage_layers
    return memory_bound_seconds(per_byte * weights, WEIGHTS_PER_LAYER * kernels * stage_layers, hbm_bytes_per_s)


def optimizer_bytes(local_params, shards):
    """Bytes the distributed optimizer's step moves on one GPU (module docstring)."""
    shard = local_params / shards
    return (ADAM_BYTES_PER_SHARD_PARAM + GRAD_NORM_BYTES_PER_SHARD_PARAM + PARAM_COPY_BYTES_PER_SHARD_PARAM) * shard \
        + GRAD_ZERO_BYTES_PER_LOCAL_PARAM * local_params


def optimizer_seconds(local_params, shards, hbm_bytes_per_s: float):
    """Seconds of the optimizer step: optimizer_bytes at memory_kernels' line, four multi-tensor
    passes (Adam, norm, copy, zero), each a launch per FOREACH_ELEMENTS_PER_LAUNCH elements."""
    launches = 4 * (1 + local_params / shards / FOREACH_ELEMENTS_PER_LAUNCH)
    return memory_bound_seconds(optimizer_bytes(local_params, shards), launches, hbm_bytes_per_s)


def host_seconds_per_layer(ops: MO.MegatronOps) -> tuple[float, float]:
    """(forward, backward) host seconds a layer takes to issue (module docstring); 0 under CUDA graphs."""
    if ops.cuda_graphs:
        return 0.0, 0.0
    forward = TE_MODULES_PER_LAYER * TE_MODULE_HOST_SECONDS + OTHER_OPS_PER_LAYER * GPU_HOST_ADD_SECONDS
    return forward, forward


def exposed_host_seconds(ops: MO.MegatronOps, forward_gpu, backward_gpu):
    """Seconds a layer's GPU waits for its host per micro-batch: max(0, host - GPU) per phase."""
    host_f, host_b = host_seconds_per_layer(ops)
    return maximum(host_f - forward_gpu, 0.0) + maximum(host_b - backward_gpu, 0.0)


def microbatch_extra_seconds(spec: ModelSpec, settings, hbm_bytes_per_s: float, tokens, tp, layer_phases,
                             layers, head) -> float:
    """What Megatron's step adds to a micro-batch beside its layers' kernels: the loss where the
    stage holds the LM head (``head``: how many losses it computes, MTP modules' included), each layer's
    exposed host time (``layer_phases``: the layer's forward and backward GPU seconds per micro-batch).
    Without settings.megatron_ops: the loss alone where settings.megatron_loss names it, else 0."""
    ops = MO.active(spec, settings)
    if ops is None:
        impl = settings.megatron_loss
        return 0.0 if impl is None else head * MO.loss_seconds(spec, impl, tokens, hbm_bytes_per_s, tp)
    return layers * exposed_host_seconds(ops, layer_phases[0], layer_phases[1]) \
        + head * MO.loss_seconds(spec, ops.cross_entropy, tokens, hbm_bytes_per_s, tp)


def step_extra_seconds(spec: ModelSpec, settings, gpu, *, tp, stage_layers, local_params, shards):
    """(weight casts, optimizer) seconds per step under settings.megatron_ops; None when it is None."""
    ops = MO.active(spec, settings)
    if ops is None:
        return None
    recipe = MO.cast_recipe(settings.dtype, settings.fp8_recipe, ops)
    casts = weight_cast_seconds(spec, recipe, MO.non_tn_fp8(gpu), gpu.memory_bandwidth, tp, stage_layers)
    return casts, optimizer_seconds(local_params, shards, gpu.memory_bandwidth)
