"""The planner's failure plans over arrays (jobs/plan/failure_plans.group_plan_columns, session 25) are the budget's
own (jobs.budget.model.scenarios), bit for bit, for every (GPU count, writers) group: the vectorised form exists to
drop ~1.0 s of Python calls from a long-context search (`plan qwen3-30b-a3b --gpu h100 --seq-len 65536 --gpus
8191`: 11,329 groups), not to change an answer. Each setting that takes another branch of scenarios is checked:
sync and async saves, an optimal or a given interval, node-local or shared storage, --storage-write, a node size,
ZeRO-0's few writers and a failure rate high enough that the checkpoint outlasts twice the MTBI (Daly's tau = M)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core.economics.checkpoint import checkpoint_writers
from gpuplan.core.economics.reliability import failure_rate_range
from gpuplan.jobs.budget.model import BudgetSettings, run_facts, scenarios
from gpuplan.jobs.plan.failure_plans import group_plan_columns

# (GPUs, ZeRO, tp x pp): single GPUs, partial nodes, ZeRO-0's one replica, counts past 16,384, odd counts
GROUPS = [(1, 1, 1), (7, 0, 2), (8, 1, 8), (12, 0, 16), (100, 3, 4), (504, 1, 8), (1_000, 0, 64), (8_191, 1, 8),
          (16_384, 1, 32), (100_000, 1, 16), (2_097_152, 1, 8)]
SETTINGS = {
    "default": BudgetSettings(),
    "async": BudgetSettings(async_checkpoint=True),
    "async_given_interval": BudgetSettings(async_checkpoint=True, checkpoint_interval=120.0),
    "given_interval": BudgetSettings(checkpoint_interval=3600.0),
    "local_nvme": BudgetSettings(storage="local_nvme"),
    "object_store": BudgetSettings(storage="parallel_fs", checkpoint_storage="object_store"),
    "storage_write": BudgetSettings(storage_write=2e9),
    "high_rate": BudgetSettings(failure_rate=0.05, restart_seconds=30.0),
    "spot_heavy": BudgetSettings(spot_preemptions=50.0, optimizer="adamw"),
    "mics": BudgetSettings(checkpoint_writer_group=4),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
@pytest.mark.parametrize("per_node", [None, 4])
def test_columns_are_the_budgets_scenarios_bit_for_bit(name, per_node):
    settings = SETTINGS[name]
    spec = resolve_model("llama-3.1-70b")
    gpu = resolve_gpu("h100")
    node = gpu if per_node is None else replace(gpu, devices_per_node=per_node)
    writers = [checkpoint_writers(g, zero, mp, settings.checkpoint_writer_group) for g, zero, mp in GROUPS]
    columns = group_plan_columns(spec, node, "mixed", settings, np.array([float(g) for g, _, _ in GROUPS]),
                                 np.array(writers))
    assert len(columns) == 6
    for i, (g, zero, mp) in enumerate(GROUPS):
        run = run_facts(spec, node, gpus=float(g), wall_seconds=86_400.0, gpu_hours=24.0 * g, tokens=1e12,
                        recipe="mixed", zero=zero, model_parallel=mp)
        found = scenarios(replace(run, step_seconds=0.0), settings, float(g),
                          (None, *failure_rate_range(settings.failure_rate)))
        plans = [p for s in found for p in (s.on_demand, s.spot)]
        for k, plan in enumerate(plans):
            expected = (plan.mtbi, plan.restart, plan.checkpoint_cost, plan.interval)
            got = tuple(float(column[i]) for column in columns[k])
            assert got == expected, (name, per_node, g, k, got, expected)  # exact: the same operations, in order


def test_the_high_rate_case_takes_dalys_mtbi_branch():
    """The check above reaches Daly's 'checkpoint >= 2 MTBI' branch: at 0.05 failures per GPU-hour 2,097,152 GPUs
    fail every 3,600 / (2,097,152 x 0.05) = 0.0343 s, and a ZeRO-0 replica's 8 writers (one node) write the 70B's
    ~1.1 TB checkpoint for far longer than twice that, so the interval is the MTBI."""
    spec, gpu = resolve_model("llama-3.1-70b"), resolve_gpu("h100")
    columns = group_plan_columns(spec, gpu, "mixed", SETTINGS["high_rate"], np.array([2_097_152.0]), np.array([8]))
    mtbi, _, stall, interval = columns[0]
    assert mtbi[0] == pytest.approx(3600 / (2_097_152 * 0.05), rel=1e-12)
    assert stall[0] >= 2 * mtbi[0] and interval[0] == mtbi[0]
