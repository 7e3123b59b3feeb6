"""CUDA-only training options on accelerators that run neither CUDA nor ROCm: Intel Gaudi (catalog vendor Intel:
gaudi2, gaudi3; PyTorch through Intel's HPU bridge) and Huawei Ascend (vendor Huawei: ascend-910b, ascend-910c;
PyTorch through torch_npu). One line naming the field at every door (train, budget, plan, memory: CLI flags, plan
files, the web API, Python), as schema.tpu_rules refuses them on a TPU (wave 20; they were answered, exit 0).

The options and their words are tpu_rules.CUDA_ONLY_OPTIONS' (the same mechanism names); only those whose code has no
HPU or NPU path are refused here (NOT_ON_HPU_NPU):
- --cuda-graph-scope / --full-iteration-graph: Megatron-Core captures through torch.cuda.CUDAGraph (its CudaGraphManager
  and TE's make_graphed_callables); HPU graphs and torch_npu's NPUGraph are other APIs, not this option's code.
- --ep-dispatcher flex / --flex-backend: DeepEP and HybridEP are CUDA / NVSHMEM kernels.
- --loss te-ce and --offload-layers: Transformer Engine (its Triton cross-entropy; its CUDA-stream offload context),
  which has CUDA and ROCm builds only.
- Not --finetune qlora: bitsandbytes 0.50.2 runs on Gaudi (its HPU backend) and on Ascend (``"npu"`` among
  supported_torch_devices, bitsandbytes/__init__.py L31, with the device-agnostic 'default' 4-bit quantise, dequantise
  and GEMM kernels, backends/default/ops.py L233-345; review s18 M3): answered, as on Gaudi.
Left answered: --allocator (torch_npu reads expandable_segments from PYTORCH_NPU_ALLOC_CONF, an allocator of the same
design; Gaudi's is not modelled apart), --cuda-context-gib / --comm-buffer-gib (each part has a runtime context and
a collective library's buffers, HCCL on both: sizes of the same overheads). AMD parts run ROCm, where HIP graphs,
Transformer Engine's ROCm build and PyTorch's allocator are the same code: nothing refused there beyond what is
already (FlashAttention 1, llm.c).
"""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.schema.device_rules import accelerator
from gpuplan.schema.te_kernels import STATED_DEFAULTS
from gpuplan.schema.tpu_rules import CUDA_ONLY_OPTIONS

OFF_CUDA_VENDORS = {"Intel": "Intel's HPU bridge", "Huawei": "torch_npu"}
"""Catalog vendors whose parts run PyTorch without CUDA or ROCm, and through what."""

NOT_ON_HPU_NPU = {  # field: what is valid there
    "cuda_graph_scope": "leave it out (none: eager steps)",
    "full_iteration_graph": "leave it out",
    "ep_dispatcher": "give alltoall",
    "flex_backend": "leave it out (the MoE all-to-all runs through the collective library)",
    "loss": "give fp32-ce, vocab-parallel-ce or chunked, or leave it out",
    "offload_layers": "leave it out",
}
"""The CUDA_ONLY_OPTIONS refused on both vendors' parts (module docstring)."""


def _cannot_run(inputs, gpu, fields) -> tuple[str, object, str, str] | None:
    """(field, value, what it is, what is valid) of the first of ``fields`` (CUDA_ONLY_OPTIONS names) given at a
    value the part ``gpu`` does not run: on a TPU every one of them, on Intel / Huawei parts NOT_ON_HPU_NPU's."""
    for name, values, what, tpu_valid in CUDA_ONLY_OPTIONS:
        if name not in fields:
            continue
        if gpu.runs_xla:
            valid = tpu_valid
        elif name in NOT_ON_HPU_NPU and gpu.vendor in OFF_CUDA_VENDORS:
            valid = NOT_ON_HPU_NPU[name]
        else:
            continue
        shown = getattr(inputs, name, None)
        named = shown not in (None, False) if values is None else shown in values
        if inputs.stated_otherwise(name, STATED_DEFAULTS.get(name)) and named:
            return name, shown, what, valid
    return None


def check_vendor_options(inputs) -> None:
    """A training ask (a job schema with ``framework``) whose --gpu is an Intel Gaudi or Huawei Ascend part: the
    CUDA-only options NOT_ON_HPU_NPU names, each at a value other than its default, refused in one line; and
    check_compared_parts."""
    if "framework" not in type(inputs).model_fields:
        return
    check_compared_parts(inputs)
    gpu = accelerator(getattr(inputs, "gpu", None))
    if gpu is None or gpu.vendor not in OFF_CUDA_VENDORS:
        return
    found = _cannot_run(inputs, gpu, NOT_ON_HPU_NPU)
    if found:
        name, shown, what, valid = found
        article = "an" if gpu.name[:1] in "AEIOU" else "a"
        raise InputError(name, shown, f"{what}, which {article} {gpu.name} does not run (PyTorch runs there through "
                         f"{OFF_CUDA_VENDORS[gpu.vendor]}, not CUDA or ROCm): {valid}")


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
        if part is None or not (part.runs_xla or part.vendor in OFF_CUDA_VENDORS):
            continue
        found = _cannot_run(inputs, part, COMPARED_ROW_OPTIONS)
        if found:
            field, shown, what, _ = found
            raise InputError("compare", name, f"{part.name} does not run --{field.replace('_', '-')} {shown} "
                             f"({what.removeprefix('is ')}): leave the part out of --compare, or the option out")
