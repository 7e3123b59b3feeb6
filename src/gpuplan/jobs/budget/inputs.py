"""Raw values (flags, plan-file fields) -> (TrainingInputs, BudgetSettings, global batch tokens, step seconds)."""

from __future__ import annotations

from typing import Any

TRAIN_KEYS = ("model", "params", "tokens", "gpu", "gpus", "days", "mfu", "dtype", "flops_method", "seq_len",
              "attention", "recompute", "comm_allowance", "recipe", "zero", "tp", "pp")
BUDGET_KEYS = ("global_batch", "global_batch_tokens", "step_time", "optimizer", "storage", "checkpoint_storage",
               "storage_read", "storage_write", "token_bytes", "tokenize", "bytes_per_token", "tokens_per_core",
               "cpu_cores", "checkpoint_interval", "async_checkpoint", "keep_checkpoints", "host_copy",
               "failure_rate", "restart", "provider", "price", "spot_price", "spot_discount", "spot_preemption",
               "contingency_restarts", "contingency_tuning", "contingency_failures", "contingency_evaluation")
BUDGET_FIELDS = TRAIN_KEYS + BUDGET_KEYS
CONTINGENCY_NAMES = ("restarts", "tuning", "failures", "evaluation")


def _number(value: Any, field: str, low: float = 0.0, high: float = float("inf"), strict: bool = True) -> float:
    from gpuplan.errors import InputError

    try:
        number = float(str(value).strip())
    except ValueError:
        raise InputError(field, value, "expected a number") from None
    if not (low < number if strict else low <= number) or not number <= high:
        raise InputError(field, value, f"must be {'>' if strict else '>='} {low:g}" +
                         ("" if high == float("inf") else f" and <= {high:g}"))
    return number




def _seconds(value: Any, field: str) -> float:
    """A duration with a unit ('30min', '2h'); a bare number is refused (minutes or days?)."""
    from gpuplan.core.units import parse_duration
    from gpuplan.errors import InputError

    text = str(value).strip()
    if text.replace(".", "", 1).isdigit():
        raise InputError(field, value, "give a unit, e.g. 30min, 2h or 90s")
    return parse_duration(text, field)


def _fraction(value: Any, field: str) -> float:
    from gpuplan.core.units import parse_allowance

    return parse_allowance(value, field)


def _contingency(f: dict[str, Any]) -> tuple[tuple[str, float | None], ...]:
    from gpuplan.jobs.budget.model import BudgetSettings

    shares = dict(BudgetSettings().contingency)
    for name in CONTINGENCY_NAMES:
        key = f"contingency_{name}"
        if key in f:
            text = str(f[key]).strip().lower()
            shares[name] = None if text in ("modelled", "modeled", "model") else _fraction(f[key], key)
    return tuple(shares.items())


def budget_settings_from_raw(f: dict[str, Any]):
    """BudgetSettings from raw values (flags or plan-file fields named as in BUDGET_KEYS)."""
    from gpuplan.core.units import parse_bool
    from gpuplan.jobs.budget.model import BudgetSettings

    gb = 1e9
    kw: dict[str, Any] = {k: str(f[k]) for k in ("optimizer", "storage", "checkpoint_storage", "provider") if k in f}
    for key, name in (("storage_read", "storage_read"), ("storage_write", "storage_write"), ("host_copy", "host_copy")):
        if key in f:
            kw[name] = _number(f[key], key) * gb
    if "token_bytes" in f:
        kw["token_bytes"] = int(_number(f["token_bytes"], "token_bytes"))
    for key, name in (("tokenize", "tokenize_on_the_fly"), ("async_checkpoint", "async_checkpoint")):
        if key in f:
            kw[name] = parse_bool(f[key], key)
    numbers = (("bytes_per_token", "raw_bytes_per_token"), ("tokens_per_core", "tokens_per_s_per_core"),
               ("failure_rate", "failure_rate"), ("price", "price"), ("spot_price", "spot_price"))
    kw.update({name: _number(f[key], key) for key, name in numbers if key in f})
    for key, name in (("cpu_cores", "cpu_cores_per_node"), ("keep_checkpoints", "keep_checkpoints")):
        if key in f:
            kw[name] = int(_number(f[key], key))
    if "spot_preemption" in f:
        kw["spot_preemptions"] = _number(f["spot_preemption"], "spot_preemption", strict=False)
    if "spot_discount" in f:
        kw["spot_discount"] = _number(str(f["spot_discount"]).rstrip("%"), "spot_discount", strict=False, high=99.9) / (
            100 if str(f["spot_discount"]).strip().endswith("%") else 1)
    if "restart" in f:
        kw["restart_seconds"] = 0.0 if str(f["restart"]).strip() in ("0", "0s") else _seconds(f["restart"], "restart")
    interval = str(f.get("checkpoint_interval", "optimal")).strip().lower()
    kw["checkpoint_interval"] = None if interval == "optimal" else _seconds(interval, "checkpoint_interval")
    return BudgetSettings(contingency=_contingency(f), **kw)


def budget_inputs_from_raw(raw: dict[str, Any]):
    """(TrainingInputs, BudgetSettings, global batch tokens or None, step seconds or None,
    built-in defaults used). Missing model/tokens/gpu/time -> the article's example."""
    from gpuplan.core.units import parse_count
    from gpuplan.errors import InputError
    from gpuplan.jobs.training.inputs import training_inputs_from_raw

    f = {k: v for k, v in raw.items() if v is not None and v != ""}
    unknown = set(f) - set(BUDGET_FIELDS)
    if unknown:
        raise InputError("budget", ", ".join(sorted(unknown)), f"unknown field; valid: {', '.join(BUDGET_FIELDS)}")
    inputs, used = training_inputs_from_raw({k: v for k, v in f.items() if k in TRAIN_KEYS})
    if "global_batch" in f and "global_batch_tokens" in f:
        raise InputError("global_batch", f["global_batch"], "give --global-batch (sequences) or "
                         "--global-batch-tokens, not both")
    batch = parse_count(f["global_batch_tokens"], "global_batch_tokens") if "global_batch_tokens" in f else None
    if "global_batch" in f:
        batch = parse_count(f["global_batch"], "global_batch") * inputs.seq_len
    step = _seconds(f["step_time"], "step_time") if "step_time" in f else None
    return inputs, budget_settings_from_raw(f), batch, step, used
