"""Resolve a serving request into a Plan: the model and GPU specs, the weight format (incl. a
checkpoint's ``quantization_config``), the KV dtype, the load, and what to warn about."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.core import inference as I
from gpuplan.core import kv_cache as K
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model import ModelSpec
from gpuplan.errors import InputError
from gpuplan.jobs.inference.schema import InferenceInputs


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
    from gpuplan.adapters.resolve import resolve_gpu

    spec = inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    raw = raw_model_config(*inputs.model_params)
    fmt, origin, notes = resolve_format(inputs.quantization, inputs.group_size, spec, raw, gpu)
    kv_dtype = _kv_dtype(inputs.kv_dtype, fmt, spec)
    if inputs.prompt is not None:  # prompt + output make the context
        output = inputs.output_tokens if inputs.output_tokens is not None else 256
        context = inputs.prompt + output
    else:
        context = inputs.context or min(4096, spec.max_position_embeddings)
        output = inputs.output_tokens if inputs.output_tokens is not None else min(256, context // 2)
    if not 1 <= output < context:
        raise InputError("output_tokens", output, f"must be at least 1 and below the context ({context})")
    K.kv_heads_per_gpu(spec.attention, inputs.tp_degree)  # tp vs heads / KV heads: one clear line
    if inputs.pp_degree > spec.num_layers:
        raise InputError("pp", inputs.pp_degree, f"pipeline stages cannot exceed the {spec.num_layers} layers")
    notes += context_notes(spec, raw, context)
    kv_heads = spec.attention.num_kv_heads
    if not spec.attention.is_mla and inputs.tp_degree > kv_heads:
        notes.append(f"tp {inputs.tp_degree} > {kv_heads} KV heads: each KV head is replicated on {inputs.tp_degree // kv_heads} "
                     "GPUs (vLLM), so the cache per GPU stops shrinking")
    if inputs.lora is not None:  # MLA: one clear line before any search
        from gpuplan.core.lora_serving import check_supported

        check_supported(spec)
    setup = I.ServingSetup(fmt, K.KV_DTYPE_BYTES[kv_dtype], inputs.runtime, inputs.efficiency, inputs.block_size,
                           _speculation(inputs, spec, raw), inputs.prefix_hit, inputs.lora, inputs.decode_attention)
    return Plan(spec, gpu, I.param_groups(spec), setup, origin, kv_dtype, context, context - output, output,
                tuple(notes))


def _speculation(inputs: InferenceInputs, spec: ModelSpec, raw: dict[str, Any]):
    """The speculative-decoding setup the inputs name (core/speculative.py), or None."""
    from gpuplan.core.speculative import speculation

    draft = None
    if inputs.draft_model is not None:
        from gpuplan.adapters.resolve import resolve_model

        draft = resolve_model(inputs.draft_model, None)
    if inputs.speculative == "mtp" and not raw.get("num_nextn_predict_layers"):
        raise InputError("speculative", "mtp", f"{spec.name}'s config declares no multi-token-prediction layer "
                         "(num_nextn_predict_layers, as DeepSeek-V3 / R1 do); use eagle, draft or ngram")
    return speculation(inputs.speculative, inputs.spec_tokens, inputs.spec_acceptance, spec, draft)


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
    from gpuplan.adapters.hf_config import text_config
    from gpuplan.adapters.resolve import model_config

    config = model_config(model)[0]
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
    if fmt.compute_dtype == "fp4" and not gpu.has_dtype("fp4"):
        notes.append(f"{gpu.name} has no FP4 tensor cores: {fmt.name} weights are dequantised to bf16 for the "
                     "matmuls (weight-only, as vLLM's Marlin FP4 kernels do); memory as stored")
        fmt = replace(fmt, compute_dtype="bf16")
    if not gpu.has_dtype(fmt.compute_dtype):
        have = ", ".join(k for k, _ in gpu.peak_flops)
        raise InputError("quantization", fmt.name, f"{gpu.name} has no {fmt.compute_dtype} compute path "
                         f"(it has {have}); choose a format it runs, e.g. int4 or {have.split(', ')[-1]}")
    return fmt, origin, notes


ATTENTION_NAMES = ("self_attn", "attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv")
IGNORE_KEYS = ("modules_to_not_convert", "ignore", "exclude_modules", "ignored_layers")


def keeps_attention_16bit(qcfg: dict[str, Any]) -> bool:
    """Whether the checkpoint's ignore list (transformers modules_to_not_convert, compressed-tensors
    ignore, ModelOpt exclude_modules) names the attention projections."""
    listed = []
    for key in IGNORE_KEYS:
        value = qcfg.get(key)
        if isinstance(value, list):
            listed += [str(v).lower() for v in value]
    return any(name in entry for entry in listed for name in ATTENTION_NAMES)


def weight_format_from_hf(qcfg: dict[str, Any]) -> I.WeightFormat:
    """A checkpoint's ``quantization_config`` (transformers / vLLM field names) as a WeightFormat,
    with the layer groups its ignore list keeps in 16-bit."""
    if not isinstance(qcfg, dict):
        raise InputError("quantization_config", qcfg, "expected a mapping")
    fmt = _format_of(qcfg)
    if fmt.quantized == "all" and keeps_attention_16bit(qcfg):
        fmt = replace(fmt, quantized="mlp", name=fmt.name + " (attention bf16)")
    return fmt


def _format_of(qcfg: dict[str, Any]) -> I.WeightFormat:
    method = str(qcfg.get("quant_method", "")).lower()
    if method == "mxfp4":  # transformers integrations/mxfp4.py converts the MoE experts only (gpt-oss)
        return replace(I.MXFP4, quantized="experts")
    if method == "modelopt":  # TensorRT Model Optimizer: quant_algo at the top or under "quantization"
        algo = str(qcfg.get("quant_algo") or (qcfg.get("quantization") or {}).get("quant_algo") or "").upper()
        if algo == "NVFP4":
            return I.NVFP4
        if algo.startswith("FP8"):
            return I.FORMATS["fp8"]
        raise InputError("quantization_config.quant_algo", algo or None, "supported ModelOpt algorithms: NVFP4, FP8")
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
                     "supported: gptq, awq, fp8, bitsandbytes, compressed-tensors, mxfp4, modelopt (NVFP4, FP8); "
                     "or pass --quantization")


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
    if bits == 4 and kind == "float" and weights.get("group_size") == 16:  # compressed-tensors nvfp4 preset
        return I.NVFP4
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
