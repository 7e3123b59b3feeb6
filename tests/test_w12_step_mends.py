"""Wave 12 step-model mends (review_w12_r2 / r1 leftovers): each test fails on the commit before its mend."""

import pytest

from gpuplan.core.comm.dp_costs import ParamGather
from gpuplan.jobs.validation import published_throughput as pt

CP8_ROW = "torchtitan-2412-llama-3.1-8b-8g-cp8-seq262144"  # FSDP 1 x CP 8, Float8, full recompute


def test_float8_gather_time_gates_on_dp_shard_like_memory(published_rows):
    """torchtitan turns the float8 all-gather on only where dp_shard > 1 (float8.py@9dec370 L51-54; parallel_dims.py
    L103-104: FSDP's ranks over cp). The CP-8 row shards FSDP over its 8 cp ranks with dp_shard 1: with the flag
    given, the step's compute stream is the bf16 gather's (step.py passes cp to titan_float8.step_copy_seconds),
    as memory's gate (core.memory.float8_gather) already had it."""
    row = published_rows[CP8_ROW]
    on = pt.predicted_step(row, param_gather=ParamGather(fp8_matrices=True))
    off = pt.predicted_step(row, param_gather=ParamGather())
    assert on.compute == pytest.approx(off.compute, rel=1e-12)
