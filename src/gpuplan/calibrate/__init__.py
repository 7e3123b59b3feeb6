"""Calibration: fit correction factors from trial measurements and training logs, and apply
them to gpuplan's step-time and memory models. No torch. See docs/calibration.md.

    from gpuplan.calibrate import load_measurements, fit_calibration, save_calibration
    cal = fit_calibration(load_measurements(["trial.json"]))
    save_calibration(cal, "calibration.json")
    settings = apply_to_step_settings(load_calibration("calibration.json"), StepSettings(), "h100-sxm")
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "CalibratedMemory": "apply", "apply_to_cluster": "apply", "apply_to_memory": "apply",
    "apply_to_memory_settings": "apply", "apply_to_overheads": "apply", "apply_to_step_settings": "apply",
    "calibrated_mfu": "apply", "fit_calibration": "fit", "LogContext": "measurement", "Measurement": "measurement",
    "measurement_from_trial": "measurement", "Calibration": "model", "Factor": "model", "MeasurementFit": "model",
    "Reference": "model", "load_calibration": "model", "save_calibration": "model",
    "calibrated_vs_default_lines": "report", "calibration_report": "report", "extrapolation_lines": "report",
    "load_measurement": "sources", "load_measurements": "sources", "measurement_from_log": "sources",
}
"""Names re-exported lazily: importing the package (a refusal of a bad file, the web API) does not
load the fit, numpy and the step model before they are needed."""
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"gpuplan.calibrate.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'gpuplan.calibrate' has no attribute {name!r}")
