"""Which attention backend vLLM runs a model on, decided from the model's properties as vLLM's
selector decides it, and what that backend allocates inside a full decode CUDA-graph capture (the
first capture of vLLM's graph-memory profile, core.serving.profile.graph_bytes). Read from the
v0.19.0 wheel (vllm/platforms/cuda.py, vllm/v1/attention/backend.py and backends/*.py) and, for
the older rule, the v0.10.1.1 wheel. Units: bytes.

vLLM 0.19 on compute capability 8.x / 9.x tries FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION
in that order (platforms/cuda.py:107-113, _get_backend_priorities) and takes the first whose
validate_configuration (v1/attention/backend.py:251-300) lists no reason. The reasons modelled:
the dtype (FLASH_ATTN and FLASHINFER take fp16 / bf16 only: flash_attn.py:64, flashinfer.py:319;
TRITON_ATTN fp32 too, triton_attn.py:259-263), multimodal prefix-LM attention (backend.py:274:
only TRITON_ATTN and FLEX_ATTENTION override supports_mm_prefix, triton_attn.py:331) and attention
sinks below compute capability 9.0 (flash_attn.py:194-195 supports_combination; FlashInfer takes
sinks only with TRT-LLM attention on SM100, flashinfer.py:399-400). In each of these cases
FLASH_ATTN and FLASHINFER fail together, so the engine runs TRITON_ATTN. Not modelled: head sizes
FlashAttention refuses (> 256 or not a multiple of 8, flash_attn.py:161-162), an fp8 KV cache
without FA3, and Blackwell's FLASHINFER-first order (cuda.py:100-106): those models are charged as
FLASH_ATTN, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.core.model.spec import ModelSpec

FLASH_ATTN, FLASH_ATTN_MLA, TRITON_ATTN = "FLASH_ATTN", "FLASH_ATTN_MLA", "TRITON_ATTN"

MM_PREFIX_LM_MODEL_TYPES = ("bagel", "gemma3", "molmo2", "paligemma")
"""Checkpoint ``model_type``s vLLM runs with bidirectional attention over each image's tokens when
the config has no ``is_mm_prefix_lm`` of its own (ModelConfig.is_mm_prefix_lm, vllm
config/model.py:1194-1208 @v0.19.0). A multimodal Gemma 3 checkpoint (Gemma3ForConditionalGeneration)
has model_type 'gemma3'; its text-only export, and the text model inside it, 'gemma3_text'."""

MM_PREFIX_SINCE = (0, 19, 0)
"""The first release read that has the rule (v0.10.1.1 has none: no mm_prefix in vllm/config/ nor
in its backend selection, platforms/cuda.py:320-330, which runs FLASH_ATTN on SM 8.0+). The
releases between were not read; the graph estimate this decides is logged from 0.19 only."""

SINK_MODEL_TYPES = ("gpt_oss",)
"""Model types whose attention layers take learned per-head sinks (vllm model_executor/models/
gpt_oss.py:102 and 143 @v0.19.0: ``sinks=self.sinks`` passed to Attention). gpuplan's ModelSpec
has no sink field, so the family stands for it."""

SINKS_NEED_SM90_SINCE = (0, 10, 0)
"""v0.10.1.1 platforms/cuda.py:322-324: 'if has_sink and not cls.is_device_capability(90)' ->
TRITON_ATTN; v0.19.0 keeps it for FLASH_ATTN below 9.0 (flash_attn.py:194-195)."""

SUB_SM90_ARCHS = ("ampere", "volta")
"""Accelerator.collective_arch values below compute capability 9.0 ('ampere' covers Ada's 8.9)."""


def is_mm_prefix_lm(config: Mapping[str, Any]) -> bool:
    """vLLM's ModelConfig.is_mm_prefix_lm on a checkpoint's own (top-level) config.json: its
    ``is_mm_prefix_lm`` if it has one, else whether its model_type is in MM_PREFIX_LM_MODEL_TYPES."""
    if config.get("is_mm_prefix_lm") is not None:
        return bool(config["is_mm_prefix_lm"])
    return config.get("model_type") in MM_PREFIX_LM_MODEL_TYPES


def vllm_attention_backend(spec: ModelSpec, act_bytes: int = 2, gpu_arch: str | None = None,
                           mm_prefix_lm: bool = False, version: tuple[int, int, int] = (0, 19, 0)) -> tuple[str, str]:
    """(backend, why) vLLM picks for ``spec`` in ``act_bytes``-byte activations on ``gpu_arch``
    (Accelerator.collective_arch; None = not known, taken as 9.0+), ``mm_prefix_lm`` being
    is_mm_prefix_lm of the checkpoint, at release ``version``."""
    if spec.attention.kv_lora_rank:
        return FLASH_ATTN_MLA, "latent attention: FLASH_ATTN_MLA first (platforms/cuda.py:91-98)"
    reasons = []
    if act_bytes == 4:
        reasons.append("fp32: FLASH_ATTN and FLASHINFER take fp16 / bf16 only")
    if mm_prefix_lm and version >= MM_PREFIX_SINCE:
        reasons.append("multimodal prefix-LM attention (is_mm_prefix_lm): only TRITON_ATTN / FLEX support it")
    if spec.model_type in SINK_MODEL_TYPES and gpu_arch in SUB_SM90_ARCHS and version >= SINKS_NEED_SM90_SINCE:
        reasons.append("attention sinks below compute capability 9.0")
    if reasons:
        return TRITON_ATTN, "; ".join(reasons)
    return FLASH_ATTN, "the first valid backend (platforms/cuda.py:107-113, cap 8.x / 9.x)"


MIN_LAUNCH_GRID_SIZE_2D = 128
"""vllm v1/attention/backends/triton_attn.py:42 @v0.19.0: the 2D kernel's minimum grid."""
NUM_PAR_SOFTMAX_SEGMENTS = 16
"""triton_attn.py:43 @v0.19.0: parallel tiled-softmax segments of the 3D (split) decode kernel."""


def triton_softmax_segment_bytes(spec: ModelSpec, tp: int, capture_sizes: list[int]) -> float:
    """TRITON_ATTN's split-decode buffers: softmax_segm_output [S, heads/tp, 16, next_pow2(d)] and
    softmax_segm_max / _expsum [S, heads/tp, 16], fp32, S = the captured size nearest
    128 // (KV heads / tp) (triton_attn.py:154-190 @v0.19.0). The metadata builder allocates them
    in its __init__, which _init_minimal_kv_cache_for_profiling runs before the graph profile's
    first sample (gpu_model_runner.py:5864 vs 5904), so they are persistent memory, not part of
    the CUDA-graph estimate: TRITON_ATTN's full first capture holds only its graph (4-8 MiB in the
    Gemma 3 IT v0.19.0 logs). Bytes per GPU."""
    a = spec.attention
    kv_heads = max(a.num_kv_heads // tp, 1)
    threshold = MIN_LAUNCH_GRID_SIZE_2D // kv_heads
    if capture_sizes:
        threshold = min(capture_sizes, key=lambda s: abs(s - threshold))
    padded = 1 << max(a.head_dim - 1, 0).bit_length()
    heads = a.num_heads / tp
    return threshold * heads * NUM_PAR_SOFTMAX_SEGMENTS * (padded + 2) * 4


FA2_ARCHS = ("ampere",)
"""collective_arch values whose FLASH_ATTN is FlashAttention 2: vllm fa_utils.get_flash_attn_version
(v1/attention/backends/fa_utils.py:74-83 @v0.19.0) takes FA3 on compute capability 9.x, FA4 on 10.x
where built, else FA2. FA2 has no ahead-of-time scheduler, so vLLM leaves max_num_splits at 0
(flash_attn.py:304-305; the full-graph bound of 32 splits is set only with FA3, 326-346) and
FA2 picks its split count itself (vllm-project/flash-attention csrc/flash_attn/flash_api.cpp,
5824e6e: set_params_splitkv 298-327, num_splits_heuristic 262-296)."""

FA2_ONE_SPLIT_BLOCKS = 0.8 * 2 * 142
"""FA2 runs a decode batch unsplit (no accumulators) once batch x KV heads x ceil(query groups /
64) blocks reach 0.8 x 2 x SMs (flash_api.cpp:264 and 316, 'num_sm * 2'); 142 SMs is the L40S,
the most of any compute capability 8.x part in the catalog (A100 108, RTX 4090 128), so the bound
holds on all of them. Splitting needs a GQA decode (query heads > KV heads: the heads-into-seqlen
swap, flash_api.cpp:594-596); MHA never splits in the varlen call."""


def flash_attn_version(gpu_arch: str | None) -> int:
    """2 on compute capability 8.x (FA2_ARCHS), else 3 (Hopper; a part not known taken as one)."""
    return 2 if gpu_arch in FA2_ARCHS else 3


def fa2_splits_first_capture(spec: ModelSpec, tokens: int, tp: int) -> bool:
    """Whether FA2 may split the full first capture of ``tokens`` decode sequences (and so allocate
    accumulators inside it): a GQA decode below FA2_ONE_SPLIT_BLOCKS blocks. Where it may, graph_bytes
    charges FA3's 32-split figure as a stand-in (the split count then depends on the SM count and
    the profile's sequence length, which gpuplan does not carry)."""
    a = spec.attention
    heads, kv_heads = max(a.num_heads // tp, 1), max(a.num_kv_heads // tp, 1)
    if heads <= kv_heads:
        return False
    groups = heads // kv_heads
    return tokens * kv_heads * -(-groups // 64) < FA2_ONE_SPLIT_BLOCKS
