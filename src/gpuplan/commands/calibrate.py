"""`gpuplan calibrate`: fit correction factors from trial measurements and training logs."""

import click

HELP = (
    "Fit compute, attention, communication and memory factors against gpuplan's own predictions for the "
    "measured runs; show calibrated vs default and, with --out, save them for gpuplan train|plan|memory "
    "--calibration FILE."
)


def command():
    from gpuplan.commands.build import check_format, emit, format_options, schema_options, with_schema
    from gpuplan.calibrate.schema import CalibrateInputs

    def callback(files, fmt="table", as_json=False, full=False, **flags):
        from gpuplan.calibrate import (
            calibration_report,
            extrapolation_lines,
            fit_calibration,
            load_measurements,
            save_calibration,
        )
        from gpuplan.errors import InputError

        check_format(fmt, as_json)
        inputs = CalibrateInputs.parse({"files": list(files) or None, **flags})
        if not inputs.files:
            raise InputError("files", "none", "at least one measurement JSON (gpuplan profile --out) or training log")
        if inputs.out:
            _check_out(str(inputs.out), inputs.files)  # before any work
        measurements = load_measurements(
            inputs.files, inputs.log_context(), inputs.log_format, inputs.max_log_mib << 20
        )
        cal = fit_calibration(measurements)
        extrapolation = ()
        if inputs.target_gpus is not None:
            base = next((m for m in measurements if m.gpu and m.step_time_s), None)
            if base is None:
                raise InputError("target_gpus", inputs.target_gpus, "a measurement on a catalog GPU with a step time")
            extrapolation = extrapolation_lines(cal, base, inputs.target_gpus)
        if inputs.out:
            save_calibration(cal, inputs.out)
        emit(calibration_report(cal, inputs.out, extrapolation), fmt, as_json, full)

    params = [click.Argument(["files"], nargs=-1)] + schema_options(CalibrateInputs, skip=("files",)) + format_options()
    return with_schema(
        click.Command(
            "calibrate",
            callback=callback,
            params=params,
            help=HELP + "\n\nFILES: " + CalibrateInputs.model_fields["files"].description,
            short_help="Fit correction factors.",
        ),
        CalibrateInputs,
    )


def _check_out(out: str, files) -> None:
    """--out names a new file (not a folder, not one of the inputs) in a writable folder."""
    import os

    from gpuplan.adapters.files import check_writable
    from gpuplan.errors import InputError

    if out.endswith(("/", os.sep)) or (os.altsep and out.endswith(os.altsep)):
        raise InputError("out", out, "ends in a path separator, so names a folder; give a file name (calibration.json)")
    same = next((f for f in files if os.path.realpath(f) == os.path.realpath(out)), None)
    if same is not None:
        raise InputError("out", out, f"is also an input ({same}); write the calibration to another file")
    check_writable(out, suffixes=(".json",))
