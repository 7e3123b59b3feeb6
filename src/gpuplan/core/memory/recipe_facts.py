"""What a Megatron run's recipe sets beyond the precision recipe table, as memory: the gradient-buffer
and optimizer-moment dtypes, Transformer Engine's low-precision weights (primary or cached) and CPU
activation offloading (core.memory.training.MemorySettings names each and its source). Degrees may be
numbers or numpy arrays. Units: bytes."""

from __future__ import annotations

from dataclasses import replace
import numpy as np

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS
from gpuplan.core.memory.model_states import ModelStates, StageParams, state_shards
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import RECIPES, PrecisionRecipe

def recipe_as_run(recipe: PrecisionRecipe, grad_bytes: float | None, moment_bytes: float | None) -> PrecisionRecipe:
    """``recipe`` with the run's gradient-buffer and optimizer-state bytes per element where given (None: its own)."""
    changes = {k: v for k, v in (("grad_bytes", grad_bytes), ("state_bytes", moment_bytes)) if v is not None}
    return replace(recipe, **changes) if changes else recipe


def default_grad_bytes(framework_name: str, dtype: str | None, recipe_name: str,
                       grad_bytes: float | None) -> float | None:
    """Gradient-buffer bytes per element the run holds (None: the recipe's, ``recipe_name`` in core.precision
    .RECIPES): ``grad_bytes`` where stated (--grad-dtype, a row's grad_dtype); under Megatron-Core (megatron,
    generic) in fp16, the parameters' 2 B: Megatron-LM turns accumulate_allreduce_grads_in_fp32 on for bf16
    only (megatron/training/arguments.py@core_v0.16.0 L711-724; the flag is store_true, L2194-2196), so an fp16
    run's buffer stays in param.dtype (distributed_data_parallel.py L147). Memory (MemorySettings.grad_bytes)
    and the wire (reduced_grad_bytes) both read this. Units: bytes."""
    if grad_bytes is not None:
        return grad_bytes
    if framework_name in MEGATRON_CORE_FRAMEWORKS and dtype == "fp16" and RECIPES[recipe_name].grad_bytes > 2:
        return 2.0
    return None


def reduced_grad_bytes(framework_name: str, recipe: PrecisionRecipe, grad_bytes: float | None) -> float:
    """Bytes per gradient element the data-parallel reduce-scatter / all-reduce moves: the one width memory
    and step read. Megatron-Core (megatron, generic) reduces its gradient buffer in the buffer's own dtype,
    the width memory holds it in (recipe_as_run: --grad-dtype / a row's recipe_memory.grad_dtype, else the
    recipe's; ``grad_dtype = torch.float if ddp_config.grad_reduce_in_fp32 else param.dtype``,
    distributed_data_parallel.py@core_v0.16.0 L147; Megatron-LM's bf16 runs turn accumulate_allreduce_grads_in_fp32
    on, megatron/training/arguments.py@core_v0.16.0 L720-724, passed as grad_reduce_in_fp32 by training.py L1295:
    the 'megatron' recipe's 4 B). torchtitan's FSDP2 reduces in fp32 whatever the parameters hold
    (MixedPrecisionPolicy reduce_dtype=float32, config mixed_precision_reduce); DeepSpeed, the Trainer and
    llm.c in bf16 (2 B), as before this rule. Units: bytes."""
    if framework_name in MEGATRON_CORE_FRAMEWORKS:
        return float(recipe_as_run(recipe, grad_bytes, None).grad_bytes)
    return 4.0 if framework_name == "torchtitan" else 2.0


def weights_as_held(states: ModelStates, params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe,
                    settings):
    """(states, cached bytes) with ``settings``' low-precision weights (core.memory.training.MemorySettings:
    low_precision_weights with an FP8 / FP4 linear_input_bytes, full training); else as they are and 0."""
    if settings.low_precision_weights and settings.linear_input_bytes and settings.finetune == "full":
        return low_precision_weights(states, params, layout, recipe, settings.low_precision_weights,
                                     settings.linear_input_bytes, weight_copies(settings))
    return states, 0.0


def weight_copies(settings) -> int:
    """Quantised copies Transformer Engine holds of a weight: a row-wise and a column-wise one (MXFP8 / NVFP4
    scale blocks run along different dimensions; tensor-scaled FP8 on Hopper needs the transpose, FP8 GEMMs
    being TN-only there), but one for tensor-scaled FP8 (linear_input_bytes 1) where FP8 GEMMs take any
    layout (``settings.fp8_any_layout_gemm``: compute capability 10.x, B200 / GB200 / B300 / GB300): TE then
    allocates no transpose and column-wise usage reads the row-wise data (TransformerEngine@v2.8
    transformer_engine/pytorch/utils.py L461-467 is_non_tn_fp8_gemm_supported: (10, 0) <= cc < (12, 0);
    csrc/quantizer.cpp L137, L191 with_transpose = columnwise_usage && !non_tn;
    tensor/_internal/float8_tensor_base.py L204-209 update_usage)."""
    return 1 if settings.fp8_any_layout_gemm and settings.linear_input_bytes == 1.0 else 2


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
                          recipe: PrecisionRecipe, mode: str, linear_input_bytes: float, copies: int = 2):
    """(states, cached bytes) with TE's low-precision weights: each layer matrix as a row-wise and a
    column-wise quantised copy, 2 x linear_input_bytes per parameter (FP8 2, MXFP8 2.0625, NVFP4 1.125;
    transformer_engine/pytorch/module/linear.py: weight_quantizer.set_usage(rowwise=True,
    columnwise=is_grad_enabled)); ``copies`` 1 for tensor-scaled FP8 on sm_100 (weight_copies). 'primary' replaces the bf16 weights of the matrices (Megatron's param
    buffer holds the quantised data: distributed_data_parallel.py, param_dtype = torch.uint8 for fp8
    params); 'cached' keeps them and adds the copy (TE's weight workspace, cached across micro-batches
    with is_first_microbatch; not under ZeRO-3, whose gathered weights are freed)."""
    copy = copies * linear_input_bytes
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
