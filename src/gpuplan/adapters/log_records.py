"""What a training log says, as gpuplan reads it: one record per logged step, the log with its
run-level facts, and the medians a calibration uses (stdlib and gpuplan.errors only; the parsers are in
adapters.training_logs, the readers in adapters.log_files)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from gpuplan.errors import InputError, whole_or

GiB = 2**30
MiB = 2**20


def check_reserved(allocated: float, reserved: float, names: tuple[str, str], source: str, where: str,
                   unit: float = 1) -> None:
    """Refuse a reserved peak below the allocated one (the same unit: the log's, or bytes with ``unit`` the log's
    unit in bytes, quoted in the log's unit): PyTorch's caching allocator reserves every byte it hands out, so
    torch.cuda.max_memory_reserved() >= max_memory_allocated() (torch/cuda/memory.py: 'reserved' = allocated +
    cached); a log saying otherwise swapped its columns or units (hostile w25)."""
    if reserved < allocated:
        allocated, reserved = allocated / unit, reserved / unit  # as logged: a power of two is an exact divisor
        raise InputError(names[1], whole_or(reserved), f"in {source}{where}: below {names[0]} {allocated:g}; PyTorch reserves "
                         "every allocated byte (reserved = allocated + cached), so the reserved peak is at least the "
                         "allocated one: check the columns and their units")


@dataclass(frozen=True)
class LogRecord:
    """One logged step (or interval ending at ``step``); None where the log does not say."""

    step: int
    step_time_s: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_device: float | None = None
    tflops_per_device: float | None = None
    mfu: float | None = None
    memory_bytes: float | None = None
    memory_kind: str | None = None
    loss: float | None = None


@dataclass(frozen=True)
class TrainingLog:
    source: str
    format: str
    records: tuple[LogRecord, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    """Run-level facts read from the log (global batch, samples per step, memory report ...)."""


@dataclass(frozen=True)
class LogSummary:
    """Medians over the records after the first ``skipped`` (warm-up / compilation)."""

    records_used: int
    skipped: int
    step_time_s: float | None
    step_time_stdev_s: float | None
    tokens_per_s: float | None
    tokens_per_s_per_device: float | None
    tflops_per_device: float | None
    mfu: float | None
    memory_bytes: float | None
    memory_kind: str | None


def summarize(log: TrainingLog, skip_first: int = 1) -> LogSummary:
    """Medians over the records, skipping the first ``skip_first`` (warm-up, compilation) when
    more than that many remain; memory is the largest logged peak."""
    records = list(log.records)
    skipped = skip_first if len(records) > skip_first else 0
    used = records[skipped:]

    def median(name: str) -> float | None:
        values = [getattr(r, name) for r in used if getattr(r, name) is not None]
        return statistics.median(values) if values else None

    times = [r.step_time_s for r in used if r.step_time_s is not None]
    memories = [(r.memory_bytes, r.memory_kind) for r in records if r.memory_bytes is not None]
    memory, kind = max(memories) if memories else (log.meta.get("memory_bytes"), log.meta.get("memory_kind"))
    return LogSummary(
        records_used=len(used), skipped=skipped, step_time_s=median("step_time_s"),
        step_time_stdev_s=statistics.stdev(times) if len(times) > 1 else None,
        tokens_per_s=median("tokens_per_s"), tokens_per_s_per_device=median("tokens_per_s_per_device"),
        tflops_per_device=median("tflops_per_device"), mfu=median("mfu"), memory_bytes=memory, memory_kind=kind)
