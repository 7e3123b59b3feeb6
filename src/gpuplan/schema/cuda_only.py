"""The training options that name a CUDA-only mechanism, and the parts that refuse each: one table (CUDA_ONLY_OPTIONS)
and one walk of it (cannot_run) for every part that runs neither CUDA nor ROCm. schema.tpu_rules refuses them where
--gpu is a TPU, schema.vendor_rules where it is an Intel Gaudi or Huawei Ascend part, and vendor_rules'
check_compared_parts where such a part is a `memory --compare` row; each at every door (train, budget, plan, memory:
CLI flags, plan files, the web API, Python).

Each option carries what is valid on a TPU (XLA: every option here is refused there, module docstring of tpu_rules)
and on Gaudi / Ascend (PyTorch through Intel's HPU bridge or torch_npu; None where their code has that path):
- --cuda-graph-scope / --full-iteration-graph: Megatron-Core captures through torch.cuda.CUDAGraph (its CudaGraphManager
  and TE's make_graphed_callables); HPU graphs and torch_npu's NPUGraph are other APIs, not this option's code.
- --ep-dispatcher flex / --flex-backend: DeepEP and HybridEP are CUDA / NVSHMEM kernels.
- --loss te-ce and --offload-layers: Transformer Engine (its Triton cross-entropy; its CUDA-stream offload context),
  which has CUDA and ROCm builds only.
- Not --finetune qlora: bitsandbytes 0.50.2 runs on Gaudi (its HPU backend) and on Ascend (``"npu"`` among
  supported_torch_devices, bitsandbytes/__init__.py L31, with the device-agnostic 'default' 4-bit quantise, dequantise
  and GEMM kernels, backends/default/ops.py L233-345; review s18 M3): answered, as on Gaudi.
- Not --allocator (torch_npu reads expandable_segments from PYTORCH_NPU_ALLOC_CONF, an allocator of the same design;
  Gaudi's is not modelled apart), --cuda-context-gib / --comm-buffer-gib (each part has a runtime context and a
  collective library's buffers, HCCL on both: sizes of the same overheads), --attention-kernel flash1 (refused there
  by its own rule where the model is read: schema.training_fields' fa1_refusal).
AMD parts run ROCm, where HIP graphs, Transformer Engine's ROCm build and PyTorch's allocator are the same code:
nothing refused there beyond what is already (FlashAttention 1, llm.c).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.schema.te_kernels import STATED_DEFAULTS

OFF_CUDA_VENDORS = {"Intel": "Intel's HPU bridge", "Huawei": "torch_npu"}
"""Catalog vendors whose parts run PyTorch without CUDA or ROCm, and through what."""


@dataclass(frozen=True)
class CudaOnlyOption:
    """A training option that names a CUDA-only mechanism. ``values``: the values that name it (None: any value
    given); ``what``: what it is, in a refusal line; ``on_tpu`` / ``on_hpu_npu``: what is valid on a TPU / on an
    Intel Gaudi or Huawei Ascend part (None: answered there)."""

    field: str
    values: tuple | None
    what: str
    on_tpu: str
    on_hpu_npu: str | None = None


CUDA_ONLY_OPTIONS = (
    CudaOnlyOption("allocator", None, "sets PyTorch's CUDA caching allocator (PYTORCH_CUDA_ALLOC_CONF "
                   "expandable_segments)", "leave it out (XLA allocates a TPU's buffers itself)"),
    # 'none', the default, is answered as unstated (the lead's rule, review w16 R5 S3; generic answers it on every
    # part since wave 18, schema.te_kernels.STATED_DEFAULTS); another value names graphs a TPU does not capture
    CudaOnlyOption("cuda_graph_scope", None, "chooses the layers CUDA graphs capture", "leave it out (a TPU captures "
                   "no CUDA graphs: 'none' is how every TPU step runs, and changes nothing)",
                   "leave it out (none: eager steps)"),
    CudaOnlyOption("full_iteration_graph", (True,), "captures the step in one CUDA graph", "leave it out",
                   "leave it out"),
    CudaOnlyOption("ep_dispatcher", ("flex",), "is DeepEP / HybridEP (CUDA and NVSHMEM kernels)", "give alltoall",
                   "give alltoall"),
    CudaOnlyOption("flex_backend", None, "is DeepEP / HybridEP's backend (CUDA and NVSHMEM kernels)",
                   "leave it out (the MoE all-to-all on a TPU is XLA's)",
                   "leave it out (the MoE all-to-all runs through the collective library)"),
    CudaOnlyOption("attention_kernel", ("flash1",), "is the flash-attn < 2 CUDA package", "give flash or eager"),
    CudaOnlyOption("cuda_context_gib", None, "sizes a CUDA context", "leave it out (no CUDA context on a TPU)"),
    CudaOnlyOption("comm_buffer_gib", None, "sizes NCCL's buffers",
                   "leave it out (XLA runs a TPU's collectives, not NCCL)"),
    # wave 19: each answered on a TPU (generic takes Megatron-Core / TE options: core.frameworks.
    # MEGATRON_CORE_FRAMEWORKS), te-ce and qlora moving the layout chosen
    CudaOnlyOption("loss", ("te-ce",), "is Transformer Engine's fused cross-entropy (Triton kernels: "
                   "transformer_engine/pytorch/triton/cross_entropy.py)",
                   "give fp32-ce, vocab-parallel-ce or chunked, or leave it out",
                   "give fp32-ce, vocab-parallel-ce or chunked, or leave it out"),
    CudaOnlyOption("finetune", ("qlora",), "is a 4-bit NF4 base through bitsandbytes' Linear4bit (CUDA, ROCm, XPU, "
                   "Gaudi, Apple Silicon and CPU backends: its installation guide, v0.50.2; no XLA)",
                   "give --finetune lora (a 16-bit base)"),
    CudaOnlyOption("offload_layers", None, "is Megatron-Core's CPU activation offloading through Transformer "
                   "Engine's offload context (CUDA streams)", "leave it out", "leave it out"),
)
"""The options refused on a TPU, and those with ``on_hpu_npu`` on Intel / Huawei parts, each at a value other than its
default (a stated default is answered as unstated where nothing reads it: --cuda-context-gib 0.5, --flex-backend
deepep, --cuda-graph-scope none; review of wave 18)."""


def runs_off_cuda(part) -> bool:
    """Whether ``part`` (core.hardware.Accelerator) runs neither CUDA nor ROCm: a TPU, or an OFF_CUDA_VENDORS part."""
    return part.runs_xla or part.vendor in OFF_CUDA_VENDORS


def names_it(value, values) -> bool:
    """Whether an option's ``value`` turns on what a refusal names: any value but None / False where ``values`` is
    None, else one of ``values`` (the CUDA-only table's and tpu_rules.OTHER_FRAMEWORK_OPTIONS' rule)."""
    return value not in (None, False) if values is None else value in values


def cannot_run(inputs, part, fields=None) -> tuple[str, object, str, str] | None:
    """(field, value, what it is, what is valid) of the first CUDA_ONLY_OPTIONS entry (of ``fields``, their names,
    where given) stated at a value that names its mechanism, on a ``part`` that refuses it: on a TPU every entry,
    on an Intel / Huawei part those with ``on_hpu_npu``; None where there is none."""
    for option in CUDA_ONLY_OPTIONS:
        name = option.field
        valid = option.on_tpu if part.runs_xla else option.on_hpu_npu if part.vendor in OFF_CUDA_VENDORS else None
        if valid is None or (fields is not None and name not in fields):
            continue
        if not inputs.stated_otherwise(name, STATED_DEFAULTS.get(name)):
            continue
        shown = getattr(inputs, name)
        if names_it(shown, option.values):
            return name, shown, option.what, valid
    return None


def refusal(what: str, part, valid: str) -> str:
    """The text after the field of a --gpu ``part``'s refusal of an option that is ``what``: on an Intel / Huawei
    part it says what PyTorch runs through there."""
    if part.vendor not in OFF_CUDA_VENDORS:
        return f"{what}, which a {part.name} does not run: {valid}"
    article = "an" if part.name[:1] in "AEIOU" else "a"
    return (f"{what}, which {article} {part.name} does not run (PyTorch runs there through "
            f"{OFF_CUDA_VENDORS[part.vendor]}, not CUDA or ROCm): {valid}")
