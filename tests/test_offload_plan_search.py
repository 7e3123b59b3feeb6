"""`plan --offload-layers N` searches only the layouts Megatron-Core runs with CPU activation
offloading (transformer_config.py __post_init__: no pipeline parallelism, no recompute; the
schema's _offload_rules), and every face answers instead of failing inside the vectorised search."""

import numpy as np

from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import search, space_limits
from gpuplan.planner.space import RECOMPUTE_MODES


def _inputs(**extra) -> PlanInputs:
    return PlanInputs(model="llama-3.1-70b", gpu="h100", gpus=64, tokens=2e12, **extra)


def test_offload_fixes_pp_1_and_no_recompute_in_the_search_space():
    limits = space_limits(_inputs(offload_layers=20))
    assert limits.fixed["pp"] == 1
    assert limits.recompute == ("none",)
    free = space_limits(_inputs())
    assert "pp" not in free.fixed and len(free.recompute) > 1


def test_every_layout_searched_with_offload_has_no_pipeline_and_no_recompute():
    found = search(_inputs(offload_layers=20))
    assert len(found.all) > 0
    assert np.all(found.all["pp"] == 1)
    assert {RECOMPUTE_MODES[int(i)] for i in np.unique(found.table["recompute"])} == {"none"}


def test_plan_with_offload_answers_on_the_cli(run_cli):
    code, out, err = run_cli("plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "64", "--offload-layers", "20")
    assert code == 0, err
    assert "internal error" not in out + err
    assert " pp1 " in out
