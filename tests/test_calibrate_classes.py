"""Op-class calibration of eager stacks (calibrate/classes.py) and what a calibration carries to
another GPU, framework or device (calibrate/compatibility.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.calibrate import apply_to_step_settings, fit_calibration
from gpuplan.calibrate import predict as P
from gpuplan.calibrate.classes import CLASSES, LOWER_BOUND, ClassRow, fit_classes, predicted_with
from gpuplan.calibrate.compatibility import compatibility
from gpuplan.calibrate.measurement import Measurement
from gpuplan.catalog.op_profiles import eager_ops_for
from gpuplan.core.time.step import StepSettings

TRUE = {"compute_time": 1.10, "attention_time": 0.85, "memory_time": 1.30, "host_time": 1.0}


def _trial(seq: int, mb: int, recompute: str = "none", lora: bool = False, recipe: str = "bf16") -> Measurement:
    """A trial-like measurement of Llama-3.2-1B on one H200 (framework hf: the eager model)."""
    return Measurement(source=f"s{seq}-mb{mb}-{recompute}-{'lora' if lora else 'full'}-{recipe}", kind="trial",
                       model="llama-3.2-1b", seq_len=seq, gpu="h200-sxm", device="cuda", micro_batch=mb,
                       recipe=recipe, recompute=recompute, framework="hf", finetune="lora" if lora else "full",
                       environment={"device_type": "cuda", "device_name": "NVIDIA H200", "torch": "2.11.0"})


def _parts(m: Measurement) -> dict:
    e = P.eager_parts(P.case_of(m))
    return {"compute_time": e.gemm, "attention_time": e.attention, "memory_time": e.memory, "host_time": e.host,
            "comm": e.comm}


def _measured(m: Measurement, factors: dict) -> Measurement:
    parts = _parts(m)
    return replace(m, step_time_s=parts["comm"] + sum(parts[n] * factors.get(n, 1.0) for n in CLASSES))


SWEEP = [(2048, 2), (512, 8), (2048, 1, "full"), (2048, 2, "none", True), (4096, 1)]


def test_a_fit_on_synthetic_measurements_recovers_known_factors():
    runs = [_measured(_trial(*args), TRUE) for args in SWEEP]
    cal = fit_calibration(runs)
    for name in ("compute_time", "attention_time", "memory_time"):
        f = cal.factor(name)
        assert f.status == "fitted" and f.value == pytest.approx(TRUE[name], rel=1e-3), (name, f)
    for m in cal.measurements:
        assert m.step_calibrated_s == pytest.approx(m.step_measured_s, rel=1e-3)


def test_an_unidentifiable_fit_keeps_the_defaults_and_says_why():
    # one measurement: one tied scale, the split not identified
    # (at 4,096 tokens per sequence attention is ~10% of the step; host time 0: below the 5% share)
    one = fit_calibration([_measured(_trial(4096, 1), {"compute_time": 1.2, "attention_time": 1.2,
                                                       "memory_time": 1.2})])
    assert one.compute_time.status == "tied" and one.compute_time.value == pytest.approx(1.2, rel=1e-3)
    assert "not identified" in one.compute_time.note or "split" in one.compute_time.note
    # the same configuration twice: the class shares do not move, only one scale can be fitted
    twice = fit_classes([ClassRow("a", 1.0, {"compute_time": 0.6, "attention_time": 0.1, "memory_time": 0.3,
                                             "host_time": 0.0, "comm": 0.0}),
                         ClassRow("b", 2.0, {"compute_time": 1.2, "attention_time": 0.2, "memory_time": 0.6,
                                             "host_time": 0.0, "comm": 0.0})])
    kept = [n for n, f in twice.items() if f.status == "not identified"]
    assert "host_time" in kept and "5%" in twice["host_time"].note
    assert len(kept) >= 3 and all("not separable" in twice[n].note or "share" in twice[n].note for n in kept)


def test_nothing_faster_than_its_roofline():
    rows = [ClassRow(str(i), t, {"compute_time": g, "attention_time": 0.0, "memory_time": m, "host_time": 0.0,
                                 "comm": 0.0})
            for i, (t, g, m) in enumerate(((0.5, 1.0, 0.4), (0.7, 1.0, 1.0), (0.9, 1.5, 1.0)))]
    factors = fit_classes(rows)
    for name in ("compute_time", "memory_time"):
        assert factors[name].value >= LOWER_BOUND[name]
    assert any("bound" in factors[n].note for n in ("compute_time", "memory_time"))


def test_predicted_with_scales_each_class():
    f = {n: replace(fit_classes([])[n], value=v) for n, v in TRUE.items()}
    parts = {"compute_time": 1.0, "attention_time": 2.0, "memory_time": 3.0, "host_time": 4.0, "comm": 0.5}
    assert predicted_with(parts, f) == pytest.approx(0.5 + 1.10 + 1.70 + 3.90 + 4.0)


def _calibration():
    return fit_calibration([_measured(_trial(*args), TRUE) for args in SWEEP])


def test_same_gpu_and_stack_applies_everything():
    cal = _calibration()
    fits = compatibility(cal, "h200-sxm", "hf")
    assert fits.time and fits.host and fits.warning == ""
    ops = eager_ops_for("llama", "bf16", "full", "flash")
    settings = apply_to_step_settings(cal, StepSettings(eager_ops=ops), "h200-sxm")
    assert settings.eager_factors[0] == pytest.approx(TRUE["compute_time"], rel=1e-3)


def test_another_gpu_warns_and_drops_the_host_factor():
    cal = _calibration()
    fits = compatibility(cal, "h100-sxm", "hf")
    assert fits.time and not fits.host and "h200-sxm" in fits.warning and "h100-sxm" in fits.warning
    ops = eager_ops_for("llama", "bf16", "full", "flash")
    settings = apply_to_step_settings(cal, StepSettings(eager_ops=ops), "h100-sxm")
    assert settings.eager_factors[3] == 1.0 and settings.eager_factors[2] == pytest.approx(TRUE["memory_time"], rel=1e-3)


def test_another_framework_or_the_cpu_applies_no_time_factor():
    cal = _calibration()
    other = compatibility(cal, "h200-sxm", "megatron")
    assert not other.time and "megatron" in other.warning
    base = StepSettings()
    assert apply_to_step_settings(cal, base, "h200-sxm", "megatron") == base
    cpu = replace(cal, reference=replace(cal.reference, gpus=("cpu",), environment={"device_type": "cpu"}))
    fits = compatibility(cpu, "h100-sxm", "hf")
    assert not fits.time and "CPU" in fits.warning


def test_a_plan_shows_the_warning_first(tmp_path):
    from gpuplan import PlanInputs, plan_report
    from gpuplan.calibrate import save_calibration

    path = save_calibration(_calibration(), tmp_path / "c.json")
    report = plan_report(PlanInputs(model="llama-3.2-1b", gpu="h100", gpus=8, framework="hf", tokens="10B",
                                    calibration=str(path)))
    assert report.headline[0] == "calibration_warning"
    assert "h200-sxm" in report.value("calibration_warning") and report.notes[0].startswith("calibration:")
