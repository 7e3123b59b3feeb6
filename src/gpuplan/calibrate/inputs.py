"""CLI strings -> LogContext for `gpuplan calibrate` (InputError naming the flag)."""

from __future__ import annotations

from typing import Any

from gpuplan.calibrate.measurement import LogContext
from gpuplan.errors import InputError

_WORDS = {"recompute": ("none", "selective", "full"), "dtype": ("bf16", "fp16", "fp8", "tf32", "fp32")}


def _whole(value: Any, flag: str, minimum: int = 1) -> int:
    text = str(value).strip()
    if not text.isdigit() or int(text) < minimum:
        raise InputError(flag, value, f"a whole number >= {minimum}")
    return int(text)


def log_context_from_raw(raw: dict[str, Any]) -> LogContext:
    f = {k: v for k, v in raw.items() if v is not None and v != ""}
    kw: dict[str, Any] = {}
    for name in ("gpus", "tp", "pp", "ep", "micro_batch", "global_batch", "seq_len"):
        if name in f:
            kw[name] = _whole(f[name], "--" + name.replace("_", "-"))
    if "zero" in f:
        kw["zero"] = _whole(f["zero"], "--zero", 0)
        if kw["zero"] > 3:
            raise InputError("--zero", f["zero"], "0, 1, 2 or 3")
    for name, allowed in _WORDS.items():
        if name in f:
            if str(f[name]) not in allowed:
                raise InputError("--" + name, f[name], f"one of {', '.join(allowed)}")
            kw[name] = str(f[name])
    if "recipe" in f:
        from gpuplan.core.memory import RECIPES, lookup

        kw["recipe"] = lookup(RECIPES, str(f["recipe"]), "--recipe").name
    for name in ("model", "gpu"):
        if name in f:
            kw[name] = str(f[name])
    return LogContext(**kw)


def target_gpus_from_raw(value: Any) -> int | None:
    return None if value is None or value == "" else _whole(value, "--target-gpus")
