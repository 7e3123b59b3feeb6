"""Command line: each command is a few lines over the public API.

Bad input anywhere (our InputError, or click's usage errors) prints one line on stderr and
exits with status 2; no traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from gpuplan.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
                  help="Plan the compute, memory, time and cost of training and serving LLMs.")
catalog_app = typer.Typer(add_completion=False, help="List the model and accelerator catalogs.")
app.add_typer(catalog_app, name="catalog")


from gpuplan.commands.options import FormatOpt, JsonOpt, OutputFormat, emit  # noqa: E402


@app.command()
def train(
    target: Annotated[Optional[str], typer.Argument(
        help="A plan file (.yaml/.yml/.toml), or a model: catalog name or config.json path.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Catalog name, config.json or folder holding one.")] = None,
    params: Annotated[Optional[str], typer.Option(help="Bare parameter count instead of a model, e.g. 7B.")] = None,
    tokens: Annotated[Optional[str], typer.Option(help="Training tokens, e.g. 2T. Default 2T.")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="Accelerator name (see `gpuplan catalog gpus`). Default a100.")] = None,
    gpus: Annotated[Optional[str], typer.Option(help="GPU count (solve time or MFU).")] = None,
    days: Annotated[Optional[str], typer.Option(help="Wall-clock deadline: 7, 7d, 36h (solve GPUs or MFU).")] = None,
    mfu: Annotated[Optional[str], typer.Option(help="Model FLOPs utilisation, 0.4 or 40%, or 'predicted' "
                                               "(the planner's best layout). Default 0.40.")] = None,
    dtype: Annotated[Optional[str], typer.Option(help="Compute dtype for the peak: bf16, fp16, fp8, tf32, fp32.")] = None,
    flops_method: Annotated[Optional[str], typer.Option(help="6nd (article) or exact.")] = None,
    seq_len: Annotated[Optional[str], typer.Option(help="Sequence length for the exact count. Default 4096.")] = None,
    attention: Annotated[Optional[str], typer.Option(help="Attention FLOPs: full (PaLM convention) or causal.")] = None,
    recompute: Annotated[Optional[str], typer.Option(help="none, selective or full.")] = None,
    comm_allowance: Annotated[Optional[str], typer.Option(help="Communication allowance, e.g. 0.2 or 20%.")] = None,
    contingency: Annotated[Optional[str], typer.Option(help="Contingency budget, e.g. 0.2.")] = None,
    recipe: Annotated[Optional[str], typer.Option(help="Memory section: precision recipe. Default mixed.")] = None,
    zero: Annotated[Optional[str], typer.Option(help="Memory section: ZeRO stage. Default 1.")] = None,
    micro_batch: Annotated[Optional[str], typer.Option(help="Memory section: micro-batch. Default 1.")] = None,
    tp: Annotated[Optional[str], typer.Option(help="Memory section: tensor parallel. Default 1.")] = None,
    pp: Annotated[Optional[str], typer.Option(help="Memory section: pipeline parallel. Default 1.")] = None,
    calibration: Annotated[Optional[str], typer.Option(help="Calibration file from `gpuplan calibrate`.")] = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
) -> None:
    """The training budget in one view: compute, GPU count or time, memory per GPU, data loading,
    checkpoints, failures, cost (on-demand vs spot) and contingency. With no arguments: the
    article's example (7B parameters, 2T tokens, A100, 40% MFU, 7 days). `gpuplan budget` takes
    the same inputs plus every budget assumption as a flag."""
    from gpuplan.adapters.plan_file import plan_and_flags
    from gpuplan.jobs.budget.estimate import estimate_budget
    from gpuplan.jobs.training.inputs import TRAIN_FIELDS, training_inputs_from_raw

    flags = {k: v for k, v in locals().items() if k in TRAIN_FIELDS}
    inputs, defaults_used = training_inputs_from_raw(plan_and_flags(target, flags, TRAIN_FIELDS))
    report = estimate_budget(inputs)
    if defaults_used:
        from dataclasses import replace

        report = replace(report, notes=report.notes + (f"built-in defaults used: {', '.join(defaults_used)}",))
    emit(report, fmt, as_json)


@app.command()
def memory(
    target: Annotated[Optional[str], typer.Argument(help="A plan file (.yaml/.toml) or a model name/config.json.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Catalog name, config.json or folder holding one.")] = None,
    params: Annotated[Optional[str], typer.Option(help="Bare parameter count, e.g. 7B (default when no model).")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="Accelerator for the breakdown. Default a100.")] = None,
    compare: Annotated[Optional[str], typer.Option(help="Comma-separated GPUs for the verdict table.")] = None,
    gpus: Annotated[Optional[str], typer.Option(help="World size; dp = gpus / (tp x pp x cp).")] = None,
    seq_len: Annotated[Optional[str], typer.Option(help="Sequence length. Default 4096.")] = None,
    micro_batch: Annotated[Optional[str], typer.Option(help="Sequences per micro-batch. Default 1.")] = None,
    global_batch: Annotated[Optional[str], typer.Option(help="Sequences per optimizer step.")] = None,
    dp: Annotated[Optional[str], typer.Option(help="Data-parallel degree (if --gpus not given).")] = None,
    tp: Annotated[Optional[str], typer.Option(help="Tensor-parallel degree.")] = None,
    pp: Annotated[Optional[str], typer.Option(help="Pipeline-parallel degree.")] = None,
    vpp: Annotated[Optional[str], typer.Option(help="Virtual pipeline stages per rank (interleaved).")] = None,
    cp: Annotated[Optional[str], typer.Option(help="Context-parallel degree.")] = None,
    ep: Annotated[Optional[str], typer.Option(help="Expert-parallel degree.")] = None,
    zero: Annotated[Optional[str], typer.Option(help="ZeRO stage 0-3 (3 = FSDP full shard).")] = None,
    shard_group: Annotated[Optional[str], typer.Option(help="HSDP: shard states within this many ranks.")] = None,
    sequence_parallel: Annotated[Optional[str], typer.Option(help="Megatron sequence parallelism (true/false).")] = None,
    recipe: Annotated[Optional[str], typer.Option(help="article, mixed, megatron, fsdp2, amp, bf16, fp32, fp8.")] = None,
    optimizer: Annotated[Optional[str], typer.Option(help="adamw, adam8bit, sgd, lion, adafactor, muon.")] = None,
    implementation: Annotated[Optional[str], typer.Option(help="Activation implementation: hf, megatron, torchtitan.")] = None,
    attention_kernel: Annotated[Optional[str], typer.Option(help="flash (SDPA) or eager.")] = None,
    recompute: Annotated[Optional[str], typer.Option(help="none, selective or full.")] = None,
    dropout: Annotated[Optional[str], typer.Option(help="Dropout probability (masks saved when > 0).")] = None,
    finetune: Annotated[Optional[str], typer.Option(help="full, lora or qlora.")] = None,
    lora_rank: Annotated[Optional[str], typer.Option(help="LoRA rank (all linear layers). Default 16.")] = None,
    offload_optimizer: Annotated[Optional[str], typer.Option(help="Optimizer states on the CPU (true/false).")] = None,
    moe_capacity_factor: Annotated[Optional[str], typer.Option(help="MoE expert capacity factor. Default 1.0.")] = None,
    margin: Annotated[Optional[str], typer.Option(help="Safety margin, e.g. 0.15 or 20%.")] = None,
    cuda_context_gib: Annotated[Optional[str], typer.Option(help="CUDA context GiB. Default 0.5.")] = None,
    comm_buffer_gib: Annotated[Optional[str], typer.Option(help="NCCL buffers per parallel group, GiB. Default 0.75.")] = None,
    calibration: Annotated[Optional[str], typer.Option(help="Calibration file from `gpuplan calibrate`.")] = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
) -> None:
    """Per-GPU training memory: states by recipe, activations, overheads, verdict per GPU type,
    largest micro-batch, and what would make it fit."""
    from gpuplan.adapters.plan_file import plan_and_flags
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.inputs import MEMORY_FIELDS, memory_inputs_from_raw

    flags = {k: v for k, v in locals().items() if k in MEMORY_FIELDS}
    emit(estimate_memory(memory_inputs_from_raw(plan_and_flags(target, flags, MEMORY_FIELDS))), fmt, as_json)


@app.command()
def measure(
    model: Annotated[str, typer.Argument(help="Catalog name, config.json or folder holding one.")],
    seq_len: Annotated[int, typer.Option(help="Sequence length.")] = 2048,
    micro_batch: Annotated[int, typer.Option(help="Sequences per micro-batch.")] = 1,
    precision: Annotated[str, typer.Option(help="bf16 (pure) or fp32-autocast (fp32 params, bf16 compute).")] = "bf16",
    recompute: Annotated[str, typer.Option(help="none or full (HF gradient checkpointing).")] = "none",
    attention: Annotated[str, typer.Option(help="sdpa or eager.")] = "sdpa",
    world_size: Annotated[int, typer.Option(help="> 1: FSDP2 over a fake process group; rank 0 reported.")] = 1,
    layers: Annotated[Optional[str], typer.Option(help="Two reduced depths to extrapolate from, e.g. 2,4 "
                                                   "(4,8 with FSDP).")] = None,
    fmt: FormatOpt = OutputFormat.table,
    as_json: JsonOpt = False,
) -> None:
    """Measure a real training step's memory on the CPU (needs the profile extra) and compare it
    with the estimate, category by category."""
    from gpuplan.jobs.measure.estimate import MeasureInputs, measure_report

    depths = None
    if layers:
        try:
            depths = tuple(int(x) for x in layers.split(","))
        except ValueError:
            depths = ()
        if len(depths) != 2:
            raise InputError("layers", layers, "two depths separated by a comma, e.g. 2,4")
    emit(measure_report(MeasureInputs(model=model, seq_len=seq_len, micro_batch=micro_batch, precision=precision,
                                      recompute=recompute, attention=attention, world_size=world_size,
                                      layers=depths)), fmt, as_json)


@catalog_app.command("models")
def catalog_models(search: Annotated[Optional[str], typer.Option(help="Filter by text.")] = None,
                   fmt: FormatOpt = OutputFormat.table, as_json: JsonOpt = False) -> None:
    """Catalog models with counted and published parameter counts."""
    from gpuplan.jobs.catalog.listing import model_catalog_report

    emit(model_catalog_report(search), fmt, as_json)


@catalog_app.command("gpus")
def catalog_gpus(search: Annotated[Optional[str], typer.Option(help="Filter by text.")] = None,
                 fmt: FormatOpt = OutputFormat.table, as_json: JsonOpt = False) -> None:
    """Catalog accelerators with dense peaks, memory and bandwidth."""
    from gpuplan.jobs.catalog.listing import gpu_catalog_report

    emit(gpu_catalog_report(search), fmt, as_json)


@app.command()
def validate(
    write: Annotated[Optional[str], typer.Option(help="Also write the accuracy table (Markdown) here, "
                                                 "e.g. docs/accuracy.md.")] = None,
    fmt: FormatOpt = OutputFormat.table, as_json: JsonOpt = False,
) -> None:
    """Run the estimators over the packaged reference set of published runs; print errors."""
    from gpuplan.jobs.validation.estimate import accuracy_markdown, validation_report

    report = validation_report()
    if write:
        from pathlib import Path

        Path(write).write_text(accuracy_markdown(report), encoding="utf-8")
    emit(report, fmt, as_json)


# Commands that live in gpuplan/commands/<name>.py, registered on demand: building a Typer
# command costs a few ms per option, so the CLI registers only the one being invoked (all of
# them for --help or an unknown name).
LAZY_COMMANDS = ("plan", "budget", "infer", "report", "serve", "profile", "calibrate")


def _register_commands(argv: list[str]) -> None:
    import importlib

    invoked = next((a for a in argv if not a.startswith("-")), None)
    names = (invoked,) if invoked in LAZY_COMMANDS else LAZY_COMMANDS
    if invoked is not None and invoked not in LAZY_COMMANDS and invoked in _builtin_command_names():
        names = ()  # a built-in command: nothing to register
    present = _builtin_command_names()
    for name in names:
        if name not in present:
            importlib.import_module(f"gpuplan.commands.{name}").register(app)


def _builtin_command_names() -> set[str]:
    """Commands already on the app (cli.py's own, and any registered before)."""
    return {c.name or c.callback.__name__ for c in app.registered_commands} | {"catalog"}


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; bad input -> one line on stderr, exit status 2."""
    try:  # typer >= 0.26 vendors click; older typer uses the click package
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - depends on the installed typer
        from click import exceptions as click_errors

    argv = list(sys.argv[1:] if argv is None else argv)
    _register_commands(argv)
    try:
        result = app(args=argv, standalone_mode=False, prog_name="gpuplan")
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except click_errors.ClickException as exc:
        sys.stderr.write(f"error: {exc.format_message()}\n")
        return 2
    except typer.Abort:
        sys.stderr.write("aborted\n")
        return 1
    except typer.Exit as exc:
        return exc.exit_code
    except BrokenPipeError:
        return 0
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
