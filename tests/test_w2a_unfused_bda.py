"""The unfused bias-dropout-add Megatron-Core runs for a MoE model with linear biases (core.time.eager_fallbacks
'unfused-bda'; issue 37, wave 12 W2-A; H1's GPT-OSS seventh pass sized it). Hand-worked numbers."""

import pytest

from gpuplan.adapters.resolve import resolve_model
from gpuplan.core.time.eager_fallbacks import UNFUSED_BDA, eager_fallback_kernels, unfused_bda_bytes_per_token


@pytest.fixture(scope="module")
def models():
    return {name: resolve_model(name) for name in ("gpt-oss-120b", "llama-3-8b", "deepseek-v3")}


def test_unfused_bda_by_hand(models):
    oss, llama = models["gpt-oss-120b"], models["llama-3-8b"]
    assert unfused_bda_bytes_per_token(oss) == 4 * 2880  # the output bias read and written, bf16
    assert unfused_bda_bytes_per_token(llama) == 0.0  # no biases: the fusion stays on
    assert unfused_bda_bytes_per_token(models["deepseek-v3"]) == 0.0  # bias-free experts: the fusion stays on
    assert eager_fallback_kernels(oss, (UNFUSED_BDA,)) == (1, 0)
    assert eager_fallback_kernels(oss, (UNFUSED_BDA,), rerun_rope=True) == (2, 0)  # full recompute re-runs it
    assert eager_fallback_kernels(llama, (UNFUSED_BDA,)) == (0, 0)


@pytest.mark.parametrize("row", ["mbridge-26.04.01-gpt-oss-120b-b200-64g-bf16", "mbridge-25.11-gpt-oss-120b-b200-64g-bf16",
                                 "mbridge-26.08-gpt-oss-120b-gb200-64g-mxfp8"])
def test_every_gpt_oss_row_runs_it(published_rows, row):
    from gpuplan.jobs.validation.published_throughput import megatron_eager_fallbacks

    assert UNFUSED_BDA in megatron_eager_fallbacks(published_rows[row])  # fused grouped MLP or not, every release
