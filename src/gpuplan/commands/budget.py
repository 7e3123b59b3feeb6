"""`gpuplan budget`: compute and time, then data loading, checkpoints, failures, cost and the
named contingency budget in one report. Imports only typer at module import; the work happens
inside the command. ``budget_inputs_from_raw`` turns raw values (flags, plan-file fields) into
(TrainingInputs, BudgetSettings, global batch tokens, step seconds) in one place."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

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
    from gpuplan.budget import BudgetSettings

    shares = dict(BudgetSettings().contingency)
    for name in CONTINGENCY_NAMES:
        key = f"contingency_{name}"
        if key in f:
            text = str(f[key]).strip().lower()
            shares[name] = None if text in ("modelled", "modeled", "model") else _fraction(f[key], key)
    return tuple(shares.items())


def budget_settings_from_raw(f: dict[str, Any]):
    """BudgetSettings from raw values (flags or plan-file fields named as in BUDGET_KEYS)."""
    from gpuplan.budget import BudgetSettings
    from gpuplan.core.units import parse_bool

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
    from gpuplan.train_inputs import training_inputs_from_raw

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


def register(app: typer.Typer) -> None:
    """Add `budget` to ``app``."""

    @app.command()
    def budget(
        target: Annotated[Optional[str], typer.Argument(help="A plan file (.yaml/.toml) or a model name/config.json.")] = None,
        model: Annotated[Optional[str], typer.Option(help="Catalog name, config.json or folder holding one.")] = None,
        params: Annotated[Optional[str], typer.Option(help="Bare parameter count, e.g. 7B (default 7B).")] = None,
        tokens: Annotated[Optional[str], typer.Option(help="Training tokens, e.g. 2T (default 2T).")] = None,
        gpu: Annotated[Optional[str], typer.Option(help="Accelerator (default a100).")] = None,
        gpus: Annotated[Optional[str], typer.Option(help="GPU count (solve time).")] = None,
        days: Annotated[Optional[str], typer.Option(help="Deadline: 7, 7d, 36h (solve GPUs). Default 7d.")] = None,
        mfu: Annotated[Optional[str], typer.Option(help="MFU, 0.4 or 40% (default 0.40).")] = None,
        dtype: Annotated[Optional[str], typer.Option(help="Compute dtype for the peak (default bf16).")] = None,
        flops_method: Annotated[Optional[str], typer.Option(help="6nd or exact.")] = None,
        seq_len: Annotated[Optional[str], typer.Option(help="Sequence length (default 4096).")] = None,
        attention: Annotated[Optional[str], typer.Option(help="full or causal attention FLOPs.")] = None,
        recompute: Annotated[Optional[str], typer.Option(help="none, selective or full.")] = None,
        comm_allowance: Annotated[Optional[str], typer.Option(help="Comm allowance (0: MFU is end-to-end).")] = None,
        recipe: Annotated[Optional[str], typer.Option(help="Precision recipe for checkpoint bytes (default mixed).")] = None,
        zero: Annotated[Optional[str], typer.Option(help="ZeRO stage: >= 1 means every rank writes a shard.")] = None,
        tp: Annotated[Optional[str], typer.Option(help="Tensor parallel (checkpoint writers under ZeRO-0).")] = None,
        pp: Annotated[Optional[str], typer.Option(help="Pipeline parallel (checkpoint writers under ZeRO-0).")] = None,
        global_batch: Annotated[Optional[str], typer.Option(help="Sequences per step (x seq-len tokens).")] = None,
        global_batch_tokens: Annotated[Optional[str], typer.Option(help="Tokens per step (default 4M).")] = None,
        step_time: Annotated[Optional[str], typer.Option(help="Measured step time, e.g. 6s (default: derived).")] = None,
        optimizer: Annotated[Optional[str], typer.Option(help="Optimizer whose states are saved (default adamw).")] = None,
        storage: Annotated[Optional[str], typer.Option(help="local_nvme, parallel_fs or object_store.")] = None,
        checkpoint_storage: Annotated[Optional[str], typer.Option(help="Storage for checkpoints (default --storage).")] = None,
        storage_read: Annotated[Optional[str], typer.Option(help="Effective read GB/s per node.")] = None,
        storage_write: Annotated[Optional[str], typer.Option(help="Effective write GB/s per node.")] = None,
        token_bytes: Annotated[Optional[str], typer.Option(help="Bytes per stored token id (2 or 4).")] = None,
        tokenize: Annotated[Optional[bool], typer.Option("--tokenize/--pretokenized",
                                                        help="Raw text tokenised on the fly (default pre-tokenised).")] = None,
        bytes_per_token: Annotated[Optional[str], typer.Option(help="Raw text bytes per token (default 4).")] = None,
        tokens_per_core: Annotated[Optional[str], typer.Option(help="Tokens/s one CPU core tokenises (default 1e6).")] = None,
        cpu_cores: Annotated[Optional[str], typer.Option(help="CPU cores per node (default 112).")] = None,
        checkpoint_interval: Annotated[Optional[str], typer.Option(help="'optimal' (Young/Daly) or e.g. 30min.")] = None,
        async_checkpoint: Annotated[Optional[bool], typer.Option("--async-checkpoint/--sync-checkpoint",
                                                                help="Asynchronous saves (default synchronous).")] = None,
        keep_checkpoints: Annotated[Optional[str], typer.Option(help="Checkpoints kept (default 10).")] = None,
        host_copy: Annotated[Optional[str], typer.Option(help="Device-to-host GB/s per GPU (default 25).")] = None,
        failure_rate: Annotated[Optional[str], typer.Option(help="Interruptions per GPU-hour (default 1.97e-5).")] = None,
        restart: Annotated[Optional[str], typer.Option(help="Restart time per interruption, e.g. 15min.")] = None,
        provider: Annotated[Optional[str], typer.Option(help="Price one provider (aws, gcp, lambda, ...).")] = None,
        price: Annotated[Optional[str], typer.Option(help="On-demand USD per GPU-hour (overrides the catalog).")] = None,
        spot_price: Annotated[Optional[str], typer.Option(help="Spot USD per GPU-hour.")] = None,
        spot_discount: Annotated[Optional[str], typer.Option(help="Spot discount off on-demand, e.g. 60%.")] = None,
        spot_preemption: Annotated[Optional[str], typer.Option(help="Spot reclaims per node-month (default 0.15).")] = None,
        contingency_restarts: Annotated[Optional[str], typer.Option(help="Share for restarts (default 5%).")] = None,
        contingency_tuning: Annotated[Optional[str], typer.Option(help="Share for tuning (default 5%).")] = None,
        contingency_failures: Annotated[Optional[str], typer.Option(help="'modelled' (default) or a share.")] = None,
        contingency_evaluation: Annotated[Optional[str], typer.Option(help="Share for evaluation (default 5%).")] = None,
        fmt: Annotated[Optional[str], typer.Option("--format", "-f", help="table, json or markdown")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    ) -> None:
        """Training budget: compute and time, data loading, checkpoints, failures and goodput, cost
        on-demand vs spot, and the named contingency. Defaults: the article's 7B example."""
        from dataclasses import replace

        from gpuplan.adapters.plan_file import plan_and_flags
        from gpuplan.budget import estimate_budget
        from gpuplan.commands.options import emit, parse_format

        flags = {k: v for k, v in locals().items() if k in BUDGET_FIELDS}
        raw = plan_and_flags(target, flags, BUDGET_FIELDS)
        inputs, settings, batch, step, used = budget_inputs_from_raw(raw)
        report = estimate_budget(inputs, settings, batch, step)
        if used:
            report = replace(report, notes=report.notes + (f"built-in defaults used: {', '.join(used)}",))
        emit(report, parse_format(fmt), as_json)


