"""The step reads the ZeRO stage the memory check reads (jobs.validation.published_throughput.nemo2_layout):
NeMo 24.07 / 25.02 / 25.04 rows leave the distributed optimizer unprinted and carry it in recipe_memory.zero
(distributed_fused_adam / use_distributed_optimizer=True, cited per row)."""

from copy import deepcopy

import pytest

from gpuplan.core.comm.dp_costs import ParamGather

from gpuplan.jobs.validation import published_fits, published_throughput as pt


def test_memory_and_step_read_one_layout():
    assert published_fits.nemo2_layout is pt.nemo2_layout


def test_nemo_row_steps_with_its_recipe_zero1(published_rows):
    row = published_rows["nemo2502-mixtral-8x7b-b200-64g"]
    assert row["layout"]["zero"] is None and row["recipe_memory"]["zero"] == 1
    printed = deepcopy(row)
    printed["layout"]["zero"] = 1
    assert pt.predicted_step(row).total == pytest.approx(pt.predicted_step(printed).total, rel=1e-12)
    ddp = deepcopy(row)
    del ddp["recipe_memory"]["zero"]
    # bf16 gathers on both sides (the row's FP8 parameter gather: tests/test_fp8_param_gather)
    sharded, replicated = pt.predicted_step(row, param_gather=ParamGather()), pt.predicted_step(ddp)
    # the optimizer pass (2 x 16 B a parameter, memory-bound) on the GPU's shard: the dense parameters over
    # dp = 64, the routed experts over the expert data-parallel group, 64 x tp 1 / ep 8 = 8 ranks
    # (core.comm.dp_costs.optimizer_shards; by hand in tests/test_expert_optimizer_shards)
    dense, experts = 1_605_636_096, 45_097_156_608 / 8  # Mixtral 8x7B at ep 8: 1.606e9 + 5.637e9 a GPU
    share = experts / (dense + experts)  # 0.7783
    assert replicated.optimizer / sharded.optimizer == pytest.approx(1 / ((1 - share) / 64 + share / 8), rel=1e-9)
    # the same bytes cross the network (all-reduce = reduce-scatter + all-gather on a ring) ...
    assert sharded.dp_traffic == pytest.approx(replicated.dp_traffic, rel=0.05)
    # ... but the gather hides in the next forward, not only in the last backward: less exposed
    assert sharded.dp_comm < replicated.dp_comm
