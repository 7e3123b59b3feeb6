"""A designed sweep of short trial runs (`gpuplan profile MODEL --sweep --out DIR`): a few runs
chosen so that `gpuplan calibrate DIR/*.json` can separate the op-class factors
(gpuplan.calibrate.classes), within a time budget and never past the GPU's memory.

The runs, in order of what they add (the budget drops them from the end):

  base       the configuration asked for
  short      sequences a quarter as long, four times as many (same tokens): the attention share moves
  small      a quarter of the tokens: per-kernel fixed costs and host time weigh more
  recompute  full recompute (or none, if the base recomputes): matmuls and memory-bound work of one
             more forward in the backward
  adapters   LoRA rank 16 on a full fine-tune (or full training of a LoRA base): peft's fp32 casts
             make the memory-bound share jump

Each run is first checked against the device's memory with gpuplan's own estimate (trial_plan
.check_fits: a run that would not fit is skipped, not tried); an out-of-memory error all the same
stops the sweep and is recorded. A run starts only if its expected duration (the base run's wall
time scaled by its tokens and recompute) fits in what is left of the budget (default 180 s).
Units: seconds.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, replace
from pathlib import Path

from gpuplan.errors import InputError, whole_or
from gpuplan.profile.trial_plan import TrialSettings

DEFAULT_BUDGET_S = 180.0


@dataclass(frozen=True)
class SweepRun:
    """One run of the sweep and what became of it."""

    label: str
    settings: TrialSettings
    status: str = "pending"
    """'ok', 'skipped' (estimate or budget), 'oom' or 'error'."""
    reason: str = ""
    path: str | None = None
    step_time_s: float | None = None
    estimated_step_time_s: float | None = None
    wall_s: float = 0.0


def sweep_variants(base: TrialSettings) -> list[tuple[str, TrialSettings]]:
    """(label, settings) of the runs, most informative first (module docstring)."""
    runs = [("base", base)]
    if base.seq_len >= 512:
        runs.append(("short", replace(base, seq_len=base.seq_len // 4, micro_batch=base.micro_batch * 4)))
    if base.micro_batch >= 4:
        runs.append(("small", replace(base, micro_batch=base.micro_batch // 4)))
    elif base.seq_len >= 512:
        runs.append(("small", replace(base, seq_len=base.seq_len // 4)))
    runs.append(("recompute", replace(base, recompute="none" if base.recompute == "full" else "full")))
    if base.lora_rank:
        runs.append(("adapters", replace(base, lora_rank=None)))
    elif importlib.util.find_spec("peft") is not None:
        runs.append(("adapters", replace(base, lora_rank=16)))
    return runs


def _expected_wall(run: TrialSettings, base: TrialSettings, base_wall: float) -> float:
    tokens = (run.micro_batch * run.seq_len) / (base.micro_batch * base.seq_len)
    recompute = (1.33 if run.recompute == "full" else 1.0) / (1.33 if base.recompute == "full" else 1.0)
    return base_wall * max(tokens, 0.25) * recompute


def _is_oom(exc: BaseException) -> bool:
    return "out of memory" in str(exc).lower() or type(exc).__name__ == "OutOfMemoryError"


def _release_memory() -> None:
    """Return the finished run's cached CUDA blocks before the next run builds its model."""
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def sweep_report(runs: list[SweepRun], out_dir: str):
    """The Report `gpuplan profile --sweep` prints: each run, measured vs estimated."""
    from gpuplan.report.model import Line, Report, Section, Table

    rows = tuple((r.label, f"mb {r.settings.micro_batch} x {r.settings.seq_len}, {r.settings.precision}, recompute "
                  f"{r.settings.recompute}" + (f", LoRA r{r.settings.lora_rank}" if r.settings.lora_rank else ""),
                  r.status, "" if r.step_time_s is None else f"{r.step_time_s:.4g}",
                  "" if r.estimated_step_time_s is None else f"{r.estimated_step_time_s:.4g}",
                  "" if not (r.step_time_s and r.estimated_step_time_s) else
                  f"{r.estimated_step_time_s / r.step_time_s - 1:+.1%}", r.reason or (r.path or ""))
                 for r in runs)
    done = [r for r in runs if r.status == "ok"]
    lines = (Line("runs_ok", "runs measured", len(done), text=f"{len(done)} of {len(runs)}"),
             Line("wall_s", "wall time of the runs", sum(r.wall_s for r in runs), "s",
                  f"{sum(r.wall_s for r in runs):.0f} s"))
    notes = (f"next: gpuplan calibrate {out_dir}/sweep-*.json --out calibration.json",)
    return Report("profile", f"Trial sweep: {runs[0].settings.model}", (), (), (Section("Sweep", lines),), notes,
                  (Table("runs: measured / gpuplan's estimate", ("run", "configuration", "status", "step s",
                                                                  "estimated s", "error", "file or reason"), rows),),
                  headline=("runs_ok", "wall_s"), summary_table="runs: measured / gpuplan's estimate")


def run_sweep(base: TrialSettings, out_dir: str | Path, budget_s: float = DEFAULT_BUDGET_S) -> list[SweepRun]:
    """Run the sweep into ``out_dir`` (one measurement file per run that finished)."""
    from gpuplan.profile.trial import PastDeadline, run_trial

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    start, base_wall, results = time.perf_counter(), None, []
    for i, (label, settings) in enumerate(sweep_variants(base)):
        left = budget_s - (time.perf_counter() - start)
        if base_wall is not None and _expected_wall(settings, base, base_wall) > left:
            results.append(SweepRun(label, settings, "skipped", f"over the time budget ({left:.0f} s left)"))
            continue
        path = folder / f"sweep-{i + 1:02d}-{label}.json"
        t0 = time.perf_counter()
        try:  # the base run has no expected time: it stops at the budget (wave 20: a 10 s budget ran it 224 s)
            data = run_trial(settings, path, start + budget_s if base_wall is None else None)
        except PastDeadline as past:
            _over_budget(budget_s, past, time.perf_counter() - start)
        except InputError as exc:  # the estimate says it does not fit: not tried
            if exc.field == "peak_tflops":  # the user's --peak-tflops, below what a run computed (trial.
                raise  # _check_given_peak): wrong for every run, so the sweep's one-line refusal (wave 19)
            results.append(SweepRun(label, settings, "skipped", str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - an OOM or a failure of this run ends the sweep
            status = "oom" if _is_oom(exc) else "error"
            results.append(SweepRun(label, settings, status, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
            break
        finally:
            _release_memory()
        wall = time.perf_counter() - t0
        base_wall = wall if base_wall is None else base_wall
        res = data["results"]
        results.append(SweepRun(label, settings, "ok", "", str(path), res["step_time_s"]["median"],
                                res["estimate"].get("step_time_s"), wall))
    return results


def _over_budget(budget_s: float, past, elapsed: float) -> None:
    """The sweep's refusal when its base run (the one every later run's expected time is scaled from) passes the
    budget: nothing was measured or written (the --out folder was made before any work, adapters.files.
    check_out_folder, as for the sweep's other refusals)."""
    need = elapsed + (past.total - past.done) * past.step_s
    raise InputError("sweep_budget", whole_or(budget_s), f"the base run alone passed it: {past.done} of {past.total} "
                     f"steps (warm-up included) in {elapsed:.0f} s, nothing written; give at least ~{need:.0f} s for "
                     "the base run, or fewer --steps / --warmup, a shorter --seq-len or fewer --layers")
