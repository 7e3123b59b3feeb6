"""What a training ask on a TPU (catalog vendor Google: tpu-v4, tpu-v5e, tpu-v5p, tpu-v6e; core.hardware.
Accelerator.runs_xla) means, in one place for every door (plan, train, budget, memory through their schemas: CLI
flags, plan files, the web API, Python).

- The framework not stated is ``generic`` where --gpu is a TPU (``megatron`` elsewhere, core.frameworks.
  DEFAULT_FRAMEWORK): every other profile models a CUDA / ROCm run, and a stated one is refused there
  (schema.device_rules). PaLM's code was JAX and T5X on Pathways (arXiv:2204.02311 Sec. 4, Training
  Infrastructure): no profile models JAX / XLA, and generic, gpuplan's framework-neutral model, is the one that
  names no CUDA code. A TPU only compared (memory --compare) leaves the --gpu part's default as it is: every row
  of memory's verdict table is modelled under the --gpu part's framework, and the answer says so where a row's own
  default differs (compared_note; review w16 R4 M1).
- Options that name a CUDA-only mechanism are refused on a TPU with one line naming the field (check_tpu_options;
  the one table of them, shared with Gaudi and Ascend, is schema.cuda_only.CUDA_ONLY_OPTIONS):
  the PyTorch CUDA caching allocator's segments (--allocator: PYTORCH_CUDA_ALLOC_CONF), CUDA graphs
  (--cuda-graph-scope, --full-iteration-graph), DeepEP / HybridEP (--ep-dispatcher flex, --flex-backend: NVSHMEM /
  CUDA kernels), FlashAttention 1's CUDA package (--attention-kernel flash1), and `memory`'s CUDA context and NCCL
  buffer sizes (--cuda-context-gib, --comm-buffer-gib). An option of a CUDA framework that generic does not take
  (OTHER_FRAMEWORK_OPTIONS) is refused there saying that framework does not run on a TPU, not "give --framework
  megatron", which the TPU refuses in turn (review w16 R4 M2). --tp-comm-overlap answers: XLA overlaps a TP
  collective with its matmul on a TPU too (collective matmul, TP_OVERLAP_ON_TPU; review w16 R4 M3).
- The device memory beyond the tensors: XLA on a TPU allocates the program's buffers statically at compile time and
  keeps "System overhead: reserved space for the XLA runtime" (openxla.org/xla/errors/error_1000, whose size the
  page does not state; it lists the compiled binary, constants and compiler internals as HBM users too, unsized);
  there is no CUDA context, no NCCL communicator and no PyTorch caching allocator. gpuplan models none of these on a
  TPU (core.memory.device_memory.Overheads.on_device): the figure is the tensors, the unsized runtime parts are
  assumed to fit inside --margin, and the report lines say so (XLA_RUNTIME_WHY). The tensors are the PyTorch /
  Megatron activation model (--implementation megatron, Korthikanti et al. 2022): XLA's buffer assignment (liveness
  reuse) and its own rematerialisation may hold less or more than that model.
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpuplan.errors import InputError
from gpuplan.schema.cuda_only import cannot_run, names_it, refusal
from gpuplan.schema.device_rules import FRAMEWORK_OFF_CUDA, accelerator

TPU_FRAMEWORK = FRAMEWORK_OFF_CUDA
"""The framework a training ask on a TPU is modelled with when none is stated (module docstring)."""

OTHER_FRAMEWORK_OPTIONS = (
    # (field, the values the framework alone takes (None: any value given), the option, its framework, the neighbour
    # that answers on a TPU). Each is refused under generic on every part (schema.training_fields.
    # FRAMEWORK_ONLY_OPTIONS, _framework_rules' --compile, schema.layout_rules._check_float8_all_gather,
    # schema.tp_comm_dtype): on a TPU that framework cannot be given, so the refusal says what to do there instead.
    ("recompute_layers", None, "Megatron-Core's block recompute of N layers a stage, --recompute-num-layers",
     "megatron", "leave it out, or give --recompute full (every layer recomputed)"),
    ("recompute_modules", None, "Megatron-Core's --recompute-modules", "megatron",
     "leave it out, or give --recompute selective or full"),
    ("compile", (True,), "torchtitan's torch.compile per block", "torchtitan",
     "leave it out (XLA compiles the whole step on a TPU)"),
    ("fsdp_float8_all_gather", (True,), "torchtitan's FSDP2 float8 all-gather", "torchtitan", "leave it out"),
    ("tp_comm_dtype", ("fp32",), "GPT-NeoX's fp32_allreduce", "deepspeed --implementation megatron",
     "leave it out (the TP collectives run in the activations' dtype)"),
)
"""Options check_tpu_options refuses on a TPU as options of a framework that does not run there (review w16 R4 M2)."""

TP_OVERLAP_ON_TPU = "XLA collective matmul (windowed einsum)"
"""What --tp-comm-overlap is on a TPU: XLA decomposes a TP all-gather / reduce-scatter into steps overlapped with
the dependent matmul (Wang et al., ASPLOS 2023, 'Overlap Communication with Dependent Computation via
Decomposition in Large Deep Learning Models', on TPU v4; MaxText benchmarks/xla_flags_library.py@05d3525 'CM =
Collective Matmul', xla_tpu_enable_windowed_einsum_for_all_gather / _reduce_scatter). Timed as the flag's overlap
under generic (review w16 R4 M3)."""


def runtime_words(fixed_bytes) -> tuple[str, str, str]:
    """(runtime label, its why, total label) of a TPU's memory lines: XLA_RUNTIME's 'not modelled', or where a
    calibration's memory_overhead is counted (``fixed_bytes`` > 0: Overheads.fixed_bytes under XLA counts that
    alone, clamped at 0) XLA_MEASURED's."""
    if float(fixed_bytes) > 0.0:
        return XLA_MEASURED, XLA_MEASURED_WHY, XLA_TOTAL_MEASURED
    return XLA_RUNTIME, XLA_RUNTIME_WHY, XLA_TOTAL


def is_tpu(gpu) -> bool:
    """Whether ``gpu`` (core.hardware.Accelerator, or None) is a TPU."""
    return gpu is not None and gpu.runs_xla


def device_noun(gpu) -> str:
    """What an answer calls one device of ``gpu`` (core.hardware.Accelerator): 'chip' on a TPU (Google's own word:
    'TPU v5p chips', cloud.google.com/tpu/docs/v5p; the catalog's part kind, Accelerator.runs_xla), 'GPU' on every
    other part."""
    return "chip" if is_tpu(gpu) else "GPU"


GPU_WORD = re.compile(r"\bGPU(?=s?\b)")
"""'GPU' as a word, alone or as 'GPUs', 'GPU-hours', 'GPU-days', 'per GPU' (not inside another word): what
in_device_words rewords lines by and report.device_words the titles, columns and notes at render time."""


def in_device_words(report, gpu):
    """``report`` (report.model.Report) with its result and input lines' labels and display texts in ``gpu``'s
    device_noun: on a TPU 'GPUs' / 'GPU-hours' / 'GPU-days' / 'per GPU' read 'chips' / 'chip-hours' / 'chip-days' /
    'per chip'. Keys, values, units, formulas, section and table titles are unchanged (the JSON's keys, gpu_hours
    among them, and the tables' columns, which are its record keys; section titles are looked up by the budget):
    the report's device_noun carries the word to the renderers, which apply it to those at render time
    (report.device_words, report.i18n.translate_report, the web page's app.js).
    The one place train, budget, plan and memory word their device; any other part: ``report`` as it is."""
    noun = device_noun(gpu)
    if noun == "GPU":
        return report

    def reword(line):
        shown = line.text or (line.display if GPU_WORD.search(line.unit) else "")
        return replace(line, label=GPU_WORD.sub(noun, line.label), text=GPU_WORD.sub(noun, shown))

    return replace(report, device_noun=noun, inputs=tuple(reword(line) for line in report.inputs),
                   sections=tuple(replace(s, lines=tuple(reword(line) for line in s.lines)) for s in report.sections))


def follow_device(inputs) -> None:
    """A training ask (a job schema with ``framework``) whose --gpu is a TPU: the framework left to its default is
    ``generic`` (set once, before any check reads it; the field stays unstated, so the report marks it as the
    default), and check_tpu_options. A TPU only compared (memory --compare) changes neither (compared_note).
    Run by ModelFields.follow_model, JobInputs' first after-validator."""
    if "framework" not in type(inputs).model_fields or not is_tpu(gpu := accelerator(getattr(inputs, "gpu", None))):
        return
    if "framework" not in inputs.model_fields_set:
        inputs.__dict__["framework"] = TPU_FRAMEWORK
    check_tpu_options(inputs, gpu)


def framework_shown(framework: str, given: bool, gpu) -> str:
    """The framework assumption's value: on a TPU with none stated, why it is generic."""
    if given or not is_tpu(gpu) or framework != TPU_FRAMEWORK:
        return framework
    return f"{framework} (TPU; megatron is the default on CUDA / ROCm parts)"


def compared_note(framework: str, given: bool, gpu, compared) -> tuple[str, ...]:
    """memory's note where a verdict row's own default framework differs from the one every row is modelled under
    (the --gpu part's: ``framework``, stated or not, ``given``): a TPU compared beside a CUDA / ROCm part under its
    default, or CUDA / ROCm parts beside a TPU (``compared``: the table's other parts, Accelerators)."""
    if given:
        return ()
    differ = [part.id for part in compared if is_tpu(part) != is_tpu(gpu)]
    if not differ:
        return ()
    own = "megatron" if is_tpu(gpu) else "generic"
    whose, ask = (f"{differ[0]}'s own default is", f"--gpu {differ[0]}") if len(differ) == 1 else \
        (f"{', '.join(differ)}: their own default is", "one of them as --gpu")
    return (f"verdict table: every row is modelled under --framework {framework}, the --gpu part's default; {whose} "
            f"{own} (ask with {ask} for that answer)",)


def check_tpu_options(inputs, gpu) -> None:
    """schema.cuda_only.CUDA_ONLY_OPTIONS and OTHER_FRAMEWORK_OPTIONS given where --gpu is the TPU ``gpu``: one line
    naming the field and what is valid there."""
    given = inputs.model_fields_set
    if found := cannot_run(inputs, gpu):
        name, shown, what, valid = found
        raise InputError(name, shown, refusal(what, gpu, valid))
    for name, values, what, framework, valid in OTHER_FRAMEWORK_OPTIONS:
        if name in given and names_it(shown := getattr(inputs, name), values):
            shown = ",".join(shown) if isinstance(shown, tuple) else shown
            raise InputError(name, shown, f"is {what} (--framework {framework}), which does not run on a {gpu.name} "
                             f"(only --framework {TPU_FRAMEWORK} is modelled on a TPU): {valid}")


TP_CHUNKED = ", chunked with GEMMs"
"""core.comm.step_comm's TP row label for --tp-comm-overlap, which collective_shown names as XLA's on a TPU."""


def collective_shown(collective: str) -> str:
    """plan --explain's collective label on a TPU: the TP overlap as XLA's collective matmul (TP_OVERLAP_ON_TPU)."""
    return collective.replace(TP_CHUNKED, f", {TP_OVERLAP_ON_TPU}")


XLA_ALLOCATED = "allocated peak (tensors)"
XLA_RESERVED = "reserved peak (no caching allocator)"
XLA_RESERVED_WHY = "= allocated: XLA allocates a TPU's buffers at compile time (no PyTorch caching allocator)"
XLA_RUNTIME = "XLA runtime (not modelled)"
XLA_RUNTIME_WHY = ("no CUDA context or NCCL buffers on a TPU; the XLA runtime's reserve, the compiled binary, constants "
                   "and compiler internals (openxla.org/xla/errors/error_1000) are unsized: assumed to fit inside the "
                   "margin; XLA's buffer assignment and rematerialisation may differ from the tensors modelled")
XLA_TOTAL = "device memory needed (tensors; XLA runtime not modelled)"
"""The memory report lines' words on a TPU (train, plan --explain, memory), where the CUDA parts' read 'allocated
peak (PyTorch tensors)', 'reserved peak (caching allocator)', 'CUDA context + NCCL buffers' and 'reserved + CUDA
context + NCCL'."""

XLA_MEASURED = "measured above the tensors (calibration)"
XLA_MEASURED_WHY = ("the calibration's memory_overhead, measured under PyTorch on the part it names (torch's allocated, "
                    "reserved or tracked peak above the modelled tensors: calibrate.fit._fit_memory), carried to the "
                    "TPU as is; XLA's own reserve still not modelled")
XLA_TOTAL_MEASURED = "device memory needed (tensors + calibrated overhead; XLA runtime not modelled)"
"""A TPU's memory lines where a calibration's memory_overhead is counted (Overheads.measured, calibrate.apply): the
bytes come from a PyTorch trial on CUDA or the CPU (calibrate.measurement: allocated on CUDA, tracked on the CPU;
calibrate.training_logs: torchtitan's reserved), not from XLA, so the words do not call them XLA's reserve."""


def measured_shown(size: str, measured: float) -> str:
    """The runtime assumption's value on a TPU with a calibration: ``size`` (its memory_overhead formatted) measured;
    a negative one (calibrate.fit allows it: the trial's peak under the modelled tensors) is counted as 0 there
    (Overheads.fixed_bytes), so the tensors stay a floor of the memory needed."""
    if measured < 0:
        return f"{size} measured (calibration); counted as 0 on a TPU (not below the tensors)"
    return f"{size} measured (calibration)"
