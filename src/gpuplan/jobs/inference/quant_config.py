"""A checkpoint's ``quantization_config`` (transformers / vLLM field names) read as a WeightFormat.

Every field that is read is checked first: a value of the wrong type, a width or group size the
format does not define, or a list that is not a list of module names is refused in one line
naming the field (``quantization_config.bits``), never read as a default. A key that is absent
takes the format's default (GPTQ / AWQ: 4 bits, group 128). Where each rule comes from:

* GPTQ widths 2, 3, 4, 8 (vLLM ``gptq.py``: "only 2/3/4/8-bit weight quantization is supported");
  GPTQ-Marlin 4, 8 (vLLM ``gptq_marlin.py`` TYPE_MAP); AWQ, AWQ-Marlin and Marlin 4 (vLLM
  ``awq.py``: "only 4-bit weight quantization is supported for AWQ"). group_size: weights per
  group, or -1 for one scale per output channel (transformers GPTQConfig).
* compressed-tensors ``QuantizationArgs``: type int | float, strategy tensor | channel | group |
  block | token | tensor_group | attn_head, group_size > 0 for strategy group and -1 for
  channel (its validate_group), symmetric true | false.
* fp8 (transformers FineGrainedFP8Config, vLLM Fp8Config): activation_scheme static | dynamic;
  weight_block_size two dimensions, each the tile of vLLM's Triton block-FP8 matmul
  (``BLOCK_SIZE_N, BLOCK_SIZE_K = weight_block_size``: tl.arange needs a power of two, tl.dot at
  least 16); fmt an FP8 element format (DeepSeek-V3 writes "e4m3").
* bitsandbytes (transformers BitsAndBytesConfig): load_in_4bit / load_in_8bit are booleans and
  not both true; bnb_4bit_quant_type nf4 | fp4.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.adapters.quant_fields import (
    GROUPED_BITS,
    IGNORE_KEYS,
    group_size,
    listing,
    weight_block,
    whole_number,
)
from gpuplan.core.serving import weights as W
from gpuplan.errors import InputError

QC = "quantization_config"
CT_STRATEGIES = ("tensor", "channel", "group", "block", "token", "tensor_group", "attn_head")
CT_BITS = {"int": (2, 3, 4, 8), "float": (4, 8)}
FP8_ELEMENT_FORMATS = ("e4m3", "e5m2", "hybrid")
"""OCP FP8 element formats; 'hybrid' is Transformer Engine's recipe name (E4M3 weights)."""
METHODS = "gptq, awq, fp8, bitsandbytes, compressed-tensors, mxfp4, modelopt (NVFP4, FP8)"

ATTENTION_NAMES = ("self_attn", "attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj", "qkv")


def _field(*path: str) -> str:
    return ".".join((QC, *path))


def _label(key: Any) -> str:
    """A config_groups key as it may appear in a field name (short, printable)."""
    text = str(key)
    return text if len(text) <= 40 and text.isprintable() else "<group>"


def _flag(mapping: dict[str, Any], key: str, default: bool | None, *path: str) -> bool | None:
    """A boolean field (null = not set); text such as "false" is refused, not read as true."""
    value = mapping.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(_field(*path, key), value, "must be true or false")
    return value


def _first_key(qcfg: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if k in qcfg), None)


def ignore_list(qcfg: dict[str, Any], key: str) -> list[str]:
    """A checkpoint's ignore list: absent / null = empty; else a list of module names (text)."""
    value = qcfg.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(_field(key), value, "must be a list of module names (text)")
    return value


def keeps_attention_16bit(qcfg: dict[str, Any]) -> bool:
    """Whether the checkpoint's ignore list (transformers modules_to_not_convert, compressed-tensors
    ignore, ModelOpt exclude_modules, vLLM fp8 ignored_layers) names the attention projections."""
    listed = [entry.lower() for key in IGNORE_KEYS for entry in ignore_list(qcfg, key)]
    return any(name in entry for entry in listed for name in ATTENTION_NAMES)


def weight_format_from_hf(qcfg: Any) -> W.WeightFormat:
    """A checkpoint's ``quantization_config`` as a WeightFormat, with the layer groups its ignore
    list keeps in 16-bit; InputError naming the field for anything it cannot read."""
    if not isinstance(qcfg, dict):
        raise InputError(QC, qcfg, "expected a mapping")
    keeps_attention = keeps_attention_16bit(qcfg)  # checks the ignore lists' types too
    fmt = format_of(qcfg)
    if fmt.quantized == "all" and keeps_attention:
        fmt = replace(fmt, quantized="mlp", name=fmt.name + " (attention bf16)")
    return fmt


def format_of(qcfg: dict[str, Any]) -> W.WeightFormat:
    method = qcfg.get("quant_method")
    if not isinstance(method, str) or not method.strip():
        raise InputError(_field("quant_method"), method, f"supported: {METHODS}; or pass --quantization")
    method = method.strip().lower()
    if method == "mxfp4":  # transformers integrations/mxfp4.py converts the MoE experts only (gpt-oss)
        return replace(W.MXFP4, quantized="experts")
    if method == "modelopt":
        return _modelopt(qcfg)
    if method in GROUPED_BITS:
        return _gptq_awq(qcfg, method)
    if method == "fp8":
        return _fp8(qcfg)
    if method == "bitsandbytes":
        return _bitsandbytes(qcfg)
    if method == "compressed-tensors":
        return _compressed_tensors(qcfg)
    raise InputError(_field("quant_method"), method, f"supported: {METHODS}; or pass --quantization")


def _modelopt(qcfg: dict[str, Any]) -> W.WeightFormat:
    """TensorRT Model Optimizer: quant_algo at the top or under "quantization"."""
    nested = qcfg.get("quantization")
    if nested is not None and not isinstance(nested, dict):
        raise InputError(_field("quantization"), nested, "expected a mapping with quant_algo (ModelOpt)")
    algo = qcfg.get("quant_algo")
    if algo is None and nested is not None:
        algo = nested.get("quant_algo")
    if algo is not None and not isinstance(algo, str):
        raise InputError(_field("quant_algo"), algo, "supported ModelOpt algorithms: NVFP4, FP8")
    algo = (algo or "").strip().upper()
    if algo == "NVFP4":
        return W.NVFP4
    if algo.startswith("FP8"):
        return W.FORMATS["fp8"]
    raise InputError(_field("quant_algo"), algo or None, "supported ModelOpt algorithms: NVFP4, FP8")


def _gptq_awq(qcfg: dict[str, Any], method: str) -> W.WeightFormat:
    awq = method.startswith("awq")
    allowed = GROUPED_BITS[method]
    bits_key = _first_key(qcfg, ("w_bit", "bits") if awq else ("bits", "w_bit"))
    bits = 4
    if bits_key is not None:
        bits = whole_number(qcfg[bits_key])
        if bits not in allowed:
            raise InputError(_field(bits_key), qcfg[bits_key], f"must be {listing(allowed)} for {method}")
    group_key = _first_key(qcfg, ("q_group_size", "group_size") if awq else ("group_size", "q_group_size"))
    group = 128 if group_key is None else group_size(qcfg[group_key], _field(group_key))
    # GPTQ always stores qzeros; AWQ only with zero_point (its default)
    zero = method.startswith("gptq") or bool(_flag(qcfg, "zero_point", True))
    return grouped_int(bits, group, zero, f"{method} quantization_config")


def grouped_int(bits: int, group: int | None, zero: bool, origin: str) -> W.WeightFormat:
    """Group-wise integer weights: one fp16 scale (and a packed zero point) per group."""
    if bits not in (2, 3, 4, 8):
        raise InputError(_field("bits"), bits, "must be 2, 3, 4 or 8")
    return W.WeightFormat(f"int{bits}" + (f"-g{group}" if group else ""), bits, "fp16", group,
                          16 if group else 0, bits if (zero and group) else 0,
                          source=f"{origin}: {W.INT4_SOURCE.split(':', 1)[1].strip()}")


def _fp8(qcfg: dict[str, Any]) -> W.WeightFormat:
    element = qcfg.get("fmt")
    if element is not None and (not isinstance(element, str) or element.strip().lower() not in FP8_ELEMENT_FORMATS):
        raise InputError(_field("fmt"), element, f"an FP8 element format: {listing(FP8_ELEMENT_FORMATS)}")
    scheme = qcfg.get("activation_scheme")
    if scheme is not None and (not isinstance(scheme, str) or scheme.strip().lower() not in ("static", "dynamic")):
        raise InputError(_field("activation_scheme"), scheme, "must be static or dynamic (vLLM Fp8Config)")
    block = qcfg.get("weight_block_size")
    if block is not None:
        weight_block(block, _field("weight_block_size"))
    return W.FORMATS["fp8"]


def _bitsandbytes(qcfg: dict[str, Any]) -> W.WeightFormat:
    four, eight = _flag(qcfg, "load_in_4bit", False), _flag(qcfg, "load_in_8bit", None)
    if four and eight:
        raise InputError(_field("load_in_8bit"), True, "load_in_4bit and load_in_8bit cannot both be true")
    if four:  # NF4 / FP4: one absmax per 64 weights (fp32, or 8-bit with double quant)
        kind = qcfg.get("bnb_4bit_quant_type")
        if kind is not None and kind not in ("nf4", "fp4"):
            raise InputError(_field("bnb_4bit_quant_type"), kind, "must be nf4 or fp4")
        scale = 8 + 32 / 256 if _flag(qcfg, "bnb_4bit_use_double_quant", False) else 32
        return W.WeightFormat("nf4", 4, "bf16", 64, round(scale), 0,
                              source="bitsandbytes NF4, blocksize 64 (Dettmers et al. 2023, QLoRA Sec. 3)")
    if eight is False:
        raise InputError(_field("load_in_4bit"), qcfg.get("load_in_4bit"), "one of load_in_4bit / load_in_8bit "
                         "must be true for a bitsandbytes checkpoint")
    return W.WeightFormat("int8-llm.int8", 8, "fp16", source="bitsandbytes LLM.int8 (row-wise scales)")


def _compressed_tensors(qcfg: dict[str, Any]) -> W.WeightFormat:
    groups = qcfg.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise InputError(_field("config_groups"), groups, "expected a mapping of scheme names to schemes with "
                         "weights (compressed-tensors)")
    formats = [_ct_scheme(_label(name), scheme) for name, scheme in groups.items()]
    return formats[0]  # the first scheme stands for the model (mixed schemes are not modelled)


def _ct_scheme(name: str, scheme: Any) -> W.WeightFormat:
    where = ("config_groups", name)
    if not isinstance(scheme, dict):
        raise InputError(_field(*where), scheme, "expected a scheme: a mapping with weights")
    weights = scheme.get("weights")
    if not isinstance(weights, dict):
        raise InputError(_field(*where, "weights"), weights, "expected a mapping (num_bits, type, strategy, "
                         "group_size)")
    acts = scheme.get("input_activations")
    if acts is not None and not isinstance(acts, dict):
        raise InputError(_field(*where, "input_activations"), acts, "expected a mapping or null")
    path = (*where, "weights")
    kind = weights.get("type", "int")
    if kind not in CT_BITS:
        raise InputError(_field(*path, "type"), kind, "must be int or float")
    bits = whole_number(weights.get("num_bits", 8))
    if bits not in CT_BITS[kind]:
        raise InputError(_field(*path, "num_bits"), weights.get("num_bits"),
                         f"must be {listing(CT_BITS[kind])} for type {kind}")
    group_value = weights.get("group_size")
    group = None if group_value is None else group_size(group_value, _field(*path, "group_size"))
    if group_value is not None and group is None:
        group = -1  # compressed-tensors: -1 = per channel
    strategy = weights.get("strategy")
    if strategy is None:  # compressed-tensors infers it from the group size
        strategy = "tensor" if group is None else "channel" if group == -1 else "group"
    if strategy not in CT_STRATEGIES:
        raise InputError(_field(*path, "strategy"), strategy, f"must be one of {', '.join(CT_STRATEGIES)}")
    if strategy in ("group", "tensor_group") and (group is None or group < 1):
        raise InputError(_field(*path, "group_size"), group_value, f"strategy {strategy} needs a positive group_size")
    symmetric = _flag(weights, "symmetric", True, *path)
    if bits == 4 and kind == "float" and group == 16:  # compressed-tensors nvfp4 preset
        return W.NVFP4
    if bits == 8 and acts:
        return W.FORMATS["fp8" if kind == "float" else "int8"]
    return grouped_int(bits, group if strategy == "group" else None, not symmetric, "compressed-tensors")
