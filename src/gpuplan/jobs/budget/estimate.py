"""`gpuplan budget` / `gpuplan train`: the training estimate's compute and time, then the budget
sections on the GPUs it rents."""

from __future__ import annotations

import math

from gpuplan.jobs.budget.compute import compute_budget
from gpuplan.jobs.budget.model import BudgetSettings
from gpuplan.report.model import Line, Report, Section


def estimate_budget(inputs, settings: BudgetSettings | None = None, global_batch_tokens: float | None = None,
                    step_seconds: float | None = None) -> Report:
    """`gpuplan budget`: the training estimate's compute and time lines (``inputs`` is a
    gpuplan.training.TrainingInputs), then the five budget sections on the GPUs it rents and
    its wall-clock with the communication allowance."""
    from gpuplan.adapters.resolve import resolve_gpu, resolve_model
    from gpuplan.jobs.training.estimate import estimate_training

    train = estimate_training(inputs)
    spec, gpu = resolve_model(inputs.model, inputs.params), resolve_gpu(inputs.gpu)
    gpus = max(1, math.ceil(train.value("gpus") - 1e-9))
    wall = train.value("wall_days_with_comm") * 86400 * train.value("gpus") / gpus
    result = compute_budget(spec, gpu, gpus=gpus, wall_seconds=wall, gpu_hours=train.value("gpu_hours_with_comm"),
                            tokens=inputs.tokens, global_batch_tokens=global_batch_tokens, step_seconds=step_seconds,
                            recipe=inputs.recipe, zero=inputs.zero, model_parallel=inputs.tp * inputs.pp,
                            settings=settings)
    keep = {"Compute", "GPU time"}
    time_sections = tuple(sec for sec in train.sections if sec.title in keep)
    memory = tuple(sec for sec in train.sections if sec.title.startswith("Memory per GPU"))
    comm = next((sec for sec in train.sections if sec.title.startswith("Allowances")), None)
    if comm is not None:  # the bare contingency multiplier is replaced by the named contingency lines
        time_sections += (Section("Communication allowance", tuple(
            line for line in comm.lines if line.key != "gpu_hours_budget")),)
    inputs_lines = train.inputs + (Line("gpus_rented", "GPUs rented", gpus, "GPUs", f"{gpus:,}"),)
    assumptions = tuple(a for a in train.assumptions if a.key != "contingency") + result.assumptions
    title = f"Training budget: {spec.name} on {train.line('tokens').text} tokens, {gpus:,} x {gpu.name}"
    return Report("budget", title, inputs_lines, assumptions, time_sections + memory + result.sections,
                  train.notes + result.notes, result.tables)
