"""The eager fallbacks' kernels inside the host / GPU max of core.time.moe_host (review w12 R1 M1).

A host-bound MoE layer takes max(host, GPU + g), g the fixed GPU time of the kernels the host issues beyond the
phases' per-token work (core.time.moe_layer.eager_fallback_layer_seconds). Before the mend the step charged
gpu + g + max(0, host - gpu): g twice over wherever the host was exposed. Hand-worked per MoE layer of GPT-OSS-120B
(Megatron-LM 2edffad counts, core.time.eager_fallbacks): the clamp 3 forward + 7 backward; at 7.84 us: forward
23.52 us, backward 54.88 us. The unfused YaRN RoPE's (10 forward + 12 backward tensor-sized kernels and 12 small
ones, 183.52 us) sit in the phases' element-wise work since core.time.step charges them beside the RoPE's bytes
(review w12 R1 S3), so the GPU side holds them there. A recompute's second forward is left out of both sides (its
host ops are not counted either).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import gpuplan.core.time.moe_host as MH
import gpuplan.core.time.moe_layer as ML
import gpuplan.core.time.step as S
from gpuplan.catalog import load_model
from gpuplan.core.time.eager_fallbacks import (CLAMPED_GLU, EXPERT_BIAS, YARN_ROPE, eager_rope_fixed_seconds,
                                               routing_probs_dtype)
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation.published_throughput import predicted_step

H100_ROW = "mbridge-26.04.01-gpt-oss-120b-h100-sxm-64g-bf16"  # eager launch, host-bound: moe_host ~0.7-1.0 s a step


def test_rope_and_clamp_kernels_per_moe_layer_are_the_hand_count():
    gpt_oss = load_model("gpt-oss-120b")
    settings = StepSettings(seq_len=4096, moe_launch="eager", eager_fallbacks=(YARN_ROPE, CLAMPED_GLU),
                            recompute="selective", recompute_modules=("layernorm", "moe_act"))
    forward, backward = ML.eager_fallback_layer_seconds(gpt_oss, settings, ep=8)
    assert forward == pytest.approx(3 * 7.84e-6, rel=1e-9)
    assert backward == pytest.approx(7 * 7.84e-6, rel=1e-9)
    # the fc2 bias adds its per-expert kernels (moe_layer.EAGER_BIAS_KERNELS_PER_EXPERT, 16 local experts at ep 8)
    biased = replace(settings, eager_fallbacks=(EXPERT_BIAS, YARN_ROPE, CLAMPED_GLU))
    bias_f, bias_b = ML.eager_bias_fixed_seconds(16, routing_probs_dtype(settings.ep_dispatcher))
    assert ML.eager_fallback_layer_seconds(gpt_oss, biased, ep=8) == pytest.approx((forward + bias_f,
                                                                                    backward + bias_b), rel=1e-9)
    assert ML.eager_fallback_layer_seconds(gpt_oss, replace(settings, moe_launch="none"), ep=8) == (0.0, 0.0)


def _bias_only(spec, settings, ep, fixed=ML.KERNEL_FIXED_SECONDS):
    """eager_fallback_layer_seconds less the RoPE's and the clamp's kernels (what the host hid before them)."""
    if not (spec.moe and spec.moe.expert_bias and EXPERT_BIAS in settings.eager_fallbacks):
        return 0.0, 0.0
    return ML.eager_bias_fixed_seconds(spec.moe.num_experts / ep, routing_probs_dtype(settings.ep_dispatcher), fixed)


def test_a_host_bound_row_hides_the_kernels_up_to_its_excess(monkeypatch, published_rows):
    """The H100 row (80 micro-batches, 9 layers a stage): the kernels' hand count a step is
    80 x 9 x eager_fallback_fixed_seconds; charged inside the max, the step grows by less and the exposed host
    falls (before the mend: moe_host unchanged, the step +0.22 s, more than the hand count with the bubble)."""
    row = published_rows[H100_ROW]
    charged = predicted_step(row)
    monkeypatch.setattr(MH, "eager_fallback_layer_seconds", _bias_only)
    monkeypatch.setattr(ML, "eager_fallback_fixed_seconds", lambda spec, settings, fixed=0.0: 0.0)
    monkeypatch.setattr(S, "eager_rope_fixed_seconds", lambda spec, fallbacks: 0.0)  # the RoPE's, in the phases
    without = predicted_step(row)
    assert without.moe_host > 0.5  # the row is host-bound
    assert charged.moe_host < without.moe_host - 0.05  # 0.823 -> 0.757 s at this commit (0.736 with the RoPE's
    # kernels split 89 : 94 us forward : backward; in the element-wise work they split a third : two thirds)
    gpt_oss = load_model("gpt-oss-120b")
    monkeypatch.undo()
    settings = StepSettings(seq_len=4096, eager_fallbacks=(YARN_ROPE, CLAMPED_GLU), recompute="selective",
                            recompute_modules=("layernorm", "moe_act"))
    hand = 80 * 9 * (ML.eager_fallback_fixed_seconds(gpt_oss, settings)  # 80 x 9 x 285.44 us = 0.2055 s, the RoPE's
                     + eager_rope_fixed_seconds(gpt_oss, settings.eager_fallbacks))  # 183.52 of them the step's
    assert hand == pytest.approx(80 * 9 * 285.44e-6, rel=1e-6)
    # at this commit +0.149 s (the kernels +0.211 s with W2-A's unfused bias add, the bubble, less 0.067 s of host hidden)
    assert 0.0 <= charged.total - without.total < 0.75 * hand
