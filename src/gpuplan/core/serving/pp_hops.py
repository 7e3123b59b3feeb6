"""A serving forward's pipeline hops (issue 38, helper B3): pp - 1 sends of the step's hidden states between
neighbouring stages, each on the scale-up link, or on the scale-out network where the two stages' GPUs sit in
different scale-up domains (on an H100 NVL's host the PCIe between its NVLink pairs first: core.comm.host_tier).
Units: seconds, bytes, bytes/s."""
from __future__ import annotations

from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.comm.volumes import p2p_time
from gpuplan.core.hardware import Accelerator
from gpuplan.core.serving.tp_span import node_ranks


def hops_across_domains(tp: int, pp: int, fabric: Accelerator | None, domain: int | None = None) -> int:
    """Stage boundaries (of pp - 1) whose send leaves a scale-up domain. Ranks are laid out TP innermost
    (rank = stage x tp + tp_rank: vLLM parallel_state.py initialize_model_parallel, SGLang the same) and fill
    domains of node_ranks(fabric) GPUs in order; TP rank i of stage s - 1 sends to TP rank i of stage s, tp GPUs
    on, and the hop crosses when any such pair sits in two domains (its slowest pair sets its time): exactly when
    the two stages' 2 x tp GPUs, (s - 1) x tp .. (s + 1) x tp - 1, are not all in one domain (a boundary b among
    them splits the pair of TP rank max(0, b - (s - 1) x tp - tp)). ``domain``: count groups of that many GPUs
    instead (a host of several domains: pipeline_hop_seconds). 0 without a part."""
    if fabric is None or pp <= 1:
        return 0
    domain = domain or node_ranks(fabric)
    return sum(1 for s in range(1, pp) if (s - 1) * tp // domain != ((s + 1) * tp - 1) // domain)


def pipeline_hop_seconds(message_bytes: float, tp: int, pp: int, fabric: Accelerator | None,
                         link_bytes_per_s: float | None, latency_s: float) -> float:
    """Seconds of a forward's pp - 1 hops of ``message_bytes``: inside a domain latency_s + message over half
    the (both-directions) scale-up ``link_bytes_per_s`` (64 GB/s without one), as step_time charged every hop
    before; a hop across domains (hops_across_domains) is core.comm.volumes.p2p_time on the scale-out link of
    cluster_for(fabric) (Cluster.link past a domain: the catalog's NIC bandwidth a GPU x 0.9, 15 us), the
    training model's pipeline send (core.comm.step_comm) -- but on a host of several domains joined by PCIe
    (Cluster.host_bandwidth: the H100 NVL's pairs in a server of 8) a hop between two pairs of one host rides the
    host's PCIe (Cluster.link inside the node past a domain: 0.8 x 64 GB/s, 5 us), as training's sends do
    (step_comm.link -> Cluster.span_link), and only a hop past the host the network."""
    if pp <= 1:
        return 0.0
    across = hops_across_domains(tp, pp, fabric)
    seconds = (pp - 1 - across) * (latency_s + message_bytes / ((link_bytes_per_s or 64e9) / 2))
    if across:
        cluster = cluster_for(fabric)
        past_host = hops_across_domains(tp, pp, fabric, cluster.gpus_per_node) if cluster.host_bandwidth else across
        seconds += past_host * p2p_time(message_bytes, *cluster.link(cluster.gpus_per_node + 1))
        if across > past_host:  # inside the host, past a pair: the host tier
            seconds += (across - past_host) * p2p_time(message_bytes, *cluster.link(cluster.domain + 1))
    return seconds
