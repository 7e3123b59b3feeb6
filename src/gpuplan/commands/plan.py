"""`gpuplan plan`: search every valid layout and rank them."""

from typing import Annotated, Optional

import typer

from gpuplan.commands.options import FormatOpt, JsonOpt, OutputFormat, emit
from gpuplan.jobs.plan.inputs import PLAN_FIELDS


def register(app: typer.Typer) -> None:
    @app.command()
    def plan(
        target: Annotated[Optional[str], typer.Argument(help="A plan file (.yaml/.toml) or a model name.")] = None,
        model: Annotated[Optional[str], typer.Option(help="Catalog name or config.json.")] = None,
        params: Annotated[Optional[str], typer.Option(help="Bare parameter count, e.g. 70B.")] = None,
        tokens: Annotated[Optional[str], typer.Option(help="Training tokens. Default 2T.")] = None,
        gpu: Annotated[Optional[str], typer.Option(help="Accelerator. Default h100.")] = None,
        gpus: Annotated[Optional[str], typer.Option(help="1024, 256,512,1024 or a range 512-4096.")] = None,
        days: Annotated[Optional[str], typer.Option(help="Deadline: only layouts that finish in time.")] = None,
        global_batch_tokens: Annotated[Optional[str], typer.Option(help="Tokens per step. Default 4M.")] = None,
        seq_len: Annotated[Optional[str], typer.Option(help="Sequence length. Default 4096.")] = None,
        recipe: Annotated[Optional[str], typer.Option(help="Precision recipe. Default megatron.")] = None,
        implementation: Annotated[Optional[str], typer.Option(help="hf, megatron or torchtitan.")] = None,
        dtype: Annotated[Optional[str], typer.Option(help="Compute dtype (bf16, fp8).")] = None,
        rank_by: Annotated[Optional[str], typer.Option(help="time, cost or gpus.")] = None,
        top: Annotated[Optional[str], typer.Option(help="Layouts to show. Default 10.")] = None,
        price_per_gpu_hour: Annotated[Optional[str], typer.Option(help="USD per GPU-hour.")] = None,
        margin: Annotated[Optional[str], typer.Option(help="Memory safety margin. Default 0.15.")] = None,
        gpus_per_node: Annotated[Optional[str], typer.Option(help="GPUs per node (scale-up domain).")] = None,
        nic_gbit_per_gpu: Annotated[Optional[str], typer.Option(help="Scale-out Gb/s per GPU. Default catalog/400.")] = None,
        dp_overlap: Annotated[Optional[str], typer.Option(help="Share of DP/FSDP comm hidden by overlap. Default 0.9.")] = None,
        tp_overlap: Annotated[Optional[str], typer.Option(help="Share of TP comm hidden. Default 0.")] = None,
        attention_efficiency: Annotated[Optional[str], typer.Option(help="Attention kernel efficiency of peak.")] = None,
        calibration: Annotated[Optional[str], typer.Option(help="Calibration file from `gpuplan calibrate`.")] = None,
        fmt: FormatOpt = OutputFormat.table,
        as_json: JsonOpt = False,
    ) -> None:
        """Search every valid parallel layout (dp, tp, pp, vpp, cp, ep, ZeRO, micro-batch, recompute),
        drop those that do not fit memory, rank the rest; Pareto front of GPUs vs days vs cost."""
        from gpuplan.adapters.plan_file import plan_and_flags
        from gpuplan.jobs.plan.estimate import plan_report
        from gpuplan.jobs.plan.inputs import plan_inputs_from_raw

        flags = {k: v for k, v in locals().items() if k in PLAN_FIELDS}
        with _LateProgress() as progress:
            report = plan_report(plan_inputs_from_raw(plan_and_flags(target, flags, PLAN_FIELDS)), progress)
        emit(report, fmt, as_json)


class _LateProgress:
    """A rich progress bar on stderr that appears only once a search has run for a second."""

    def __init__(self) -> None:
        import time

        self._start, self._bar, self._task, self._clock = time.perf_counter(), None, None, time.perf_counter

    def __enter__(self):
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None and self._clock() - self._start > 1.0:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("searching layouts", total=total)
        if self._bar is not None:
            self._bar.update(self._task, completed=done)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
