"""What a Megatron run's recipe sets beyond the precision recipe table, as memory: the gradient-buffer
and optimizer-moment dtypes, Transformer Engine's low-precision weights (primary or cached) and CPU
activation offloading (core.memory.training.MemorySettings names each and its source). Degrees may be
numbers or numpy arrays. Units: bytes."""

from __future__ import annotations

from dataclasses import replace
import numpy as np

from gpuplan.core.memory.model_states import ModelStates, StageParams, state_shards
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import PrecisionRecipe

def recipe_as_run(recipe: PrecisionRecipe, grad_bytes: float | None, moment_bytes: float | None) -> PrecisionRecipe:
    """``recipe`` with the run's gradient-buffer and optimizer-state bytes per element where given (None: its own)."""
    changes = {k: v for k, v in (("grad_bytes", grad_bytes), ("state_bytes", moment_bytes)) if v is not None}
    return replace(recipe, **changes) if changes else recipe


def weights_as_held(states: ModelStates, params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                    settings):
    """(states, cached bytes) with ``settings``' low-precision weights (core.memory.training.MemorySettings:
    low_precision_weights with an FP8 / FP4 linear_input_bytes, full training); else as they are and 0."""
    if settings.low_precision_weights and settings.linear_input_bytes and settings.finetune == "full":
        return low_precision_weights(states, params, layout, recipe, settings.low_precision_weights,
                                     settings.linear_input_bytes)
    return states, 0.0


def step_fp32_grad_copy_bytes(params_total, layout: ParallelLayout, recipe: PrecisionRecipe, grad_dtype_given: bool,
                              fp32_step_grads: bool):
    """Bytes of the fp32 copy of the rank's gradient shard made for the optimizer step. DeepSpeed
    (``fp32_step_grads``: core.frameworks.step_fp32_grads) converts its gradient partition to fp32;
    Megatron's distributed optimizer copies a bf16 gradient shard (``grad_dtype_given``: --grad-dtype
    below fp32) to fp32 unless the precision-aware optimizer runs (distrib_optimizer.py
    _copy_model_grads_to_main_grads: shard_main_param.grad = shard_model_grad.float(); decoupled_grad =
    the bf16 view otherwise). Precision-aware means moments below fp32; fp32 moments given = the default."""
    megatron = grad_dtype_given and recipe.grad_bytes < 4 and recipe.master_bytes and recipe.state_bytes >= 4
    if not (fp32_step_grads or megatron):
        return 0.0
    return 4.0 * params_total / np.where(layout.zero >= 1, state_shards(layout), 1)


def low_precision_weights(states: ModelStates, params: StageParams, layout: ParallelLayout,
                          recipe: PrecisionRecipe, mode: str, linear_input_bytes: float):
    """(states, cached bytes) with TE's low-precision weights: each layer matrix as a row-wise and a
    column-wise quantised copy, 2 x linear_input_bytes per parameter (FP8 2, MXFP8 2.0625, NVFP4 1.125;
    transformer_engine/pytorch/module/linear.py: weight_quantizer.set_usage(rowwise=True,
    columnwise=is_grad_enabled)). 'primary' replaces the bf16 weights of the matrices (Megatron's param
    buffer holds the quantised data: distributed_data_parallel.py, param_dtype = torch.uint8 for fp8
    params); 'cached' keeps them and adds the copy (TE's weight workspace, cached across micro-batches
    with is_first_microbatch; not under ZeRO-3, whose gathered weights are freed)."""
    copy = 2 * linear_input_bytes
    total = np.where(params.total > 0, params.total, 1)
    share = params.matrices / total  # the layer matrices' part of the (sharded) weights
    if mode == "primary":
        weights = states.weights * (1 - share + share * copy / recipe.weight_bytes)
        return replace(states, weights=weights), 0.0
    return states, np.where(layout.zero >= 3, 0.0, copy * params.matrices)


def offloaded_share(offload_layers: int, layers):
    """Share of a stage's saved layer activations on the host under CPU activation offloading of the
    first ``offload_layers`` layers (at most all but one: TE's offload context keeps the last)."""
    if not offload_layers:
        return 0.0
    layers = np.asarray(layers, dtype=float)
    return np.where(layers > 1, np.minimum(offload_layers, layers - 1) / np.maximum(layers, 1), 0.0)
