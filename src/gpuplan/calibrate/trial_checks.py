"""A trial measurement file's fields, typed and within what a real trial can measure.

gpuplan.profile.measurement_file.validate_measurement checks the layout (the parts and keys that
must be there); this checks what calibrate reads from them, so a mistyped or absurd field is one
InputError naming the file and the field, never a crash or a silent default.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import InputError
from gpuplan.schema.vocabulary import MAX_DEGREE

MAX_MICRO_BATCH = 65_536
MAX_TOKENS_PER_MICRO_BATCH = 1 << 22
"""Tokens per micro-batch per device: above it the logits alone (tokens x vocabulary x 2 bytes)
outgrow any accelerator's memory."""
STEP_SECONDS = (1e-4, 1e6)
MAX_BYTES = 1e14
# settings field -> the values a trial writes (gpuplan.profile.trial_plan; 'adam' from older files)
CHOICES = {"precision": ("bf16", "fp32", "fp32-autocast"), "recompute": ("none", "full"),
           "parallelism": ("none", "fsdp2", "ddp"), "optimizer": ("adamw", "adam", "sgd")}
# settings a trial writes that older files may lack or leave null (read as sdpa / foreach): any other value was
# read as written ('banana' calibrated as an attention kernel); gpuplan.profile.trial_plan ATTENTIONS, OPTIMIZER_IMPLS
OPTIONAL_CHOICES = {"attention": ("sdpa", "eager"), "optimizer_impl": ("foreach", "fused", "forloop")}
MAX_LORA_RANK = MAX_DEGREE
"""--lora-rank's bound (schema.vocabulary.LoraRank is a Degree)."""


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
    for key, allowed in (*CHOICES.items(), *OPTIONAL_CHOICES.items()):
        if key in settings and settings[key] not in allowed and (key in CHOICES or settings[key] is not None):
            value = settings[key]
            shown = value if isinstance(value, str | int | float | None) else f"a {type(value).__name__}"
            refuse(f"config.settings.{key}", shown, f"must be one of {', '.join(allowed)}"
                   + ("" if key in CHOICES else ", or null"))
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
    check_fields(data, source)
    from gpuplan.calibrate.model_match import check_model_matches_config

    check_model_matches_config(config, source)
    return data


Rule = tuple  # (test of a present, non-null value, what it must be)


def _positive(high: float) -> Rule:
    return (lambda v: _within(v, 0.0, high, open_low=True), f"a positive, finite number up to {high:g}")


def _counted(low: int, high: int) -> Rule:
    return (lambda v: _whole(v, low, high), f"a whole number from {low:,} to {high:,}")


TEXT: Rule = (lambda v: isinstance(v, str), "text")
MAPPING: Rule = (lambda v: isinstance(v, dict), "an object")
FLAG: Rule = (lambda v: isinstance(v, bool), "true or false")
FRACTION: Rule = (lambda v: _within(v, 0.0, 1.0), "a fraction from 0 to 1")
FINITE: Rule = (lambda v: _number(v), "a finite number")
DIMENSION = _counted(1, 1 << 30)
FIELDS: dict[str, Rule] = {
    # one row per field a trial writes (gpuplan.profile.trial); null is accepted for each, a
    # missing field is not checked, fields not listed are left alone (later versions add some).
    # A parent comes before its children, so `config.summary: 5` is named as such.
    "created": TEXT, "environment.python": TEXT, "environment.torch": TEXT, "environment.transformers": TEXT,
    "environment.gpuplan": TEXT, "environment.platform": TEXT, "environment.device_name": TEXT,
    "environment.backend": TEXT, "environment.parallelism": TEXT, "environment.peak_dtype": TEXT,
    "environment.peak_source": TEXT, "environment.device_count": _counted(1, 1 << 20),
    "environment.cpu_threads": _counted(1, 1 << 20), "environment.device_memory_bytes": _positive(MAX_BYTES),
    "environment.peak_flops": _positive(1e18), "environment.planned_memory": MAPPING,
    "config.model_source": TEXT, "config.config_num_layers": _counted(1, 1 << 20), "config.hf_config": MAPPING,
    "config.summary": MAPPING, "config.summary.model_type": TEXT,
    **{f"config.summary.{k}": DIMENSION for k in ("hidden_size", "intermediate_size", "num_attention_heads",
                                                  "num_key_value_heads", "num_hidden_layers", "vocab_size")},
    "config.summary.num_params": _positive(1e16), "config.settings.model": TEXT,
    "config.settings.layers": _counted(1, 1 << 20), "config.settings.warmup": _counted(0, 10**9),
    "config.settings.peak_tflops": _positive(1e6), "config.settings.seed": _counted(0, 2**64),
    "config.settings.world_size": _counted(1, 10_000_000), "config.settings.device": TEXT,
    "config.settings.lora_rank": _counted(1, MAX_LORA_RANK),  # null: full fine-tuning
    "config.settings.loop": TEXT, "config.settings.foreach": FLAG,
    "results.tokens_per_step": _positive(1e15), "results.tokens_per_s_per_device": _positive(1e8),
    "results.flops": MAPPING, "results.flops.definition": TEXT,
    **{f"results.flops.{k}_flops_per_token": _positive(1e18) for k in ("model", "hardware", "six_n")},
    "results.achieved_tflops_per_device": (lambda v: _within(v, 0.0, 1e6), "a number of TFLOP/s from 0 to 1e6"),
    "results.mfu": FRACTION, "results.hfu": FRACTION, "results.mfu_note": TEXT,
    "results.loss": MAPPING, "results.loss.first": FINITE, "results.loss.last": FINITE,
    "results.memory.method": TEXT, "results.memory.summary": TEXT, "results.estimate": MAPPING,
}


def check_fields(data: dict, source: str) -> None:
    """Each field of FIELDS that is present and not null is of its type and within its range
    (a peak of -1e12 FLOP/s or `config.summary: 5` was accepted and calibrated with before)."""
    for path, (ok, what) in FIELDS.items():
        value = _lookup(data, path)
        if value is not _ABSENT and value is not None and not ok(value):
            shown = value if isinstance(value, str | int | float) else f"a {type(value).__name__}"
            raise InputError(path, shown, f"in {source}: must be {what}, or null")


_ABSENT = object()


def _lookup(data: dict, path: str) -> Any:
    """The value at a dotted ``path``; _ABSENT when a part is missing or its parent is no object
    (the parent's own row names that)."""
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return _ABSENT
        data = data[key]
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
