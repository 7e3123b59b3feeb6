"""The attention kernel an eager stack's ``scaled_dot_product_attention`` runs, and its speed.

Which kernel: PyTorch's SDPA tries its backends in a priority order; since the cuDNN frontend
fix for sequence lengths not divisible by 128 (cuDNN > 9.15), torch puts cuDNN attention first on
compute capability 9.x and 10.x (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
check_prefer_cudnn_attention: ``cudnn_version > 91500 && (major == 9 || major == 10)``; the lent
H200 ran torch 2.11 + cuDNN 9.19: cuDNN). Other parts take FlashAttention-2.

How fast (Hopper, cuDNN): the forward speed of cuDNN's kernel on an H100 SXM5 by sequence length,
causal, head dim 128, BF16 (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Fig. 5,
causal panel: 315, 410, 484, 518, 529, 539 TFLOP/s at 512 ... 16k), with causal FLOPs counted
once (the masked half is not executed). Head dim 64 has no causal panel: its non-causal speeds
(335 ... 413) times the head-dim-128 causal / non-causal ratio at each length (non-causal 497 ...
595). On the H200 the probes of scripts/gpu_step_probes.py (catalog/reference/gpu_step_probes.yaml,
torch 2.11, s 4,096) measured the forward at 495 TFLOP/s (head dim 128) and 385 (64) and
forward + backward at 1.183 ms and 1.372 ms: the backward runs at 0.766 and 0.878 of the
forward's FLOP rate (2.5 x the forward's FLOPs, FlashAttention-2 Algorithm 2). The H200 uses its
own probe at 4,096 and the H100's shape over sequence length; head dims between 64 and 128 are
interpolated, above 128 take 128's (Gemma's 256: cuDNN's 256 kernels are faster, so this errs
slow).

Parts without these measurements keep core.time.step's fitted attention efficiency with a 2.5x
backward (docs/step.md), core.time.attention_core's exponential roof (exp_bound_stretch with the
part's TENSOR_FLOPS_PER_EXP) and measured tensor rate (FLASH_TENSOR_RATE, GB300; flash_passes): the same cuDNN kernels as Megatron's flash path on Blackwell, so a head
dim 64 layer takes 2x its FLOPs' time there as well). The measured Hopper rates include their own
exponentials (at 256 FLOPs per exponential head dim 64 is not stretched anyway).

What a sliding-window layer executes: torch's SDPA takes no window, so transformers passes it as a
materialised mask once the sequence reaches the window (masking_utils.py@5.25.0
_ignore_causal_mask_sdpa L286: ``local_attention_size is not None and kv_length >=
local_attention_size`` -> no skip; create_sliding_window_causal_mask L1134-1268 builds the
(b, 1, s, s) mask), and integrations/sdpa_attention.py then calls SDPA with ``is_causal = q_length >
1 and attention_mask is None and is_causal`` (L149): False. With a mask, FlashAttention-2 is refused
(sdp_utils.cpp check_for_attn_mask in can_use_flash_attention), cuDNN (first on compute capability
9.x / 10.x) takes it as an additive bias (only check_attn_mask_shape; attention.cpp
convert_boolean_attn_mask_cudnn fills -65504) and other parts run the memory-efficient kernel with
the bias. Neither knows where the mask is zero and is_causal is off, so every key tile is computed:
s keys per query (not the w the window keeps, nor the causal (s + 1) / 2, nor flash's tile band of
core.time.attention_core.flash_executed_keys, which needs the window passed to the kernel). Such a
layer is timed on cuDNN's non-causal curve (Hopper: the same paper's non-causal panel, the H200
scaled by its causal probe) or the fallback efficiency; below the window the mask is skipped and the
layer is plain causal. The boolean -> additive conversion and the k / v repeated to every head are
charged in core.time.eager_step.masked_sdpa_extra (memory-bound); the kernel's own reads of the s x s
bias are not counted.
Units: seconds per token per layer, FLOP/s.
"""

from __future__ import annotations

import math

from gpuplan.core.memory.activations import sliding_mask_applies
from gpuplan.core.time.attention_core import FLASH_BACKWARD_RATIO, flash_passes, flops_per_key, part_flash_roof

SEQ_POINTS = (512, 1024, 2048, 4096, 8192, 16384)
CUDNN_H100_CAUSAL_D128 = (315.0, 410.0, 484.0, 518.0, 529.0, 539.0)
CUDNN_H100_FULL_D128 = (497.0, 574.0, 617.0, 609.0, 600.0, 595.0)
CUDNN_H100_FULL_D64 = (335.0, 373.0, 395.0, 408.0, 412.0, 413.0)
CUDNN_H100_CAUSAL_D64 = tuple(f * c / n for f, c, n in zip(CUDNN_H100_FULL_D64, CUDNN_H100_CAUSAL_D128,
                                                            CUDNN_H100_FULL_D128, strict=True))
H200_PROBE_FORWARD = {128: 495.0, 64: 385.0}
"""TFLOP/s of the causal forward at s 4,096 on the H200 (gpu_step_probes.yaml, executed FLOPs)."""
BACKWARD_OVER_FORWARD_RATE = {128: 0.766, 64: 0.878}
"""Backward FLOP rate / forward FLOP rate, H200 probes (above)."""
H100_PEAK = 989.4e12
HOPPER = ("h100-sxm", "h100-pcie", "h100-nvl", "h800-sxm", "h200-sxm", "gh200", "h20")


def _interp_seq(table: tuple[float, ...], seq: float) -> float:
    s = min(max(float(seq), SEQ_POINTS[0]), SEQ_POINTS[-1])
    for (s0, v0), (s1, v1) in zip(zip(SEQ_POINTS, table), zip(SEQ_POINTS[1:], table[1:])):
        if s <= s1:
            w = (math.log(s) - math.log(s0)) / (math.log(s1) - math.log(s0))
            return v0 + w * (v1 - v0)
    return table[-1]


def _by_head_dim(head_dim: float, at64: float, at128: float) -> float:
    w = min(max((head_dim - 64.0) / 64.0, 0.0), 1.0)
    return at64 + w * (at128 - at64)


def cudnn_forward_fraction(gpu_id: str, seq_len: float, head_dim: float, causal: bool = True) -> float:
    """cuDNN's forward FLOP rate / the part's dense BF16 peak (Hopper), causal or over every key."""
    d64, d128 = (CUDNN_H100_CAUSAL_D64, CUDNN_H100_CAUSAL_D128) if causal else (CUDNN_H100_FULL_D64,
                                                                                   CUDNN_H100_FULL_D128)
    curve64, curve128 = _interp_seq(d64, seq_len), _interp_seq(d128, seq_len)
    if gpu_id == "h200-sxm":  # its own causal probe at 4,096, the H100's shape over the length
        curve64 *= H200_PROBE_FORWARD[64] / _interp_seq(CUDNN_H100_CAUSAL_D64, 4096)
        curve128 *= H200_PROBE_FORWARD[128] / _interp_seq(CUDNN_H100_CAUSAL_D128, 4096)
    return _by_head_dim(head_dim, curve64, curve128) * 1e12 / H100_PEAK


def has_sdpa_measurements(gpu) -> bool:
    """Whether the cuDNN tables above apply to ``gpu`` (an Accelerator: its id or kernels_like)."""
    ids = (gpu.id, getattr(gpu, "kernels_like", None) or "")
    return any(i in HOPPER for i in ids)


def sdpa_forward_flops_per_token(spec, seq_len) -> tuple[float, float]:
    """(causal, every-key) forward FLOPs per token of the mean layer under transformers' SDPA path:
    layers without a materialised mask run causal, (s + 1) / 2 keys; sliding layers once s reaches
    the window (core.memory.activations.sliding_mask_applies) compute all s keys (above)."""
    masked = spec.num_sliding_layers if sliding_mask_applies(spec, seq_len) else 0
    share = masked / spec.num_layers
    per_key = flops_per_key(spec)
    return per_key * (seq_len + 1) / 2 * (1 - share), per_key * seq_len * share


def sdpa_seconds_per_token(spec, seq_len, *, gpu, peak: float, fallback_efficiency: float):
    """(forward, backward) seconds per token of one layer's SDPA on ``gpu``."""
    causal, every_key = sdpa_forward_flops_per_token(spec, seq_len)
    if not has_sdpa_measurements(gpu):  # the flash path's efficiency, roof, backward and rate (attention_core)
        return flash_passes((causal + every_key) / (peak * fallback_efficiency), spec,
                            *part_flash_roof(gpu))
    d = spec.attention.qk_head_dim
    gpu_id = gpu.id if gpu.id in HOPPER else gpu.kernels_like
    forward = causal / (peak * cudnn_forward_fraction(gpu_id, seq_len, d))
    if every_key:
        forward = forward + every_key / (peak * cudnn_forward_fraction(gpu_id, seq_len, d, causal=False))
    backward_rate = _by_head_dim(d, BACKWARD_OVER_FORWARD_RATE[64], BACKWARD_OVER_FORWARD_RATE[128])
    return forward, FLASH_BACKWARD_RATIO * forward / backward_rate


def eager_score_linears(spec, seq_len):
    """The two batched matmuls of eager attention per layer, as (m, k, n, groups) per sequence:
    QK^T (s x d x s) and PV (s x s x d) for every head (every key computed; the mask applies after)."""
    a = spec.attention
    return ((seq_len, a.qk_head_dim, seq_len, a.num_heads), (seq_len, seq_len, a.value_head_dim, a.num_heads))
