"""Raw values (flags, plan-file fields) -> PlanInputs."""

from __future__ import annotations

PLAN_FIELDS = ("model", "params", "tokens", "gpu", "gpus", "days", "global_batch_tokens", "seq_len", "recipe",
               "implementation", "dtype", "rank_by", "top", "price_per_gpu_hour", "margin", "gpus_per_node",
               "nic_gbit_per_gpu", "dp_overlap", "tp_overlap", "attention_efficiency", "calibration")


def parse_gpu_counts(text: str) -> tuple:
    """'1024' -> (1024,), '512-4096' -> powers of two in range, '256,512,1024' -> those."""
    from gpuplan.core.units import parse_count
    from gpuplan.errors import InputError

    text = str(text).strip()
    if "-" in text and not text.startswith("-"):
        low, high = (int(parse_count(x, "gpus")) for x in text.split("-", 1))
        if low > high:
            raise InputError("gpus", text, "a range low-high with low <= high, e.g. 512-4096")
        counts = tuple(c for c in (2**k for k in range(0, 21)) if low <= c <= high) or (low,)
        return counts
    values = tuple(parse_count(x, "gpus") for x in text.split(","))
    if any(v != int(v) for v in values):
        raise InputError("gpus", text, "whole GPU counts, e.g. 1024 or 256,512 or 512-4096")
    return tuple(int(v) for v in values)


def plan_inputs_from_raw(raw: dict):
    from gpuplan.core.memory import Overheads
    from gpuplan.core.units import (
        SECONDS_PER_DAY,
        parse_count,
        parse_duration,
        parse_fraction,
    )
    from gpuplan.jobs.plan.search import PlanInputs

    f = {k: v for k, v in raw.items() if v is not None and v != ""}
    kw = {k: str(f[k]) for k in ("model", "gpu", "recipe", "implementation", "dtype", "rank_by") if k in f}
    if "params" in f:
        kw["params"] = parse_count(f["params"], "params")
    if "model" not in kw and "params" not in kw:
        kw["params"] = 7e9
    kw["tokens"] = parse_count(f.get("tokens", "2T"), "tokens")
    if "gpus" in f:
        kw["gpu_counts"] = parse_gpu_counts(f["gpus"])
    if "days" in f:
        kw["days"] = parse_duration(f["days"], "days") / SECONDS_PER_DAY
    for key in ("global_batch_tokens", "price_per_gpu_hour"):
        if key in f:
            kw[key] = parse_count(f[key], key)
    for key in ("seq_len", "top"):
        if key in f:
            kw[key] = int(parse_count(f[key], key))
    if "margin" in f:
        kw["overheads"] = Overheads(margin=parse_fraction(f["margin"], "margin"))
    if "gpus_per_node" in f:
        kw["gpus_per_node"] = int(parse_count(f["gpus_per_node"], "gpus_per_node"))
    if "nic_gbit_per_gpu" in f:
        kw["nic_gbit_per_gpu"] = parse_count(f["nic_gbit_per_gpu"], "nic_gbit_per_gpu")
    step = {k: parse_fraction(f[k], k) for k in ("dp_overlap", "tp_overlap", "attention_efficiency") if k in f}
    if step:
        from gpuplan.core.step import StepSettings

        kw["step"] = StepSettings(**step)
    if "calibration" in f:
        from gpuplan.calibrate.model import load_calibration

        kw["calibration"] = load_calibration(str(f["calibration"]))
    return PlanInputs(**kw)
