"""The optimizer step of torch.optim.AdamW by implementation: bytes per trained parameter and
kernels.

Element accesses per parameter (each a read or a write of one parameter-sized element, counted
on the op census of the real step, gpuplan.profile.op_census; 42 B per bf16 parameter measured
for foreach):

* ``foreach`` (torch/optim/adamw.py -> adam._multi_tensor_adam with decoupled weight decay):
  _foreach_mul_ (decay: r1 w1), _foreach_lerp_ (m: r2 w1), _foreach_mul_ (v: r1 w1),
  _foreach_addcmul_ (v += (1-b2) g g: r3 w1), _foreach_sqrt (r1 w1), _foreach_div_ (r1 w1),
  _foreach_add_ (eps: r1 w1), _foreach_addcdiv_ (p: r3 w1) = 21 accesses (20 from HBM: the
  addcmul's two gradient operands are one tensor, REPEATED_READS_PER_PARAM); 9 ops, each one
  launch per FOREACH_TENSORS_PER_LAUNCH tensors (multi_tensor_apply, depth 3-4) or per
  FOREACH_ELEMENTS_PER_LAUNCH elements, whichever is more.
* ``fused`` (torch._fused_adamw_): reads p, g, m, v, writes p, m, v = 7 accesses, one op.
* ``forloop`` (adam._single_tensor_adam): the foreach arithmetic one tensor at a time: 21
  accesses, 9 kernels per tensor.

Units: bytes, kernels, parameters.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.bulk import scalar_or_array
from gpuplan.core.frameworks import runs_bf16_optimizer
from gpuplan.core.memory.model_states import stage_params
from gpuplan.core.parallel import ParallelLayout

ACCESSES_PER_PARAM = {"foreach": 21.0, "fused": 7.0, "forloop": 21.0}
REPEATED_READS_PER_PARAM = {"foreach": 1.0, "fused": 0.0, "forloop": 1.0}
"""Of those accesses, reads HBM does not serve: the second moment's update passes the gradient twice,
``_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)`` (torch/optim/adam.py _multi_tensor_adam,
torch 2.11-2.13, ``scaled_device_grads = device_grads`` for a float beta2) and
``exp_avg_sq.mul_(beta2).addcmul_(grad, grad, ...)`` (_single_tensor_adam). The foreach kernel loads each
operand list's element in the same thread one after the other (aten/src/ATen/native/cuda/
ForeachFunctors.cuh ``load_args`` / ``load_store``: ``r_args[r_index][ii] = args[r_index][i]``), so the
second load of the same address reads the cache line the first just brought in. The census counts it
(an operand is an operand); HBM moves 20 per parameter."""
OPS_PER_STEP = {"foreach": 9, "fused": 1, "forloop": 9}
FOREACH_TENSORS_PER_LAUNCH = 36
"""multi_tensor_apply's depth_to_max_tensors[3] (aten/src/ATen/native/cuda/MultiTensorApply.cuh)."""
FOREACH_ELEMENTS_PER_LAUNCH = 65536 * 320
"""kChunkSize x depth_to_max_blocks (same file): the elements one launch covers."""


def optimizer_bytes(impl: str, trained_params, element_bytes: float):
    """HBM bytes the step moves: (accesses - repeated reads) x parameters x bytes per element (the
    parameters' dtype)."""
    return (ACCESSES_PER_PARAM[impl] - REPEATED_READS_PER_PARAM[impl]) * trained_params * element_bytes


def optimizer_kernels(impl: str, trained_params, tensors):
    """Kernel launches of one step over ``tensors`` tensors holding ``trained_params`` elements."""
    if impl == "forloop":
        return OPS_PER_STEP[impl] * tensors
    launches = tensors / FOREACH_TENSORS_PER_LAUNCH + trained_params / FOREACH_ELEMENTS_PER_LAUNCH
    return OPS_PER_STEP[impl] * (1.0 + launches)


FP32_GRAD_ACCUMULATION_BYTES = 18.0
"""HBM bytes per local parameter and micro-batch where DeepSpeed's BF16_Optimizer adds the bf16 gradients
into its fp32 copy, a pass of its own after every backward: BF16_Optimizer.backward calls update_hp_grads
(update_hp_grads=True by default, 'to prevent accumulating in the bf16 grads after successive backward()
calls': deepspeed/runtime/bf16_optimizer.py@v0.7.0 L494-507; backward_epilogue @edaa722 L351-353, from
engine.py _backward_epilogue L2976-2978); its pipeline engine calls update_hp_grads itself on the stages
before the last (pipe/engine.py@v0.7.0 L768-770, @edaa722 L882-885; PR #1801 56c5223). Per parameter
hp_grad.add_(lp.grad.to(fp32)) (bf16_optimizer.py@edaa722 L371): the cast reads 2 B and writes 4 B, the add
reads 4 + 4 B and writes 4 B. The fp32 gradient buffer spans the whole local model, not a partition
(zeros_like the flat bf16 group, L176)."""

BF16_OPTIMIZER_MAX_ZERO = 1
"""The highest gpuplan ZeRO stage under which DeepSpeed bf16 runs its BF16_Optimizer, at any pipeline
degree: the optimizer shards its fp32 states over data parallelism (DeepSpeed's ZeRO stage 0 config:
BLOOM's 'bf16 must use z0! it implements its own zero stage 1 equivalent', gpuplan's ZeRO-1) and never
gradients or weights. engine.py selects it (_do_optimizer_sanity_check -> _configure_bf16_optimizer) with
fp32 gradient accumulation:
* ZeRO stage 0, whatever the module: @v0.7.0 L1152-1153 (bf16 without ZeRO); v0.7.6-v0.17.5 the default
  grad_accum_dtype is fp32 for bf16 without ZeRO and that mix returns BFLOAT16 (@v0.17.5 L1092-1094,
  L1422-1423);
* ZeRO stage 1 with data_types.grad_accum_dtype fp32 and no CPU offload: v0.8.1 on (@v0.17.5 L1391-1393,
  @edaa722 L1994-1996).
ZeRO 2 / 3 get the ZeRO optimizer (no pass). Not modelled (no input for the accumulation dtype or version):
from v0.17.6 (889f0ead2) the default accumulation dtype is bf16, so ZeRO stage 1 runs the ZeRO optimizer, a
plain module at stage 0 DDP_BFLOAT16 (FP16_Optimizer in bf16, no pass), and a PipelineModule at stage 0 the
BF16_Optimizer accumulating in bf16, 6 B a parameter (@edaa722 L1492-1495, L2011-2019): charged so at ZeRO 0
with pp > 1 (BF16_GRAD_ACCUMULATION_BYTES; its memory core.memory.bf16_optimizer), an upper bound elsewhere."""


BF16_GRAD_ACCUMULATION_BYTES = 6.0
"""The same pass where the accumulation buffer is bf16: a bf16 run at ZeRO stage 0 under DeepSpeed's pipeline
engine, whose default grad_accum_dtype is the model dtype (engine.py@edaa722 L1492-1495, L2014-2018;
core.memory.bf16_optimizer): ``lp.grad.to(bf16)`` returns the tensor itself, the add reads 2 + 2 B and writes 2 B
(bf16_optimizer.py@edaa722 L371). Neither figure counts the zeroing of lp.grad before each backward (L473-489)."""


def grad_accumulation_seconds(trained_params, hbm_bytes_per_second, zero=1, pp=1):
    """Seconds of that pass over ``trained_params`` local parameters, once per micro-batch: fp32 accumulation,
    or bf16 where the BF16_Optimizer runs, ZeRO 0 with pp > 1 (``zero``, ``pp`` numbers or arrays; called for
    DeepSpeed's bf16 engine only, StepSettings.deepspeed_bf16)."""
    bf16 = runs_bf16_optimizer(True, zero, pp)  # core.frameworks' one rule, as memory and the step read it
    per_param = np.where(bf16, BF16_GRAD_ACCUMULATION_BYTES, FP32_GRAD_ACCUMULATION_BYTES)
    return scalar_or_array(per_param * trained_params / hbm_bytes_per_second)


def accumulation_pass_seconds(spec, settings, trained, hbm_bytes_per_second, tp, pp, ep, zero, mtp=0):
    """Seconds of DeepSpeed's BF16_Optimizer accumulation pass per micro-batch (``settings``: core.time.step's
    StepSettings; 0 unless deepspeed_bf16, and above ZeRO BF16_OPTIMIZER_MAX_ZERO), over the largest stage's
    parameters (full training) or the ``trained`` ones (adapters)."""
    if not settings.deepspeed_bf16:
        return 0.0
    acc_params = largest_stage_params(spec, tp, pp, ep, mtp, settings.expert_tp) if settings.finetune == "full" else trained
    return (zero <= BF16_OPTIMIZER_MAX_ZERO) * grad_accumulation_seconds(acc_params, hbm_bytes_per_second, zero, pp)


def largest_stage_params(spec, tp, pp, ep, mtp=0, etp=None):
    """Parameters on one GPU of the larger of the first pipeline stage (its layers and the embedding) and
    the last (the final norm, the LM head, any MTP modules), as core.memory.model_states.stage_params
    counts them (``etp``: StepSettings.expert_tp, None = tp): the stage whose micro-batch sets the pace carries its
    own parameters' pass."""
    # the planner's degree arrays arrive as floats; layers index by stage
    pp = scalar_or_array(np.asarray(pp).astype(np.int64))
    layout = ParallelLayout(tp=tp, pp=pp, ep=ep, etp=etp)
    return np.maximum(stage_params(spec, layout, 0, mtp).total, stage_params(spec, layout, pp - 1, mtp).total)
