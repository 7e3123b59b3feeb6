"""`gpuplan calibrate`: fit correction factors from trial measurements and training logs."""

from typing import Annotated, Optional

import typer

from gpuplan.commands.options import FormatOpt, JsonOpt, OutputFormat, emit


def register(app: typer.Typer) -> None:
    @app.command()
    def calibrate(
        files: Annotated[Optional[list[str]], typer.Argument(
            help="Measurement JSONs (gpuplan profile) and/or training logs (torchtitan, Megatron-LM, HF Trainer, "
                 "CSV/JSON table).")] = None,
        out: Annotated[Optional[str], typer.Option(help="Write the calibration JSON here (atomically).")] = None,
        model: Annotated[Optional[str], typer.Option(help="Logs: the model (catalog name or config.json).")] = None,
        gpu: Annotated[Optional[str], typer.Option(help="Logs: the accelerator (catalog name).")] = None,
        gpus: Annotated[Optional[str], typer.Option(help="Logs: the world size (GPUs).")] = None,
        tp: Annotated[Optional[str], typer.Option(help="Logs: tensor-parallel degree. Default 1.")] = None,
        pp: Annotated[Optional[str], typer.Option(help="Logs: pipeline-parallel degree. Default 1.")] = None,
        ep: Annotated[Optional[str], typer.Option(help="Logs: expert-parallel degree (MoE). Default 1.")] = None,
        zero: Annotated[Optional[str], typer.Option(help="Logs: ZeRO stage (default by format: torchtitan 3, "
                                                    "others 0).")] = None,
        micro_batch: Annotated[Optional[str], typer.Option(help="Logs: sequences per micro-batch. Default 1.")] = None,
        global_batch: Annotated[Optional[str], typer.Option(help="Logs: sequences per optimizer step (Megatron and "
                                                            "HF logs say it).")] = None,
        seq_len: Annotated[Optional[str], typer.Option(help="Logs: tokens per sequence.")] = None,
        recipe: Annotated[Optional[str], typer.Option(help="Logs: memory recipe (default by format: torchtitan "
                                                      "fsdp2, Megatron megatron, HF amp, table bf16).")] = None,
        recompute: Annotated[Optional[str], typer.Option(help="Logs: none, selective or full. Default none.")] = None,
        dtype: Annotated[Optional[str], typer.Option(help="Logs: matmul dtype (bf16, fp8, ...). Default bf16.")] = None,
        log_format: Annotated[Optional[str], typer.Option(help="torchtitan, megatron, hf-trainer or table "
                                                          "(default: detected).")] = None,
        target_gpus: Annotated[Optional[str], typer.Option(help="Also extrapolate the first GPU measurement to this "
                                                           "many GPUs (weak scaling), default vs calibrated.")] = None,
        fmt: FormatOpt = OutputFormat.table,
        as_json: JsonOpt = False,
    ) -> None:
        """Fit compute, attention, communication and memory factors against gpuplan's own
        predictions for the measured runs; show calibrated vs default and, with --out, save them
        for gpuplan train|plan|memory --calibration FILE."""
        from gpuplan.calibrate import (
            calibration_report,
            extrapolation_lines,
            fit_calibration,
            load_measurements,
            save_calibration,
        )
        from gpuplan.calibrate.inputs import log_context_from_raw, target_gpus_from_raw
        from gpuplan.errors import InputError

        if not files:
            raise InputError("files", "none", "at least one measurement JSON (gpuplan profile --out) or training log")
        context = log_context_from_raw(dict(model=model, gpu=gpu, gpus=gpus, tp=tp, pp=pp, ep=ep, zero=zero,
                                            micro_batch=micro_batch, global_batch=global_batch, seq_len=seq_len,
                                            recipe=recipe, recompute=recompute, dtype=dtype))
        measurements = load_measurements(files, context, log_format)
        cal = fit_calibration(measurements)
        extrapolation = ()
        target = target_gpus_from_raw(target_gpus)
        if target is not None:
            base = next((m for m in measurements if m.gpu and m.step_time_s), None)
            if base is None:
                raise InputError("target-gpus", target, "a measurement on a catalog GPU with a step time")
            extrapolation = extrapolation_lines(cal, base, target)
        if out:
            save_calibration(cal, out)
        emit(calibration_report(cal, out, extrapolation), fmt, as_json)
