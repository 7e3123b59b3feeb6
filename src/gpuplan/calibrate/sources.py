"""Files -> Measurements: trial measurement JSONs and training logs (see adapters/training_logs)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gpuplan.adapters.training_logs import (
    TrainingLog,
    parse_log_text,
    read_text,
    summarize,
)
from gpuplan.calibrate.measurement import (
    LOG_DEFAULTS,
    LogContext,
    Measurement,
    measurement_from_trial,
    require,
)
from gpuplan.errors import InputError


def measurement_from_log(log: TrainingLog, context: LogContext) -> Measurement:
    """A parsed log plus what the flags say about the run, as one Measurement (medians over the
    logged steps after the first; the memory is the largest logged peak)."""
    from gpuplan.adapters.resolve import resolve_gpu

    fmt, source = log.format, log.source
    summary = summarize(log)
    model = require(context, "model", source, fmt)
    gpu = resolve_gpu(require(context, "gpu", source, fmt)).id
    gpus = int(require(context, "gpus", source, fmt))
    seq_len = int(require(context, "seq_len", source, fmt))
    recipe, implementation, zero = LOG_DEFAULTS[fmt]
    dp = max(1, gpus // (context.tp * context.pp))
    batch = context.global_batch or log.meta.get("global_batch") or context.micro_batch * dp
    step = summary.step_time_s
    notes = []
    if step is None:  # throughput only (torchtitan tps, or a table with tokens/s): time = tokens / rate
        tokens = batch * seq_len
        if summary.tokens_per_s:
            step = tokens / summary.tokens_per_s
        elif summary.tokens_per_s_per_device:
            step = tokens / (summary.tokens_per_s_per_device * gpus)
        if step is not None:
            notes.append(f"step time = {batch} sequences x {seq_len} tokens / logged tokens per second")
    if step is None and summary.memory_bytes is None:
        raise InputError("file", source, "gives neither a step time, a throughput nor a memory peak")
    return Measurement(
        source=source, kind=fmt, model=model, seq_len=seq_len, world_size=gpus, gpu=gpu, device="cuda",
        tp=context.tp, pp=context.pp, ep=context.ep, zero=zero if context.zero is None else context.zero,
        micro_batch=context.micro_batch, global_batch=batch, recipe=context.recipe or recipe,
        implementation=implementation, dtype=context.dtype, recompute=context.recompute, step_time_s=step,
        step_time_stdev_s=summary.step_time_stdev_s, peak_memory_bytes=summary.memory_bytes,
        memory_kind=summary.memory_kind, samples=summary.records_used, notes=tuple(notes))


def load_measurement(path: str | Path, context: LogContext | None = None, fmt: str | None = None,
                     max_bytes: int | None = None) -> Measurement:
    """One file: a gpuplan trial measurement, or a training log of a supported format."""
    from gpuplan.calibrate.model import KIND as CALIBRATION_KIND
    from gpuplan.profile.measurement_file import (
        is_trial_measurement,
        validate_measurement,
    )

    from gpuplan.adapters.files import parse_json

    source = str(path)
    text = read_text(path, max_bytes)
    if fmt is None and text.lstrip().startswith("{"):
        try:
            data = parse_json(text, "file", source)
        except InputError:
            data = None
        if is_trial_measurement(data):
            return measurement_from_trial(validate_measurement(data, source), source)
        if isinstance(data, dict) and data.get("kind") == CALIBRATION_KIND:
            raise InputError("file", source, "is a calibration file; give measurement files or logs to calibrate, "
                             "and the calibration to train/plan/memory with --calibration")
    return measurement_from_log(parse_log_text(text, source, fmt), context or LogContext())


def load_measurements(paths: Iterable[str | Path], context: LogContext | None = None,
                      fmt: str | None = None, max_bytes: int | None = None) -> list[Measurement]:
    found = [load_measurement(p, context, fmt, max_bytes) for p in paths]
    if not found:
        raise InputError("files", "none", "at least one measurement file (gpuplan profile --out) or training log")
    return found
