"""The designed trial sweep (gpuplan.profile.sweep): which runs, the time budget, memory safety,
and a real tiny sweep on the CPU whose files calibrate."""

from __future__ import annotations

import importlib.util
import json

import pytest

from gpuplan.errors import InputError
from gpuplan.profile import sweep as SW
from gpuplan.profile.trial_plan import TrialSettings

HAVE_BACKEND = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_backend = pytest.mark.skipif(not HAVE_BACKEND, reason="needs the profile extra (torch, transformers)")
TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 512, "num_hidden_layers": 2, "max_position_embeddings": 1024,
        "tie_word_embeddings": False}


def test_the_runs_separate_the_classes():
    base = TrialSettings(model="llama-3.2-1b", micro_batch=4, seq_len=2048)
    runs = dict(SW.sweep_variants(base))
    assert list(runs)[:4] == ["base", "short", "small", "recompute"]
    assert (runs["short"].micro_batch, runs["short"].seq_len) == (16, 512)  # same tokens, shorter sequences
    assert (runs["small"].micro_batch, runs["small"].seq_len) == (1, 2048)  # a quarter of the tokens
    assert runs["recompute"].recompute == "full"
    if importlib.util.find_spec("peft") is not None:
        assert runs["adapters"].lora_rank == 16
    lora = dict(SW.sweep_variants(TrialSettings(model="m", micro_batch=1, seq_len=256, lora_rank=8,
                                                recompute="full")))
    assert "short" not in lora and lora["recompute"].recompute == "none" and lora["adapters"].lora_rank is None


def test_expected_wall_scales_with_tokens_and_recompute():
    base = TrialSettings(model="m", micro_batch=4, seq_len=2048)
    assert SW._expected_wall(base, base, 10.0) == 10.0
    assert SW._expected_wall(TrialSettings(model="m", micro_batch=1, seq_len=2048), base, 10.0) == 2.5
    assert SW._expected_wall(TrialSettings(model="m", micro_batch=4, seq_len=2048, recompute="full"), base,
                             10.0) == pytest.approx(13.3)


def _fake_trial(calls, fail_on=None, exc=None):
    def run_trial(settings, out, deadline=None):  # deadline: the base run's budget (wave 20)
        calls.append(settings)
        if fail_on is not None and len(calls) == fail_on:
            raise exc
        return {"results": {"step_time_s": {"median": 0.1}, "estimate": {"step_time_s": 0.1}}}
    return run_trial


def test_budget_skips_the_runs_that_would_not_fit(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr("gpuplan.profile.trial.run_trial", _fake_trial(calls))
    runs = SW.run_sweep(TrialSettings(model="m", micro_batch=4, seq_len=2048), tmp_path, budget_s=0.0)
    assert runs[0].status == "ok" and len(calls) == 1
    assert all(r.status == "skipped" and "budget" in r.reason for r in runs[1:])


def test_an_out_of_memory_error_stops_the_sweep(tmp_path, monkeypatch):
    calls = []
    oom = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    monkeypatch.setattr("gpuplan.profile.trial.run_trial", _fake_trial(calls, fail_on=2, exc=oom))
    runs = SW.run_sweep(TrialSettings(model="m", micro_batch=4, seq_len=2048), tmp_path, budget_s=1e6)
    assert [r.status for r in runs] == ["ok", "oom"] and "out of memory" in runs[1].reason


def test_a_run_the_estimate_says_does_not_fit_is_skipped_not_tried(tmp_path, monkeypatch):
    calls = []
    too_big = InputError("layers", 16, "it fits up to --layers 8")
    monkeypatch.setattr("gpuplan.profile.trial.run_trial", _fake_trial(calls, fail_on=2, exc=too_big))
    runs = SW.run_sweep(TrialSettings(model="m", micro_batch=4, seq_len=2048), tmp_path, budget_s=1e6)
    assert runs[1].status == "skipped" and "fits up to" in runs[1].reason
    assert all(r.status == "ok" for r in runs[2:])


@needs_backend
def test_a_tiny_sweep_on_the_cpu_calibrates(tmp_path):
    from gpuplan.calibrate import fit_calibration, load_measurements

    cfg = tmp_path / "tiny" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps(TINY))
    base = TrialSettings(model=str(cfg), micro_batch=4, seq_len=64, steps=1, warmup=1, device="cpu")
    runs = SW.run_sweep(base, tmp_path / "sweep", budget_s=300)
    done = [r for r in runs if r.status == "ok"]
    assert len(done) >= 3 and all(r.step_time_s > 0 for r in done)
    report = SW.sweep_report(runs, str(tmp_path / "sweep"))
    assert report.value("runs_ok") == len(done)
    cal = fit_calibration(load_measurements([r.path for r in done]))
    assert cal.reference.gpus == ("cpu",) and len(cal.measurements) == len(done)
