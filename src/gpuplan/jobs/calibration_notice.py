"""A calibration measured elsewhere is said first: the warning of calibrate.compatibility as the
answer's first line (headline), in JSON (results.calibration_warning) and in the notes."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.report.model import Line, Report, Section


def with_calibration_warning(report: Report, inputs, gpu_id: str, layout=None) -> Report:
    """``report`` with the calibration warning first when ``inputs.calibration`` was measured on
    another device, GPU or framework, or fitted at another compute dtype (dtype_warning), or the planned ``layout``
    (core.parallel.ParallelLayout; None: not known) and --tp-overlap differ from what calibrate timed the log with
    (layout_warning), or its other step options (options_warning); unchanged otherwise."""
    cal = getattr(inputs, "calibration", None)
    if cal is None:
        return report
    from gpuplan.calibrate.apply import calibration_warning

    warning = "; ".join(text for text in (calibration_warning(cal, gpu_id, getattr(inputs, "framework", None)),
                                          dtype_warning(cal, getattr(inputs, "dtype", None)),
                                          layout_warning(cal, layout, getattr(inputs, "tp_overlap", None)),
                                          options_warning(cal, inputs)) if text)
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


def layout_warning(cal, layout, tp_overlap: float | None) -> str:
    """The line for a plan whose context parallelism or virtual pipeline stages (``layout``'s cp, vpp), or --tp-overlap
    (``tp_overlap``, None: not given), differ from what calibrate timed the log with (calibrate.model.Reference.layout:
    the --cp / --vpp / --tp-overlap given to calibrate, else cp 1, vpp 1 and the framework's TP overlap): the
    calibration reproduces the log only at those (review R2 S1-3: llama-3-8b tp 2 pp 2 megatron, a 1.0 s log: train
    1.000 s at --cp 1 --vpp 1, 0.905 s at the vpp 16 it picks, 0.952 s at --vpp 2, 0.985 s at --tp-overlap 0.5).
    '' where they match or the file does not say (files before session 25, trials)."""
    ref = getattr(cal.reference, "layout", None) or {}
    if not ref:
        return ""
    planned = {"cp": getattr(layout, "cp", None), "vpp": getattr(layout, "vpp", None), "tp_overlap": tp_overlap}
    names = {"cp": "--cp", "vpp": "--vpp", "tp_overlap": "--tp-overlap"}
    differ = [k for k in names if k in ref and planned[k] is not None and abs(planned[k] - ref[k]) > 1e-9]
    if not differ:
        return ""
    timed = " ".join(f"{names[k]} {ref[k]:g}" for k in differ)
    return (f"calibration timed its log at {timed}, planned at "
            f"{' '.join(f'{names[k]} {planned[k]:g}' for k in differ)}: the calibrated step is not the log's at its own "
            f"layout; give {timed} to reproduce it (docs/calibration.md)")


def options_warning(cal, inputs) -> str:
    """The line for a plan whose step options (--grad-dtype, --sequence-parallel, --ep-dispatcher, ...: those of
    calibrate.step_options.RECORDED_OPTIONS its schema has) differ from those calibrate timed the log with
    (calibrate.model.Reference.options, given or train's defaults): the calibration reproduces the log only with
    them. '' where they match or the file does not say (files before session 26, trials)."""
    ref = getattr(cal.reference, "options", None) or {}
    if not ref:
        return ""
    from gpuplan.calibrate.step_options import option_values
    from gpuplan.calibrate.train_step import check_recorded

    ref = check_recorded(ref)  # a word the file holds is one of calibrate's, read as its field reads it
    planned = option_values(inputs)
    differ = [k for k in ref if k in planned and _held(ref[k]) != _held(planned[k])]
    if not differ:
        return ""

    def said(values: dict, keys=differ) -> str:
        return " ".join(f"--{k.replace('_', '-')} {_shown(values[k])}" for k in keys)

    give, leave = [k for k in differ if ref[k] is not None], [k for k in differ if ref[k] is None]
    advice = " and ".join((f"give {said(ref, give)}",) * bool(give) + (  # an option the log left unstated: left out
        f"leave {' '.join(f'--' + k.replace('_', '-') for k in leave)} out",) * bool(leave))
    return (f"calibration timed its log with {said(ref)}, planned with {said(planned)}: the calibrated step is not "
            f"the log's; {advice} to reproduce it (docs/calibration.md)")


def _held(value):
    return tuple(value) if isinstance(value, list | tuple) else value


def _shown(value) -> str:
    if value is None:
        return "(not given)"
    if isinstance(value, bool):
        return "on" if value else "off"
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else f"{value:g}" if isinstance(
        value, float) else str(value)
