"""core.time.stages: the one split and pacing rule step_time, titan_float8 and the breakdown by op class share."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.time.stages import last_stage_paces, paced_stage_layers, rank_layers


@pytest.mark.parametrize("pp, split", [(4, [16, 16, 16, 13]), (2, [32, 29]), (8, [8] * 7 + [5])])
def test_rank_layers_shed_slots_for_deepseek_v3s_mtp_module(pp, split):
    """DeepSeek-V3 (61 layers, one MTP module = 3 layer slots, core.model.mtp): 61 + 3 slots split evenly, the last
    rank keeping what is left beside its module: 16/16/16/13 at pp 4, 32/29 at pp 2, 8 x 7 + 5 at pp 8 (the splits of
    Megatron-Bridge's hand layouts, recipes/deepseek/deepseek_v3.py@v0.4.2, as core/model/mtp.py cites them)."""
    spec = load_model("deepseek-v3")
    assert [rank_layers(spec, pp, r) for r in range(pp)] == split
    assert list(rank_layers(spec, pp, list(range(pp)))) == split  # array ranks, as the planner's bulk search


def test_the_last_stage_paces_only_where_strictly_slower():
    assert last_stage_paces(0.28, 0.31) and not last_stage_paces(0.3, 0.3) and not last_stage_paces(0.3, 0.2)
    assert list(last_stage_paces([0.28, 0.53], [0.31, 0.52])) == [True, False]
    assert paced_stage_layers(16, 13, 0.28, 0.31) == 13 and paced_stage_layers(16, 13, 0.3, 0.3) == 16
