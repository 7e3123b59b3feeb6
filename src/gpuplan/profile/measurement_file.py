"""The trial measurement file: schema, atomic write and validated read (stdlib only).

``gpuplan profile`` (and ``python -m gpuplan.profile.trial`` under torchrun) writes one JSON
object; ``gpuplan calibrate`` reads it back. The layout is documented in docs/calibration.md:

    {"schema_version": 1, "kind": "gpuplan.trial", "created": "...Z",
     "environment": {python, torch, transformers, gpuplan, platform, device_type, device_name,
                     device_count, world_size, backend, catalog_gpu, peak_flops, peak_source,
                     device_memory_bytes, cpu_microbenchmarks},
     "config": {"model": ..., "model_source": ..., "hf_config": {...}, "summary": {...},
                "settings": {...}},
     "results": {"step_time_s": {...}, "tokens_per_s": ..., "flops": {...}, "mfu": ..., ...,
                 "memory": {...}, "estimate": {...}}}

A file is written to a temporary name in the target folder and renamed over the target
(``os.replace``, atomic on POSIX and Windows), so a crash or an error never leaves a partial
measurement file behind.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError

SCHEMA_VERSION = 1
KIND = "gpuplan.trial"
_REQUIRED = {
    "environment": ("device_type", "world_size"),
    "config": ("model", "settings"),
    "results": ("step_time_s", "tokens_per_s", "memory"),
}
_REQUIRED_SETTINGS = ("micro_batch", "seq_len", "precision", "recompute", "parallelism")


def is_trial_measurement(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == KIND


def validate_measurement(data: Any, source: str) -> dict:
    """Check a parsed trial measurement; InputError naming the file and the missing part."""
    expected = "a gpuplan trial measurement (schema_version 1, written by `gpuplan profile`)"
    if not is_trial_measurement(data):
        raise InputError("file", source, f"is not {expected}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError("file", source, f"has schema_version {version!r}; this gpuplan reads {SCHEMA_VERSION}")
    for part, keys in _REQUIRED.items():
        block = data.get(part)
        if not isinstance(block, dict):
            raise InputError("file", source, f"has no '{part}' object; expected {expected}")
        missing = [k for k in keys if k not in block]
        if missing:
            raise InputError("file", source, f"'{part}' lacks {', '.join(missing)}; expected {expected}")
    settings = data["config"]["settings"]
    missing = [k for k in _REQUIRED_SETTINGS if k not in settings]
    if missing:
        raise InputError("file", source, f"'config.settings' lacks {', '.join(missing)}")
    step = data["results"]["step_time_s"]
    if not isinstance(step, dict) or not _positive(step.get("median")):
        raise InputError("file", source, "'results.step_time_s.median' must be a positive number of seconds")
    for where, block, key, limit in (("config.settings", settings, "micro_batch", 1 << 30),
                                     ("config.settings", settings, "seq_len", 1 << 24),
                                     ("environment", data["environment"], "world_size", 10_000_000)):
        value = block.get(key)
        if not (_positive(value) and value == int(value) and value <= limit):
            raise InputError("file", source, f"'{where}.{key}' must be a whole number from 1 to {limit:,}, "
                             f"not {value!r}")
    if not _positive(data["results"]["tokens_per_s"]):
        raise InputError("file", source, "'results.tokens_per_s' must be a positive number")
    memory = data["results"]["memory"]
    if not isinstance(memory, dict):
        raise InputError("file", source, "'results.memory' must be an object")
    for key, value in memory.items():
        if key.endswith("_bytes") and value is not None and not _non_negative(value):
            raise InputError("file", source, f"'results.memory.{key}' must be a non-negative number of bytes")
    return data


def read_measurement(path: str | Path) -> dict:
    """Read and validate one trial measurement file."""
    from gpuplan.adapters.files import read_json

    return validate_measurement(read_json(path, "measurement"), str(path))


def _non_negative(value: Any) -> bool:
    if isinstance(value, list):
        return all(_non_negative(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
