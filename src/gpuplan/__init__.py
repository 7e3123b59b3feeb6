"""gpuplan: plan the compute, memory, time and cost of training and serving LLMs.

The public API is imported lazily so that ``import gpuplan`` stays fast::

    from gpuplan import TrainingInputs, estimate_training
    report = estimate_training(TrainingInputs(params="7B", tokens=2e12, gpu="a100", days=7))
    report.value("gpus")
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "TrainingInputs": "gpuplan.jobs.training.estimate",
    "estimate_budget": "gpuplan.jobs.budget.estimate",
    "MemoryInputs": "gpuplan.jobs.memory.estimate",
    "estimate_memory": "gpuplan.jobs.memory.estimate",
    "PlanInputs": "gpuplan.jobs.plan.search",
    "plan_report": "gpuplan.jobs.plan.estimate",
    "InferenceInputs": "gpuplan.jobs.inference.inputs",
    "estimate_inference": "gpuplan.jobs.inference.estimate",
    "estimate_training": "gpuplan.jobs.training.estimate",
    "resolve_model": "gpuplan.adapters.resolve",
    "resolve_gpu": "gpuplan.adapters.resolve",
    "count_parameters": "gpuplan.core.model",
    "InputError": "gpuplan.errors",
    "Report": "gpuplan.report.model",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
