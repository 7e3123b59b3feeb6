"""The planner check times every layout with the row's own FP8 weights (review w11 r2, MUST 1): the planner's
search (jobs/validation/planner_choice.planner_plan) takes the row's low_precision_weights, the reading the
step (published_throughput.param_gather) and the memory check (published_fits.recipe_memory_fields) take, so
the published layout and the planner's layouts gather the same bytes; and the published layout is printed at
the ZeRO stage its step runs (nemo2_layout)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import published_rows_by_id

MIXTRAL = "nemo2502-mixtral-8x7b-b200-64g"  # NeMo 25.02 FP8, fp8_params = True: 'primary'


def _captured_inputs(monkeypatch, row_id: str, framework: str):
    """The PlanInputs planner_plan hands the search for ``row_id``."""
    from gpuplan.jobs.plan import search as S
    from gpuplan.jobs.validation.planner_choice import planner_plan

    seen, real = [], S.search
    monkeypatch.setattr(S, "search", lambda inputs, *args, **kw: seen.append(inputs) or real(inputs, *args, **kw))
    planner_plan(published_rows_by_id()[row_id], framework)
    return seen[0]


@pytest.mark.parametrize("row_id, framework, weights", [
    (MIXTRAL, "megatron", "primary"),
    ("mbridge-25.09-llama-3.1-405b-b200-128g-fp8cs", "megatron", "primary"),
    ("mbridge-26.02-llama-3-70b-gb200-64g-nvfp4", "megatron", "cached"),  # NVFP4 preset before 26.04.01
    ("nemo2407-llama-2-7b-h100-8g", "megatron", None),  # bf16 row: nothing to read
])
def test_the_planner_searches_with_the_rows_low_precision_weights(monkeypatch, row_id, framework, weights):
    from gpuplan.jobs.validation.published_throughput import recipe_low_precision_weights

    inputs = _captured_inputs(monkeypatch, row_id, framework)
    assert inputs.low_precision_weights == weights == recipe_low_precision_weights(published_rows_by_id()[row_id])


def test_mixtrals_published_layout_gathers_as_its_step_does_in_the_planners_table():
    """Mixtral 8x7B on 64 B200 (dp 64, ep 8, mb 2, ZeRO-1 by its recipe): the planner's data-parallel
    seconds at that layout are predicted_step's exactly (both gather the FP8 matrices at 1 B); with bf16
    weights (the parent's planner) the gather is 2 B an element and the traffic is larger."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.jobs.validation.published_throughput import predicted_step

    run = published_rows_by_id()[MIXTRAL]
    step = predicted_step(run)
    fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=64, seq_len=run["model"]["seq_len"],
                  global_batch=256, dtype="fp8", framework="megatron",
                  grad_dtype=run["recipe_memory"]["grad_dtype"])  # bf16 (grad_reduce_in_fp32 False), as planner_plan
    traffic = {}
    for weights in ("primary", None):
        t = search(PlanInputs(**fields, **({"low_precision_weights": weights} if weights else {}))).table
        at = np.flatnonzero((t["dp"] == 64) & (t["tp"] == 1) & (t["pp"] == 1) & (t["cp"] == 1) & (t["ep"] == 8)
                            & (t["zero"] == 1) & (t["micro_batch"] == 2) & (t["recompute"] == 0))[0]
        traffic[weights] = (float(t["dp_traffic_seconds"][at]), float(t["dp_comm_seconds"][at]))
    assert traffic["primary"] == pytest.approx((step.dp_traffic, step.dp_comm), rel=1e-9)
    assert traffic[None][0] > step.dp_traffic * 1.05


def test_a_nemo2_row_prints_the_zero_stage_its_step_runs():
    # NeMo-Framework-Launcher 24.07's distributed_fused_adam (recipe_memory.zero 1): the page prints no ZeRO
    from gpuplan.jobs.validation.planner_choice import published_text

    run = published_rows_by_id()["nemo2407-llama-2-7b-h100-8g"]
    assert run["layout"]["zero"] is None
    assert published_text(run).startswith("dp8 tp1 pp1 ZeRO-1 mb1")
