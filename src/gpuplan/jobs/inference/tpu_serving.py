"""What ``infer`` does with a TPU (catalog vendor Google: core.hardware.Accelerator.runs_xla): it refuses it, at
every door (CLI, plan file, web API, Python API: resolve.resolve_plan), and leaves TPU parts out of every search
over the catalog (serving.serves: the plain search's table, 'would fit on', the --rps sizing and its --disaggregate
pools; estimate.memory_classes' 'recommended GPU memory'). Read per engine (docs/inference.md, 'TPUs'):

- vLLM runs on TPUs (PR 5292, merged 2024-06: vllm/worker/tpu_worker.py, PyTorch/XLA with Pallas kernels; then
  V1's vllm/v1/worker/tpu_worker.py; the torch_xla path later gives way to the vllm-project/tpu-inference plugin,
  tenstorrent/tt-xla#3062), but not through the code gpuplan models. The V1 TPU worker (vllm/v1/worker/
  tpu_worker.py@28b912a5, TPUWorker.determine_available_memory) sizes the KV cache as bytes_limit x
  gpu_memory_utilization - 1.02 x the bytes XLA holds after a profile run at max_num_tokens ("heuristic of 2% of
  weights": XLA's peak cannot be reset), then scales it by head_size / head_size padded to TPU_HEAD_SIZE_ALIGNMENT
  (128): no activation peak, no CUDA graphs (XLA precompiles padded token buckets instead: TPUModelRunner.
  capture_model, _precompile_backbone over num_tokens_paddings), no non-torch or NCCL line, no driver reserve. The
  same file hands the worker to the tpu-inference plugin where it is installed (USE_TPU_INFERENCE:
  tpu_inference/worker/tpu_worker.py@4d6340b9 determine_available_memory, a JAX runner whose budget is
  utils.compute_hbm_budget(devices, gpu_memory_utilization) less a KV-connector reserve). gpuplan's vLLM memory
  rule is the CUDA worker's (core/serving/memory.py) and its timing the CUDA kernels' (CUDA graphs,
  FlashAttention, custom all-reduce; efficiencies fitted on NVIDIA runs): modelling the TPU worker is a second
  engine, not a flag, so a TPU is refused rather than answered with CUDA lines.
- SGLang (github:sgl-project/sglang) declined TPUs in 2024 (sgl-project/sglang#919) and its docs/platforms/tpu.md
  points to a separate JAX engine, github:sgl-project/sglang-jax (sgl-project/sglang PR 15056), with its own
  server and memory pool: not modelled.
- TensorRT-LLM builds CUDA engines: NVIDIA GPUs only (core/serving/engines.py ENGINE_VENDORS).

With no engine modelled on a TPU, the CUDA-only serving options (--cuda-graph-gib, --graph-layer-us,
--launch-layer-us, --nccl-gib, --non-torch-gib, --driver-reserved-gib, --p2p ...) need no rule of their own there:
the ask is refused before any of them is read, in one line naming --gpu and what is valid.
"""

from __future__ import annotations

from gpuplan.core.hardware import XLA_VENDOR
from gpuplan.core.serving import engines as E
from gpuplan.errors import InputError

WHY_NOT_ON_TPU = {
    "vllm": "vLLM's TPU worker (torch_xla, or the tpu-inference plugin) sizes its KV cache by another rule than "
            "its CUDA worker (bytes_limit x gpu_memory_utilization - 1.02 x the bytes in use after its profile run; "
            "no CUDA graphs, NCCL or driver reserve) and runs XLA kernels; gpuplan models the CUDA worker only",
    "sglang": "SGLang runs on CUDA / ROCm parts; its TPU port, sglang-jax, is a separate engine gpuplan does not "
              "model",
    "trtllm": "TensorRT-LLM builds CUDA engines for NVIDIA GPUs only",
}
"""Why each engine's answer is not modelled on a TPU (module docstring; the sources are there)."""

VALID_ON_TPU = ("ask infer with any catalog part but a TPU (CUDA / ROCm / Gaudi / Ascend), e.g. --gpu h100 (gpuplan "
                "plan, train and memory answer on TPUs)")
"""What the refusal names as valid (gaudi3 and ascend-910b answer: core/serving/engines.py names their plugins)."""

VALID_IN_REPORT = ("give the report's serving section a part of its own in the plan file, e.g. inference: {gpu: h100} "
                   "(the budget, memory and plan sections keep the TPU: they answer on it)")
"""What a report's refusal names as valid where its serving section took the plan file's shared gpu (commands.report:
--gpu h100 there would move the training sections off the TPU too)."""


class NotServedOnTpu(InputError):
    """check_part's refusal: ``reason`` is its text before what it names as valid (VALID_ON_TPU), so a door that
    shares the part with training (commands.report) can name its own fix."""

    reason: str = ""


def modelled_on(gpu) -> bool:
    """Whether ``infer`` answers on ``gpu`` (core.hardware.Accelerator): every part but a TPU."""
    return not gpu.runs_xla


def engine_modelled_on(engine: str, vendor: str) -> bool:
    """Whether ``infer`` answers for ``engine`` on a catalog entry of ``vendor`` (its ``vendor`` field: estimate.
    memory_classes reads raw entries): the engine runs there (core/serving/engines.py runs_on) and it is no TPU."""
    return E.runs_on(engine, vendor) and vendor != XLA_VENDOR


def check_part(gpu, engine: str, given: str | None = None) -> None:
    """One line naming --gpu (as ``given``, else the part's id) where ``gpu`` is a TPU: why ``engine`` (vllm,
    sglang, trtllm) is not modelled there and what is valid."""
    if modelled_on(gpu):
        return
    reason = f"is a {gpu.name}, where infer models no serving engine: {WHY_NOT_ON_TPU[engine]}"
    refusal = NotServedOnTpu("gpu", given or gpu.id, f"{reason}; {VALID_ON_TPU}")
    refusal.reason = reason
    raise refusal


def in_report(refusal: NotServedOnTpu) -> InputError:
    """``refusal`` as a report whose serving section shares the plan file's gpu with training tells it: the same
    reason, naming the nested ``inference: {gpu: ...}`` the report reads (VALID_IN_REPORT)."""
    return InputError(refusal.field, refusal.value, f"{refusal.reason}; {VALID_IN_REPORT}")
