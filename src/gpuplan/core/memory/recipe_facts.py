"""What a Megatron run's recipe sets beyond the precision recipe table, as memory: the gradient-buffer
and optimizer-moment dtypes, Transformer Engine's low-precision weights (primary or cached) and CPU
activation offloading (core.memory.training.MemorySettings names each and its source). Degrees may be
numbers or numpy arrays. Units: bytes."""

from __future__ import annotations

from dataclasses import replace
import numpy as np

from gpuplan.core.memory.model_states import ModelStates, StageParams
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import PrecisionRecipe

def recipe_as_run(recipe: PrecisionRecipe, grad_bytes: float | None, moment_bytes: float | None) -> PrecisionRecipe:
    """``recipe`` with the run's gradient-buffer and optimizer-state bytes per element where given (None: its own)."""
    changes = {k: v for k, v in (("grad_bytes", grad_bytes), ("state_bytes", moment_bytes)) if v is not None}
    return replace(recipe, **changes) if changes else recipe


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
