"""All budget sections for one run: data loading, checkpoints, failures and goodput, cost
(on-demand vs spot) and the named contingency, with their assumptions, tables and notes."""

from __future__ import annotations

from gpuplan.core.economics import reliability as R
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.errors import InputError
from gpuplan.jobs.budget import evaluation as EV
from gpuplan.jobs.budget.model import (
    SCALING_FACTORS,
    Budget,
    BudgetSettings,
    resolve_prices,
    run_facts,
    scenario,
    validate_settings,
)
from gpuplan.jobs.budget.notes import budget_notes
from gpuplan.jobs.budget.sections import (
    budget_assumptions,
    checkpoint_section,
    contingency_section,
    cost_section,
    data_section,
    failure_section,
    scaling_table,
)
from gpuplan.report.model import Section


def scaled_gpu_counts(gpus: float) -> list[tuple[float, float]]:
    """(factor, GPUs) of the cluster sizes the budget compares (SCALING_FACTORS x the run's GPUs,
    rounded, at least one), each count once and never the run's own count under another factor:
    on 1 GPU a quarter and a half are the run itself, and their row or "time for space" line would
    repeat the run's numbers. Two factors rounding to one count keep the one that names it exactly
    (on 2 GPUs, 1 GPU is 0.5x, not 0.25x)."""
    best: dict[float, float] = {float(gpus): 1.0}
    for factor in SCALING_FACTORS:
        count = float(max(1.0, round(gpus * factor)))
        if count == gpus:
            continue
        if count not in best or abs(gpus * factor - count) < abs(gpus * best[count] - count):
            best[count] = factor
    return sorted(((factor, count) for count, factor in best.items()), key=lambda pair: pair[0])


def compute_budget(spec: ModelSpec, gpu: Accelerator, *, gpus: float, wall_seconds: float, gpu_hours: float,
                   tokens: float, global_batch_tokens: float | None = None, step_seconds: float | None = None,
                   recipe: str = "mixed", zero: int = 1, model_parallel: int = 1,
                   settings: BudgetSettings | None = None, batch_asked: bool = False,
                   wall_range: tuple[float, float] | None = None, granule: int | None = None,
                   forward_share: float | None = None, eval_step_seconds: float | None = None) -> Budget:
    """All budget sections, their assumptions, the cluster-size table and notes for one run
    (``batch_asked``: the user gave the global batch, which ``global_batch_tokens`` then holds;
    ``wall_range``: the failure-free wall-clock's low and high ends, s, carried into the failure range;
    ``granule``: tokens of one sequence on each of the layout's dp x micro-batch slots, the unit a refusal's
    offered batch is rounded down to, jobs.plan.completes.largest_step_tokens; ``forward_share``: forward / step
    FLOPs, the in-loop evaluations' cost, jobs.budget.evaluation.step_forward_share; ``eval_step_seconds``: the steady
    batch's step the evaluations run at, where the run's own step is a batch ramp's average). Completion is tested at the point
    (the step the answer prints); a range end that does not complete is printed so (failure_section), not refused."""
    from gpuplan.jobs.plan.completes import check_run_completes

    s = settings or BudgetSettings()
    validate_settings(s)
    run = run_facts(spec, gpu, gpus=gpus, wall_seconds=wall_seconds, gpu_hours=gpu_hours, tokens=tokens,
                    global_batch_tokens=global_batch_tokens, step_seconds=step_seconds, recipe=recipe, zero=zero,
                    model_parallel=model_parallel)
    evaluation = EV.in_loop_evaluation(run, s, forward_share, eval_step_seconds)
    run = EV.with_evaluation(run, evaluation)
    check_run_completes(run, s, batch_asked, granule)  # the search door's test (jobs.plan.completes), one refusal for both
    main = scenario(run, s, run.gpus)
    ranges = failure_ranges(run, s, wall_range)
    # a larger count where failures outpace the checkpoints has no row to show (wave 6c: its spot wall-clock
    # refused the whole answer for the run's own count, which completes)
    scaled = [(f, sc) for f, sc in ((f, scenario(run, s, n)) for f, n in scaled_gpu_counts(run.gpus)) if sc.completes]
    prices = resolve_prices(gpu.id, s)
    evaluated = () if evaluation is None else (EV.evaluation_section(run, evaluation, forward_share is not None),)
    sections = (data_section(run, s), checkpoint_section(run, s, main), *evaluated,
                failure_section(run, main, ranges, scaled), cost_section(run, main, prices, scaled),
                contingency_section(run, s, main, prices))
    return Budget(sections, budget_assumptions(s, global_batch_tokens, batch_asked), (scaling_table(run, scaled, prices),),
                  budget_notes(run, s, main, prices))


def failure_ranges(run, s: BudgetSettings, wall_range: tuple[float, float] | None = None) -> dict:
    """The failure section's low and high scenarios: the low failure rate (R.failure_rate_range of the point rate,
    --failure-rate or the census default: the census range's spread around it) on the failure-free
    wall-clock's low end and the high rate on its high end (``wall_range``, s: the step model's band, as the
    wall-clock line shows it; None: the point wall-clock, the failure rate's range alone). The expected wall-clock
    with failures rises with both, so the two ends together bound it; the step time moves with the wall-clock (the
    step is what is uncertain), the checkpoint size and the interval rule do not."""
    from dataclasses import replace

    ends = sorted(wall_range) if wall_range is not None else (run.wall_seconds, run.wall_seconds)
    out = {}
    for key, wall, rate in zip(("low", "high"), ends, R.failure_rate_range(s.failure_rate)):
        scale = wall / run.wall_seconds
        at = replace(run, wall_seconds=wall, gpu_hours=run.gpu_hours * scale, step_seconds=run.step_seconds * scale,
                     eval_seconds=run.eval_seconds * scale)  # evaluation steps move with the training steps
        out[key] = scenario(at, s, run.gpus, rate=rate)
    return out


def budget_sections(spec: ModelSpec, gpu: Accelerator, *, gpus: float, wall_seconds: float, gpu_hours: float,
                    tokens: float, global_batch_tokens: float | None = None, step_seconds: float | None = None,
                    recipe: str = "mixed", zero: int = 1, model_parallel: int = 1,
                    settings: BudgetSettings | None = None) -> tuple[Section, ...]:
    """The five budget sections (module docstring). ``wall_seconds``: failure-free wall-clock;
    ``gpu_hours``: the compute GPU-hours of the training estimate (the contingency base)."""
    return compute_budget(spec, gpu, gpus=gpus, wall_seconds=wall_seconds, gpu_hours=gpu_hours, tokens=tokens,
                          global_batch_tokens=global_batch_tokens, step_seconds=step_seconds, recipe=recipe,
                          zero=zero, model_parallel=model_parallel, settings=settings).sections


def wall_with_failures(spec: ModelSpec, gpu: Accelerator, settings: BudgetSettings, *, gpus: float,
                       work_seconds: float, tokens: float, global_batch_tokens: float | None = None,
                       step_seconds: float | None = None, recipe: str = "mixed", zero: int = 1,
                       model_parallel: int = 1, forward_share: float | None = None,
                       eval_step_seconds: float | None = None) -> float:
    """The budget's "expected wall-clock with failures" (on-demand: interruptions, restarts, lost
    work and checkpoint stalls; Daly 2006 via core.economics.reliability) of ``work_seconds`` of
    failure-free training on ``gpus`` GPUs, the settings' in-loop evaluations added (``forward_share`` as
    compute_budget's), s. The deadline rule measures a deadline against it."""
    validate_settings(settings)
    run = run_facts(spec, gpu, gpus=gpus, wall_seconds=work_seconds, gpu_hours=work_seconds * gpus / 3600,
                    tokens=tokens, global_batch_tokens=global_batch_tokens, step_seconds=step_seconds,
                    recipe=recipe, zero=zero, model_parallel=model_parallel)
    run = EV.with_evaluation(run, EV.in_loop_evaluation(run, settings, forward_share, eval_step_seconds))
    try:
        return scenario(run, settings, run.gpus).on_demand.wall_seconds
    except InputError:  # failures faster than a checkpoint period: no run completes on these GPUs
        return float("inf")


def row_days_with_failures(inputs, evaluator, table):
    """Row i of a layout table -> its days with failures and checkpoints, as the budget of that layout
    counts them, one budget a row: the reference tests/test_plan_range_failures.py holds plan's vectorised
    shares against (jobs.plan.completes; plan's deadline read this before 84205b4, and nothing in src since)."""
    node = inputs.node_accelerator(evaluator.cluster.gpu)  # --gpus-per-node, as the budget counts nodes
    settings = inputs.budget_settings()  # neither depends on the row

    def share(i: int) -> float | None:  # the row's forward share (its recompute) where evaluation is asked
        if settings.eval_interval is None:
            return None
        from gpuplan.planner.space import RECOMPUTE_MODES

        return EV.step_forward_share(evaluator.spec, inputs, RECOMPUTE_MODES[int(table["recompute"][i])])

    def days(i: int) -> float:
        tp, pp = int(table["tp"][i]), int(table["pp"][i])
        batch = float(table["global_batch"][i]) * inputs.seq_len
        work = inputs.tokens / float(table["tokens_per_second"][i])
        wall = wall_with_failures(evaluator.spec, node, settings,
                                  gpus=float(table["gpus"][i]), work_seconds=work, tokens=inputs.tokens,
                                  global_batch_tokens=batch, step_seconds=float(table["step_seconds"][i]),
                                  recipe=inputs.recipe_name, zero=int(table["zero"][i]), model_parallel=tp * pp,
                                  forward_share=share(i))  # the row's recompute, as the search's (review s19b N4)
        return wall / 86400.0

    return days
