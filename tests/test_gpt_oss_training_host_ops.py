"""GPT-OSS's eager fallbacks cost host time too (core.time.moe_host.fallback_python_ops; docs/step.md, "GPT-OSS 120B,
seventh pass").

MOE_LAYER_HOST_SECONDS was fitted on a Qwen3-30B-A3B layer: TE's fused RoPE (one call for q, one for k) and an unclamped
activation. GPT-OSS under Megatron-Core 0.16+ runs the unfused RoPE (mscale 1.35) and the clamped quick-GEGLU, whose
Python dispatches, counted in the code (rope_utils.py@2edffad L92-126, attention.py L1106-1125, fused_bias_geglu.py
L428-439):

* RoPE, per tensor: 2 slices + (cos, * mscale, .to) + (sin, * mscale, .to) + t * cos_ + (chunk, neg, cat) + * sin_ + sum
  + cat = 15, less the fused call's 1 = 14; q and k: 28.
* clamp: chunk, clamp, clamp, cat, torch.tensor = 5, all before the activation's sync.

So (before the sync, all) = (5, 33) forward ops a MoE layer, at core.time.host's 7.5466 us each on the reference host:
33 x 7.5466 = 249.0 us more host a layer's forward, x 1.4544 = 362.2 us its backward. Nothing fitted.
"""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.time import moe_host as M
from gpuplan.core.time.eager_fallbacks import CLAMPED_GLU, EXPERT_BIAS, MEGATRON_EAGER_FALLBACKS, YARN_ROPE
from gpuplan.jobs.validation.published_throughput import predicted_step

from helpers import published_rows_by_id

US = 1e-6


def test_counts_per_model_and_fallback():
    gpt_oss = load_model("gpt-oss-120b")
    assert M.fallback_python_ops(gpt_oss, MEGATRON_EAGER_FALLBACKS) == (5, 2 * 14 + 5)
    assert M.fallback_python_ops(gpt_oss, (EXPERT_BIAS, CLAMPED_GLU)) == (5, 5)  # 25.11: core 0.15 fused RoPE
    assert M.fallback_python_ops(gpt_oss, (YARN_ROPE,)) == (0, 28)
    assert M.fallback_python_ops(gpt_oss, ()) == (0, 0)
    # Qwen3: no YaRN factor, no clamp; DeepSeek-V3: YaRN, but MLA takes its own RoPE path (eager_rope_bytes_per_token 0)
    assert M.fallback_python_ops(load_model("qwen3-30b-a3b"), MEGATRON_EAGER_FALLBACKS) == (0, 0)
    assert M.fallback_python_ops(load_model("deepseek-v3"), MEGATRON_EAGER_FALLBACKS) == (0, 0)


def test_layer_host_grows_by_the_counted_ops():
    op = M.forward_op_seconds()
    assert op == pytest.approx(7.5466 * US, rel=1e-3)
    base = M.layer_host_seconds("alltoall", 16, None, eager_bias=True, router_graphs=False)
    more = M.layer_host_seconds("alltoall", 16, None, eager_bias=True, router_graphs=False, fallback_ops=33)
    assert more - base == pytest.approx(249.0 * US, abs=0.1 * US)
    back = M.backward_host_seconds("alltoall", 16, None, True, False, 33) \
        - M.backward_host_seconds("alltoall", 16, None, True, False)
    assert back == pytest.approx(249.0 * 1.4544 * US, abs=0.2 * US)


def test_h100_row_moves_within_the_ops_bound():
    """GPT-OSS on 64 H100, 26.04.01 (micro-batch 1, host-bound): the step rises, by at most the 33 ops' forward +
    backward host (611.2 us) on each of the critical stage's 9 layers x (80 micro-batches + 3 of bubble)."""
    row = published_rows_by_id()["mbridge-26.04.01-gpt-oss-120b-h100-sxm-64g-bf16"]
    with_ops = predicted_step(row).total
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(M, "fallback_python_ops", lambda spec, fallbacks: (0, 0))
        without = predicted_step(row).total
    assert 0.0 < with_ops - without <= (249.0 + 362.2) * US * 9 * 83 * 1.01
