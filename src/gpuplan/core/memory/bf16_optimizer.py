"""DeepSpeed's BF16_Optimizer as memory: what a bf16 run under DeepSpeed's pipeline engine at ZeRO stage 0 keeps.

DeepSpeed@edaa722 (the deepspeed profile's release, core.frameworks) picks the optimizer wrapper in
``_do_optimizer_sanity_check`` (deepspeed/runtime/engine.py L1978-2021): without ZeRO, when the model dtype and the
gradient-accumulation dtype agree (the default: ``get_data_types`` L1485-1496 takes the model dtype when
``data_types.grad_accum_dtype`` is unset; a bf16 / fp32 mix without ZeRO raises, L2020-2021), bf16 under pipeline
parallelism returns BFLOAT16 (L2014-2018) and ``_configure_bf16_optimizer`` (L2336-2357) builds the BF16_Optimizer
with ``grad_acc_dtype`` bf16; a plain module gets DDP_BFLOAT16 (FP16_Optimizer in bf16: full fp32 states, L2019).
Per trained parameter of the stage, BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py@edaa722) holds:

* the bf16 weights, flattened in place (L154-159): 2 B, whole;
* the bf16 gradients autograd writes (``lp.grad``), zeroed, not freed, before each micro-batch's backward
  (``clear_lp_grads`` L473-489, pipe/engine.py L861-863) and freed only by ``zero_grad`` after the step
  (engine.py ``_take_model_step`` L3360-3363): 2 B, whole;
* the gradient accumulation buffer, ``zeros_like`` the flat bf16 group in ``grad_acc_dtype`` (L176): 2 B, whole
  (not sharded; each micro-batch's ``lp.grad`` is added into it, L371);
* the fp32 master partition (L170) and the wrapped optimizer's states over it (AdamW: two fp32 moments):
  4 + 8 B over the data-parallel ranks;
* inside ``step``, the fp32 copy of the rank's gradient partition (``grad_partition.to(fp32)``, L331-333,
  freed after the step L337-339): 4 B over the data-parallel ranks.

So 6 + 12/dp B a parameter between steps and 4/dp more inside the step, where gpuplan's ZeRO 0 had counted
16 + 4 (FP16_Optimizer's whole fp32 states and gradient copy). Measured on DeepSpeed's own code at edaa722
(scripts/measure_deepspeed_bf16.py: a PipelineModule, bf16, ZeRO stage 0, gloo on CPU, 33,088 parameters):
BF16_Optimizer chosen; accumulation buffer 33,088 bf16; master partition 16,544 / 8,272 fp32 and two AdamW
moments of the same size at dp 2 / 4; at the step 33,088 bf16 ``lp.grad`` elements and a 16,544 / 8,272-element
fp32 gradient partition in storage of its own; with two stages the first stage's 16,640 parameters (the
PipelineEngine's own backward, pipe/engine.py L861-863, L882-885) the same way (tests/test_deepspeed_bf16_pipeline.py). The 0.19.8 release of
DeepSpeed (PyPI; edaa722's version.txt says 0.19.6) frees ``lp.grad`` after accumulating only with
``immediate_grad_update`` (default False), so the default is the same. Expert parameters' master and moments are
over the expert-data-parallel group (bf16_optimizer_states).

Degrees may be numbers or numpy arrays. Units: bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from gpuplan.core.bulk import scalar_or_array
from gpuplan.core import frameworks as F
from gpuplan.core.memory import recipe_facts as RF
from gpuplan.core.memory.model_states import ModelStates, StageParams
from gpuplan.core.memory.step_transients import largest_tensor_elements, optimizer_step_temp_bytes
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.precision import PrecisionRecipe

GRAD_ACCUM_BYTES = 2.0
"""Bytes per element of BF16_Optimizer's gradient-accumulation buffer at ZeRO stage 0: the model dtype, bf16
(engine.py@edaa722 get_data_types L1492-1495; fp32 accumulation without ZeRO raises, L2020-2021)."""


def layout_runs_bf16_optimizer(layout: ParallelLayout, settings):
    """Whether (per layout, for arrays) the run is DeepSpeed's BF16_Optimizer (core.frameworks.runs_bf16_optimizer,
    the rule the step model reads too): ``settings`` (core.memory.training.MemorySettings) with deepspeed_bf16
    (core.frameworks.deepspeed_bf16_engine: DeepSpeed, bf16, its own mixed recipe), ZeRO stage 0 and pp > 1."""
    return F.runs_bf16_optimizer(settings.deepspeed_bf16, layout.zero, layout.pp)


def bf16_optimizer_states(held: Callable[[ParallelLayout], ModelStates], layout: ParallelLayout, settings,
                          recipe: PrecisionRecipe) -> ModelStates:
    """The stage's states (``held``: the states under a layout's sharding; ``held(layout)`` at ZeRO 0, all
    whole) as BF16_Optimizer holds them where it runs: the fp32 master and the optimizer's states partitioned
    as ZeRO-1 partitions them, the gradients twice (autograd's bf16 ``lp.grad`` and the bf16 accumulation
    buffer); the weights as they are. ZeRO-1's partition is this optimizer's: dense groups over the
    data-parallel ranks (``seq_data_parallel_group``, engine.py@edaa722 L2351, dp x cp as state_shards), each
    MoE group over its expert-data-parallel group (bf16_optimizer.py@edaa722 ``_configure_moe_settings``
    L125-134: ``real_dp_process_group[i] = _get_expert_data_parallel_group``, partitioned at L144-170; as
    model_states.expert_state_shards, dp x cp / ep)."""
    states = held(layout)
    on = layout_runs_bf16_optimizer(layout, settings)
    if not np.any(on):
        return states
    partitioned = held(replace(layout, zero=1))
    grads = states.grads * (1 + GRAD_ACCUM_BYTES / recipe.grad_bytes)
    return ModelStates(weights=states.weights, grads=np.where(on, grads, states.grads),
                       master=np.where(on, partitioned.master, states.master),
                       optimizer=np.where(on, partitioned.optimizer, states.optimizer))


def optimizer_step_buffers(spec, params: StageParams, layout: ParallelLayout, recipe: PrecisionRecipe, settings):
    """Transient bytes inside optimizer.step(): the kernel's buffers (step_transients.optimizer_step_temp_bytes)
    and the fp32 copy of the gradient shard (recipe_facts.step_fp32_grad_copy_bytes), each over the partition
    the step updates: the ZeRO partition, or BF16_Optimizer's data-parallel partition at ZeRO stage 0."""
    stepped = replace(layout, zero=scalar_or_array(np.where(layout_runs_bf16_optimizer(layout, settings), 1,
                                                            layout.zero)))
    kernel = optimizer_step_temp_bytes(params, stepped, recipe, largest_tensor_elements(spec, layout),
                                       F.optimizer_impl_of(settings, recipe))
    return kernel + RF.step_fp32_grad_copy_bytes(params.total, stepped, recipe, settings.grad_bytes is not None,
                                                 F.framework(settings.framework).step_fp32_grads)
