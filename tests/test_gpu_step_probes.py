"""scripts/gpu_step_probes.py: the step model's predictions it prints beside each GPU measurement
(worked by hand from the catalog's H100 SXM figures: BF16 989.4 TFLOP/s, FP8 1,978.9, HBM 3.35 TB/s;
MAMF 0.803 BF16 / 0.709 FP8, d_half 512, HBM efficiency 0.75, attention efficiency 0.20), and its
CPU dry run and bad-input exits."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import gpu_step_probes as P

from gpuplan.catalog import load_accelerator

H100 = load_accelerator("h100-sxm")


def test_gemm_prediction_by_hand():
    # 2 x 8192^3 = 1.09951e12 FLOP at 989.4e12 x 0.803 x 8192 / (8192 + 512) = 7.4775e14 FLOP/s
    assert P.predicted_gemm_s(H100, 8192, 8192, 8192, "bf16") == pytest.approx(1.47043e-3, rel=1e-4)


def test_expert_prediction_by_hand():
    shape = P.ExpertShape("qwen3-30b-a3b h100 ep16", 8, 4096, 2048, 768)
    # 8 experts x (2*4096*2048*1536 + 2*4096*768*2048) = 3.0924e11 FLOP; smallest dim 768:
    # BF16 e = 0.803 x 768/1280 = 0.4818 -> 6.4872e-4 s
    assert P.predicted_experts_s(H100, shape, "bf16") == pytest.approx(6.4872e-4, rel=1e-4)
    # FP8 e = 0.709 x 0.6 = 0.4254 -> 3.6735e-4 s of GEMM, plus the casts:
    # 5 B x 8 x 4096 x (2048 + 768) = 4.6137e8 B at 3.35e12 x 0.75 -> 1.8363e-4 s
    assert P.predicted_experts_s(H100, shape, "fp8") == pytest.approx(5.5098e-4, rel=1e-4)


def test_attention_prediction_by_hand():
    # causal: 4 x 4096 x 4097/2 x 128 x 32 = 1.37472e11 FLOP at 989.4e12 x 0.20
    fwd = P.predicted_attention_s(H100, 32, 128, 4096, backward=False)
    assert fwd == pytest.approx(6.9472e-4, rel=1e-4)
    assert P.predicted_attention_s(H100, 32, 128, 4096, backward=True) == pytest.approx(3.5 * fwd)


def test_dry_run_writes_every_probe(tmp_path, capsys):
    assert P.main(["--dry-run", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "step-probes.json").read_text())
    assert data["dry_run"] is True and data["catalog_gpu"] == "h100-sxm"
    kinds = [r["probe"] for r in data["results"]]
    assert kinds.count("gemm") == 2 and kinds.count("experts") == 2 and kinds.count("launch") == 2
    assert kinds.count("attention") == 4 and kinds.count("kernel") == 1
    # the CPU run measures everything but the CUDA-graph probe, which says why not
    kernel = next(r for r in data["results"] if r["probe"] == "kernel")
    assert kernel["measured_s"] is None and "need a GPU" in kernel["note"]
    assert all(r["measured_s"] > 0 for r in data["results"] if r["probe"] != "kernel")
    assert "CPU dry run" in (tmp_path / "step-probes.md").read_text()
    assert not list(tmp_path.glob("*.tmp"))


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    assert P.main(["--dry-run", "--gpu", "no-such-gpu", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpu_step_probes: --gpu 'no-such-gpu'") and "\n" not in err
    assert not (tmp_path / "step-probes.json").exists()
    import torch

    if not torch.cuda.is_available():
        assert P.main(["--device", "cuda", "--out", str(tmp_path)]) == 2
        assert "sees no CUDA GPU" in capsys.readouterr().err
