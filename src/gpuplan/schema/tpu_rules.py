"""What a training ask on a TPU (catalog vendor Google: tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e) means, in one place for
every door (plan, train, budget, memory through their schemas: CLI flags, plan files, the web API, Python).

- The framework not stated is ``generic`` on a TPU (``megatron`` elsewhere, core.frameworks.DEFAULT_FRAMEWORK):
  every other profile models a CUDA / ROCm run, and a stated one is refused there (schema.device_rules). PaLM's
  code was JAX and T5X on Pathways (arXiv:2204.02311 Sec. 4, Training Infrastructure): no profile models JAX / XLA,
  and generic, gpuplan's framework-neutral model, is the one that names no CUDA code.
- Options that name a CUDA-only mechanism are refused on a TPU with one line naming the field (check_tpu_options):
  the PyTorch CUDA caching allocator's segments (--allocator: PYTORCH_CUDA_ALLOC_CONF), CUDA graphs
  (--cuda-graph-scope, --full-iteration-graph), DeepEP / HybridEP (--ep-dispatcher flex: NVSHMEM / CUDA kernels),
  Transformer Engine's userbuffers (--tp-comm-overlap), FlashAttention 1's CUDA package (--attention-kernel flash1),
  and `memory`'s CUDA context and NCCL buffer sizes (--cuda-context-gib, --comm-buffer-gib).
- The device memory beyond the tensors: XLA on a TPU allocates the program's buffers statically at compile time and
  keeps "System overhead: reserved space for the XLA runtime" (openxla.org/xla/errors/error_1000, whose size the
  page does not state); there is no CUDA context, no NCCL communicator and no PyTorch caching allocator. gpuplan
  models none of these on a TPU (core.memory.device_memory.Overheads.on_device): the figure is the tensors, the
  runtime's reserve is inside --margin, and the report lines say so (memory_runtime_label).
"""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.schema.device_rules import FRAMEWORK_OFF_CUDA, TPU_VENDOR, accelerator

TPU_FRAMEWORK = FRAMEWORK_OFF_CUDA
"""The framework a training ask on a TPU is modelled with when none is stated (module docstring)."""

CUDA_ONLY_OPTIONS = (
    # (field, the value that names the CUDA mechanism (None: any value given), what it is, what is valid on a TPU)
    ("allocator", None, "sets PyTorch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF expandable_segments)",
     "leave it out (XLA allocates a TPU's buffers itself)"),
    ("cuda_graph_scope", None, "captures CUDA graphs", "leave it out"),
    ("full_iteration_graph", True, "captures the step in one CUDA graph", "leave it out"),
    ("ep_dispatcher", "flex", "is DeepEP / HybridEP (CUDA and NVSHMEM kernels)", "give alltoall"),
    ("tp_comm_overlap", True, "is Transformer Engine's userbuffers overlap (CUDA)", "leave it out"),
    ("attention_kernel", "flash1", "is the flash-attn < 2 CUDA package", "give flash or eager"),
    ("cuda_context_gib", None, "sizes a CUDA context", "leave it out (no CUDA context on a TPU)"),
    ("comm_buffer_gib", None, "sizes NCCL's buffers", "leave it out (XLA runs a TPU's collectives, not NCCL)"),
)
"""The options check_tpu_options refuses on a TPU."""


def is_tpu(gpu) -> bool:
    """Whether ``gpu`` (core.hardware.Accelerator, or None) is a TPU."""
    return gpu is not None and gpu.vendor == TPU_VENDOR


def tpu_named(inputs):
    """The first TPU among the parts ``inputs`` names (``gpu``, and ``compare`` where stated), or None."""
    names = (getattr(inputs, "gpu", None),)
    if "compare" in getattr(inputs, "model_fields_set", ()):
        names += tuple(getattr(inputs, "compare", None) or ())
    for name in names:
        gpu = accelerator(name) if name else None
        if is_tpu(gpu):
            return gpu
    return None


def follow_device(inputs) -> None:
    """A training ask (a job schema with ``framework``) that names a TPU: the framework left to its default is
    ``generic`` (set once, before any check reads it; the field stays unstated, so the report marks it as the
    default), and check_tpu_options. Run by ModelFields.follow_model, JobInputs' first after-validator."""
    if "framework" not in type(inputs).model_fields or (gpu := tpu_named(inputs)) is None:
        return
    if "framework" not in inputs.model_fields_set:
        inputs.__dict__["framework"] = TPU_FRAMEWORK
    if is_tpu(main := accelerator(inputs.gpu)):  # a TPU only compared (memory --compare) counts no CUDA runtime
        check_tpu_options(inputs, main)  # anyway (Overheads.on_device): the options set the --gpu's row


def framework_shown(framework: str, given: bool, gpu) -> str:
    """The framework assumption's value: on a TPU with none stated, why it is generic."""
    if given or not is_tpu(gpu) or framework != TPU_FRAMEWORK:
        return framework
    return f"{framework} (TPU; megatron is the default on CUDA / ROCm parts)"


def check_tpu_options(inputs, gpu) -> None:
    """CUDA_ONLY_OPTIONS given where the ask names the TPU ``gpu``: one line naming the field and what is valid."""
    given = inputs.model_fields_set
    for name, value, what, valid in CUDA_ONLY_OPTIONS:
        if name not in given:
            continue
        shown = getattr(inputs, name)
        if value is None or shown == value:
            raise InputError(name, shown, f"{what}, which a {gpu.name} does not run: {valid}")


XLA_ALLOCATED = "allocated peak (tensors)"
XLA_RESERVED = "reserved peak (no caching allocator)"
XLA_RESERVED_WHY = "= allocated: XLA allocates a TPU's buffers at compile time (no PyTorch caching allocator)"
XLA_RUNTIME = "XLA runtime (not modelled)"
XLA_RUNTIME_WHY = ("no CUDA context or NCCL buffers on a TPU; the XLA runtime's own reserve (openxla.org/xla/errors/"
                   "error_1000, 'System overhead') has no published size: the margin covers it")
XLA_TOTAL = "device memory needed (tensors; XLA runtime not modelled)"
"""The memory report lines' words on a TPU (train, plan --explain, memory), where the CUDA parts' read 'allocated
peak (PyTorch tensors)', 'reserved peak (caching allocator)', 'CUDA context + NCCL buffers' and 'reserved + CUDA
context + NCCL'."""
