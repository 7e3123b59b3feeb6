"""The optimizer step of torch.optim.AdamW by implementation: bytes per trained parameter and
kernels.

Element accesses per parameter (each a read or a write of one parameter-sized element, counted
on the op census of the real step, gpuplan.profile.op_census; 42 B per bf16 parameter measured
for foreach):

* ``foreach`` (torch/optim/adamw.py -> adam._multi_tensor_adam with decoupled weight decay):
  _foreach_mul_ (decay: r1 w1), _foreach_lerp_ (m: r2 w1), _foreach_mul_ (v: r1 w1),
  _foreach_addcmul_ (v += (1-b2) g g: r3 w1), _foreach_sqrt (r1 w1), _foreach_div_ (r1 w1),
  _foreach_add_ (eps: r1 w1), _foreach_addcdiv_ (p: r3 w1) = 21 accesses; 9 ops, each one
  launch per FOREACH_TENSORS_PER_LAUNCH tensors (multi_tensor_apply, depth 3-4) or per
  FOREACH_ELEMENTS_PER_LAUNCH elements, whichever is more.
* ``fused`` (torch._fused_adamw_): reads p, g, m, v, writes p, m, v = 7 accesses, one op.
* ``forloop`` (adam._single_tensor_adam): the foreach arithmetic one tensor at a time: 21
  accesses, 9 kernels per tensor.

Units: bytes, kernels, parameters.
"""

from __future__ import annotations

ACCESSES_PER_PARAM = {"foreach": 21.0, "fused": 7.0, "forloop": 21.0}
OPS_PER_STEP = {"foreach": 9, "fused": 1, "forloop": 9}
FOREACH_TENSORS_PER_LAUNCH = 36
"""multi_tensor_apply's depth_to_max_tensors[3] (aten/src/ATen/native/cuda/MultiTensorApply.cuh)."""
FOREACH_ELEMENTS_PER_LAUNCH = 65536 * 320
"""kChunkSize x depth_to_max_blocks (same file): the elements one launch covers."""


def optimizer_bytes(impl: str, trained_params, element_bytes: float):
    """Bytes the step moves: accesses x parameters x bytes per element (the parameters' dtype)."""
    return ACCESSES_PER_PARAM[impl] * trained_params * element_bytes


def optimizer_kernels(impl: str, trained_params, tensors):
    """Kernel launches of one step over ``tensors`` tensors holding ``trained_params`` elements."""
    if impl == "forloop":
        return OPS_PER_STEP[impl] * tensors
    launches = tensors / FOREACH_TENSORS_PER_LAUNCH + trained_params / FOREACH_ELEMENTS_PER_LAUNCH
    return OPS_PER_STEP[impl] * (1.0 + launches)


FP32_GRAD_ACCUMULATION_BYTES = 18.0
"""HBM bytes per local parameter and micro-batch where a framework adds its bf16 gradients into an fp32
copy in a pass of its own: DeepSpeed's BF16_Optimizer under its pipeline engine (PR #1801 'bf16+pipeline
parallelism', 56c5223: deepspeed/runtime/pipe/engine.py _exec_backward_pass calls
optimizer.update_hp_grads after every micro-batch's backward; bf16_optimizer.py update_hp_grads runs
hp_grad.add_(lp.grad.to(fp32)) per parameter): the cast reads 2 B and writes 4 B, the add reads 4 + 4 B
and writes 4 B."""


def fp32_grad_accumulation_seconds(trained_params, hbm_bytes_per_second):
    """Seconds of that pass over ``trained_params`` local parameters, once per micro-batch."""
    return FP32_GRAD_ACCUMULATION_BYTES * trained_params / hbm_bytes_per_second
