"""Communication of one training step, collective by collective: which parallelism issues it,
how many calls, how many bytes per call, over which link, how long in all and how much of it is
left on the critical path. ``core.step.step_time`` sums these; ``gpuplan plan --explain``
prints them.

Volumes and times come from core/comm.py (ring algorithms, alpha-beta on the link the group
rides: a group of consecutive ranks inside the scale-up domain uses NVLink, otherwise the
network; rank order tp, cp, ep/dp, pp as Megatron's default 'tp-cp-ep-dp-pp'). Degrees may be
numbers or numpy arrays. Units: seconds, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.core import comm as C
from gpuplan.core.model import ModelSpec
from gpuplan.core.moe_overlap import ALL_TO_ALLS_PER_LAYER, MoeLayerPhases, exposed_all_to_all
from gpuplan.core.topology import Cluster
from gpuplan.core.zero3_gathers import gathers_per_micro_batch


@dataclass(frozen=True)
class CollectiveCost:
    """One kind of collective in a step (values may be numpy arrays, one per layout)."""

    parallelism: str
    collective: str
    calls: object
    """Calls per optimizer step on one GPU."""
    bytes_per_call: object
    """The buffer of one call (the full tensor a ring all-gather produces / reduce-scatter reads)."""
    span: object
    """Consecutive ranks the group covers: inside the scale-up domain it rides NVLink."""
    total: object
    """Seconds per step, all calls, hidden or not."""
    exposed: object
    """Seconds per step on the critical path."""


def link(cluster: Cluster, span):
    """Bandwidth and latency for a group spanning ``span`` consecutive ranks (array-friendly)."""
    up_bw, up_lat = cluster.link(1)
    out_bw, out_lat = cluster.link(cluster.gpus_per_node + 1)
    inside = span <= cluster.gpus_per_node
    return inside * up_bw + (1 - inside) * out_bw, inside * up_lat + (1 - inside) * out_lat


def params_per_gpu(spec: ModelSpec, tp, pp, ep):
    """Parameters one GPU holds before ZeRO sharding: dense weights / (tp x pp), experts /
    (ep x pp) (approximation used for communication volumes)."""
    from gpuplan.core.model import count_parameters

    counts = count_parameters(spec)
    dense = counts.total - counts.routed_experts
    return dense / (tp * pp) + counts.routed_experts / (ep * pp)


def _share(total, part, exposed):
    """``exposed`` split over parts in proportion to their totals."""
    total = np.asarray(total, dtype=float)
    return np.where(total > 0, exposed * np.asarray(part, dtype=float) / np.where(total > 0, total, 1.0), 0.0)


def step_communication(spec: ModelSpec, cluster: Cluster, settings, *, dp, tp, pp, vpp, cp, ep, zero,
                       micro_batch, micro_batches, shard_group, layers, trained_params, t_attn_mb,
                       t_bwd_gemm_mb, compute, moe_phases: MoeLayerPhases | None = None
                       ) -> tuple[CollectiveCost, ...]:
    """Every collective of one step on the slowest pipeline stage (``layers`` of them)."""
    tokens = micro_batch * settings.seq_len / cp
    h = spec.hidden_size
    act_bytes = tokens * h * 2.0
    costs = []
    # TP: 2 all-reduces forward + 2 backward per layer (Megatron, Shoeybi et al. 2019 Fig. 4); with
    # sequence parallelism all-gather + reduce-scatter of the same volume; +2 on full recompute
    per_layer = 4 + 2 * (settings.recompute == "full")
    tp_bw, tp_lat = link(cluster, tp)
    tp_calls = micro_batches * layers * per_layer * (np.asarray(tp) > 1)
    tp_total = tp_calls * C.all_reduce_time(act_bytes, tp, tp_bw, tp_lat)
    tp_exposed = (1 - settings.tp_overlap) * tp_total
    if settings.tp_comm_overlap:  # chunked AG/RS pipelined with the GEMMs: one chunk in tp exposed
        tp_exposed = tp_exposed / np.maximum(np.asarray(tp, dtype=float), 1.0)
    tp_what = "all-reduce / AG+RS (SP)" + (", chunked with GEMMs" if settings.tp_comm_overlap else "")
    costs.append(CollectiveCost("TP", tp_what, tp_calls, act_bytes, tp, tp_total, tp_exposed))
    # PP: activations forward and gradients backward at each stage boundary; interleaving crosses
    # vpp times as many boundaries (Narayanan et al. 2021 Sec. 2.2); only fill and drain are exposed
    pp_bw, pp_lat = link(cluster, tp * cp * dp * pp)
    pp_one = C.p2p_time(act_bytes / tp, pp_bw, pp_lat)
    pp_calls = 2 * micro_batches * vpp * (np.asarray(pp) > 1)
    costs.append(CollectiveCost("PP", "send/recv", pp_calls, act_bytes / tp,
                                tp * cp * dp * pp, pp_calls * pp_one, 2 * (pp - 1) * pp_one))
    # DP / ZeRO over dp x cp ranks (HSDP: shards within shard_group, all-reduce across groups)
    data = dp * cp
    shard = data if shard_group is None else shard_group
    replicas = data / shard
    dp_bw, dp_lat = link(cluster, tp * shard)
    rep_bw, rep_lat = link(cluster, tp * data)
    params = params_per_gpu(spec, tp, pp, ep)
    grads = trained_params * settings.grad_comm_bytes
    weights = params * settings.weight_comm_bytes
    zero3 = np.asarray(zero) >= 3
    many = np.asarray(shard) > 1
    rs = C.reduce_scatter_time(grads, shard, dp_bw, dp_lat)
    # ZeRO-3 gathers each layer forward and backward; DeepSpeed also for the recomputed forward
    gathers = gathers_per_micro_batch(spec, settings.zero3_regathers, settings.recompute, tp)
    ag = C.all_gather_time(weights, shard, dp_bw, dp_lat)
    parts = {  # (collective, calls, bytes, span, seconds)
        "grads": ("grad reduce-scatter", many * 1.0, grads, tp * shard, rs),
        "weights": ("param all-gather",
                    many * np.where(zero3, gathers * micro_batches, 1), weights, tp * shard,
                    np.where(zero3, gathers * micro_batches, 1) * ag),
        "across": ("HSDP all-reduce", (replicas > 1) * 1.0, grads / shard, tp * data,
                   C.all_reduce_time(grads / shard, replicas, rep_bw, rep_lat)),
    }
    dp_total = sum(p[4] for p in parts.values())
    window = t_bwd_gemm_mb + zero3 * compute
    overlap = settings.dp_overlap if settings.zero3_overlap is None else np.where(
        zero3, settings.zero3_overlap, settings.dp_overlap)
    dp_exposed = C.exposed(dp_total, window, overlap)
    for name, (what, calls, size, span, seconds) in parts.items():
        costs.append(CollectiveCost("DP", what, calls, size, span, seconds, _share(dp_total, seconds, dp_exposed)))
    # CP: ring of K/V blocks per layer (forward, and K/V + their gradients backward), overlapped
    # with the attention it feeds (Liu et al. 2023, Ring Attention)
    a = spec.attention
    kv_width = (a.num_heads if a.is_mla else a.num_kv_heads) * (a.qk_head_dim + a.value_head_dim)
    cp_bw, cp_lat = link(cluster, tp * cp)
    kv_bytes = tokens * kv_width * 2.0 / tp
    cp_calls = micro_batches * layers * 3 * (cp - 1)
    cp_total = cp_calls * C.p2p_time(kv_bytes, cp_bw, cp_lat)
    costs.append(CollectiveCost("CP", "K/V ring send/recv", cp_calls, kv_bytes, tp * cp, cp_total,
                                C.exposed(cp_total, micro_batches * t_attn_mb, 1.0)))
    # EP: dispatch + combine all-to-all per MoE layer, forward and backward (4 per layer). With
    # TP and sequence parallelism each TP rank dispatches its own s/tp tokens (Megatron-Core
    # token_dispatcher.py, MoEAlltoAllTokenDispatcher). The expert group is etp x ep consecutive
    # ranks (Megatron-Core parallel_state: expert RankGenerator order 'tp-ep-dp-pp' with tp =
    # expert_tensor_parallel_size); ranks in one scale-up domain exchange over NVLink, the rest over
    # the network, both at once (comm.expert_all_to_all_time).
    if spec.moe is not None:
        etp = tp if settings.expert_tp is None else settings.expert_tp
        up_bw, up_lat = cluster.link(1)
        out_bw, out_lat = cluster.link(cluster.gpus_per_node + 1)
        per_domain = np.maximum(1, cluster.gpus_per_node // etp)
        moe_layers = spec.num_moe_layers * layers / spec.num_layers
        routed = tokens / tp * spec.moe.experts_per_token * h * 2.0
        ep_calls = micro_batches * moe_layers * ALL_TO_ALLS_PER_LAYER * (np.asarray(ep) > 1)
        one = C.expert_all_to_all_time(tokens / tp, h * 2.0, spec.moe.experts_per_token, ep, per_domain, up_bw,
                                       out_bw, up_lat, out_lat, deduplicate=settings.ep_dispatcher == "flex")
        ep_total = ep_calls * one  # ep_calls is 0 without expert parallelism
        ep_exposed = (1 - settings.ep_overlap) * ep_total
        what = "all-to-all" + (" (DeepEP/HybridEP)" if settings.ep_dispatcher == "flex" else "")
        if settings.ep_a2a_overlap and moe_phases is not None:  # combined 1F1B schedule (core.moe_overlap)
            ep_exposed = (np.asarray(ep) > 1) * exposed_all_to_all(
                one, moe_layers, micro_batches, pp, vpp, moe_phases, settings.ep_comm_sm_share)
            what += ", 1F1B-overlapped"
        costs.append(CollectiveCost("EP", what, ep_calls, routed, etp * ep, ep_total, ep_exposed))
    return tuple(costs)


def by_parallelism(costs: tuple[CollectiveCost, ...], name: str, field: str = "exposed"):
    """Sum of ``field`` over the collectives of one parallelism (0 when it has none)."""
    return sum((getattr(c, field) for c in costs if c.parallelism == name), 0.0)
