"""FP8 / MXFP8 attention on GPT-OSS's sliding-window layers (issue 37, session 20; core.time.window_fp8_attention,
docs/step.md "GPT-OSS 120B, ninth pass").

Measured figures are cuDNN's own benchmark of the GPT-OSS shape (NVIDIA/cudnn-frontend benchmark/
sdpa_benchmark_training/results/gpt_oss/{gb200,gb300}/*.csv @3929da2, cuDNN 9.22.0, head dim 64, window 128,
batch 2 x 128 heads, non-deterministic backward), ms: GB200 s 4,096 BF16 0.210 / 0.465, FP8 0.195 / 1.731,
MXFP8 0.210 / 2.080; s 8,192 BF16 0.414 / 0.911, MXFP8 0.417 / 7.427; GB300 s 4,096 BF16 0.202 / 0.442,
MXFP8 0.175 / 1.871."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.time.attention_core import layer_attention_seconds, sliding_flops_share
from gpuplan.core.time.low_precision import fp8_attention_time_ratio
from gpuplan.core.time.step import StepSettings
from gpuplan.core.time.window_fp8_attention import runs_measured_window, window_fp8_seconds, window_time_ratio
from gpuplan.jobs.validation.published_throughput import predicted_step, published_throughput_rows
from gpuplan.jobs.validation.throughput import run_spec

import gpuplan.core.time.window_fp8_attention as W

GPT_OSS = run_spec({"catalog": "gpt-oss-120b", "seq_len": 4096})


def _settings(fp8_attention: bool, recipe: str = "mxfp8") -> StepSettings:
    return StepSettings(seq_len=4096, dtype="fp8", fp8_recipe=recipe, fp8_attention=fp8_attention,
                        implementation="megatron")


def test_measured_ratios_at_the_rows_length():
    """FP8 attention / BF16 time of one sliding layer at s 4,096, read off the CSVs (tolerance 1e-3)."""
    assert window_time_ratio("gb200", "mxfp8", 4096) == pytest.approx((0.210 / 0.210, 2.080 / 0.465), abs=1e-3)
    assert window_time_ratio("gb300", "mxfp8", 4096) == pytest.approx((0.175 / 0.202, 1.871 / 0.442), abs=1e-3)
    assert window_time_ratio("gb200", "tensorwise", 4096) == pytest.approx((0.195 / 0.210, 1.731 / 0.465), abs=1e-3)
    # the HGX parts run their Grace part's die; parts the benchmark did not run take no ratio
    assert window_time_ratio("b200", "mxfp8", 4096) == window_time_ratio("gb200", "mxfp8", 4096)
    assert window_time_ratio("h100-sxm", "mxfp8", 4096) == (1.0, 1.0)


def test_ratio_between_lengths_is_log_interpolated_and_clamped():
    """At 4,096 x sqrt(2) the backward ratio is the mean of the 4,096 and 8,192 ones: (4.4731 + 8.1526) / 2."""
    mid = window_time_ratio("gb200", "mxfp8", 4096 * math.sqrt(2))[1]
    assert mid == pytest.approx((2.080 / 0.465 + 7.427 / 0.911) / 2, abs=1e-3)  # 6.3129
    assert window_time_ratio("gb200", "mxfp8", 1024) == window_time_ratio("gb200", "mxfp8", 2048)
    assert window_time_ratio("gb200", "mxfp8", 65536) == window_time_ratio("gb200", "mxfp8", 32768)


def test_sliding_share_by_hand():
    """18 of 36 layers slide; a 128-query tile reaches 2 key tiles once the window is full, so a sliding layer
    executes (1 + 2 x 31) / 32 x 128 = 252 keys a query, a full layer (4,096 + 1) / 2 = 2,048.5:
    share = 252 / (252 + 2,048.5) = 0.10954."""
    assert runs_measured_window(GPT_OSS)
    assert sliding_flops_share(GPT_OSS, 4096) == pytest.approx(252 / 2300.5, rel=1e-6)


def test_one_layer_on_gb200_by_hand():
    """GPT-OSS 120B on GB200, s 4,096. BF16 forward per token of the mean layer: 2 x 64 heads x (64 + 64) FLOPs a
    key x 1,150.25 mean executed keys = 18.846 MFLOP at 0.30 x 2.5 PFLOP/s, stretched 2x by the exponentials:
    50.26 ns; backward 2.5x: 125.65 ns. MXFP8 attention: forward x (1 + 0.10954 x 0) , backward
    x (1 + 0.10954 x 3.4731) = 1.38045: +47.80 ns a token-layer, 0.7832 ms a layer-micro-batch of 16,384 tokens
    (1.566 ms for each sliding layer), 0.141 s a step of 5 micro-batches x 36 layers (tolerance 0.5%)."""
    gpu = load_accelerator("gb200")
    bf16_fwd, bf16_bwd = layer_attention_seconds(GPT_OSS, gpu, _settings(False), 1)
    fwd, bwd = layer_attention_seconds(GPT_OSS, gpu, _settings(True), 1)
    executed = (18 * 252 + 18 * 2048.5) / 36
    hand_fwd = 2 * 64 * 128 * executed / (0.30 * 2.5e15) * 2
    assert bf16_fwd == pytest.approx(hand_fwd, rel=5e-3)
    assert bf16_bwd == pytest.approx(2.5 * hand_fwd, rel=5e-3)
    share, r_bwd = 252 / 2300.5, 2.080 / 0.465
    assert fwd == pytest.approx(bf16_fwd, rel=1e-3)
    assert bwd == pytest.approx(bf16_bwd * (1 + share * (r_bwd - 1)), rel=1e-3)
    assert (bwd - bf16_bwd) * 16384 == pytest.approx(0.7832e-3, rel=5e-3)
    assert (bwd - bf16_bwd) * 16384 * 36 * 5 == pytest.approx(0.141, rel=5e-3)


def test_the_published_row_takes_exactly_that():
    """The 26.06 GB200 MXFP8 row (fp8_dot_product_attention, full-iteration graph): its step rises by the
    0.141 s worked out above, nothing else in it moves (tolerance 2%)."""
    row = {r["id"]: r for r in published_throughput_rows()}["mbridge-26.06-gpt-oss-120b-gb200-64g-mxfp8"]
    with_term = predicted_step(row).total
    original = W.runs_measured_window
    try:
        W.runs_measured_window = lambda spec: False
        without = predicted_step(row).total
    finally:
        W.runs_measured_window = original
    assert with_term - without == pytest.approx(0.141, rel=0.02)


def test_zero_where_the_code_does_not_run_it():
    """Without FP8 attention, at another window or head dim, on Hopper: the old path's seconds exactly."""
    gpu = load_accelerator("gb200")
    bf16 = layer_attention_seconds(GPT_OSS, gpu, _settings(False), 1)
    assert window_fp8_seconds(False, "gb200", "mxfp8", GPT_OSS, 4096, bf16, 0.1) == bf16
    wide = replace(GPT_OSS, sliding_window=1024)  # not the benchmarked window
    assert not runs_measured_window(wide)
    ratio = fp8_attention_time_ratio("gb200", 64)
    assert window_fp8_seconds(True, "gb200", "mxfp8", wide, 4096, bf16, 0.1) == tuple(
        t * r for t, r in zip(bf16, ratio))
    llama = run_spec({"catalog": "llama-3.1-8b", "seq_len": 8192})  # no sliding layers, head dim 128
    assert not runs_measured_window(llama)
    got = layer_attention_seconds(llama, gpu, replace(_settings(True), seq_len=8192), 1)
    base = layer_attention_seconds(llama, gpu, replace(_settings(False), seq_len=8192), 1)
    assert got == pytest.approx(tuple(t * r for t, r in zip(base, fp8_attention_time_ratio("gb200", 128))))
    hopper = load_accelerator("h100-sxm")
    assert layer_attention_seconds(GPT_OSS, hopper, _settings(True), 1) == pytest.approx(
        layer_attention_seconds(GPT_OSS, hopper, _settings(False), 1))
