"""Inputs of ``gpuplan infer``: raw values (flags, plan files) -> InferenceInputs, and the
resolution of a request into a Plan (weight format incl. a checkpoint's ``quantization_config``,
KV dtype, load, warnings). Bad values raise InputError naming the field."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpuplan.core import inference as I
from gpuplan.core import kv_cache as K
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model import ModelSpec
from gpuplan.core.units import parse_bool, parse_count, parse_fraction
from gpuplan.errors import InputError
from gpuplan.inference_estimate import InferenceInputs

GiB = 2**30
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




# ----------------------------------------------------------------------------- resolution
@dataclass(frozen=True)
class Plan:
    """The resolved request: specs, format, load, and what the report should warn about."""

    spec: ModelSpec
    gpu: Accelerator
    groups: I.ParamGroups
    setup: I.ServingSetup
    fmt_origin: str
    kv_dtype: str
    context: int
    prompt: int
    output: int
    notes: tuple[str, ...]

    @property
    def decode_context(self) -> float:
        """Mean cached tokens while generating: prompt + output / 2."""
        return self.prompt + self.output / 2


def resolve_plan(inputs: InferenceInputs) -> Plan:
    """Resolve names, the format and the load; InputError on anything impossible."""
    from gpuplan.resolve import resolve_gpu, resolve_model

    spec = resolve_model(inputs.model, inputs.params)
    gpu = resolve_gpu(inputs.gpu)
    raw = raw_model_config(inputs.model, inputs.params)
    fmt, origin, notes = resolve_format(inputs.quantization, inputs.group_size, spec, raw, gpu)
    kv_dtype = _kv_dtype(inputs.kv_dtype, fmt, spec)
    context = inputs.context or min(4096, spec.max_position_embeddings)
    output = inputs.output_tokens if inputs.output_tokens is not None else min(256, context // 2)
    if not 1 <= output < context:
        raise InputError("output_tokens", output, f"must be at least 1 and below the context ({context})")
    K.kv_heads_per_gpu(spec.attention, inputs.tp)  # tp vs heads / KV heads: one clear line
    if inputs.pp > spec.num_layers:
        raise InputError("pp", inputs.pp, f"pipeline stages cannot exceed the {spec.num_layers} layers")
    notes += context_notes(spec, raw, context)
    kv_heads = spec.attention.num_kv_heads
    if not spec.attention.is_mla and inputs.tp > kv_heads:
        notes.append(f"tp {inputs.tp} > {kv_heads} KV heads: each KV head is replicated on {inputs.tp // kv_heads} "
                     "GPUs (vLLM), so the cache per GPU stops shrinking")
    setup = I.ServingSetup(fmt, K.KV_DTYPE_BYTES[kv_dtype], inputs.runtime, inputs.efficiency, inputs.block_size)
    return Plan(spec, gpu, I.param_groups(spec), setup, origin, kv_dtype, context, context - output, output,
                tuple(notes))


def _kv_dtype(choice: str, fmt: I.WeightFormat, spec: ModelSpec) -> str:
    """'auto' caches in the model's activation dtype (vLLM --kv-cache-dtype auto)."""
    if choice != "auto":
        if choice not in K.KV_DTYPE_BYTES:
            raise InputError("kv_dtype", choice, f"must be auto or one of {', '.join(K.KV_DTYPE_BYTES)}")
        return choice
    if fmt.compute_dtype in ("fp32", "bf16", "fp16"):
        return fmt.compute_dtype
    return "fp16" if spec.dtype == "float16" else "bf16"


def raw_model_config(model: str | None, params: Any) -> dict[str, Any]:
    """The model's own config.json fields (catalog entries keep the trimmed HF config)."""
    if params is not None or not model:
        return {}
    from pathlib import Path

    from gpuplan.adapters.hf_config import load_hf_config, text_config

    path = Path(model)
    if model.endswith(".json") or path.is_dir() or path.is_file():
        config = load_hf_config(path)
    else:
        from gpuplan.catalog import model_entry

        config = model_entry(model)["config"]
    qcfg = config.get("quantization_config")
    merged = dict(text_config(config))
    if qcfg is not None:
        merged["quantization_config"] = qcfg
    return merged


_DTYPE_FORMAT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def resolve_format(choice: str, group_size: int | None, spec: ModelSpec, raw: dict[str, Any],
                   gpu: Accelerator) -> tuple[I.WeightFormat, str, list[str]]:
    """The weight format, where it came from, and notes; InputError if ``gpu`` cannot run it."""
    notes: list[str] = []
    if choice == "auto":
        if "quantization_config" in raw:
            fmt, origin = weight_format_from_hf(raw["quantization_config"]), "the model's quantization_config"
        elif spec.declared_params is not None:
            fmt, origin = I.FORMATS["fp16"], "auto: the article's FP16 for a bare parameter count"
        else:
            fmt, origin = I.FORMATS[_DTYPE_FORMAT.get(spec.dtype, "bf16")], f"auto: the model's dtype {spec.dtype}"
        if not gpu.has_dtype(fmt.compute_dtype) and fmt.compute_dtype == "bf16" and gpu.has_dtype("fp16"):
            notes.append(f"{gpu.name} has no bf16 path: served in fp16, as vLLM casts it")
            fmt, origin = I.FORMATS["fp16"], origin + " (cast to fp16)"
    else:
        fmt, origin = I.weight_format(choice, group_size), "--quantization"
    if not gpu.has_dtype(fmt.compute_dtype):
        have = ", ".join(k for k, _ in gpu.peak_flops)
        raise InputError("quantization", fmt.name, f"{gpu.name} has no {fmt.compute_dtype} compute path "
                         f"(it has {have}); choose a format it runs, e.g. int4 or {have.split(', ')[-1]}")
    return fmt, origin, notes


def weight_format_from_hf(qcfg: dict[str, Any]) -> I.WeightFormat:
    """A checkpoint's ``quantization_config`` (transformers / vLLM field names) as a WeightFormat."""
    if not isinstance(qcfg, dict):
        raise InputError("quantization_config", qcfg, "expected a mapping")
    method = str(qcfg.get("quant_method", "")).lower()
    if method in ("gptq", "awq", "gptq_marlin", "awq_marlin", "marlin"):
        bits = int(qcfg.get("bits") or qcfg.get("w_bit") or 4)
        group = int(qcfg.get("group_size") or qcfg.get("q_group_size") or 128)
        zero = method.startswith("gptq") or bool(qcfg.get("zero_point", True))  # GPTQ always stores qzeros
        return _grouped_int(bits, None if group == -1 else group, zero, f"{method} quantization_config")
    if method == "fp8":
        return I.FORMATS["fp8"]
    if method == "bitsandbytes":
        if qcfg.get("load_in_4bit"):  # NF4: one absmax per 64 weights (fp32, or 8-bit with double quant)
            scale = 8 + 32 / 256 if qcfg.get("bnb_4bit_use_double_quant") else 32
            return I.WeightFormat("nf4", 4, "bf16", 64, int(round(scale)), 0,
                                  source="bitsandbytes NF4, blocksize 64 (Dettmers et al. 2023, QLoRA Sec. 3)")
        return I.WeightFormat("int8-llm.int8", 8, "fp16", source="bitsandbytes LLM.int8 (row-wise scales)")
    if method == "compressed-tensors":
        return _compressed_tensors(qcfg)
    raise InputError("quantization_config.quant_method", method or None,
                     "supported: gptq, awq, fp8, bitsandbytes, compressed-tensors; or pass --quantization")


def _grouped_int(bits: int, group: int | None, zero: bool, origin: str) -> I.WeightFormat:
    if bits not in (2, 3, 4, 8):
        raise InputError("quantization_config.bits", bits, "must be 2, 3, 4 or 8")
    return I.WeightFormat(f"int{bits}" + (f"-g{group}" if group else ""), bits, "fp16", group,
                          16 if group else 0, bits if (zero and group) else 0,
                          source=f"{origin}: {I.INT4_SOURCE.split(':', 1)[1].strip()}")


def _compressed_tensors(qcfg: dict[str, Any]) -> I.WeightFormat:
    groups = qcfg.get("config_groups") or {}
    scheme = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
    weights = scheme.get("weights") or {}
    bits, kind = int(weights.get("num_bits", 8)), str(weights.get("type", "int"))
    if bits == 8 and scheme.get("input_activations"):
        return I.FORMATS["fp8" if kind == "float" else "int8"]
    group = weights.get("group_size") if weights.get("strategy") == "group" else None
    return _grouped_int(bits, group, not weights.get("symmetric", True), "compressed-tensors")


def context_notes(spec: ModelSpec, raw: dict[str, Any], context: int) -> list[str]:
    """Warn when the context exceeds the model's maximum, and say what RoPE scaling would change."""
    limit = spec.max_position_embeddings
    if context <= limit:
        return []
    head = f"context {context:,} exceeds the model's maximum of {limit:,} positions"
    if not spec.rotary:
        return [f"{head}: its learned position table has no rows beyond it and cannot be scaled; "
                "memory and speed are shown as if it ran"]
    rope = raw.get("rope_scaling") or {}
    if rope:
        kind = rope.get("rope_type") or rope.get("type")
        return [f"{head}, already extended by {kind} rope_scaling (factor {rope.get('factor')}); positions "
                "beyond it were never trained: expect quality loss; memory and speed are shown as if it ran"]
    factor = math.ceil(context / limit)
    return [f"{head}: vLLM refuses max_model_len above it unless RoPE scaling is configured (e.g. YaRN "
            f"factor {factor} via rope_scaling in config.json or --hf-overrides); scaling changes no memory or "
            "FLOPs formula here (KV grows linearly, attention FLOPs with the context) but may cost quality"]
