"""gpuplan: plan the compute, memory, time and cost of training and serving LLMs.

The public API is imported lazily so that ``import gpuplan`` stays fast::

    from gpuplan import TrainingInputs, estimate_training
    report = estimate_training(TrainingInputs(params="7B", tokens="2T", gpu="a100", days=7))
    report.value("gpus")

Each ``*Inputs`` class is the job's one input schema: the same fields, units and checks as the
CLI options, plan-file keys and web API bodies (raw text such as "7B" or "8K" is accepted).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

_LAZY = {
    "TrainingInputs": "gpuplan.jobs.training.schema",
    "estimate_training": "gpuplan.jobs.training.estimate",
    "BudgetInputs": "gpuplan.jobs.budget.schema",
    "estimate_budget": "gpuplan.jobs.budget.estimate",
    "estimate_campaign": "gpuplan.jobs.campaign.estimate",
    "MemoryInputs": "gpuplan.jobs.memory.schema",
    "estimate_memory": "gpuplan.jobs.memory.estimate",
    "PlanInputs": "gpuplan.jobs.plan.schema",
    "plan_report": "gpuplan.jobs.plan.estimate",
    "InferenceInputs": "gpuplan.jobs.inference.schema",
    "estimate_inference": "gpuplan.jobs.inference.estimate",
    "resolve_model": "gpuplan.adapters.resolve",
    "resolve_gpu": "gpuplan.adapters.resolve",
    "count_parameters": "gpuplan.core.model.spec",
    "InputError": "gpuplan.errors",
    "Report": "gpuplan.report.model",
    "JOBS": "gpuplan.jobs",
}
__all__ = sorted(_LAZY)


_ESTIMATES = tuple(name for name, module in _LAZY.items() if module.endswith(".estimate"))
"""The jobs' estimates (each job's estimate module): wrapped so that refusals quote what was passed."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        found = getattr(importlib.import_module(_LAZY[name]), name)
        return _quoting_what_was_passed(found) if name in _ESTIMATES else found
    raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")


def _quoting_what_was_passed(estimate: Any) -> Any:
    """``estimate`` whose refusals quote what the caller passed for the field (`days='90min'`, not the
    0.0625 days it became), as the CLI and the web API quote the text typed or sent (schema.base.as_passed)."""
    import functools

    @functools.wraps(estimate)
    def answer(inputs: Any, *args: Any, **kwargs: Any) -> Any:
        from gpuplan.errors import InputError

        try:
            return estimate(inputs, *args, **kwargs)
        except InputError as exc:
            from gpuplan.schema.base import as_passed

            raise as_passed(exc, inputs) from None

    globals()[estimate.__name__] = answer  # once: later look-ups find it without __getattr__
    return answer
