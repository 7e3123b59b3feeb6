"""GPT-OSS 120B's FP8 attention against cuDNN's own timing of its shape (issue 37, session 20; docs/step.md
"GPT-OSS 120B, ninth pass"): a measured reading that leaves the step model unchanged, pinned here so that a change
to the attention model shows what it does to the reading.

cuDNN figures, ms, non-deterministic backward: NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/
gpt_oss/gb200/gpt_oss_20260424_100011.csv @3929da2 (cuDNN 9.22, head dim 64, window 128, batch 2 x 128 / 128 heads;
CSV lines 29-36 at s 4,096) and, at cuDNN 9.19 with GPT-OSS's 64 / 8 heads and window 1,024,
results/gb200_919_only_cudnn/gpt_oss_20260226_175022.csv @fb682ce."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.time.attention_core import flash_executed_keys, layer_attention_seconds
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation.throughput import run_spec

GPT_OSS = run_spec({"catalog": "gpt-oss-120b", "seq_len": 4096})
BF16_WINDOW_128 = (0.210, 0.465)  # GB200, s 4,096, (forward, backward), 2 x 4,096 tokens x 128 heads
MXFP8_WINDOW_128 = (0.210, 2.080)
LAYER_MICRO_BATCH_TOKENS = 4 * 4096  # the rows' micro-batch: 16,384 tokens x 64 heads = the benchmark's head-tokens


def _settings(fp8_attention: bool) -> StepSettings:
    return StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", fp8_attention=fp8_attention,
                        implementation="megatron")


def test_model_layers_against_the_measured_kernels_by_hand():
    """The model on GB200 at s 4,096 (0.30 x 2.5 PFLOP/s, exponential stretch 2, backward 2.5x the forward, flash
    FLOPs 2 x 64 heads x 128 = 16,384 a key): a sliding layer executes 252 keys a query (flash_executed_keys), a
    full one 2,048.5. Backward a token: sliding 2.5 x 2 x 16,384 x 252 / 7.5e14 = 27.52 ns, full 223.72 ns; the
    mean layer 125.62 ns. Per 16,384-token layer-micro-batch: sliding 0.451 ms (cuDNN BF16 0.465), full 3.666 ms,
    which is 1.76x the 2.080 ms the MXFP8 kernel takes for the whole causal triangle (tolerance 0.5%)."""
    assert flash_executed_keys(4096, 128) == pytest.approx(252.0)
    gpu = load_accelerator("gb200")
    _, mean_bwd = layer_attention_seconds(GPT_OSS, gpu, _settings(False), 1)
    sliding = 2.5 * 2 * 16384 * 252 / (0.30 * 2.5e15)
    full = 2.5 * 2 * 16384 * 2048.5 / (0.30 * 2.5e15)
    assert mean_bwd == pytest.approx((sliding + full) / 2, rel=5e-3)
    assert sliding * LAYER_MICRO_BATCH_TOKENS == pytest.approx(0.451e-3, rel=5e-3)
    assert sliding * LAYER_MICRO_BATCH_TOKENS == pytest.approx(BF16_WINDOW_128[1] * 1e-3, rel=0.04)
    assert full * LAYER_MICRO_BATCH_TOKENS == pytest.approx(3.666e-3, rel=5e-3)
    assert full * LAYER_MICRO_BATCH_TOKENS / (MXFP8_WINDOW_128[1] * 1e-3) == pytest.approx(1.762, rel=5e-3)


def test_the_model_keeps_bf16_attention_time_under_fp8_on_gpt_oss():
    """The reading the step model keeps (docs/step.md, GPT-OSS ninth pass): FP8 / MXFP8 attention on GPT-OSS is
    timed as BF16's. cuDNN's FP8 backward at window 128 (cuDNN 9.22) and window 1,024 (9.19) take the same time per
    64 heads within 4% and grow 3.2-3.9x per doubling of s: it computes the causal triangle, not the band. A step of
    the GB200 rows (5 micro-batches x 18 sliding + 18 full layers) charged the sliding layers the measured ratio
    (2.080 / 0.465 = 4.473) with the full layers at the model's BF16 time would add 90 x 0.451 x 3.473 = 141 ms
    (over-charging the full layers, whose model time 3.666 ms already exceeds the kernel's whole triangle, 2.080 ms);
    every layer at the kernel's time nets 90 x (2 x 2.018 - 0.451 - 3.666) = -7 ms. So the model's time stands; this
    fails if FP8 attention starts to move GPT-OSS's attention time."""
    gpu = load_accelerator("gb200")
    assert layer_attention_seconds(GPT_OSS, gpu, _settings(True), 1) == pytest.approx(
        layer_attention_seconds(GPT_OSS, gpu, _settings(False), 1), rel=1e-12)
