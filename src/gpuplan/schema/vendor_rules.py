"""CUDA-only training options on accelerators that run neither CUDA nor ROCm: Intel Gaudi (catalog vendor Intel:
gaudi2, gaudi3; PyTorch through Intel's HPU bridge) and Huawei Ascend (vendor Huawei: ascend-910b, ascend-910c;
PyTorch through torch_npu). One line naming the field at every door (train, budget, plan, memory: CLI flags, plan
files, the web API, Python), as schema.tpu_rules refuses them on a TPU (wave 20; they were answered, exit 0).

Which options each part refuses, and why, is schema.cuda_only's one table (CUDA_ONLY_OPTIONS: an option's
``on_hpu_npu``), walked by cannot_run for a TPU, a Gaudi and an Ascend part alike.
"""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.schema.cuda_only import OFF_CUDA_VENDORS, cannot_run, refusal, runs_off_cuda
from gpuplan.schema.device_rules import accelerator


def check_vendor_options(inputs) -> None:
    """A training ask (a job schema with ``framework``) whose --gpu is an Intel Gaudi or Huawei Ascend part: the
    CUDA-only options it does not run (cuda_only.CUDA_ONLY_OPTIONS' ``on_hpu_npu``), each at a value other than its
    default, refused in one line; and check_compared_parts."""
    if "framework" not in type(inputs).model_fields:
        return
    check_compared_parts(inputs)
    gpu = accelerator(getattr(inputs, "gpu", None))
    if gpu is None or gpu.vendor not in OFF_CUDA_VENDORS:
        return
    if found := cannot_run(inputs, gpu):
        name, shown, what, valid = found
        raise InputError(name, shown, refusal(what, gpu, valid))


COMPARED_ROW_OPTIONS = ("loss", "finetune", "offload_layers", "ep_dispatcher", "flex_backend")
"""The CUDA-only options that change a `memory --compare` row's own figure (its tensors): a TPU, Gaudi or Ascend row
was sized as if it ran Transformer Engine's te-ce or offloading, bitsandbytes' NF4 base or DeepEP (wave 20:
`--gpu h100 --compare h100,tpu-v5p --loss te-ce` printed the TPU row). The CUDA context, NCCL buffer and allocator
options are not among them: a TPU row counts none of those (tpu_rules' XLA words), the --gpu row reads them."""


def check_compared_parts(inputs) -> None:
    """A part given in `memory --compare` that does not run one of COMPARED_ROW_OPTIONS as asked is refused naming
    compare, as a part with no path for the recipe's dtype is (jobs.memory.schema._check_compared_recipe; wave 18).
    The default table (compare not given) keeps its rows."""
    if "compare" not in getattr(inputs, "given", ()):
        return
    for name in inputs.compare:
        part = accelerator(name)
        if part is None or not runs_off_cuda(part):
            continue
        if found := cannot_run(inputs, part, COMPARED_ROW_OPTIONS):
            field, shown, what, _ = found
            raise InputError("compare", name, f"{part.name} does not run --{field.replace('_', '-')} {shown} "
                             f"({what.removeprefix('is ')}): leave the part out of --compare, or the option out")
