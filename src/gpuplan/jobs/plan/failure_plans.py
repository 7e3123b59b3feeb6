"""The budget's failure plans for many (GPU count, checkpoint writers) groups at once: what
jobs.budget.model.scenarios works out for one group (its checkpoint size, write time, stall, restart, MTBI and
Daly's interval, core.economics.checkpoint and core.economics.reliability), over numpy arrays, so the planner's
failure shares (jobs.plan.completes.completing_rows) cost no Python call per group. A long-context search (`plan
qwen3-30b-a3b --gpu h100 --seq-len 65536 --gpus 8191`) weighs 11,329 groups x 3 failure rates; one scenarios call
each took ~1.0 s of its ~2.7 s (session 25). The same operations in the same order, so every value is the one
scenarios gives, bit for bit (tests/test_failure_plan_columns.py checks them against it); the square roots go
through Python's float power, as reliability.daly_interval takes them (numpy's sqrt may round otherwise).
Units: seconds."""

from __future__ import annotations

import numpy as np

PlanColumns = list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
"""Six failure plans (on-demand and spot at the point failure rate, then at the low and the high end of its
range), each as (MTBI, restart, checkpoint stall, interval before the step floor) per group."""


def group_plan_columns(spec, node, recipe: str, settings, gpus: np.ndarray, writers: np.ndarray) -> PlanColumns:
    """jobs.budget.model.scenarios(run, settings, g, (None, *failure_rate_range(rate))) for each group's GPU count
    ``gpus`` (float) and checkpoint writers ``writers`` (int >= 1: core.economics.checkpoint.checkpoint_writers of
    the group, the MiCS writer group already in it), with the run's step 0 (no step floor: each row's own step
    floors its interval, completes._wall_shares), as completes._plan_columns reads them. ``node``: the accelerator
    with its node size (--gpus-per-node); ``recipe``: the table's precision recipe (the checkpoint's bytes)."""
    from gpuplan.catalog.storage import storage_spec
    from gpuplan.core.economics import checkpoint as C
    from gpuplan.core.economics import cost as K
    from gpuplan.core.economics.reliability import SECONDS_PER_HOUR, failure_rate_range
    from gpuplan.core.memory import training as M
    from gpuplan.jobs.budget.model import DEFAULT_DEVICES_PER_NODE

    s = settings
    gpus, writers = np.asarray(gpus, float), np.asarray(writers, np.int64)
    per_node = node.devices_per_node or DEFAULT_DEVICES_PER_NODE  # RunFacts.devices_per_node
    nodes = np.maximum(1, np.ceil(gpus / per_node - 1e-9))  # io.nodes_for
    total = C.checkpoint_size(spec, M.RECIPES[recipe], M.OPTIMIZERS[s.optimizer], 1).total  # writers: shard only
    write_per_node, shared = s.storage_write, None  # scenarios' storage: --storage-write uncapped, else the tier's
    if write_per_node is None:
        store = storage_spec(s.checkpoint_storage or s.storage)
        write_per_node = store.node_write
        shared = None if store.shared_per_node is None else store.shared_per_node * nodes  # shared_write_total
    writing = np.maximum(1, np.minimum(nodes, np.ceil(writers / per_node)))  # checkpoint.writer_nodes
    bandwidth = writing * write_per_node  # checkpoint.write_bandwidth
    if shared is not None:
        bandwidth = np.minimum(bandwidth, shared)
    write_s = total / bandwidth  # checkpoint.write_seconds
    host_copy = total / writers / s.host_copy  # the shard (CheckpointSize.shard) over the host copy
    stall = host_copy if s.async_checkpoint else write_s
    restart = s.restart_seconds + (write_s if s.async_checkpoint else 0.0)  # async: the durable copy lags
    floor = np.zeros(len(gpus))  # the step's floor is each row's (completes._wall_shares)
    if s.async_checkpoint and s.checkpoint_interval is None:
        floor = np.maximum(floor, write_s)  # the optimum waits for the background write to finish
    elif s.async_checkpoint:  # checkpoint.async_stall_seconds
        stall = host_copy + np.maximum(0.0, write_s - s.checkpoint_interval)
    spot_extra = nodes * s.spot_preemptions / K.HOURS_PER_MONTH  # cost.spot_interruptions_per_hour
    restart = np.broadcast_to(restart, gpus.shape)
    out = []
    for rate in (s.failure_rate, *failure_rate_range(s.failure_rate)):
        for extra in (0.0, spot_extra):
            mtbi = SECONDS_PER_HOUR / (gpus * rate + extra)  # reliability.mtbi_seconds
            chosen = _daly_intervals(stall, mtbi) if s.checkpoint_interval is None else s.checkpoint_interval
            interval = np.maximum(np.maximum(chosen, floor), 1e-9)  # reliability.plan_failures
            out.append((mtbi, restart, np.broadcast_to(stall, gpus.shape), interval))
    return out


def _daly_intervals(cost: np.ndarray, mtbi: np.ndarray) -> np.ndarray:
    """reliability.daly_interval over arrays: the MTBI where the checkpoint costs at least twice it, else Daly's
    sqrt(2 delta M)(1 + sqrt(x)/3 + x/9) - delta with x = delta / 2M, each square root as Python's ``** 0.5``."""
    x = cost / (2.0 * mtbi)
    young = _python_sqrt(2.0 * cost * mtbi)
    daly = young * (1.0 + _python_sqrt(x) / 3.0 + x / 9.0) - cost
    return np.where(cost >= 2.0 * mtbi, mtbi, daly)


def _python_sqrt(values: np.ndarray) -> np.ndarray:
    """``v ** 0.5`` of each value as a Python float (C pow), not numpy's sqrt, so the interval is the scalar
    model's to the last bit."""
    return np.array([v ** 0.5 for v in np.asarray(values, float).ravel().tolist()]).reshape(np.shape(values))
