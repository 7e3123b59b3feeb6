"""A calibration file read by ``gpuplan memory``: its measured factors replace the defaults (the activation scale
and the overheads, calibrate.apply). Where it was measured elsewhere (another GPU, framework, dtype, layout or step
options: a factor fitted against bf16 gradients read at fp32) jobs.memory.estimate says so first through
jobs.calibration_notice.with_calibration_warning, the notice train, plan and budget give: one mechanism.
Units: none (settings, sections)."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.report.model import Section


def calibrated(inputs, settings, overheads) -> tuple:
    """(core.memory.training.MemorySettings, Overheads, its sections) with ``inputs.calibration``'s factors in place
    of the defaults; unchanged and no section without a calibration. Its recorded step options are checked as train
    and plan read them (calibrate.train_step.check_recorded)."""
    cal = inputs.calibration
    if cal is None:
        return settings, overheads, ()
    from gpuplan.calibrate.apply import apply_to_overheads
    from gpuplan.calibrate.report import calibrated_vs_default_lines
    from gpuplan.calibrate.train_step import check_recorded

    check_recorded(cal.reference.options)
    return (replace(settings, activation_scale=cal.activation_memory.value), apply_to_overheads(cal, overheads),
            (Section("Calibration (measured factors replace the defaults)", calibrated_vs_default_lines(cal)),))

