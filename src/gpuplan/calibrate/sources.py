"""Files -> Measurements: trial measurement JSONs and training logs (see adapters/training_logs)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from gpuplan.adapters.log_files import LogFile
from gpuplan.adapters.training_logs import (
    TrainingLog,
    detect_format,
    parse_log,
    summarize,
)
from gpuplan.calibrate.log_checks import (
    check_against_gpu,
    check_layout_given,
    check_step_flops,
    check_log,
    check_rates_agree,
    check_step_time,
    label,
)
from gpuplan.calibrate.measurement import (
    LOG_DEFAULTS,
    LogContext,
    log_framework,
    Measurement,
    measurement_from_trial,
    require,
)
from gpuplan.calibrate.model_match import check_log_trained_model, mfu_peak_conventions
from gpuplan.calibrate.trial_checks import check_trial, check_trial_memory
from gpuplan.errors import InputError


def measurement_from_log(log: TrainingLog, context: LogContext) -> Measurement:
    """A parsed log plus what the flags say about the run, as one Measurement (medians over the
    logged steps after the first; the memory is the largest logged peak)."""
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.core.precision import check_recipe_runs_on

    fmt, source = log.format, log.source
    summary = summarize(check_log(log))
    model = require(context, "model", source, fmt)
    accelerator = resolve_gpu(require(context, "gpu", source, fmt))
    gpu = accelerator.id
    gpus = int(require(context, "gpus", source, fmt))
    seq_len = int(require(context, "seq_len", source, fmt))
    recipe, implementation, zero = LOG_DEFAULTS[fmt]
    recipe = context.recipe or recipe
    check_recipe_runs_on(recipe, accelerator)
    check_against_gpu(log, accelerator, source)
    logged = log.meta.get("global_batch")
    if context.global_batch is not None and logged is not None and context.global_batch != logged:
        raise InputError("global_batch", context.global_batch, f"{source} logs a global batch of {logged} "
                         f"sequences; give --global-batch {logged} or leave it out")
    if summary.tokens_per_s and summary.tokens_per_s / gpus > 1e8:
        raise InputError(label(fmt, "tokens_per_s")[0], summary.tokens_per_s, f"in {source}: over 1e8 tokens/s per "
                         f"GPU on {gpus} GPUs; a real run logs less (check the log and --gpus)")
    dp = max(1, gpus // (context.tp * context.pp * context.cp))
    batch = context.global_batch or logged or context.micro_batch * dp
    step = summary.step_time_s
    notes = []
    if step is None:  # throughput only (torchtitan tps, or a table with tokens/s): time = tokens / rate
        tokens = batch * seq_len
        if summary.tokens_per_s:
            step, rate = tokens / summary.tokens_per_s, "tokens_per_s"
        elif summary.tokens_per_s_per_device:
            step, rate = tokens / (summary.tokens_per_s_per_device * gpus), "tokens_per_s_per_device"
        if step is not None:
            check_step_time(step, source, label(fmt, rate)[0], getattr(summary, rate))
            notes.append(f"step time = {batch} sequences x {seq_len} tokens / logged tokens per second")
    if step is None and summary.memory_bytes is None:
        raise InputError("file", source, "gives neither a step time, a throughput nor a memory peak")
    if step is not None:
        check_step_flops(step, batch * seq_len, gpus, model, accelerator, source)
    dense = accelerator.peak(context.dtype) if accelerator.has_dtype(context.dtype) else None
    unchecked = check_log_trained_model(log, model, seq_len, gpus, batch, context.recompute, dense,
                                        mfu_peak_conventions(accelerator, context.dtype) if dense else ())
    unchecked = "; ".join(text for text in (unchecked, log.meta.get("note", "")) if text)  # hf_steps' note
    check_rates_agree(summary, gpus, batch, seq_len, source, fmt, bool(context.global_batch or logged))
    return check_layout_given(Measurement(
        source=source, kind=fmt, model=model, seq_len=seq_len, world_size=gpus, gpu=gpu, device="cuda",
        tp=context.tp, pp=context.pp, ep=context.ep, zero=zero if context.zero is None else context.zero,
        micro_batch=context.micro_batch, global_batch=batch, recipe=recipe,
        implementation=implementation, dtype=context.dtype, recompute=context.recompute, step_time_s=step,
        step_time_stdev_s=summary.step_time_stdev_s, peak_memory_bytes=summary.memory_bytes,
        memory_kind=summary.memory_kind, memory_after_iteration=log.meta.get("memory_after_iteration"),
        samples=summary.records_used, notes=tuple(notes), unchecked=unchecked,
        framework=log_framework(context.framework, fmt), options=context.options),
        context, accelerator)


def load_measurement(path: str | Path, context: LogContext | None = None, fmt: str | None = None,
                     max_bytes: int | None = None) -> Measurement:
    """One file: a gpuplan trial measurement, or a training log of a supported format. The file
    is read as a stream (adapters/log_files.py): a log is refused from its first lines when it
    is not one, or when a flag it needs is missing, before the rest of it is read."""
    from gpuplan.calibrate.model import KIND as CALIBRATION_KIND
    from gpuplan.profile.measurement_file import is_trial_measurement

    source = str(path)
    with LogFile(path, max_bytes) as log:
        data = _json_document(log) if fmt is None else None
        if is_trial_measurement(data):
            return _trial_measurement(data, source)
        if isinstance(data, dict) and data.get("kind") == CALIBRATION_KIND:
            raise InputError("file", source, "is a calibration file; give measurement files or logs to calibrate, "
                             "and the calibration to train/plan/memory with --calibration")
        fmt = fmt or detect_format(log)
        context = context or LogContext()
        for name in ("model", "gpu", "gpus", "seq_len"):
            require(context, name, source, fmt)
        return measurement_from_log(parse_log(log, fmt), context)


def _json_document(log: LogFile) -> object:
    """A file that opens with ``{`` parsed as one JSON document (at most the JSON limit), or None
    when it is not one (JSON Lines, a log): a trial measurement or a calibration file."""
    from gpuplan.adapters.files import NotJSON, parse_json
    from gpuplan.adapters.log_files import is_json_lines

    if not log.head_text.lstrip().startswith("{") or is_json_lines(log):
        return None
    try:
        return parse_json(log.document(), "file", log.source)
    except NotJSON:
        return None


def _trial_measurement(data: dict, source: str) -> Measurement:
    from gpuplan.profile.measurement_file import validate_measurement

    m = measurement_from_trial(check_trial(validate_measurement(data, source), source), source)
    if m.gpu is not None:
        from gpuplan.adapters.resolve import resolve_gpu

        check_trial_memory(m.peak_memory_bytes, resolve_gpu(m.gpu), source)
    return m


def load_measurements(paths: Iterable[str | Path], context: LogContext | None = None,
                      fmt: str | None = None, max_bytes: int | None = None) -> list[Measurement]:
    """Each file once, all of one model on one kind of device (a fit across them would mix them)."""
    seen: dict[str, str] = {}
    for path in paths:
        key = os.path.realpath(path)
        if key in seen:
            raise InputError("files", str(path), f"given twice (also as {seen[key]!r}); give each file once")
        seen[key] = str(path)
    found = [load_measurement(p, context, fmt, max_bytes) for p in seen.values()]
    if not found:
        raise InputError("files", "none", "at least one measurement file (gpuplan profile --out) or training log")
    _check_each_run_once(found)
    _check_context_read(context, found)
    first = found[0]
    for m in found[1:]:
        for what in ("device", "gpu", "model"):
            if getattr(m, what) != getattr(first, what):
                raise InputError("files", m.source, f"measures {what} {getattr(m, what)!r}, but {first.source} "
                                 f"measures {getattr(first, what)!r}; calibrate one model on one GPU type at a time")
    return found


def _check_each_run_once(found: list[Measurement]) -> None:
    """A copy of a file (another name, the same content) is the same measured run, not a second one: `calibrate m.json
    copy.json` fitted the matmul time alone at 0.895x from '2 measurements, residuals 0' where m.json alone ties it to
    the compute time at 0.950x (hostile wave 29). Two runs whose every field and number are equal are refused."""
    from dataclasses import replace

    seen: dict[str, str] = {}
    for m in found:
        key = repr(replace(m, source="", unchecked=m.unchecked.replace(m.source, "")))  # a log's note names its path
        if key in seen:
            raise InputError("files", m.source, f"is the same measurement as {seen[key]!r} (every field and number "
                             "equal: a copy); give each measured run once")
        seen[key] = m.source


def _check_context_read(context: LogContext | None, found: list[Measurement]) -> None:
    """The flags of a LogContext describe what a training log does not say; a trial measurement records its own model,
    GPU and layout (measurement_from_trial). Given with trial files alone, they were read by nothing: `calibrate
    trial.json --model llama-3-8b` (or --gpu a100, --gpus 64 --tp 8) answered byte for byte as without them (wave 21).
    A flag at its default (LogContext's) is answered as unstated."""
    from dataclasses import fields

    if context is None or any(m.kind != "trial" for m in found):
        return
    default = LogContext()
    given = [(f.name, getattr(context, f.name)) for f in fields(LogContext) if f.name != "options"
             and getattr(context, f.name) != getattr(default, f.name)] + list(context.options)  # options: (name, value)
    if given:
        raise InputError(given[0][0], given[0][1], f"describes a training log's run, and "
                         f"{found[0].source} is a trial measurement that records its own ({found[0].model} on "
                         f"{found[0].gpu or found[0].device}, {found[0].world_size} rank(s)): leave it out")
