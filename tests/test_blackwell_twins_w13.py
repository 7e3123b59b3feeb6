"""Blackwell twins (docs/step.md "Blackwell twins"): the GB300's FP8 GEMM rate read from cuDNN's FP8 backward
passes on both parts (core/time/efficiency.py GB300_OVER_GB200_FP8_TENSOR_RATE), and the same-layout twin pairs
scripts/blackwell_twins.py lists, measured against predicted."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest
import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "cudnn" / "gb200_gb300_kernels.yaml"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.fixture(scope="module")
def fp8_backward() -> dict[int, list[float]]:
    """GB200 time / GB300 time of cuDNN's FP8 backward passes, by query/key head dim."""
    out: dict[int, list[float]] = {}
    for _, dtype, _, _, _, d_qk, _, pass_, gb200, gb300 in yaml.safe_load(FIXTURE.read_text("utf-8"))["attention"]:
        if dtype == "fp8" and pass_ == "bwd":
            out.setdefault(d_qk, []).append(gb200 / gb300)
    return out


def test_gb300_fp8_rate_is_cudnns_fp8_backward_geomean(fp8_backward):
    """The 18 FP8 backward shapes (the BF16 ratio's own 18 shapes in FP8): geometric mean 1.234, range
    1.179-1.296."""
    from gpuplan.core.time.efficiency import GB300_OVER_GB200_FP8_TENSOR_RATE

    every = fp8_backward[128] + fp8_backward[192]
    assert len(every) == 18 and 1.17 < min(every) and max(every) < 1.30
    assert statistics.geometric_mean(every) == pytest.approx(GB300_OVER_GB200_FP8_TENSOR_RATE, abs=5e-4)


def test_the_fp8_gain_grows_away_from_the_exponential_roof(fp8_backward):
    """The backward does 2 x (3 d_qk + 2 d_v) tensor FLOPs per exponential (S recomputed, dP, dV, dQ, dK):
    1,280 at head dim 128 / 128 and 1,664 at DeepSeek-V3's 192 / 128, against 2 x 512 = 1,024 per exponential
    that FP8's doubled tensor rate reaches on Blackwell (attention_core.TENSOR_FLOPS_PER_EXP, BF16 512). Were
    the doubled SFU behind the FP8 gain, the shapes nearer the roof (128) would gain more; they gain less:
    1.217 (6 shapes) against 1.243 (12 shapes)."""
    from gpuplan.core.time.attention_core import TENSOR_FLOPS_PER_EXP

    roof = 2 * TENSOR_FLOPS_PER_EXP["gb200"]
    assert roof == 1024 < 2 * (3 * 128 + 2 * 128) == 1280 < 2 * (3 * 192 + 2 * 128) == 1664
    near, far = (statistics.geometric_mean(fp8_backward[d]) for d in (128, 192))
    assert (len(fp8_backward[128]), len(fp8_backward[192])) == (6, 12)
    assert near == pytest.approx(1.217, abs=1e-3) and far == pytest.approx(1.243, abs=1e-3) and far > near


def test_gb300_fractions_fp8_at_the_fp8_ratio_bf16_and_nvfp4_as_before():
    """GB200 MAMF FP8 3,615.6 of 5,000 (0.723) x 1.234 = 0.892 (4,462 TFLOP/s); BF16 0.729 x 1.141 = 0.832
    unchanged; NVFP4 keeps the B300's measured FP8 fraction 0.745 (no FP4 kernel ratio on either part)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.efficiency import gemm_efficiency

    gb300, big = load_accelerator("gb300"), 1e12  # d / (d + d_half) -> 1
    assert gemm_efficiency(gb300, big, 512, "fp8") == pytest.approx(0.892, abs=1e-6)
    assert gemm_efficiency(gb300, big, 512) == pytest.approx(0.832, abs=1e-6)
    assert gemm_efficiency(gb300, big, 512, "fp4") == pytest.approx(0.745, abs=1e-6)


def test_same_layout_llama_8b_pair_moves_by_its_gemm_share(published_rows):
    """NeMo 25.11 Llama 3 8B FP8-CS on 8 GPUs, one layout on both: measured GB300 / GB200 37,556 / 31,508 =
    1.192. Predicted 1.106 with the BF16 ratio in the FP8 GEMMs (tests/test_gb300_kernel_rate.py); the GEMMs
    are 42% of the GB300's step (scripts/blackwell_twins.py's split), so the FP8 ratio moves it to about
    1.106 x (1.234 / 1.141) ** 0.42 = 1.143, still below the measured ratio."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    ultra, base = (published_rows[f"mbridge-25.11-llama-3-8b-{g}-8g-fp8cs"] for g in ("gb300", "gb200"))
    assert ultra["layout"] == base["layout"]
    measured = ultra["measured"]["tokens_per_s_per_gpu"] / base["measured"]["tokens_per_s_per_gpu"]
    predicted = predict_tokens_per_gpu_s(ultra) / predict_tokens_per_gpu_s(base)
    assert measured == pytest.approx(1.192, abs=1e-3)
    assert predicted == pytest.approx(1.106 * (1.234 / 1.141) ** 0.42, rel=0.01) and predicted < measured


def test_step_split_of_a_one_node_dense_row_adds_up(published_rows):
    """Llama 3 8B FP8-CS on 8 GB300 (dp 8, no pipeline, CUDA graphs): the step is matmuls, attention and
    HBM-bound kernels, so the shares of the step that scale with those three rates add up to ~1 (0.98: the
    optimizer and fixed kernel times scale with none of them exactly), the links' share is ~0 (the
    data-parallel reduction hides behind the backward) and no MoE host time exists."""
    import blackwell_twins as T

    split = T.step_split(published_rows["mbridge-25.11-llama-3-8b-gb300-8g-fp8cs"])
    assert split["gemm"] + split["attn"] + split["hbm"] == pytest.approx(0.98, abs=0.02)
    assert split["gemm"] == pytest.approx(0.42, abs=0.02) and abs(split["comm"]) < 0.01 and split["host"] == 0
