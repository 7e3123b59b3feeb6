"""Build MemoryInputs from raw values (CLI flags, plan files) in one place."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.core.memory import MemorySettings, Overheads
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.units import parse_bool, parse_count, parse_fraction
from gpuplan.errors import InputError
from gpuplan.jobs.memory.estimate import DEFAULT_VERDICT_GPUS, MemoryInputs

GiB = 2**30
LAYOUT_FIELDS = ("dp", "tp", "pp", "vpp", "cp", "ep", "zero", "shard_group", "micro_batch", "global_batch")
SETTING_FIELDS = ("recipe", "optimizer", "implementation", "attention_kernel", "recompute", "finetune")
MEMORY_FIELDS = ("model", "params", "gpu", "gpus", "compare", "seq_len", *LAYOUT_FIELDS, "sequence_parallel",
                 *SETTING_FIELDS, "dropout", "lora_rank", "offload_optimizer", "moe_capacity_factor", "margin",
                 "cuda_context_gib", "comm_buffer_gib", "calibration")


def _int(value: Any, field: str, minimum: int = 1) -> int:
    number = parse_count(value, field) if str(value).strip() not in ("0",) else 0.0
    if number != int(number) or number < minimum:
        raise InputError(field, value, f"must be an integer >= {minimum}")
    return int(number)


def _float(value: Any, field: str, low: float, high: float) -> float:
    try:
        number = float(str(value).rstrip("%")) / (100 if str(value).endswith("%") else 1)
    except ValueError:
        raise InputError(field, value, f"must be a number between {low} and {high}") from None
    if not low <= number <= high:
        raise InputError(field, value, f"must be between {low} and {high}")
    return number




def memory_inputs_from_raw(raw: dict[str, Any]) -> MemoryInputs:
    """Parse raw values into MemoryInputs. Missing model -> the article's bare 7B."""
    f = {k: v for k, v in raw.items() if v is not None and v != ""}
    layout = ParallelLayout(**{k: _int(f[k], k, 0 if k == "zero" else 1) for k in LAYOUT_FIELDS if k in f},
                            sequence_parallel=parse_bool(f.get("sequence_parallel", True), "sequence_parallel"))
    if "zero" not in f:  # the same default as `gpuplan train`: ZeRO-1 (distributed optimizer) when data-parallel
        data_parallel = (layout.dp > 1 or _int(f.get("gpus", 1), "gpus") > layout.tp * layout.pp * layout.cp)
        layout = replace(layout, zero=1 if data_parallel else 0)
    settings = MemorySettings(
        seq_len=_int(f.get("seq_len", 4096), "seq_len"),
        dropout=_float(f["dropout"], "dropout", 0, 0.99) if "dropout" in f else None,
        lora_rank=_int(f.get("lora_rank", 16), "lora_rank"),
        offload_optimizer=parse_bool(f.get("offload_optimizer", False), "offload_optimizer"),
        moe_capacity_factor=_float(f.get("moe_capacity_factor", 1.0), "moe_capacity_factor", 1.0, 16.0),
        **{k: str(f[k]) for k in SETTING_FIELDS if k in f},
        **({} if "recipe" in f else {"recipe": "mixed"}))
    overheads = Overheads(
        margin=parse_fraction(f["margin"], "margin") if "margin" in f and str(f["margin"]) not in ("0", "0%")
        else (0.0 if "margin" in f else Overheads().margin),
        cuda_context=_float(f.get("cuda_context_gib", 0.5), "cuda_context_gib", 0, 64) * GiB,
        comm_per_group=_float(f.get("comm_buffer_gib", 0.75), "comm_buffer_gib", 0, 64) * GiB)
    compare = tuple(x.strip() for x in str(f["compare"]).split(",") if x.strip()) if "compare" in f \
        else DEFAULT_VERDICT_GPUS
    model, params = f.get("model"), f.get("params")
    if model is None and params is None:
        params = "7B"
    calibration = None
    if "calibration" in f:
        from gpuplan.calibrate.model import load_calibration

        calibration = load_calibration(str(f["calibration"]))
    return MemoryInputs(model=model, params=params, calibration=calibration, gpu=str(f.get("gpu", "a100")), compare_gpus=compare,
                        gpus=_int(f["gpus"], "gpus") if "gpus" in f else None,
                        layout=layout, settings=settings, overheads=overheads)
