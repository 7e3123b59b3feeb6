"""A calibration measured elsewhere is said first: the warning of calibrate.compatibility as the
answer's first line (headline), in JSON (results.calibration_warning) and in the notes."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.report.model import Line, Report, Section


def with_calibration_warning(report: Report, inputs, gpu_id: str) -> Report:
    """``report`` with the calibration warning first when ``inputs.calibration`` was measured on
    another device, GPU or framework, or fitted at another compute dtype (dtype_warning); unchanged otherwise."""
    cal = getattr(inputs, "calibration", None)
    if cal is None:
        return report
    from gpuplan.calibrate.apply import calibration_warning

    warning = "; ".join(text for text in (calibration_warning(cal, gpu_id, getattr(inputs, "framework", None)),
                                          dtype_warning(cal, getattr(inputs, "dtype", None))) if text)
    if not warning:
        return report
    line = Line("calibration_warning", "calibration", warning, text=warning)
    return replace(report, sections=(Section("Calibration warning", (line,)),) + report.sections,
                   headline=("calibration_warning",) + tuple(report.headline),
                   notes=(f"calibration: {warning}",) + tuple(report.notes))


def calibration_first(report: Report) -> Report:
    """``report`` with its calibration warning (with_calibration_warning's) first again: the first answer line, the
    first section and the first note, after a view rebuilt its headline or sections (jobs.budget.estimate's train and
    budget views dropped it from the answer and listed it after the time sections: review R2 S2-6). Unchanged where
    there is none."""
    if not any(ln.key == "calibration_warning" for sec in report.sections for ln in sec.lines):
        return report
    first = tuple(sec for sec in report.sections if sec.title == "Calibration warning")
    notes = tuple(n for n in report.notes if n.startswith("calibration: "))
    return replace(report, sections=first + tuple(sec for sec in report.sections if sec not in first),
                   headline=("calibration_warning",) + tuple(k for k in report.headline if k != "calibration_warning"),
                   notes=notes + tuple(n for n in report.notes if n not in notes))


def dtype_warning(cal, dtype: str | None) -> str:
    """The line for a calibration fitted at another compute dtype than ``dtype`` (the plan's, --recipe fp8's where it
    set it): its factors are measured / predicted at that dtype's peak, so at another they scale another prediction
    (a 1 s step fitted at bf16 read by an fp8 plan: 0.712 s where the fp8 fit gives 0.840 s). '' where they match or
    the file does not say (calibrate.model.Reference.dtype, files before session 25)."""
    fitted = getattr(cal.reference, "dtype", "")
    if not fitted or dtype is None or fitted == dtype:
        return ""
    return (f"calibration fitted at dtype {fitted}, planned at {dtype}: its time factors are ratios to the {fitted} "
            f"prediction, applied to the {dtype} one (calibrate with the plan's --dtype / --recipe)")
