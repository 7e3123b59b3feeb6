"""FP8 checkpoints on NVIDIA GPUs without FP8 tensor cores (Ampere: sm80 / sm86 / sm87): the engines' weight-only
FP8 Marlin path (W8A16). The weights stay 1 byte each in HBM and are dequantised to the activation dtype (fp16 /
bf16) inside the Marlin GEMM; there is no FP8 compute and the activations are not quantised.

Read in the release wheels (pip download vllm==X / sglang==X --no-deps, unzip; 2026-12-07) and vLLM's csrc:

* vLLM, dense linears of a ``quant_method: fp8`` checkpoint or ``--quantization fp8``, per-tensor / per-channel
  scales: 0.5.1. Fp8Config.get_min_capability returns 89 at quantization/fp8.py@v0.5.0 and @v0.5.0.post1 L64-65
  (vLLM refuses the GPU); @v0.5.1 it returns 80 (L61-62) and Fp8LinearMethod sets ``use_marlin = capability < 89``
  (L114-118, 'For GPUs that lack FP8 hardware support, we can leverage the Marlin kernel for fast weight-only FP8
  quantization') and calls ops.fp8_marlin_gemm (L320-338) (vllm PR 5975, 2024-06-28, 'Expand FP8 support to Ampere
  GPUs using FP8 Marlin': 'based on existing 8-bit integer support in GPTQ Marlin kernel'). That kernel,
  csrc/quantization/fp8/fp8_marlin.cu, is the gptq_marlin kernel adapted to 8-bit fp8 weights: it includes
  ../gptq_marlin/gptq_marlin.cuh, runs fp16 / bf16 m16n8k16 mma after dequant_8bit, and cuts M into 64-row
  problems run in parallel ('For larger GEMMs we run multiple batchsize 64 versions in parallel'). From 0.9.0
  apply_fp8_marlin_linear calls ops.gptq_marlin_gemm itself with b_q_type=scalar_types.float8_e4m3fn
  (utils/marlin_utils_fp8.py@v0.9.0 L36-76; is_fp8_marlin_supported: has_device_capability(80), L18-19). So the
  int4 Marlin kernel model (marlin.py) is reused for the large-M ceiling.
* vLLM, block-quantised FP8 (weight_block_size, DeepSeek-V3) and FP8 MoE experts: 0.9.0. Through 0.8.5.post1
  Fp8LinearMethod sets ``use_marlin = False`` when block_quant ('Marlin doesn't support block-wise fp8',
  fp8.py@v0.8.5.post1 L182-185), leaving the Triton w8a8 block matmul, and Fp8MoEMethod has no Marlin branch at all
  (fused_experts with use_fp8_w8a8): both need FP8 tensor cores (Triton's fp8e4nv dot: vllm#12581, DeepSeek-R1 on
  A100-class parts, 'fp8e4nv data type is not supported on CUDA arch < 89'; vllm#15336, 8 x A800, March 2025).
  fp8.py@v0.9.0 drops the block exclusion (L179-188) and gives Fp8MoEMethod ``use_marlin`` (L443-447) running
  torch.ops.vllm.fused_marlin_moe with quant_type_id=float8_e4m3fn (L831-845). Block scales become Marlin group
  scales: prepare_fp8_layer_for_marlin repeats them to (size_k / block_k, size_n) in the layer's 16-bit dtype,
  group_size = weight_block_size[1] (marlin_utils_fp8.py@v0.9.0 L123-160): 16 bits per block_k weights in HBM
  (8.125 bits a weight at 128).
* vLLM, compressed-tensors FP8 (W8A8 float, tensor / channel strategy): 0.5.4, where CompressedTensorsW8A16Fp8 is
  first in the wheel (absent from 0.5.3's) and is chosen when the W8A8 FP8 scheme's capability check fails
  (compressed_tensors.py@v0.5.4 L235-248); its MoE (CompressedTensorsW8A8Fp8MoEMethod.use_marlin) from 0.9.0
  (compressed_tensors_moe.py@v0.9.0 L121-127; absent @v0.8.5.post1).
* vLLM, ModelOpt FP8: ModelOptFp8Config.get_min_capability returns 89 (modelopt.py@v0.9.0 L60-61): refused.
* SGLang, dense FP8 linears (per-tensor and block): 0.5.1. Fp8LinearMethod.use_marlin is
  ``force_marlin or can_auto_enable_marlin_fp8()`` (fp8.py@0.5.1 L213-217), the latter ``80 <= sm < 89``
  (fp8_utils.py@0.5.1 L809-815), and block weights are converted (fp8.py@0.5.1 L434-438). Through 0.5.0rc2 Marlin
  runs only under SGLANG_FORCE_FP8_MARLIN and never for block weights (fp8.py@0.5.0rc0 L211-221). Its Fp8MoEMethod
  has no Marlin branch through 0.5.6 (fp8.py@0.5.6 L528 on: Triton / DeepGEMM runners only; sglang#12887,
  2025-11-08, quotes the fp8e4nv error on Ampere; sglang PR 9754, MoE Marlin FP8 for sm8x, closed unmerged): refused.
* TensorRT-LLM: its FP8 GEMMs need sm89+ (not read here): refused, naming the releases above.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.releases import EngineRelease, Version, version_text
from gpuplan.core.serving.weights import WeightFormat

VLLM_DENSE_SINCE = (0, 5, 1)
"""vLLM's first release with the FP8 Marlin path for dense per-tensor / per-channel FP8 (fp8.py@v0.5.1 L114-118;
get_min_capability 89 through 0.5.0.post1)."""
VLLM_CT_DENSE_SINCE = (0, 5, 4)
"""vLLM's first release with compressed-tensors' W8A16 FP8 scheme (compressed_tensors_w8a16_fp8.py, not in 0.5.3)."""
VLLM_BLOCK_MOE_SINCE = (0, 9, 0)
"""vLLM's first release with Marlin for block-FP8 linears and FP8 MoE experts (fp8.py@v0.9.0 L179-188, L443-447,
L831-845; fp8.py@v0.8.5.post1 L182-185 turns Marlin off for block weights and its MoE has no Marlin branch)."""
SGLANG_DENSE_SINCE = (0, 5, 1)
"""SGLang's first build that picks FP8 Marlin on sm80-88 by itself, per-tensor and block (fp8.py@0.5.1 L213-217)."""
MARLIN_CC = ((8, 0), (8, 9))
"""Compute capabilities whose FP8 checkpoints run Marlin: at least 8.0 (is_fp8_marlin_supported, Marlin's mma.sync
needs sm80) and below 8.9 (Ada and later have FP8 tensor cores: use_marlin = not has_device_capability(89))."""
ENGINES = ("vllm", "sglang")
"""The engines with a weight-only FP8 Marlin path (first_release; TensorRT-LLM has none): their plans carry the
checkpoint's FP8 facts (jobs.inference.resolve's Plan.fp8), and marlin.runs_marlin takes Marlin's ceiling under them."""
FORMAT_NAME = "fp8-marlin"
"""gpuplan's name for an FP8 format served on this path (marlin_format; a checkpoint's ignore list may add
' (attention bf16)'): what is_marlin_format, and through it marlin.runs_marlin, recognise."""


@dataclass(frozen=True)
class Fp8Checkpoint:
    """An FP8 weight format as stored, with what decides the engines' path on a GPU without FP8 tensor cores.
    ``method``: the checkpoint's quant_method ('fp8', 'compressed-tensors', 'modelopt'; 'fp8' for --quantization
    fp8, vLLM's online FP8); ``block_k``: weight_block_size[1] (weights a block spans along the input), None for
    per-tensor / per-channel scales; ``moe``: the model has routed experts."""

    fmt: WeightFormat
    method: str = "fp8"
    block_k: int | None = None
    moe: bool = False


def needs_marlin(gpu: Accelerator) -> bool:
    """Whether an FP8 checkpoint on ``gpu`` would take the weight-only Marlin path rather than FP8 compute: an
    NVIDIA part of compute capability 8.0-8.8 (MARLIN_CC) with no FP8 tensor cores."""
    cc = gpu.compute_capability
    return (gpu.vendor == "NVIDIA" and cc is not None and MARLIN_CC[0] <= tuple(cc) < MARLIN_CC[1]
            and not gpu.has_dtype("fp8"))


def is_marlin_format(fmt_name: str) -> bool:
    """Whether ``fmt_name`` (a WeightFormat's name) is FORMAT_NAME, with or without a note after a space."""
    return fmt_name.split(" ")[0] == FORMAT_NAME


def first_release(engine: str, ckpt: Fp8Checkpoint) -> Version | None:
    """The first release of ``engine`` that serves ``ckpt`` through FP8 Marlin; None: no release modelled does."""
    if engine == "vllm":
        if ckpt.method == "modelopt":
            return None
        if ckpt.moe or ckpt.block_k is not None:
            return VLLM_BLOCK_MOE_SINCE
        return VLLM_CT_DENSE_SINCE if ckpt.method == "compressed-tensors" else VLLM_DENSE_SINCE
    if engine == "sglang" and ckpt.method == "fp8" and not ckpt.moe:
        return SGLANG_DENSE_SINCE
    return None


def runs_fp8_marlin(release: EngineRelease, gpu: Accelerator, ckpt: Fp8Checkpoint) -> bool:
    """Whether ``release`` serves ``ckpt`` on ``gpu`` through the weight-only FP8 Marlin path."""
    first = first_release(release.engine, ckpt)
    return needs_marlin(gpu) and first is not None and release.version >= first


def marlin_format(ckpt: Fp8Checkpoint, act_dtype: str) -> WeightFormat:
    """The format as the Marlin path stores and runs it: 8-bit weights, matmuls in ``act_dtype`` ('bf16' or
    'fp16', the model's), and for block weights one 16-bit scale per ``block_k`` weights (marlin_utils_fp8.py@v0.9.0
    L120-150); per-tensor / per-channel scales become one 16-bit scale an output channel (negligible)."""
    fmt = ckpt.fmt
    rest = fmt.name.partition(" ")[2]  # the name before it is 'fp8' (weights.FORMATS' one FP8 format)
    name = FORMAT_NAME + (f" {rest}" if rest else "")
    block = ckpt.block_k
    return replace(fmt, name=name, compute_dtype=act_dtype, group_size=block, scale_bits=16 if block else 0,
                   zero_bits=0, source=(f"FP8 weight-only Marlin (W8A16): 8-bit weights dequantised to {act_dtype} in "
                                        "the GEMM" + (f", + one 16-bit scale per {block} weights" if block else "")
                                        + " (core/serving/fp8_marlin.py)"))


def what_runs_it(ckpt: Fp8Checkpoint) -> str:
    """The engines and releases that serve ``ckpt`` on an sm80-sm88 GPU, for a refusal line."""
    runs = [f"--engine {engine}=={version_text(first)} or later" for engine in ENGINES
            if (first := first_release(engine, ckpt)) is not None]
    return " or ".join(runs)


def kind(ckpt: Fp8Checkpoint) -> str:
    """'block-FP8 MoE', 'FP8 MoE', 'block-FP8', 'ModelOpt FP8' or 'FP8': the path's name in a line."""
    head = "ModelOpt FP8" if ckpt.method == "modelopt" else "block-FP8" if ckpt.block_k else "FP8"
    return head + (" MoE" if ckpt.moe else "")


def refusal(release: EngineRelease, gpu: Accelerator, ckpt: Fp8Checkpoint) -> str:
    """Why ``release`` does not serve ``ckpt`` on ``gpu`` (an sm80-sm88 part), and what would: the text after the
    field in an InputError."""
    runs = what_runs_it(ckpt)
    if release.engine == "trtllm":
        why = f"{release.label} has no weight-only FP8 path (its FP8 GEMMs run on FP8 tensor cores, sm89+)"
    elif ckpt.method == "modelopt":
        why = "vLLM's ModelOptFp8Config needs compute capability 8.9 (modelopt.py@v0.9.0 L60-61)"
    else:
        why = f"{release.label} has no weight-only FP8 Marlin path for {kind(ckpt)} weights"
    cc = "".join(map(str, gpu.compute_capability or ()))
    hint = f"; {runs} serves it through FP8 Marlin (weight-only, 1-byte weights)" if runs else ""
    return f"{gpu.name} (sm{cc}) has no FP8 tensor cores and {why}{hint}"


def note(release: EngineRelease, gpu: Accelerator, ckpt: Fp8Checkpoint, act_dtype: str) -> str:
    """The answer's note for a plan served on the FP8 Marlin path."""
    kernel = "fused_marlin_moe for the experts and gptq_marlin_gemm for the linears" if ckpt.moe else \
        "the Marlin GEMM (gptq_marlin kernel family)"
    source = ("SGLang fp8.py / fp8_utils.py can_auto_enable_marlin_fp8" if release.engine == "sglang"
              else "vLLM fp8.py Fp8LinearMethod / Fp8MoEMethod use_marlin, marlin_utils_fp8.py")
    prefill = ("prefill GEMMs keep the 16-bit fraction (no large-M figure for fused_marlin_moe, as for int4 MoE)"
               if ckpt.moe else "prefill at Marlin's large-M ceiling (core/serving/marlin.py)")
    scales = (f"; the {ckpt.block_k}-wide block scales are stored as 16-bit group scales (+{16 / ckpt.block_k:.3g} "
              "bits a weight)") if ckpt.block_k else ""
    return (f"{gpu.name} has no FP8 tensor cores: {release.label} serves the {kind(ckpt)} weights weight-only through "
            f"FP8 Marlin (W8A16: 1-byte weights in HBM, dequantised to {act_dtype} inside {kernel}; no FP8 compute, "
            f"activations unquantised){scales}; {prefill}, decode reads the 1-byte weights; source: {source} "
            "(core/serving/fp8_marlin.py)")
