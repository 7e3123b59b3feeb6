"""The jobs a user asks for. Each package holds its input schema (schema.py), its estimate and
its report sections; the faces (CLI, web API, report, Python API) reach them through JOBS.

Data flows one way: face -> job schema -> job estimate -> planner / core -> Report.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Job:
    """``name``: the API segment (POST /api/<name>); ``command``: the CLI command; the schema and
    the estimate as 'module:attribute' (imported on first use)."""

    name: str
    command: str
    summary: str
    schema_path: str
    estimate_path: str

    @staticmethod
    def _load(path: str) -> Any:
        module, _, attribute = path.partition(":")
        return getattr(importlib.import_module(module), attribute)

    @property
    def schema(self) -> type:
        return self._load(self.schema_path)

    def run(self, inputs: Any) -> Any:
        """The job's Report for checked inputs (an instance of :attr:`schema`)."""
        return self._load(self.estimate_path)(inputs)


JOBS: dict[str, Job] = {job.name: job for job in (
    Job("training", "train", "Training compute and GPU time (the Python API estimate_training).",
        "gpuplan.jobs.training.schema:TrainingInputs", "gpuplan.jobs.training.estimate:estimate_training"),
    Job("budget", "train", "The training budget in one view: compute, time, memory, data loading, checkpoints, "
        "failures, cost on-demand vs spot, contingency (gpuplan train / gpuplan budget).",
        "gpuplan.jobs.budget.schema:BudgetInputs", "gpuplan.jobs.budget.estimate:estimate_budget"),
    Job("memory", "memory", "Per-GPU training memory by category against capacity and the safety margin, a "
        "verdict per GPU type, and what would make it fit (gpuplan memory).",
        "gpuplan.jobs.memory.schema:MemoryInputs", "gpuplan.jobs.memory.estimate:estimate_memory"),
    Job("plan", "plan", "Search every parallel layout, rank the ones that fit, Pareto front of GPUs vs days vs "
        "cost (gpuplan plan).", "gpuplan.jobs.plan.schema:PlanInputs", "gpuplan.jobs.plan.estimate:plan_report"),
    Job("inference", "infer", "Serving memory, capacity, speed and cost; throughput vs concurrent sequences "
        "(gpuplan infer).", "gpuplan.jobs.inference.schema:InferenceInputs",
        "gpuplan.jobs.inference.estimate:estimate_inference"),
)}
