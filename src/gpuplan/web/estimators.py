"""The estimators behind the JSON API and ``gpuplan report``, by name.

Each one takes the raw values a CLI command takes (the same field names as its flags and plan
files: '2T', '7d', '40%'), parses them with that command's raw-input parser (bad values raise
InputError naming the field) and returns the command's Report. So the API, the report and the
CLI run the same lines and cannot disagree. Framework-free: no FastAPI import here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from gpuplan.report.model import Report


@dataclass(frozen=True)
class Estimator:
    """``name`` is the URL segment (POST /api/<name>); ``command`` the CLI command it mirrors."""

    name: str
    command: str
    summary: str
    fields: Callable[[], tuple[str, ...]]
    run: Callable[[dict[str, Any]], Report]


def _with_defaults_note(report: Report, used: list[str]) -> Report:
    """The note `gpuplan train` adds when built-in defaults filled missing inputs."""
    if not used:
        return report
    return replace(report, notes=report.notes + (f"built-in defaults used: {', '.join(used)}",))


def _training_fields() -> tuple[str, ...]:
    from gpuplan.jobs.training.inputs import TRAIN_FIELDS

    return TRAIN_FIELDS


def _training(raw: dict[str, Any]) -> Report:
    from gpuplan.jobs.training.estimate import estimate_training
    from gpuplan.jobs.training.inputs import training_inputs_from_raw

    inputs, used = training_inputs_from_raw(raw)
    return _with_defaults_note(estimate_training(inputs), used)


def _budget_fields() -> tuple[str, ...]:
    from gpuplan.jobs.budget.inputs import BUDGET_FIELDS

    return BUDGET_FIELDS


def _budget(raw: dict[str, Any]) -> Report:
    from gpuplan.jobs.budget.estimate import estimate_budget
    from gpuplan.jobs.budget.inputs import budget_inputs_from_raw

    inputs, settings, batch, step, used = budget_inputs_from_raw(raw)
    return _with_defaults_note(estimate_budget(inputs, settings, batch, step), used)


def _memory_fields() -> tuple[str, ...]:
    from gpuplan.jobs.memory.inputs import MEMORY_FIELDS

    return MEMORY_FIELDS


def _memory(raw: dict[str, Any]) -> Report:
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.inputs import memory_inputs_from_raw

    return estimate_memory(memory_inputs_from_raw(raw))


def _plan_fields() -> tuple[str, ...]:
    from gpuplan.jobs.plan.inputs import PLAN_FIELDS

    return PLAN_FIELDS


def _plan(raw: dict[str, Any]) -> Report:
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.inputs import plan_inputs_from_raw

    return plan_report(plan_inputs_from_raw(raw))


def _inference_fields() -> tuple[str, ...]:
    from gpuplan.jobs.inference.inputs import INFER_FIELDS

    return INFER_FIELDS


def _inference(raw: dict[str, Any]) -> Report:
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.inputs import inference_inputs_from_raw

    return estimate_inference(inference_inputs_from_raw(raw))


ESTIMATORS: dict[str, Estimator] = {e.name: e for e in (
    Estimator("training", "train", "Training compute and GPU time (the Python API estimate_training).",
              _training_fields, _training),
    Estimator("budget", "budget", "The training budget in one view: compute, time, memory, data loading, "
              "checkpoints, failures, cost on-demand vs spot, contingency (gpuplan budget / gpuplan train).",
              _budget_fields, _budget),
    Estimator("memory", "memory", "Per-GPU training memory by category against capacity and the safety margin, "
              "a verdict per GPU type, and what would make it fit (gpuplan memory).", _memory_fields, _memory),
    Estimator("plan", "plan", "Search every parallel layout, rank the ones that fit, Pareto front of GPUs vs "
              "days vs cost (gpuplan plan).", _plan_fields, _plan),
    Estimator("inference", "infer", "Serving memory, capacity, speed and cost; throughput vs concurrent "
              "sequences (gpuplan infer).", _inference_fields, _inference),
)}


def fields_of(name: str) -> tuple[str, ...] | None:
    """The fields estimator ``name`` accepts, or None when its module is not installed."""
    try:
        return ESTIMATORS[name].fields()
    except ImportError:
        return None
