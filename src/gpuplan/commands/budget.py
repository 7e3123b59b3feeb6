"""`gpuplan budget`: compute and time, then data loading, checkpoints, failures, cost and the
named contingency budget in one report. Imports only typer at module import; the work happens
inside the command. ``budget_inputs_from_raw`` turns raw values (flags, plan-file fields) into
(TrainingInputs, BudgetSettings, global batch tokens, step seconds) in one place."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gpuplan.jobs.budget.inputs import BUDGET_FIELDS


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
        from gpuplan.commands.options import emit, parse_format
        from gpuplan.jobs.budget.estimate import estimate_budget

        flags = {k: v for k, v in locals().items() if k in BUDGET_FIELDS}
        raw = plan_and_flags(target, flags, BUDGET_FIELDS)
        from gpuplan.jobs.budget.inputs import budget_inputs_from_raw

        inputs, settings, batch, step, used = budget_inputs_from_raw(raw)
        report = estimate_budget(inputs, settings, batch, step)
        if used:
            report = replace(report, notes=report.notes + (f"built-in defaults used: {', '.join(used)}",))
        emit(report, parse_format(fmt), as_json)


