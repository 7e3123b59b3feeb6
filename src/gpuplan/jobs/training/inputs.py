"""Build TrainingInputs from raw strings (CLI flags, plan files, web forms) in one place."""

from __future__ import annotations

from typing import Any

from gpuplan.core.units import (
    SECONDS_PER_DAY,
    parse_allowance,
    parse_count,
    parse_duration,
    parse_fraction,
)
from gpuplan.errors import InputError
from gpuplan.jobs.training.estimate import TrainingInputs

# Built-in defaults: the article's example (7B, 2T tokens, A100, 7 days, 40% MFU).
BUILTIN_DEFAULTS = {"params": "7B", "tokens": "2T", "gpu": "a100", "days": "7d"}

TRAIN_FIELDS = ("model", "params", "tokens", "gpu", "gpus", "days", "mfu", "dtype", "flops_method",
                "seq_len", "attention", "recompute", "comm_allowance", "contingency", "recipe", "zero",
                "micro_batch", "tp", "pp", "calibration")


def training_inputs_from_raw(raw: dict[str, Any]) -> tuple[TrainingInputs, list[str]]:
    """Parse raw values ('2T', '7d', '40%') into TrainingInputs; fill built-in defaults.

    Returns the inputs and the names of the built-in defaults that were used.
    """
    fields = {k: v for k, v in raw.items() if v is not None and v != ""}
    used = []
    if "model" not in fields and "params" not in fields:
        fields["params"] = BUILTIN_DEFAULTS["params"]
        used.append("params=7B")
    for key in ("tokens", "gpu"):
        if key not in fields:
            fields[key] = BUILTIN_DEFAULTS[key]
            used.append(f"{key}={BUILTIN_DEFAULTS[key]}")
    if "gpus" not in fields and "days" not in fields:
        fields["days"] = BUILTIN_DEFAULTS["days"]
        used.append("days=7")
    out: dict[str, Any] = {k: str(fields[k]) for k in ("model", "gpu", "dtype", "flops_method", "attention",
                                                   "recompute", "recipe") if k in fields}
    if "zero" in fields:
        zero = str(fields["zero"]).strip()
        if zero not in ("0", "1", "2", "3"):
            raise InputError("zero", fields["zero"], "must be 0, 1, 2 or 3")
        out["zero"] = int(zero)
    for key in ("micro_batch", "tp", "pp"):
        if key in fields:
            value = parse_count(fields[key], key)
            if value != int(value):
                raise InputError(key, fields[key], "must be a whole number >= 1")
            out[key] = int(value)
    out["tokens"] = parse_count(fields["tokens"], "tokens")
    if "params" in fields:
        out["params"] = parse_count(fields["params"], "params")
    if "gpus" in fields:
        out["gpus"] = parse_count(fields["gpus"], "gpus")
    if "days" in fields:
        out["days"] = parse_duration(fields["days"], "days") / SECONDS_PER_DAY
    if "mfu" in fields:
        if str(fields["mfu"]).strip().lower() == "predicted":
            out["predict_mfu"] = True
        else:
            try:
                out["mfu"] = parse_fraction(fields["mfu"], "mfu")
            except InputError:
                raise InputError("mfu", fields["mfu"], "expected a fraction such as 0.4 or 40%, or 'predicted'") \
                    from None
    if "seq_len" in fields:
        out["seq_len"] = int(parse_count(fields["seq_len"], "seq_len"))
    for key in ("comm_allowance", "contingency"):
        if key in fields:
            out[key] = parse_allowance(fields[key], key)
    if "calibration" in fields:
        from gpuplan.calibrate.model import load_calibration

        out["calibration"] = load_calibration(str(fields["calibration"]))
    return TrainingInputs(**out), used
