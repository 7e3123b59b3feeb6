"""A CPU trial's precision: unstated bf16 on a CPU without native bf16 runs fp32 and says why; a stated
bf16 runs as asked with a warning; a bf16-capable CPU and CUDA are unchanged (gpuplan.profile.cpu_precision).
The detector is monkeypatched both ways, so these hold on any host."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from gpuplan.profile import cpu_precision as CP
from gpuplan.profile.schema import TrialInputs


def test_choice_rule():
    unstated = CP.choose_precision("bf16", False, "cpu", False)
    assert (unstated.precision, unstated.stated, unstated.warning) == ("fp32", False, None)
    assert unstated.reason.startswith("bf16 is emulated on this CPU") and "fp32" in unstated.reason
    stated = CP.choose_precision("bf16", True, "cpu", False)
    assert stated.precision == "bf16" and "emulated" in stated.warning
    assert CP.choose_precision("bf16", False, "cpu", True).precision == "bf16"  # native bf16: as before
    assert CP.choose_precision("bf16", False, "cpu", None).precision == "bf16"  # torch cannot say: as before
    assert CP.choose_precision("bf16", False, "cuda", False).precision == "bf16"  # CUDA never changed
    assert CP.choose_precision("fp32-autocast", False, "cpu", False).precision == "fp32-autocast"


def test_detector_reads_torch_capability_flags():
    def fake(caps):
        return SimpleNamespace(cpu=SimpleNamespace(get_capabilities=lambda: caps))

    assert CP.cpu_has_native_bf16(fake({"avx2": True, "avx512_bf16": False, "amx_bf16": False})) is False
    assert CP.cpu_has_native_bf16(fake({"avx512_bf16": True})) is True
    assert CP.cpu_has_native_bf16(fake({"amx_bf16": True})) is True
    assert CP.cpu_has_native_bf16(fake({"architecture": "arm64", "bf16": True})) is True
    assert CP.cpu_has_native_bf16(SimpleNamespace(cpu=SimpleNamespace())) is None


def test_schema_marks_whether_precision_was_stated():
    assert TrialInputs.parse({"model": "pythia-70m"}).settings().precision_stated is False
    stated = TrialInputs.parse({"model": "pythia-70m", "precision": "bf16"}).settings()
    assert (stated.precision, stated.precision_stated) == ("bf16", True)


def _stop_before_training(monkeypatch, native):
    """Detector forced to ``native``; the trial stops at the model build and hands back the settings it ran."""
    from gpuplan.profile import _trial_runtime as R
    from gpuplan.profile import trial

    class Reached(Exception):
        pass

    seen = {}

    def measure(rt, transformers, settings, hf_config, parallelism, deadline=None):  # trial._measure's (wave 20: the sweep budget)
        seen["settings"] = settings
        raise Reached

    monkeypatch.setattr(CP, "cpu_has_native_bf16", lambda torch: native)
    monkeypatch.setattr(trial, "_measure", measure)
    return trial, Reached, seen


@pytest.mark.parametrize("raw, native, ran, warned", [
    ({}, False, "fp32", False),
    ({"precision": "bf16"}, False, "bf16", True),
    ({}, True, "bf16", False),
])
def test_trial_runs_the_chosen_precision(monkeypatch, capsys, raw, native, ran, warned):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    trial, reached, seen = _stop_before_training(monkeypatch, native)
    settings = TrialInputs.parse({"model": "pythia-70m", "layers": "1", "seq_len": "16", "device": "cpu",
                                  **raw}).settings()
    with pytest.raises(reached):
        trial.run_trial(settings)
    assert seen["settings"].precision == ran
    assert ("warning: bf16 is emulated" in capsys.readouterr().err) is warned


def test_cli_unstated_on_an_emulating_cpu_writes_fp32_and_why(monkeypatch, run_cli, tmp_path):
    """Through the CLI: one tiny fp32 step; the file says fp32 and why, and gpuplan calibrate reads it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    monkeypatch.setattr(CP, "cpu_has_native_bf16", lambda torch: False)
    out = tmp_path / "t.json"
    code, text, err = run_cli("profile", "pythia-70m", "--layers", "1", "--seq-len", "32", "--steps", "1",
                              "--warmup", "0", "--device", "cpu", "--out", str(out))
    assert code == 0, err
    assert "precision fp32 (bf16 is emulated on this CPU" in " ".join(text.split())
    data = json.loads(out.read_text())
    assert data["config"]["settings"]["precision"] == "fp32"
    choice = data["environment"]["precision_choice"]
    assert (choice["precision"], choice["stated"]) == ("fp32", False) and "emulated" in choice["reason"]
    assert data["environment"]["peak_dtype"] == "fp32"
    code, _, err = run_cli("calibrate", str(out), "--out", str(tmp_path / "c.json"))
    assert code == 0, err


def test_answer_names_the_precision_only_where_gpuplan_chose_it_or_it_is_emulated():
    from dataclasses import asdict

    from gpuplan.profile.trial_report import _precision_text

    def text(precision, stated, native):
        choice = CP.choose_precision(precision, stated, "cpu", native)
        return _precision_text(choice.precision, {"precision_choice": asdict(choice)})

    assert text("bf16", False, True) == "bf16"  # a bf16-capable CPU: as before, no note
    assert text("fp32", True, False) == "fp32"
    assert text("bf16", False, False).startswith("fp32 (bf16 is emulated on this CPU")
    assert text("bf16", True, False).startswith("bf16 (bf16 is emulated on this CPU")
    assert _precision_text("bf16", {}) == "bf16"  # a file written before precision_choice existed
