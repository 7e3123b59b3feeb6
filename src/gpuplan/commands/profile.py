"""`gpuplan profile`: a short real training run (trial) that writes a measurement JSON."""

from typing import Annotated, Optional

import typer

from gpuplan.commands.options import FormatOpt, JsonOpt, OutputFormat, emit


def register(app: typer.Typer) -> None:
    @app.command()
    def profile(
        model: Annotated[str, typer.Argument(help="Catalog name, config.json or a folder holding one.")],
        layers: Annotated[Optional[str], typer.Option(help="Decoder layers (same width). Default: all.")] = None,
        micro_batch: Annotated[Optional[str], typer.Option(help="Sequences per step. Default 1.")] = None,
        seq_len: Annotated[Optional[str], typer.Option(help="Tokens per sequence. Default 1024.")] = None,
        steps: Annotated[Optional[str], typer.Option(help="Timed steps. Default 10.")] = None,
        warmup: Annotated[Optional[str], typer.Option(help="Untimed warm-up steps first. Default 3.")] = None,
        precision: Annotated[Optional[str], typer.Option(help="bf16 (pure), fp32, or fp32-autocast (fp32 params, "
                                                         "bf16 compute). Default bf16.")] = None,
        recompute: Annotated[Optional[str], typer.Option(help="none or full (HF gradient checkpointing).")] = None,
        optimizer: Annotated[Optional[str], typer.Option(help="adamw or sgd (momentum). Default adamw.")] = None,
        device: Annotated[Optional[str], typer.Option(help="cpu, cuda or auto (CUDA when present).")] = None,
        attention: Annotated[Optional[str], typer.Option(help="sdpa or eager. Default sdpa.")] = None,
        peak_tflops: Annotated[Optional[str], typer.Option(help="Dense peak TFLOP/s for MFU (CPU, or a GPU not in "
                                                           "the catalog).")] = None,
        seed: Annotated[Optional[str], typer.Option(help="Random seed (weights, tokens). Default 0.")] = None,
        out: Annotated[str, typer.Option(help="Measurement JSON to write (atomically).")] = "gpuplan-trial.json",
        fmt: FormatOpt = OutputFormat.table,
        as_json: JsonOpt = False,
    ) -> None:
        """Train MODEL briefly on synthetic tokens (random weights, nothing downloaded) and record
        step time, tokens/s, MFU/HFU and peak memory beside gpuplan's estimate. Needs the profile
        extra. Several GPUs: torchrun --nproc-per-node N -m gpuplan.profile.trial MODEL ..."""
        from gpuplan.profile.trial import run_trial
        from gpuplan.profile.trial_plan import trial_settings_from_raw
        from gpuplan.profile.trial_report import trial_report

        raw = {k: v for k, v in locals().items() if k not in ("out", "fmt", "as_json")}
        settings = trial_settings_from_raw(raw)
        data = run_trial(settings, out or None)
        emit(trial_report(data, out or None), fmt, as_json)
