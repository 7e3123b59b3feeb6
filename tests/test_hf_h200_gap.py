"""The --framework hf step on the H200 runs: which way the gap points and what the two profiled runs
say about it (docs/step.md, "Where the H200 gap is, and where it is not"). Nothing is fitted here; these tests pin the
direction of the error, the profiles' relation to the packaged runs, and the differences docs/step.md
reads off them.

Profiles: tests/fixtures/h200/profile_llama-3.2-1b_*.json (`gpuplan profile llama-3.2-1b --device cuda
--steps 10 --warmup 3 ...` on one H200, torch 2.11.0+cu130, transformers 5.17.0; tests/fixtures/h200/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.jobs.validation import gpu_runs as R

FIXTURES = Path(__file__).parent / "fixtures" / "h200"
ROW_NONE = "llama-3.2-1b_L16_s2048_b2_bf16_none_sdpa"
ROW_FULL = "llama-3.2-1b_L16_s2048_b2_bf16_full_sdpa"


def _profile(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _rows() -> dict:
    return {r["id"]: r for r in R.measured_rows()}


def _predict(row: dict, tmp_path: Path) -> R.GpuRun:
    return R.predict(row, tmp_path)


def _full_s4096_row() -> dict:
    """The full-recompute profile as a packaged row would state it (mb 1, s 4,096, the row's other settings)."""
    base = _rows()[ROW_FULL]
    profile = _profile("profile_llama-3.2-1b_full_mb1_s4096.json")
    settings = profile["config"]["settings"]
    assert (settings["seq_len"], settings["micro_batch"], settings["recompute"]) == (4096, 1, "full")
    return dict(base, id="profile full mb1 s4096", config=dict(base["config"], seq_len=4096, micro_batch=1),
                hf_config=profile["config"]["hf_config"],
                timing={"step_time_s": profile["results"]["step_time_s"]["median"]})


def test_profile_is_a_second_measurement_of_the_packaged_bf16_row():
    """The bf16 profile runs the packaged row's configuration (1B, 16 layers, s 2,048, mb 2, foreach AdamW):
    97.23 ms median over 10 steps against the row's 97.40 ms over 3, 0.2% apart (tolerance 1%: the
    profile's own step spread is 96.7-98.5 ms). Fitting on this profile would fit that held-out row."""
    profile = _profile("profile_llama-3.2-1b_bf16_mb2_s2048.json")
    settings = profile["config"]["settings"]
    row = _rows()[ROW_NONE]
    assert (settings["seq_len"], settings["micro_batch"], settings["recompute"], settings["precision"]) == (
        row["config"]["seq_len"], row["config"]["micro_batch"], "none", "bf16")
    median = profile["results"]["step_time_s"]["median"]
    assert median == pytest.approx(0.09723, abs=1e-5)
    assert median == pytest.approx(row["timing"]["step_time_s"], rel=0.01)


def test_positive_step_error_means_gpuplan_predicts_the_step_too_long(tmp_path):
    """validate scores error = (predicted - measured) / measured (jobs/validation/estimate.py's note), so the
    H200 rows' positive bias is a step predicted LONGER than measured: 97.4 ms measured, ~102.3 ms predicted
    on the 1B bf16 row (+5.1%; band +2 ... +10% so other engineers' model changes do not break the sign check)."""
    run = _predict(_rows()[ROW_NONE], tmp_path)
    error = (run.predicted_step_s - run.measured_step_s) / run.measured_step_s
    assert run.measured_step_s == pytest.approx(0.0974, abs=2e-4)
    assert 0.02 < error < 0.10


def test_the_gap_does_not_move_with_sequence_length_at_fixed_tokens(tmp_path):
    """Same 4,096 tokens, full recompute: s 2,048 x mb 2 (packaged row) against s 4,096 x mb 1 (profile).
    Measured 115.3 -> 120.8 ms (+5.5 ms), gpuplan +6.1 ms, of which its attention term is +6.0 ms; the gap
    (predicted - measured) stays 9.6 -> 10.2 ms. The two gaps agree within 1.5 ms (about 1% of the step):
    SDPA, the only term that grows with s at fixed tokens, is not where the over-prediction sits."""
    short = _predict(_rows()[ROW_FULL], tmp_path / "a")
    long = _predict(_full_s4096_row(), tmp_path / "b")
    assert long.measured_step_s - short.measured_step_s == pytest.approx(0.0055, abs=3e-4)
    gap_short = short.predicted_step_s - short.measured_step_s
    gap_long = long.predicted_step_s - long.measured_step_s
    assert gap_short > 0 and gap_long > 0
    assert gap_long == pytest.approx(gap_short, abs=1.5e-3)


def test_full_recompute_profile_is_predicted_long_like_its_family(tmp_path):
    """The full-recompute profile is a 16th configuration, not among the 15 scored rows: 120.8 ms measured,
    131.0 ms predicted (+8.5%), the sign and size of its family (+3.8 ... +8.3%). Band +3 ... +15%."""
    run = _predict(_full_s4096_row(), tmp_path)
    assert run.family == "full recompute"
    assert run.measured_step_s == pytest.approx(0.12076, abs=1e-5)
    assert 0.03 < run.predicted_step_s / run.measured_step_s - 1 < 0.15


def test_l2_reuse_script_counts_the_op_profiles_forward(load_script):
    """scripts/hf_l2_reuse.py runs transformers' own Llama layer forward at the 1B's shape (4,096 tokens): the
    30 memory-bound kernels and the bytes docs/step.md reads off modeling_llama.py by hand, (84h + 20q + 20kv
    + 10I) per token = 305,664 B x 4,096 = 1.252 GB (tolerance 1%: the RoPE cos/sin and norm-weight reads).
    Hits never exceed reads, and the streaming LRU never credits more than the partial upper bound."""
    import torch.nn.functional as F

    script = load_script("hf_l2_reuse")
    sdpa = F.scaled_dot_product_attention
    h, q, kv, inter, tokens = 2048, 2048, 512, 8192, 4096
    streaming = script.layer_forward_traffic("llama-3.2-1b", tokens, 50e6, partial=False)
    upper = script.layer_forward_traffic("llama-3.2-1b", tokens, 50e6, partial=True)
    assert F.scaled_dot_product_attention is sdpa
    assert streaming.kernels == 30
    assert streaming.read + streaming.written == pytest.approx((84 * h + 20 * q + 20 * kv + 10 * inter) * tokens, rel=0.01)
    assert 0 < streaming.hit <= upper.hit <= upper.read
    # an empty cache serves nothing
    assert script.layer_forward_traffic("llama-3.2-1b", 16, 0.0, partial=False).hit == 0.0
