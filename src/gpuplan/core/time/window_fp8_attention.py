"""FP8 / MXFP8 attention on sliding-window layers at head dim 64, as cuDNN's own benchmark times it.

**What runs.** Megatron-Bridge's GPT-OSS 120B MXFP8 presets of 26.06, 26.06.01 and 26.08 set
``fp8_dot_product_attention=True`` (scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py@v0.5.0
L209 / L219, @v0.5.1 the same; perf_recipes/gpt_oss/common.py@v0.6.0 L44). Transformer Engine then runs every
attention layer, the sliding ones (window (127, 0), Megatron's ``window_attn_skip_freq`` 2) and their learnable
sinks included, in cuDNN's fused attention with FP8 operands: TE 2.16 keeps FusedAttention for sinks and sliding
windows in FP8 on sm >= 100 with cuDNN >= 9.21 (transformer_engine/pytorch/attention/dot_product_attention/
utils.py@v2.16 L931-950 sinks, L1148-1160 windows), and under the MXFP8 recipe the attention is cuDNN's MXFP8
SDPA (the same file, L593-606: ``fp8_recipe.mxfp8()``, cuDNN >= 9.21, not thd). The 26.06 container ships
cuDNN 9.21.1 (Megatron-Bridge docs/releases/software-versions.md@v0.6.0).

**What it costs.** cuDNN's frontend benchmarks exactly this shape (benchmark/sdpa_benchmark_training/configs/
gpt_oss.py @3929da2: head dim 64, window 128, causal top-left, batch 2; no sink token) in BF16, FP8 and MXFP8 on
GB200 and GB300 with one cuDNN build (9.22.0, results/gpt_oss/gb200/gpt_oss_20260424_100011.csv and
gb300/gpt_oss_20260424_100022.csv, non-deterministic backward rows: CSV lines 2-45). The FP8 and MXFP8
forwards run at BF16's speed or a little faster, but their backwards grow with the square of the sequence
(GB200 MXFP8 2.080 / 7.427 / 27.940 ms at 4,096 / 8,192 / 16,384: 3.57x, 3.76x per doubling) where BF16's grows
linearly (0.465 / 0.911 / 1.818 ms): the FP8 backward does not skip the key tiles outside the window. At
GPT-OSS's 4,096 the MXFP8 backward takes 4.47x (GB200) / 4.23x (GB300) BF16's time, FP8 3.72x / 3.35x.

**The model.** The step model's BF16 flash time is linear in the executed FLOPs (core.time.attention_core), so the
sliding layers' share of it is their share of the forward FLOPs; that share takes the measured FP8 (or MXFP8) /
BF16 time ratio at the run's sequence length (piecewise linear in log2 s between the benchmark's lengths, clamped
at 2,048 and 32,768). Full-causal layers at head dim 64 keep core.time.low_precision's ratio (none measured: BF16's
time). Only head dim 64 with a 128-token window on a GB200 / GB300 die (B200 / B300: low_precision's same-die map)
is measured; every other shape, part or dtype is unchanged. Nothing is fitted to a throughput row.
"""

from __future__ import annotations

import math

from gpuplan.core.time.low_precision import FP8_ATTENTION_SAME_DIE, fp8_attention_seconds, fp8_attention_time_ratio

WINDOW_FP8_HEAD_DIM = 64
WINDOW_FP8_WINDOW = 128
"""The benchmarked shape (configs/gpt_oss.py @3929da2: head_dim 64, sliding_window_size 128)."""

WINDOW_FP8_TIMES_MS = {
    # (part, attention dtype): {s: (BF16 forward, BF16 backward, low-precision forward, low-precision backward)}, ms,
    # cuDNN 9.22.0, batch 2 x 128 heads, non-deterministic backward (CSV lines: bf16 fwd / bwd, fp8 or mxfp8 fwd / bwd)
    ("gb200", "fp8"): {2048: (0.109, 0.237, 0.101, 0.536), 4096: (0.210, 0.465, 0.195, 1.731),  # L38-42, L29-33
                       8192: (0.414, 0.911, 0.385, 6.176), 16384: (0.822, 1.818, 0.766, 23.231),  # L20-24, L11-15
                       32768: (2.634, 3.692, 1.529, 90.348)},  # L2-6
    ("gb200", "mxfp8"): {2048: (0.109, 0.237, 0.109, 0.642), 4096: (0.210, 0.465, 0.210, 2.080),  # L44-45, L35-36
                         8192: (0.414, 0.911, 0.417, 7.427), 16384: (0.822, 1.818, 0.826, 27.940),  # L26-27, L17-18
                         32768: (2.634, 3.692, 1.637, 108.370)},  # L8-9
    ("gb300", "fp8"): {2048: (0.104, 0.227, 0.086, 0.467), 4096: (0.202, 0.442, 0.167, 1.480),
                       8192: (0.397, 0.862, 0.327, 5.189), 16384: (0.790, 1.712, 0.650, 19.354),
                       32768: (2.530, 3.450, 1.296, 74.763)},
    ("gb300", "mxfp8"): {2048: (0.104, 0.227, 0.092, 0.581), 4096: (0.202, 0.442, 0.175, 1.871),
                         8192: (0.397, 0.862, 0.342, 6.648), 16384: (0.790, 1.712, 0.676, 24.996),
                         32768: (2.530, 3.450, 1.345, 96.913)},
}


def attention_dtype(fp8_recipe: str | None) -> str:
    """The dtype cuDNN's FP8 attention runs in under a linear recipe: 'mxfp8' under TE's MXFP8 recipe
    (utils.py@v2.16 L593-606), else per-tensor 'fp8'."""
    return "mxfp8" if fp8_recipe == "mxfp8" else "fp8"


def window_time_ratio(gpu_id: str, fp8_recipe: str | None, seq_len: float) -> tuple[float, float]:
    """(forward, backward) time of a sliding-window layer's attention core in FP8 attention over BF16's on
    ``gpu_id`` at ``seq_len`` (the benchmarked head dim 64 / window 128 shape), interpolated in log2 s between
    the measured lengths and clamped at the ends; (1, 1) for a part the benchmark did not run."""
    part = FP8_ATTENTION_SAME_DIE.get(gpu_id, gpu_id)  # HGX B200 / B300: their Grace part's die
    table = WINDOW_FP8_TIMES_MS.get((part, attention_dtype(fp8_recipe)))
    if table is None:
        return 1.0, 1.0
    points = sorted(table)
    s = min(max(float(seq_len), points[0]), points[-1])
    hi = next(p for p in points if p >= s)
    lo = points[max(0, points.index(hi) - 1)] if hi > s else hi
    w = 0.0 if hi == lo else (math.log2(s) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))

    def ratios(p):
        bf16_fwd, bf16_bwd, low_fwd, low_bwd = table[p]
        return low_fwd / bf16_fwd, low_bwd / bf16_bwd
    (f0, b0), (f1, b1) = ratios(lo), ratios(hi)
    return f0 + w * (f1 - f0), b0 + w * (b1 - b0)


def runs_measured_window(spec) -> bool:
    """True where the model's sliding layers have the benchmarked shape: head dim 64, window 128."""
    a = spec.attention
    return (bool(spec.num_sliding_layers) and spec.sliding_window == WINDOW_FP8_WINDOW
            and a.qk_head_dim == WINDOW_FP8_HEAD_DIM and a.value_head_dim == WINDOW_FP8_HEAD_DIM)


def window_fp8_seconds(fp8_attention: bool, gpu_id: str, fp8_recipe: str | None, spec, seq_len,
                       bf16_seconds: tuple, sliding_share) -> tuple:
    """The attention core's (forward, backward) seconds per token as run, from its BF16 ``bf16_seconds``: under
    FP8 attention the full layers at core.time.low_precision.fp8_attention_time_ratio and, where the model's
    sliding layers have the measured shape, their share ``sliding_share`` (their fraction of the flash forward
    FLOPs, which the BF16 time is linear in) at window_time_ratio; BF16's seconds without FP8 attention."""
    if not fp8_attention or not runs_measured_window(spec):
        return fp8_attention_seconds(fp8_attention, gpu_id, spec, bf16_seconds)
    full = fp8_attention_time_ratio(gpu_id, spec.attention.qk_head_dim)
    window = window_time_ratio(gpu_id, fp8_recipe, seq_len)
    return tuple(t * ((1.0 - sliding_share) * r + sliding_share * w)
                 for t, r, w in zip(bf16_seconds, full, window))
