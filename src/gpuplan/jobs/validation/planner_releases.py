"""What release a published torchtitan row ran, and whether that release accumulates gradients: the
planner check (jobs/validation/planner_choice.py) keeps the planner to the layouts the row's release runs
(planner_choice.release_runs)."""

from __future__ import annotations

import re

TORCHTITAN_RELEASES_WITHOUT_ACCUMULATION = ("3faaa1a", "9dec370")
"""torchtitan commits of published rows that run one forward / backward per step without a pipeline:
gradient accumulation came with 8570415c3 "Support gradient accumulation (#1238)", 2025-06-05; before it
train.py takes one batch a step (``batch = next(data_iterator)``, 9dec370 train.py L259, 3faaa1a L260)
and runs ``loss.backward()`` once on it (9dec370 L308, 3faaa1a L296): the local batch is the micro-batch.
Pipeline layouts split the local batch in micro-batches of their own (pp_schedule.step, 9dec370 L286-293).
The rows at 820504e and e7c0cae (June 2025) run it: 820504e train.py L207 gradient_accumulation_steps."""


TORCHTITAN_FAMILIES_BEFORE_ACCUMULATION = ("torchtitan-2024-11-ibm-h100",)
"""Families of torchtitan rows that name no commit but were published before gradient accumulation came
(8570415c3, 2025-06-05): the IBM / Meta float8 blog of 2024-11-25 (pytorch/pytorch.github.io
_posts/2024-11-25-training-using-float8-fsdp2.md@1580429b)."""


def release_of(run: dict) -> str:
    """The torchtitan commit a published row ran ('torchtitan @9dec370 (...)' -> '9dec370'); '' if none."""
    match = re.search(r"torchtitan @([0-9a-f]{7,40})", run.get("framework", ""))
    return match.group(1)[:7] if match else ""


def accumulates(run: dict, framework: str) -> bool:
    """Whether the framework release behind ``run`` runs more than one micro-batch a step without a
    pipeline (TORCHTITAN_RELEASES_WITHOUT_ACCUMULATION; True for every other release and framework)."""
    return not (framework == "torchtitan" and (release_of(run) in TORCHTITAN_RELEASES_WITHOUT_ACCUMULATION
                                               or run["family"] in TORCHTITAN_FAMILIES_BEFORE_ACCUMULATION))
