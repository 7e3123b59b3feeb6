"""The shape of a config.json's ``quantization_config``, checked for every job that reads the model.

``memory`` and ``train`` do not use the checkpoint's format, but a malformed one is still refused
(one line naming the field), as ``infer`` refuses it: a mapping whose ``quant_method`` is one the
inference reader knows, with widths, group sizes and block sizes that method defines. The full
reading (text enums such as ``fmt`` or ``strategy``, the bits each stores) stays in
jobs/inference/quant_config.py, which takes the method widths, limits and number checks below from
here (one list, one check).
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import InputError

QUANT_METHODS = ("gptq", "gptq_marlin", "awq", "awq_marlin", "marlin", "fp8", "bitsandbytes",
                 "compressed-tensors", "mxfp4", "modelopt")
"""quant_method values gpuplan reads (transformers / vLLM names; matched after strip + lower)."""
GROUPED_BITS = {"gptq": (2, 3, 4, 8), "gptq_marlin": (4, 8), "awq": (4,), "awq_marlin": (4,), "marlin": (4,)}
"""Weight widths per group-wise method (vLLM gptq.py, gptq_marlin.py TYPE_MAP, awq.py)."""
CT_BITS = (2, 3, 4, 8)
"""compressed-tensors weights.num_bits (int 2/3/4/8, float 4/8)."""
MAX_GROUP = 1 << 16
"""Largest group / block dimension accepted: far above any checkpoint (GPTQ / AWQ use 32-128)."""
IGNORE_KEYS = ("modules_to_not_convert", "ignore", "exclude_modules", "ignored_layers")
QC = "config.json: quantization_config"


def whole_number(value: Any) -> int | None:
    """A JSON whole number (4 or 4.0) as an int; None for anything else (true, 4.7, "4", inf)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def listing(values: tuple) -> str:
    """'a, b or c'."""
    items = [str(v) for v in values]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _shown(value: Any) -> Any:
    """A value as the error shows it: long lists and mappings by their size, not in full."""
    return f"{len(value)} entries" if isinstance(value, list | dict) and len(value) > 4 else value


def group_size(value: Any, field: str, per_channel: bool = True) -> int | None:
    """Weights per group, 1 to 65,536; -1 (per output channel) -> None where allowed."""
    n = whole_number(value)
    if per_channel and n == -1:
        return None
    if n is None or not 1 <= n <= MAX_GROUP:
        minus = " or -1 (per channel)" if per_channel else ""
        raise InputError(field, value, f"must be a whole number of weights per group, 1 to {MAX_GROUP:,}{minus}")
    return n


def weight_block(block: Any, field: str) -> tuple[int, int]:
    """An FP8 checkpoint's weight_block_size: two powers of two from 16 to 65,536."""
    dims = [whole_number(d) for d in block] if isinstance(block, list) else []
    if len(dims) != 2 or any(d is None or not 16 <= d <= MAX_GROUP or d & (d - 1) for d in dims):
        raise InputError(field, _shown(block), f"must be two powers of two from 16 to {MAX_GROUP:,} "
                         "(output x input block, e.g. [128, 128])")
    return dims[0], dims[1]


def check_quantization_config(qcfg: Any) -> None:
    """Absent / null, or a mapping whose quant_method is known and whose sizes are positive."""
    if qcfg is None:
        return
    if not isinstance(qcfg, dict):
        raise InputError(QC, _shown(qcfg),
                         'expected a mapping with quant_method (e.g. {"quant_method": "gptq", "bits": 4}) or null')
    for key in IGNORE_KEYS:
        value = qcfg.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise InputError(f"{QC}.{key}", _shown(value), "must be a list of module names (text)")
    method = qcfg.get("quant_method")
    name = method.strip().lower() if isinstance(method, str) else None
    if name not in QUANT_METHODS:
        raise InputError(f"{QC}.quant_method", method, f"supported: {', '.join(QUANT_METHODS)} (infer "
                         "--quantization sets the weight format instead)")
    if name in GROUPED_BITS:
        awq = name.startswith("awq")
        for key in ("w_bit", "bits") if awq else ("bits", "w_bit"):
            if key in qcfg:
                if whole_number(qcfg[key]) not in GROUPED_BITS[name]:
                    raise InputError(f"{QC}.{key}", qcfg[key], f"must be {listing(GROUPED_BITS[name])} for {name}")
                break
        for key in ("q_group_size", "group_size") if awq else ("group_size", "q_group_size"):
            if key in qcfg:
                group_size(qcfg[key], f"{QC}.{key}")
                break
    elif name == "fp8" and qcfg.get("weight_block_size") is not None:
        weight_block(qcfg["weight_block_size"], f"{QC}.weight_block_size")
    elif name == "bitsandbytes":
        _bitsandbytes(qcfg)
    elif name == "compressed-tensors":
        _config_groups(qcfg.get("config_groups"))
    elif name == "modelopt" and qcfg.get("quantization") is not None and not isinstance(qcfg["quantization"], dict):
        raise InputError(f"{QC}.quantization", qcfg["quantization"], "expected a mapping with quant_algo (ModelOpt)")


def _bitsandbytes(qcfg: dict[str, Any]) -> None:
    for key in ("load_in_4bit", "load_in_8bit"):
        if qcfg.get(key) is not None and not isinstance(qcfg[key], bool):
            raise InputError(f"{QC}.{key}", qcfg[key], "must be true or false")
    if qcfg.get("load_in_4bit") and qcfg.get("load_in_8bit"):
        raise InputError(f"{QC}.load_in_8bit", True, "load_in_4bit and load_in_8bit cannot both be true")
    if qcfg.get("load_in_4bit") is not True and qcfg.get("load_in_8bit") is False:
        raise InputError(f"{QC}.load_in_4bit", qcfg.get("load_in_4bit"), "one of load_in_4bit / load_in_8bit "
                         "must be true for a bitsandbytes checkpoint")


def _config_groups(groups: Any) -> None:
    """compressed-tensors: a non-empty mapping of schemes, each with a weights mapping."""
    if not isinstance(groups, dict) or not groups:
        raise InputError(f"{QC}.config_groups", _shown(groups),
                         "expected a mapping of scheme names to schemes with weights (compressed-tensors)")
    for label, scheme in groups.items():
        where = f"{QC}.config_groups.{str(label)[:40]}"
        weights = scheme.get("weights") if isinstance(scheme, dict) else None
        if not isinstance(weights, dict):
            raise InputError(where + (".weights" if isinstance(scheme, dict) else ""),
                             _shown(weights if isinstance(scheme, dict) else scheme),
                             "expected a scheme: a mapping with weights (num_bits, type, strategy, group_size)")
        if whole_number(weights.get("num_bits", 8)) not in CT_BITS:
            raise InputError(f"{where}.weights.num_bits", weights.get("num_bits"), f"must be {listing(CT_BITS)}")
        if weights.get("group_size") is not None:
            group_size(weights["group_size"], f"{where}.weights.group_size")
