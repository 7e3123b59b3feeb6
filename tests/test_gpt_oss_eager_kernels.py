"""GPT-OSS's eager RoPE and clamp: the fixed GPU time of their kernels (core.time.eager_fallbacks,
core.time.moe_layer.eager_fallback_fixed_seconds; docs/step.md, "GPT-OSS 120B, seventh pass").

Hand-worked counts per layer and micro-batch, read from Megatron-LM at 2edffad (the commit Megatron-Bridge
v0.4.2 pins): the unfused YaRN RoPE of q and k, beyond TE's fused kernel, 10 forward + 12 backward
tensor-sized kernels and 12 small ones rebuilding cos / sin x mscale; the clamp before the quick-GEGLU 3
forward + 7 backward, its forward again under the 'moe_act' recompute. At 7.84 us a tensor-sized kernel and
0.92 us a small one: (10 + 12 + 3 + 7 + 3) x 7.84 + 12 x 0.92 = 285.44 us a layer and micro-batch.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import gpuplan.core.time.moe_layer as ML
from gpuplan.catalog import load_model
import gpuplan.core.time.step as S
from gpuplan.core.time.eager_fallbacks import (CLAMPED_GLU, EXPERT_BIAS, MEGATRON_EAGER_FALLBACKS, YARN_ROPE,
                                               eager_fallback_kernels, eager_rope_fixed_seconds)
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation.published_throughput import megatron_eager_fallbacks, predicted_step

B200_ROW = "mbridge-26.04.01-gpt-oss-120b-b200-64g-bf16"
PER_LAYER_US = (10 + 12 + 3 + 7 + 3) * 7.84 + 12 * 0.92  # 285.44 us
ROPE_US = (10 + 12) * 7.84 + 12 * 0.92  # 183.52 us of it: core.time.step's (eager_fallbacks.eager_rope_fixed_seconds)
BDA_US = 1 * 7.84  # the unfused bias-dropout-add's bias add, forward (eager_fallbacks 'unfused-bda', wave 12 W2-A)


@pytest.fixture(scope="module")
def gpt_oss():
    return load_model("gpt-oss-120b")


def test_kernel_counts_read_from_the_code(gpt_oss):
    assert eager_fallback_kernels(gpt_oss, MEGATRON_EAGER_FALLBACKS) == (10 + 12 + 3 + 7 + 1, 12)  # + the bda's 1
    assert eager_fallback_kernels(gpt_oss, MEGATRON_EAGER_FALLBACKS, rerun_clamp=True) == (36, 12)
    assert eager_fallback_kernels(gpt_oss, MEGATRON_EAGER_FALLBACKS, rerun_rope=True) == (44, 24)
    assert eager_fallback_kernels(gpt_oss, (CLAMPED_GLU,)) == (10, 0)  # 25.11: TE's fused RoPE still ran
    assert eager_fallback_kernels(gpt_oss, (EXPERT_BIAS,)) == (0, 0)  # moe_layer counts the bias per expert


def test_models_without_the_paths_launch_nothing_more():
    qwen = load_model("qwen3-30b-a3b")  # plain RoPE, unclamped SwiGLU
    assert eager_fallback_kernels(qwen, MEGATRON_EAGER_FALLBACKS) == (0, 0)


def test_moe_act_recompute_adds_the_clamp_forward(gpt_oss):
    settings = StepSettings(seq_len=4096, recompute="selective", recompute_modules=("layernorm", "moe_act"),
                            eager_fallbacks=MEGATRON_EAGER_FALLBACKS)
    # the MoE layer's term holds the clamp and the bias add; the RoPE's kernels are the step's element-wise work's
    assert ML.eager_fallback_fixed_seconds(gpt_oss, settings) == pytest.approx(
        (PER_LAYER_US - ROPE_US + BDA_US) * 1e-6, rel=1e-9)
    assert eager_rope_fixed_seconds(gpt_oss, MEGATRON_EAGER_FALLBACKS) == pytest.approx(ROPE_US * 1e-6, rel=1e-9)
    plain = replace(settings, recompute="none", recompute_modules=())
    assert ML.eager_fallback_fixed_seconds(gpt_oss, plain) == pytest.approx(
        (PER_LAYER_US - ROPE_US + BDA_US - 3 * 7.84) * 1e-6, rel=1e-9)


def test_b200_row_step_grows_by_the_hand_worked_time(monkeypatch, published_rows):
    """64 B200, 26.04.01: pp 1, 36 layers, 5 micro-batches, selective recompute of layernorm + moe_act: the clamp's
    and the bias add's kernels, charged after the host / GPU max, grow the step by 5 x 36 x (101.92 + 7.84) us =
    19.76 ms (no bubble at pp 1); the RoPE's 5 x 36 x 183.52 us = 33.03 ms sit in the layer's element-wise work
    (core.time.step), inside the max, where the row's exposed host hides part of them: +26.42 ms at this commit."""
    row = published_rows[B200_ROW]
    assert set(megatron_eager_fallbacks(row)) == {EXPERT_BIAS, YARN_ROPE, CLAMPED_GLU, "unfused-bda"}
    with_kernels = predicted_step(row).total
    monkeypatch.setattr(ML, "eager_fallback_fixed_seconds", lambda spec, settings, fixed=0.0: 0.0)
    no_clamp = predicted_step(row).total
    assert with_kernels - no_clamp == pytest.approx(5 * 36 * (PER_LAYER_US - ROPE_US + BDA_US) * 1e-6, rel=1e-6)
    monkeypatch.setattr(S, "eager_rope_fixed_seconds", lambda spec, fallbacks: 0.0)  # the RoPE's: the step's
    rope = no_clamp - predicted_step(row).total
    assert 0 < rope <= 5 * 36 * ROPE_US * 1e-6 and rope == pytest.approx(26.42e-3, abs=0.05e-3)
