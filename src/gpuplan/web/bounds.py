"""The API's own bounds on one plan request, on top of the schema's: how much one answer lists.
Checked on the parsed inputs (so "1e3" and 1000 are the same ``top``) before any search runs, and
each refusal is a 422 naming the field and the limit.

How many layouts a search may evaluate is not the API's to decide: the planner's own limit
(planner.search.layouts_to_evaluate, MAX_EVALUATED after the micro-batch prune) refuses a search
before it evaluates anything, the same way for the CLI, plan files, the API and the Python API.
It was counted here before the prune (and on the asked counts, not the deadline's defaults), so
the API refused llama-2-7b with a 1e12-token batch on the 29 counts the deadline search uses
(938,378 layouts before the prune, over 600,000), which the CLI answers (340,378 evaluated then, 346,033 since 7a8eafb; ~2 s).
"""

from __future__ import annotations

from gpuplan.errors import InputError

MAX_API_TOP = 100
"""Layouts listed in one answer."""
MAX_API_GPU_COUNTS = 256


def check_plan(inputs) -> None:
    """Raise InputError when a plan request (PlanInputs) is over the API's bounds."""
    if inputs.top > MAX_API_TOP:
        raise InputError("top", inputs.top, f"must be at most {MAX_API_TOP} over the API")
    counts = inputs.gpu_counts
    if len(counts) > MAX_API_GPU_COUNTS:
        raise InputError("gpus", inputs.gpus, f"at most {MAX_API_GPU_COUNTS} GPU counts over the API "
                         f"(this asks for {len(counts):,})")
