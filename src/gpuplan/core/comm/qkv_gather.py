"""The QKV all-gather of tensor parallelism beyond the key/value heads (Megatron-Core 0.16's sub-sharding).

When tp exceeds the K/V heads (core.parallel.check_kv_heads lets Megatron-Core run tp a multiple of them),
Megatron-Core keeps linear_qkv a plain column-parallel linear whose output width, q + 2·kv (heads x head
dim), is split evenly over the TP ranks (attention.py@core_v0.16.0 L1264-1278): the weights, their gradients
and their FLOPs are the even split gpuplan already counts. The ranks then assemble every query group's
columns with an all-gather of that output along its last dimension, keep their group's K/V head and their
num_heads / tp query heads (L1397-1416, f7dfb99795 'Support TP greater than num_kv_heads by supporting QKV
activation sub-sharding', 2025-12-07): all_gather_last_dim_from_tensor_parallel_region, whose backward is a
reduce-scatter of the gathered gradient (tensor_parallel/mappings.py@core_v0.16.0 L380-397, L523-526).

Per layer and micro-batch: one all-gather forward, one reduce-scatter backward, the all-gather again when
full recompute re-runs the forward (selective recompute re-runs the core attention only, not linear_qkv).
Each moves the gathered buffer, tokens x (q + 2·kv) x 2 bytes (bf16), on the TP group. They are blocking
autograd collectives outside Transformer Engine's linears, so none of TE's hidden TP share applies: all
exposed. What is not modelled: the gathered buffer's activation memory beyond the slice each rank keeps.

bigcode's Megatron-LM fork (StarCoder's) ran multi-query attention differently: a replicated K/V linear,
its output all-gathered from the sequence-parallel region (megatron/model/transformer.py@c988cf25 L553-566,
L686-704); this module times Megatron-Core's, the framework `--framework megatron` names.
Units: seconds, bytes.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.comm.collective_cost import CollectiveCost
from gpuplan.core.comm.dp_costs import rows_seconds
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import kv_heads_below_tp
from gpuplan.core.row_groups import group_rows

BF16_BYTES = 2.0


def qkv_gather_bytes(spec: ModelSpec, tokens) -> float:
    """Bytes of the gathered mixed QKV activation of ``tokens`` tokens: tokens x (q + 2·kv) x 2 (bf16)."""
    a = spec.attention
    return tokens * (a.num_heads * a.qk_head_dim + a.num_kv_heads * (a.qk_head_dim + a.value_head_dim)) * BF16_BYTES


def forward_gathers(recompute: str) -> int:
    """QKV all-gathers per layer and micro-batch: the forward's, and again under full recompute (the one
    reduce-scatter is the backward's)."""
    return 1 + (recompute == "full")


def tp_row_groups(cluster, group, tp, size):
    """core.row_groups.group_rows of a collective of ``size`` bytes on the TP group ``group`` (cluster.group(tp, 1)),
    keyed on what its seconds depend on row by row: tp and the bytes, and the job's size (Cluster.job_gpus) only
    where some row's group straddles a scale-up domain unevenly, the one place it enters the links (Cluster._straddle,
    core.comm.group_geometry.domain_split; GroupLinks.most is None where no row does). Also core.comm.step_comm's."""
    return group_rows(tp, size, *(() if group.most is None else (cluster.job_gpus,)))


def qkv_gather_cost(spec: ModelSpec, cluster, settings, tp, micro_batches, layers, tokens) -> CollectiveCost:
    """The step's QKV all-gathers and reduce-scatters on one GPU (zero calls where tp divides the K/V heads)."""
    size = qkv_gather_bytes(spec, tokens)
    group = cluster.group(tp, 1)
    seconds = rows_seconds(group, tp_row_groups(cluster, group, tp, size))
    one_ag, one_rs = seconds("all_gather", size), seconds("reduce_scatter", size)
    per = micro_batches * layers * kv_heads_below_tp(spec, np.asarray(tp))
    forward = forward_gathers(settings.recompute)
    calls = per * (forward + 1)
    total = per * (forward * one_ag + one_rs)
    return CollectiveCost("TP", "QKV all-gather (tp > K/V heads)", calls, size, tp, total, total, "all_gather", group)
