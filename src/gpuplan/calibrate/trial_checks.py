"""A trial measurement file's fields, typed and within what a real trial can measure.

gpuplan.profile.measurement_file.validate_measurement checks the layout (the parts and keys that
must be there); this checks what calibrate reads from them, so a mistyped or absurd field is one
InputError naming the file and the field, never a crash or a silent default.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import InputError

MAX_MICRO_BATCH = 65_536
MAX_TOKENS_PER_MICRO_BATCH = 1 << 22
"""Tokens per micro-batch per device: above it the logits alone (tokens x vocabulary x 2 bytes)
outgrow any accelerator's memory."""
STEP_SECONDS = (1e-4, 1e6)
MAX_BYTES = 1e14
# settings field -> the values a trial writes (gpuplan.profile.trial_plan; 'adam' from older files)
CHOICES = {"precision": ("bf16", "fp32", "fp32-autocast"), "recompute": ("none", "full"),
           "parallelism": ("none", "fsdp2", "ddp"), "optimizer": ("adamw", "adam", "sgd")}


def check_trial(data: dict, source: str) -> dict:
    """``data`` (already through validate_measurement) when every field calibrate reads is sane."""
    env, config, results = data["environment"], data["config"], data["results"]
    settings = config["settings"]

    def refuse(where: str, value: Any, why: str) -> None:
        raise InputError(where, value, f"in {source}: {why}")

    if isinstance(data["schema_version"], bool):
        refuse("schema_version", data["schema_version"], "must be the number 1")
    if env["device_type"] not in ("cuda", "cpu"):
        refuse("environment.device_type", env["device_type"], "must be 'cuda' or 'cpu'")
    if env.get("catalog_gpu") is not None and not isinstance(env["catalog_gpu"], str):
        refuse("environment.catalog_gpu", env["catalog_gpu"], "must be a GPU's catalog id (text) or null")
    bench = env.get("cpu_microbenchmarks")
    if bench is not None and not isinstance(bench, dict):
        refuse("environment.cpu_microbenchmarks", bench, "must be an object (matmul_flops_per_s, copy_bytes_per_s)")
    for key in ("matmul_flops_per_s", "copy_bytes_per_s"):
        value = (bench or {}).get(key)
        if value is not None and not _within(value, 0.0, 1e18, open_low=True):
            refuse(f"environment.cpu_microbenchmarks.{key}", value, "must be a positive, finite number")
    if not isinstance(config["model"], str) or not config["model"].strip():
        refuse("config.model", config["model"], "must be the model's name or config.json path (text)")
    for key, allowed in CHOICES.items():
        if key in settings and settings[key] not in allowed:
            value = settings[key]
            shown = value if isinstance(value, str | int | float | None) else f"a {type(value).__name__}"
            refuse(f"config.settings.{key}", shown, f"must be one of {', '.join(allowed)}")
    if "steps" in settings and not _whole(settings["steps"], 1, 10**9):
        refuse("config.settings.steps", settings["steps"], "must be a whole number from 1 to 1,000,000,000")
    micro, seq = settings["micro_batch"], settings["seq_len"]
    if micro > MAX_MICRO_BATCH:
        refuse("config.settings.micro_batch", micro, f"must be at most {MAX_MICRO_BATCH:,} sequences")
    if micro * seq > MAX_TOKENS_PER_MICRO_BATCH:
        refuse("config.settings.seq_len", seq, f"x micro_batch {micro} = {micro * seq:,} tokens per micro-batch; a "
               f"real trial runs at most {MAX_TOKENS_PER_MICRO_BATCH:,} (the logits alone would fill any device)")
    step = results["step_time_s"]
    if not _within(step["median"], *STEP_SECONDS):
        refuse("results.step_time_s.median", step["median"], f"a real step takes {STEP_SECONDS[0]:g} to "
               f"{STEP_SECONDS[1]:g} s")
    if step.get("stdev") is not None and not _within(step["stdev"], 0.0, STEP_SECONDS[1]):
        refuse("results.step_time_s.stdev", step["stdev"], "must be a non-negative number of seconds, or null")
    peak = results["memory"].get("peak_allocated_bytes")
    if peak is not None and not _within(peak, 0.0, MAX_BYTES, open_low=True):
        refuse("results.memory.peak_allocated_bytes", peak, f"must be a positive number of bytes up to {MAX_BYTES:g}")
    return data


def check_trial_memory(peak: float | None, gpu: Any, source: str) -> None:
    """A GPU trial's peak within its GPU's capacity."""
    if peak is not None and gpu is not None and peak > gpu.memory_bytes:
        raise InputError("results.memory.peak_allocated_bytes", peak, f"in {source}: above the capacity of the "
                         f"{gpu.name}, {gpu.memory_bytes:,.0f} bytes; check environment.catalog_gpu")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _within(value: Any, low: float, high: float, open_low: bool = False) -> bool:
    return _number(value) and (low < value if open_low else low <= value) and value <= high


def _whole(value: Any, low: int, high: int) -> bool:
    return _within(value, low, high) and value == int(value)
