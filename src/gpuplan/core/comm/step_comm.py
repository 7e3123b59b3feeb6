"""Communication of one training step, collective by collective: which parallelism issues it,
how many calls, how many bytes per call, over which link, how long in all and how much of it is
left on the critical path. ``core.time.step.step_time`` sums these; ``gpuplan plan --explain``
prints them.

TP and data-parallel collectives are timed by core/comm/collectives.py (NCCL's algorithm and protocol
for the size, on the links core.comm.topology.Cluster.group gives the group: its ranks per scale-up
domain ride NVLink, the domain's NICs carry what leaves it; rank order tp, cp, ep/dp, pp as
Megatron's default 'tp-cp-ep-dp-pp'); the data-parallel ones in core/comm/dp_costs.py with each
framework's schedule (core/comm/dp_overlap.py). Point-to-point, CP and EP traffic use core/comm/volumes.py's
alpha-beta links. Degrees may be numbers or numpy arrays. Units: seconds, bytes.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.expert_layout import resolved_expert_tp
from gpuplan.core.comm import async_tp, tp_comm_dtype as TPD, volumes as C
from gpuplan.core.comm.group_geometry import domain_split
from gpuplan.core.comm.embedding_tp import embedding_output_costs
from gpuplan.core.comm.partition_activations import checkpoint_gather_cost
from gpuplan.core.time import context_parallel as CP
from gpuplan.core.comm.collective_cost import CollectiveCost, DirectLinks
from gpuplan.core.comm.qkv_gather import qkv_gather_cost, tp_row_groups
from gpuplan.core.parallel import kv_heads_below_tp
from gpuplan.core.comm.dp_costs import data_parallel_costs, params_per_gpu, rows_seconds  # noqa: F401 (params_per_gpu re-exported)
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.comm.moe_overlap import (ALL_TO_ALLS_PER_LAYER, MoeLayerPhases, exposed_all_to_all,
                                           paired_send_slack)
from gpuplan.core.comm.topology import Cluster
from gpuplan.core.time.pipeline_schedule import exposed_p2p_seconds
from gpuplan.core.time import sequence_parallel as SP


FLEX_KERNELS = {"deepep": "DeepEP", "hybridep": "HybridEP"}
"""The kernels the 'flex' dispatcher's backend (StepSettings.flex_backend) runs, as the EP row's label names them
('all-to-all (DeepEP)'); plan --explain's algorithm column reads the name from the label."""


def _domain_links(cluster: Cluster, span):
    """(inside, scale-up link, network link) for a group spanning ``span`` consecutive ranks: ``inside`` where it
    stays within a scale-up domain; each link (bandwidth B/s, latency s) as core.comm.topology.Cluster.link gives it
    for 1 GPU and for one past the domain."""
    return span <= cluster.gpus_per_node, cluster.link(1), cluster.link(cluster.gpus_per_node + 1)


def placed_span(cluster: Cluster, ranks, stride):
    """The span ``link`` and ``send_links`` time a group of ``ranks`` members ``stride`` apart on (its consecutive
    ranks, ranks x stride), where its groups divide the domains evenly; where they straddle them unevenly
    (core.comm.group_geometry, the job's groups as Cluster.group places them) a span inside one domain where the
    slowest group sits in one (worst_split's domains == 1: NVLink) and one past the domain where it spans more (the
    network): a CP group {4, 6} beside tp 2 on 6-GPU nodes sits in two."""
    span = np.asarray(ranks) * np.asarray(stride)
    found = domain_split(ranks, stride, cluster.gpus_per_node, cluster.host_gpus > 0, cluster.job_gpus)
    if found is None:
        return span
    _, spans, _, straddle = found
    inside = np.minimum(span, cluster.gpus_per_node)  # NVLink: one domain holds the slowest group
    return np.where(straddle, np.where(spans <= 1, inside, cluster.gpus_per_node + 1), span)


def link(cluster: Cluster, span):
    """Bandwidth and latency for a group spanning ``span`` consecutive ranks (array-friendly); on a host of
    several scale-up domains PCIe past one inside the host: Cluster's one rule (span_link, core.comm.host_tier)."""
    return cluster.span_link(span) if np.ndim(span) else cluster.link(span)


def send_links(cluster: Cluster, span) -> DirectLinks:
    """The links ``link`` times a send on for a group of ``span`` consecutive ranks: NVLink where the group stays
    inside a scale-up domain (2 ranks there), else the network (1 a domain); for plan --explain's link column."""
    inside, (up_bw, _), (out_bw, _) = _domain_links(cluster, np.asarray(span))
    if cluster.host_bandwidth:  # the node's link past a pair is the host tier's PCIe
        up_bw = cluster.span_link(np.minimum(span, cluster.gpus_per_node))[0]
    return DirectLinks(2, 1 + inside, up_bw, out_bw)


def step_communication(spec: ModelSpec, cluster: Cluster, settings, *, dp, tp, pp, vpp, cp, ep, zero,
                       micro_batch, micro_batches, shard_group, layers, trained_params, t_attn_mb,
                       t_bwd_gemm_mb, compute, moe_phases: MoeLayerPhases | None = None,
                       attention_forward_share=CP.FLASH_FORWARD_SHARE, output_pass=0.0) -> tuple[CollectiveCost, ...]:
    """Every collective of one step on the slowest pipeline stage (``layers`` of them); ``attention_forward_share``:
    the forward's share of ``t_attn_mb`` (the CP ring's steps: core.time.context_parallel.ring_exposed_per_layer);
    ``output_pass``: seconds of one pass of the output layer's GEMM a micro-batch (core.comm.embedding_tp)."""
    tokens = micro_batch * settings.seq_len / cp
    h = spec.hidden_size
    width = TPD.activation_bytes(settings.dtype)  # 4 B an element under --dtype fp32 / tf32
    act_bytes = tokens * h * width
    wide = TPD.widened(act_bytes, settings.tp_comm_bytes, width)  # x 2 under GPT-NeoX's fp32_allreduce
    group, seconds = _tp_seconds(cluster, tp, wide)
    costs = [_tp_cost(spec, cluster, settings, tp, micro_batches, layers, act_bytes, wide, group, seconds)]
    # DeepSpeed's partition_activations: each checkpoint all-gathered before its recompute, in the activations' dtype
    # (core.comm.partition_activations; fp32_allreduce does not reach it)
    plain = seconds if not TPD.widens(settings.tp_comm_bytes, width) else _tp_seconds(cluster, tp, act_bytes)[1]
    costs.append(checkpoint_gather_cost(settings, tp=tp, micro_batches=micro_batches, layers=layers,
                                        act_bytes=act_bytes, seconds=plain, group=group,
                                        hbm_bytes_per_s=cluster.gpu.memory_bandwidth))
    # the vocabulary-parallel embedding's and the output layer's exchanges, outside the layers (core.comm.embedding_tp)
    costs += embedding_output_costs(spec, settings, tp=tp, pp=pp, micro_batches=micro_batches, buffer=wide,
                                    seconds=seconds, group=group, output_pass=output_pass,
                                    casts=TPD.cast_seconds_per_call(settings, act_bytes, cluster.gpu.memory_bandwidth))
    if np.any(kv_heads_below_tp(spec, np.asarray(tp))):  # Megatron-Core's QKV sub-sharding (core.comm.qkv_gather)
        costs.append(qkv_gather_cost(spec, cluster, settings, tp, micro_batches, layers, tokens))
    # PP: activations forward and gradients backward at each stage boundary; interleaving crosses
    # vpp times as many boundaries (Narayanan et al. 2021 Sec. 2.2); exposed: the transfers on the
    # schedule's critical path (fill and drain, plain 1F1B's blocking exchanges; every paired
    # step under the combined 1F1B schedule: core.time.pipeline_schedule). Neighbouring stages sit
    # tp cp dp ranks apart: once the grid leaves a scale-up domain every boundary is charged at the
    # network's per-GPU rate (stride >= a node, as the 256-GPU B200 / 64-GPU H100 rows' 16, puts each
    # boundary there; a smaller stride keeps some on NVLink, which this overcharges)
    pp_span = placed_span(cluster, pp, np.asarray(tp) * cp * dp)  # neighbours split by a domain: the network
    pp_bw, pp_lat = link(cluster, pp_span)
    pp_one = C.p2p_time(act_bytes / tp, pp_bw, pp_lat)
    pp_calls = 2 * micro_batches * vpp * (np.asarray(pp) > 1)
    # under the combined 1F1B schedule (set with the EP line below): the paired steps and the
    # layer's send slack; it pairs them only with an expert all-to-all to hide (Megatron asserts
    # ep > 1 under it: transformer_config.py@core_v0.15.0 L1452-1454)
    combined, send_slack = False, 0.0
    costs += data_parallel_costs(spec, cluster, settings, dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero,
                                 micro_batches=micro_batches, shard_group=shard_group, layers=layers,
                                 trained_params=trained_params, t_bwd_gemm_mb=t_bwd_gemm_mb, compute=compute,
                                 moe_phases=moe_phases, vpp=vpp)
    # CP: ring of K/V blocks per layer (forward, K/V + their gradients backward, again in a re-run
    # forward), each send hidden behind one ring step's attention as TE's p2p ring runs it
    # (Liu et al. 2023, Ring Attention; core.time.context_parallel)
    a = spec.attention
    kv_width = (a.num_heads if a.is_mla else a.num_kv_heads) * (a.qk_head_dim + a.value_head_dim)
    cp_span = placed_span(cluster, cp, tp)  # a ring split by a domain boundary: the network (core.comm.group_geometry)
    cp_bw, cp_lat = link(cluster, cp_span)
    kv_bytes = tokens * kv_width * 2.0 / tp
    reruns = CP.attention_reruns(settings, layers, vpp)
    cp_calls = micro_batches * layers * CP.ring_transfers_per_layer(cp, reruns)
    cp_one = C.p2p_time(kv_bytes, cp_bw, cp_lat)
    costs.append(CollectiveCost("CP", "K/V ring send/recv", cp_calls, kv_bytes, tp * cp, cp_calls * cp_one,
                                micro_batches * layers * CP.ring_exposed_per_layer(cp_one, t_attn_mb / layers, cp,
                                                                                   reruns, attention_forward_share),
                                links=send_links(cluster, cp_span)))
    # EP: dispatch + combine all-to-all per MoE layer, forward and backward (4 per layer). With
    # TP and sequence parallelism each TP rank dispatches its own s/tp tokens (Megatron-Core
    # token_dispatcher.py, MoEAlltoAllTokenDispatcher). The expert group is etp x ep consecutive
    # ranks (Megatron-Core parallel_state: expert RankGenerator order 'tp-ep-dp-pp' with tp =
    # expert_tensor_parallel_size); ranks in one scale-up domain exchange over NVLink, the rest over
    # the network, both at once (comm.expert_all_to_all_time).
    if spec.moe is not None:
        etp = resolved_expert_tp(settings.expert_tp, tp, ep)  # core.expert_layout (None: tp)
        # the slowest expert group's members in one domain, at most the group (Cluster.group: min(domain // etp, ep)
        # where the groups divide the domains evenly, the fewest one domain holds where they straddle)
        per_domain = cluster.group(ep, etp).per_node
        # the group's part in one node: on a host of several domains PCIe where it spans more than one
        up_bw, up_lat = cluster.span_link(per_domain * etp) if cluster.host_bandwidth else cluster.link(1)
        out_bw, out_lat = cluster.link(cluster.gpus_per_node + 1)
        moe_layers = spec.num_moe_layers * layers / spec.num_layers
        routed = tokens / tp * spec.moe.experts_per_token * h * 2.0
        expert_parallel = np.asarray(ep) > 1
        ep_calls = micro_batches * moe_layers * ALL_TO_ALLS_PER_LAYER * expert_parallel
        one = C.expert_all_to_all_time(tokens / tp, h * 2.0, spec.moe.experts_per_token, ep, per_domain, up_bw,
                                       out_bw, up_lat, out_lat, deduplicate=settings.ep_dispatcher == "flex")
        ep_total = ep_calls * one  # ep_calls is 0 without expert parallelism
        ep_exposed = (1 - settings.ep_overlap) * ep_total
        what = "all-to-all" + (f" ({FLEX_KERNELS[settings.flex_backend]})" if settings.ep_dispatcher == "flex" else "")
        if settings.ep_a2a_overlap and moe_phases is not None:  # combined 1F1B schedule (core.comm.moe_overlap)
            ep_exposed = expert_parallel * exposed_all_to_all(
                one, moe_layers, micro_batches, pp, vpp, moe_phases, settings.ep_comm_sm_share)
            what += ", 1F1B-overlapped"
            combined, send_slack = expert_parallel, paired_send_slack(moe_phases, one)
        costs.append(CollectiveCost("EP", what, ep_calls, routed, etp * ep, ep_total, ep_exposed,
                                    links=DirectLinks(ep, per_domain, up_bw, out_bw)))
    # the line's seconds: a rank's own sends, or the critical path's where it holds more (plain 1F1B's
    # blocking exchanges chain through every stage: 2 (m + pp) - 5 against a rank's 2 m, pipeline_schedule)
    pp_exposed = exposed_p2p_seconds(pp, vpp, micro_batches, pp_one, combined, send_slack)
    costs.insert(1, CollectiveCost("PP", "send/recv" + ", combined 1F1B" * bool(np.any(combined)), pp_calls,
                                   act_bytes / tp, tp * cp * dp * pp, np.maximum(pp_calls * pp_one, pp_exposed),
                                   pp_exposed, links=send_links(cluster, pp_span)))
    return tuple(costs)


def with_data_parallel(costs, data_parallel) -> tuple[CollectiveCost, ...]:
    """``costs`` (step_communication's) with its data-parallel entries replaced by ``data_parallel``
    (data_parallel_costs' for another window), in their place (core.time.step: the MoE host stretch)."""
    first = next((i for i, c in enumerate(costs) if c.parallelism == "DP"), len(costs))
    rest = [c for c in costs if c.parallelism != "DP"]
    return tuple(rest[:first] + list(data_parallel) + rest[first:])


def _tp_seconds(cluster: Cluster, tp, buffer):
    """(the TP group's links, seconds(kind): one call's seconds of an NCCL collective on ``buffer`` bytes, each kind
    costed once, each distinct row once: core.row_groups, keyed by qkv_gather.tp_row_groups)."""
    group = cluster.group(tp, 1)
    on_group = rows_seconds(group, tp_row_groups(cluster, group, tp, buffer))
    known = {}

    def seconds(kind: str):
        if kind not in known:
            known[kind] = on_group(kind, buffer)
        return known[kind]
    return group, seconds


def _tp_cost(spec: ModelSpec, cluster: Cluster, settings, tp, micro_batches, layers, act_bytes, wide=None, group=None,
             seconds=None) -> CollectiveCost:
    """TP: 2 all-reduces forward + 2 backward per layer (Megatron, Shoeybi et al. 2019 Fig. 4), +2
    on full recompute; run with sequence parallelism (Megatron-Bridge's TP recipes, torchtitan's TP
    plan) each is a reduce-scatter + all-gather of the same buffer: NCCL's ring (NVLS serves
    all-reduce only), timed by core.comm.collectives on the TP group's links; without it (StepSettings.
    sequence_parallel False: Megatron-LM 2021, Megatron-DeepSpeed, GPT-NeoX v1.0) an all-reduce. Under GPT-NeoX's
    fp32_allreduce (StepSettings.tp_comm_bytes 4, core.comm.tp_comm_dtype) each call moves twice the bytes and adds
    two cast kernels, charged exposed (they run on the compute stream)."""
    # without sequence parallelism: all-reduces, GPT-NeoX's parallel residual reduces once forward (core.time.sequence_parallel)
    per_layer = SP.tp_exchanges_per_layer(spec, settings.sequence_parallel, settings.recompute)
    if seconds is None:  # called alone (tests): its own buffer, group and timing
        wide = TPD.widened(act_bytes, settings.tp_comm_bytes, TPD.activation_bytes(settings.dtype))
        group, seconds = _tp_seconds(cluster, tp, wide)
    kinds = SP.tp_collective_kinds(settings.sequence_parallel)
    width = TPD.activation_bytes(settings.dtype)
    each = {kind: seconds(kind) for kind in kinds}  # on _tp_seconds' buffer: x 2 under fp32_allreduce
    one = sum(each.values())
    calls = micro_batches * layers * per_layer * (np.asarray(tp) > 1)
    casts = calls * TPD.cast_seconds_per_call(settings, act_bytes, cluster.gpu.memory_bandwidth)  # never hidden
    total = calls * one
    exposed = (1 - settings.tp_overlap) * total
    if settings.tp_comm_overlap and settings.titan_ops is not None and settings.sequence_parallel:  # torch async TP
        exposed = (1 - settings.tp_overlap) * async_tp.exposed_seconds(
            reduce_scatter=each["reduce_scatter"], all_gather=each["all_gather"], exchanges_per_layer=per_layer, tp=tp,
            calls_per_exchange_layer=calls / per_layer, act_bytes=act_bytes,
            hbm_bytes_per_s=cluster.gpu.memory_bandwidth, fused_qkv=settings.titan_ops.fused_qkv)
    elif settings.tp_comm_overlap:  # chunked AG/RS pipelined with the GEMMs: one chunk in tp exposed
        exposed = exposed / np.maximum(np.asarray(tp, dtype=float), 1.0)
    what = ("RS + AG (SP)" if settings.sequence_parallel else "all-reduce (no SP)") + (
        ", chunked with GEMMs" if settings.tp_comm_overlap else "") + (
        ", fp32 + bf16<->fp32 casts" if TPD.widens(settings.tp_comm_bytes, width) else "")
    return CollectiveCost("TP", what, calls, wide, tp, total + casts, exposed + casts, kinds[0], group)


def by_parallelism(costs: tuple[CollectiveCost, ...], name: str, field: str = "exposed"):
    """Sum of ``field`` over the collectives of one parallelism (0 when it has none)."""
    return sum((getattr(c, field) for c in costs if c.parallelism == name), 0.0)
