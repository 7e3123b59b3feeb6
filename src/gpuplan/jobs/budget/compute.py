"""All budget sections for one run: data loading, checkpoints, failures and goodput, cost
(on-demand vs spot) and the named contingency, with their assumptions, tables and notes."""

from __future__ import annotations

from gpuplan.core import reliability as R
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model import ModelSpec
from gpuplan.jobs.budget.model import (
    SCALING_FACTORS,
    Budget,
    BudgetSettings,
    resolve_prices,
    run_facts,
    scenario,
    validate_settings,
)
from gpuplan.jobs.budget.sections import (
    budget_assumptions,
    budget_notes,
    checkpoint_section,
    contingency_section,
    cost_section,
    data_section,
    failure_section,
    scaling_table,
)
from gpuplan.report.model import Section


def compute_budget(spec: ModelSpec, gpu: Accelerator, *, gpus: float, wall_seconds: float, gpu_hours: float,
                   tokens: float, global_batch_tokens: float | None = None, step_seconds: float | None = None,
                   recipe: str = "mixed", zero: int = 1, model_parallel: int = 1,
                   settings: BudgetSettings | None = None) -> Budget:
    """All budget sections, their assumptions, the cluster-size table and notes for one run."""
    s = settings or BudgetSettings()
    validate_settings(s)
    run = run_facts(spec, gpu, gpus=gpus, wall_seconds=wall_seconds, gpu_hours=gpu_hours, tokens=tokens,
                    global_batch_tokens=global_batch_tokens, step_seconds=step_seconds, recipe=recipe, zero=zero,
                    model_parallel=model_parallel)
    main = scenario(run, s, run.gpus)
    ranges = {k: scenario(run, s, run.gpus, rate=r) for k, r in zip(("low", "high"), R.FAILURE_RATE_RANGE)}
    scaled = [(f, scenario(run, s, max(1.0, round(run.gpus * f)))) for f in SCALING_FACTORS]
    prices = resolve_prices(gpu.id, s)
    sections = (data_section(run, s), checkpoint_section(run, s, main), failure_section(run, main, ranges, scaled),
                cost_section(run, main, prices, scaled), contingency_section(run, s, main, prices))
    return Budget(sections, budget_assumptions(s, global_batch_tokens), (scaling_table(run, scaled, prices),),
                  budget_notes(run, s, main, prices))


def budget_sections(spec: ModelSpec, gpu: Accelerator, *, gpus: float, wall_seconds: float, gpu_hours: float,
                    tokens: float, global_batch_tokens: float | None = None, step_seconds: float | None = None,
                    recipe: str = "mixed", zero: int = 1, model_parallel: int = 1,
                    settings: BudgetSettings | None = None) -> tuple[Section, ...]:
    """The five budget sections (module docstring). ``wall_seconds``: failure-free wall-clock;
    ``gpu_hours``: the compute GPU-hours of the training estimate (the contingency base)."""
    return compute_budget(spec, gpu, gpus=gpus, wall_seconds=wall_seconds, gpu_hours=gpu_hours, tokens=tokens,
                          global_batch_tokens=global_batch_tokens, step_seconds=step_seconds, recipe=recipe,
                          zero=zero, model_parallel=model_parallel, settings=settings).sections
