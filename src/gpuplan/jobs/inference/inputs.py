"""Inputs of ``gpuplan infer``: raw values (flags, plan files) -> InferenceInputs, and the
resolution of a request into a Plan (weight format incl. a checkpoint's ``quantization_config``,
KV dtype, load, warnings). Bad values raise InputError naming the field."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpuplan.core import inference as I
from gpuplan.core import kv_cache as K
from gpuplan.core.units import parse_bool, parse_count, parse_fraction
from gpuplan.errors import InputError

GiB = 2**30


@dataclass(frozen=True)
class InferenceInputs:
    """A model, a GPU and a layout, the load (context and concurrent sequences), and how it runs."""

    model: str | None = None
    params: float | str | None = None
    gpu: str = "a100"
    context: int | None = None
    """Tokens per sequence, prompt + output (default: min(4096, the model's maximum))."""
    output_tokens: int | None = None
    """Generated tokens per sequence (default: min(256, context // 2)); the prompt is the rest."""
    batch: int = 1
    """Concurrent sequences decoding together (the target concurrency of the search)."""
    quantization: str = "auto"
    """auto (the model's quantization_config, else its dtype; bare --params: fp16), fp32, bf16,
    fp16, fp8, int8, int4."""
    group_size: int | None = 128
    kv_dtype: str = "auto"
    tp: int = 1
    pp: int = 1
    runtime: I.Runtime = field(default_factory=I.Runtime)
    block_size: int = K.DEFAULT_BLOCK_SIZE
    efficiency: I.Efficiency = field(default_factory=I.Efficiency)
    price_per_gpu_hour: float | None = None
    search: bool = True
    user_set: frozenset[str] = frozenset()
    """Names of the inputs the user gave (marks assumptions as set)."""


INFER_FIELDS = ("model", "params", "gpu", "gpus", "context", "output_tokens", "batch", "concurrency",
                "quantization", "group_size", "kv_dtype", "tp", "pp", "gpu_memory_utilization", "block_size",
                "prefill_tokens", "max_num_seqs", "cuda_graph_gib", "runtime_gib", "comm_buffer_gib",
                "driver_reserved_gib", "bandwidth_efficiency", "compute_efficiency", "allreduce_latency_us",
                "price_per_gpu_hour", "search")
_INT_FIELDS = ("context", "output_tokens", "batch", "tp", "pp", "block_size", "prefill_tokens", "max_num_seqs")
_GIB_FIELDS = {"cuda_graph_gib": "cuda_graphs", "runtime_gib": "non_torch", "comm_buffer_gib": "comm_buffers",
               "driver_reserved_gib": "driver_reserved"}


_TOKEN_FIELDS = ("context", "output_tokens", "prefill_tokens")


def _int(value: Any, field: str) -> int:
    """A positive integer; token counts read K as 1024 the way contexts are named (32K = 32,768,
    128K = 131,072: Llama 3.1's max_position_embeddings), other counts K = 1000."""
    text = str(value).strip()
    if field in _TOKEN_FIELDS and text[-1:] in ("k", "K") and not isinstance(value, int | float):
        value = parse_count(text[:-1], field) * 1024
    number = parse_count(value, field)
    if number != int(number):
        raise InputError(field, value, "must be a positive integer (K/M suffixes allowed: 32K)")
    return int(number)


def _number(value: Any, field: str, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(field, value, f"must be a number between {low:g} and {high:g}") from None
    if not (math.isfinite(number) and low <= number <= high):
        raise InputError(field, value, f"must be between {low:g} and {high:g}")
    return number


def _scaled(triple: tuple[float, float, float], value: float) -> tuple[float, float, float]:
    """A user-set efficiency keeps the default's relative range around it."""
    expected, low, high = triple
    return value, value * low / expected, min(1.0, value * high / expected)


def inference_inputs_from_raw(raw: dict[str, Any]) -> InferenceInputs:
    """Parse raw values ('32K', '0.9', '2') into InferenceInputs. No model -> the article's 7B."""
    f = {k: v for k, v in raw.items() if v is not None and v != ""}
    if "concurrency" in f:
        f.setdefault("batch", f.pop("concurrency"))
    ints = {k: _int(f[k], k) for k in _INT_FIELDS if k in f}
    tp, pp = ints.pop("tp", None), ints.get("pp", 1)
    if "gpus" in f:
        gpus = _int(f["gpus"], "gpus")
        tp = tp or gpus // pp
        if tp * pp != gpus:
            raise InputError("gpus", f["gpus"], f"must equal tp x pp = {tp} x {pp}")
    runtime = I.Runtime(**{name: _number(f[key], key, 0, 64) * GiB for key, name in _GIB_FIELDS.items() if key in f},
                        **({"gpu_memory_utilization": parse_fraction(f["gpu_memory_utilization"],
                                                                     "gpu_memory_utilization")}
                           if "gpu_memory_utilization" in f else {}),
                        **{k: ints.pop(k) for k in ("prefill_tokens", "max_num_seqs") if k in ints})
    eff = I.Efficiency()
    if "bandwidth_efficiency" in f:
        eff = I.Efficiency(_scaled(eff.bandwidth, parse_fraction(f["bandwidth_efficiency"], "bandwidth_efficiency")),
                           eff.compute)
    if "compute_efficiency" in f:
        eff = I.Efficiency(eff.bandwidth, _scaled(eff.compute, parse_fraction(f["compute_efficiency"],
                                                                               "compute_efficiency")))
    if "allreduce_latency_us" in f:
        eff = I.Efficiency(eff.bandwidth, eff.compute,
                           _number(f["allreduce_latency_us"], "allreduce_latency_us", 0, 1e4) * 1e-6)
    model, params = f.get("model"), f.get("params")
    if model is None and params is None:
        params = "7B"
    return InferenceInputs(
        model=model, params=params, gpu=str(f.get("gpu", "a100")), tp=tp or 1, runtime=runtime, efficiency=eff,
        quantization=str(f.get("quantization", "auto")).lower(), kv_dtype=str(f.get("kv_dtype", "auto")).lower(),
        group_size=None if str(f.get("group_size", "")).strip() in ("-1", "none") else
        (_int(f["group_size"], "group_size") if "group_size" in f else 128),
        price_per_gpu_hour=_number(f["price_per_gpu_hour"], "price_per_gpu_hour", 0, 1e4)
        if "price_per_gpu_hour" in f else None,
        search=parse_bool(f.get("search", True), "search"), user_set=frozenset(f), **ints)
