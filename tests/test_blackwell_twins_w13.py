"""Blackwell twins (docs/step.md "Blackwell twins"): cuDNN's FP8 backward ratio GB300 / GB200 (1.234) read and not
adopted as the GB300's FP8 GEMM ratio (core/time/efficiency.py keeps 1.141 for BF16 and FP8), and the twin pairs
`scripts/blackwell_ultra_pairs.py --twins` lists, measured against predicted."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "cudnn" / "gb200_gb300_kernels.yaml"


@pytest.fixture(scope="module")
def backward() -> dict[tuple[str, int], list[float]]:
    """GB200 time / GB300 time of cuDNN's backward passes, by (dtype, query/key head dim)."""
    out: dict[tuple[str, int], list[float]] = {}
    for _, dtype, _, _, _, d_qk, _, pass_, gb200, gb300 in yaml.safe_load(FIXTURE.read_text("utf-8"))["attention"]:
        if pass_ == "bwd":
            out.setdefault((dtype, d_qk), []).append(gb200 / gb300)
    return out


def test_fp8_backward_ratio_is_read_and_the_fp8_gemm_keeps_the_bf16_ratio(backward):
    """The 18 FP8 backward shapes (the BF16 ratio's own 18 in FP8): geometric mean 1.234, range 1.179-1.296.
    Not adopted: the GB300's FP8 GEMM fraction stays the GB200's 0.723 x 1.141 = 0.825 (0.892 at 1.234)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.efficiency import GB300_OVER_GB200_TENSOR_RATE, gemm_efficiency

    every = backward[("fp8", 128)] + backward[("fp8", 192)]
    assert len(every) == 18 and 1.17 < min(every) and max(every) < 1.30
    assert statistics.geometric_mean(every) == pytest.approx(1.234, abs=5e-4)
    gb300, gb200, big = load_accelerator("gb300"), load_accelerator("gb200"), 1e12  # d / (d + d_half) -> 1
    assert gemm_efficiency(gb300, big, 512, "fp8") == pytest.approx(
        round(gemm_efficiency(gb200, big, 512, "fp8") * GB300_OVER_GB200_TENSOR_RATE, 3), abs=1e-9)
    assert gemm_efficiency(gb300, big, 512, "fp8") == pytest.approx(0.825, abs=1e-6)


def test_no_blackwell_part_runs_fp8_gemms_past_its_peak_ratio():
    """Achieved FP8 / BF16 GEMM rate = 2 x FP8 fraction / BF16 fraction (spec FP8 peak = 2 x BF16 on every part):
    B200 2 x 0.763 / 0.776 = 1.966, GB200 2 x 0.723 / 0.729 = 1.984, B300 2 x 0.745 / 0.786 = 1.896, GB300
    2 x 0.825 / 0.832 = 1.983; at cuDNN's FP8 backward ratio the GB300 would take 2 x 0.892 / 0.832 = 2.144
    (review_w13_r1 M1)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.efficiency import gemm_efficiency

    hand = {"b200": 1.966, "gb200": 1.984, "b300": 1.896, "gb300": 1.983}
    for part, ratio in hand.items():
        g = load_accelerator(part)
        assert g.peak("fp8") == 2 * g.peak("bf16"), part
        fp8, bf16 = gemm_efficiency(g, 1e12, 512, "fp8") * g.peak("fp8"), gemm_efficiency(g, 1e12, 512) * g.peak("bf16")
        achieved = fp8 / bf16
        assert achieved == pytest.approx(ratio, abs=1e-3) and achieved < 2.0, part


def test_head_dim_does_not_separate_the_fp8_explanations(backward):
    """FP8 gains more at head dim 192 (12 shapes, 1.243) than at 128 (6 shapes, 1.217), but BF16, where the SFU
    does not enter (>= 1,280 tensor FLOPs per exponential against 512), has the same gradient (1.149 vs 1.127):
    the two head dims are different models' shapes (Llama 3.1 vs DeepSeek-V3 / Kimi). The controlled ratio,
    FP8 / BF16 at one head dim, is flat (1.080 at 128, 1.082 at 192), so it cannot tell a faster FP8 tensor path
    from a faster non-tensor part of the FP8 backward (review_w13_r1 M2)."""
    gm = {k: statistics.geometric_mean(v) for k, v in backward.items()}
    assert [len(backward[(d, h)]) for d in ("bfloat16", "fp8") for h in (128, 192)] == [6, 12, 6, 12]
    hand = {("bfloat16", 128): 1.127, ("bfloat16", 192): 1.149, ("fp8", 128): 1.217, ("fp8", 192): 1.243}
    assert {k: gm[k] for k in hand} == pytest.approx(hand, abs=1e-3)
    controlled = [gm[("fp8", h)] / gm[("bfloat16", h)] for h in (128, 192)]
    assert controlled == pytest.approx([1.080, 1.082], abs=1e-3) and abs(controlled[1] - controlled[0]) < 0.005


def test_llama_8b_pair_at_the_fp8_backward_ratio_would_move_by_its_gemm_share(published_rows, load_script):
    """NeMo 25.11 Llama 3 8B FP8-CS on 8 GPUs, one layout on both: measured GB300 / GB200 37,556 / 31,508 = 1.192,
    predicted 1.106 (tests/test_gb300_kernel_rate.py). The FP8 GEMMs at 1.234 instead of 1.141 (the GB300's FP8
    peak x 1.234 / 1.141 on a copy, blackwell_ultra_pairs.scaled_part) move it by about that ratio to the power
    of the GEMM share, 0.44: 1.106 x (1.234 / 1.141) ** 0.44 = 1.144, docs/step.md's not-adopted 1.139."""
    U = load_script("blackwell_ultra_pairs")
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.validation.published_throughput import predicted_step

    ultra, base = (published_rows[f"mbridge-25.11-llama-3-8b-{g}-8g-fp8cs"] for g in ("gb300", "gb200"))
    assert ultra["layout"] == base["layout"]
    measured = ultra["measured"]["tokens_per_s_per_gpu"] / base["measured"]["tokens_per_s_per_gpu"]
    adopted = predicted_step(base).total / predicted_step(ultra).total
    faster = U.scaled_part(load_accelerator("gb300"), ("fp8",), 1.234 / 1.141)
    would = predicted_step(base).total / predicted_step(ultra, gpu=faster).total
    assert measured == pytest.approx(1.192, abs=1e-3) and adopted == pytest.approx(1.106, abs=2e-3)
    assert would == pytest.approx(1.139, abs=2e-3) and would == pytest.approx(1.106 * (1.234 / 1.141) ** 0.44, rel=0.01)
    assert would < measured


def test_step_split_of_a_one_node_dense_row_adds_up(published_rows, load_script):
    """Llama 3 8B FP8-CS on 8 GB300 (dp 8, no pipeline, CUDA graphs): the step is matmuls, attention and
    HBM-bound kernels, so the shares of the step that scale with those three rates add up to ~1 (0.99: the
    optimizer and fixed kernel times scale with none of them exactly), the links' share is ~0 (the
    data-parallel reduction hides behind the backward) and no MoE host time exists."""
    U = load_script("blackwell_ultra_pairs")

    split = U.step_split(published_rows["mbridge-25.11-llama-3-8b-gb300-8g-fp8cs"])
    assert split["gemm"] + split["attn"] + split["hbm"] == pytest.approx(0.99, abs=0.02)
    assert split["gemm"] == pytest.approx(0.44, abs=0.02) and abs(split["comm"]) < 0.01 and split["host"] == 0


def test_twin_counts_the_doc_quotes(load_script):
    """docs/step.md "Blackwell twins": 69 groups, 159 pairs, 38 at one layout on both sides (the scored rows
    only: grouping needs no prediction)."""
    U = load_script("blackwell_ultra_pairs")

    pairs = U.row_pairs()
    assert (len(U.twin_rows()), len(pairs), sum(p[-1] for p in pairs)) == (69, 159, 38)
