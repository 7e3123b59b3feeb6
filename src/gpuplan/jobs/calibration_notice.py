"""A calibration measured elsewhere is said first: the warning of calibrate.compatibility as the
answer's first line (headline), in JSON (results.calibration_warning) and in the notes."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.report.model import Line, Report, Section


def with_calibration_warning(report: Report, inputs, gpu_id: str) -> Report:
    """``report`` with the calibration warning first when ``inputs.calibration`` was measured on
    another device, GPU or framework; unchanged otherwise."""
    cal = getattr(inputs, "calibration", None)
    if cal is None:
        return report
    from gpuplan.calibrate.apply import calibration_warning

    warning = calibration_warning(cal, gpu_id, getattr(inputs, "framework", None))
    if not warning:
        return report
    line = Line("calibration_warning", "calibration", warning, text=warning)
    return replace(report, sections=(Section("Calibration warning", (line,)),) + report.sections,
                   headline=("calibration_warning",) + tuple(report.headline),
                   notes=(f"calibration: {warning}",) + tuple(report.notes))
