"""Calibration: fit correction factors from trial measurements and training logs, and apply
them to gpuplan's step-time and memory models. No torch. See docs/calibration.md.

    from gpuplan.calibrate import load_measurements, fit_calibration, save_calibration
    cal = fit_calibration(load_measurements(["trial.json"]))
    save_calibration(cal, "calibration.json")
    settings = apply_to_step_settings(load_calibration("calibration.json"), StepSettings(), "h100-sxm")
"""

from gpuplan.calibrate.apply import (
    CalibratedMemory,
    apply_to_cluster,
    apply_to_memory,
    apply_to_memory_settings,
    apply_to_overheads,
    apply_to_step_settings,
    calibrated_mfu,
)
from gpuplan.calibrate.fit import fit_calibration
from gpuplan.calibrate.measurement import (
    LogContext,
    Measurement,
    measurement_from_trial,
)
from gpuplan.calibrate.model import (
    Calibration,
    Factor,
    MeasurementFit,
    Reference,
    load_calibration,
    save_calibration,
)
from gpuplan.calibrate.report import (
    calibrated_vs_default_lines,
    calibration_report,
    extrapolation_lines,
)
from gpuplan.calibrate.sources import (
    load_measurement,
    load_measurements,
    measurement_from_log,
)

__all__ = [
    "CalibratedMemory", "Calibration", "Factor", "LogContext", "Measurement", "MeasurementFit", "Reference",
    "apply_to_cluster", "apply_to_memory", "apply_to_memory_settings", "apply_to_overheads", "apply_to_step_settings",
    "calibrated_mfu", "calibrated_vs_default_lines", "calibration_report", "extrapolation_lines", "fit_calibration",
    "load_calibration", "load_measurement", "load_measurements", "measurement_from_log", "measurement_from_trial",
    "save_calibration",
]
