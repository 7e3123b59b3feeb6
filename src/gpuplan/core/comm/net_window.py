"""How many bytes a tree/LL128 channel keeps in flight on the network, and the rate that caps on a
network whose round trip is long (EFA): NCCL_STEPS slots of one chunk each per connection.

A network send of NCCL's proxy fills one slot of the receiver's buffer; the receiver's proxy posts
that slot's receive again only once its GPU consumed it, and the sender posts nothing above the
plugin's eager size until the receiver's clear-to-send for that slot arrived (aws/aws-ofi-nccl
v1.18.0 src/nccl_ofi_rdma.cpp lines 5626-5638, eager_max_size 8 KiB in include/nccl_ofi_param.h
line 240; NCCL's InfiniBand transport the same: src/transport/net_ib.cc @v2.27.7-1 ncclIbIsend
lines 2122-2130). So a channel moves at most NCCL_STEPS chunks per round trip (one message out, its
clear-to-send back): channels x NCCL_STEPS x chunk / round trip bytes/s.

Only tree/LL128 has chunks small enough for that to bind: calcCollChunking (src/enqueue.cc
@v2.27.7-1 lines 2037-2043) halves its 576,000 B step while a channel's share is short of the tree's
steps, down to ~17 KB at 1 MiB on 16 channels; the other protocols keep whole steps (ring/LL128
576,000 B, tree/Simple 512 KiB, ring/Simple 4 x 512 KiB, NVLS-tree 64 KiB x its 32 channels x 8 slots):
with a 40 us round trip those windows carry 1.7 TB/s or more per 16 channels and NVLS-tree on four
or more domains 420 GB/s, above every network rate the model gives them. LL carries one step per channel at the payloads
it runs (below 384 KiB). AWS's tuner sizes exactly this on P6-B200: it picks the tree/LL128 channel
count that gives the largest chunk from 4 to 32 MiB (nccl_ofi_regions.cpp v1.18.0 lines 2083-2093,
'we pick best nChannels that results in largest chunkSize').

The round trip is a measured property of a network (Cluster.net_round_trip_us; 0 = not stated, no
cap): the model states it only where a source measured it. Units: bytes, bytes/s, seconds.
"""

from __future__ import annotations

import numpy as np

NCCL_STEPS = 8
"""Slots per connection (src/include/device.h @v2.27.7-1 line 25)."""
LL128_STEP_DATA_BYTES = 576_000
"""Data bytes of one LL128 step: DEFAULT_LL128_BUFFSIZE = 120 elements x 640 threads x NCCL_STEPS x
8 B = 4,915,200 B (device.h lines 106-111), a step an eighth, 15 of every 16 words data
(enqueue.cc calcCollChunking: chunkSize / NCCL_LL128_LINEELEMS x NCCL_LL128_DATAELEMS)."""
LL128_GRAIN_BYTES = 32 * 8 // 16 * 15 * 8
"""LL128 chunks are whole grains: WARP_SIZE x NCCL_LL128_SHMEM_ELEMS_PER_THREAD / LINEELEMS x
DATAELEMS x 8 B = 1,920 B (device.h line 316; enqueue.cc 'chunkSize / grainSize * grainSize')."""


def tree_ll128_chunk(size, channels, nodes, per_node):
    """Bytes of one tree/LL128 chunk NCCL cuts an all-reduce of ``size`` bytes into on ``channels``
    channels, ``nodes`` domains of ``per_node`` ranks (calcCollChunking @v2.27.7-1 lines 2037-2043):
    the 576,000 B step halved while size // (channels x chunk) < nsteps x 64 / ppn and chunk > 131,072,
    then while < nsteps x 16 / ppn and chunk > 32,768, nsteps = 1 + log2i(nodes) + 0.1 ppn; then whole
    grains. 1 MiB on 16 channels, 4 x 8 ranks: 576,000 -> 72,000 -> 18,000 -> 17,280 B."""
    size, channels = np.asarray(size, dtype=float), np.asarray(channels, dtype=float)
    ppn = np.asarray(per_node, dtype=float)
    nsteps = 1 + np.floor(np.log2(np.maximum(np.asarray(nodes, dtype=float), 1))) + 0.1 * ppn
    chunk = np.full(np.broadcast(size, channels, nsteps).shape, float(LL128_STEP_DATA_BYTES))
    for threshold, floor in ((64, 131_072), (16, 32_768)):
        for _ in range(5):  # 576,000 halves to under 32,768 in five steps
            short = np.floor(size / (channels * chunk)) < nsteps * threshold / ppn
            chunk = np.where(short & (chunk > floor), np.floor(chunk / 2), chunk)
    return np.floor(chunk / LL128_GRAIN_BYTES) * LL128_GRAIN_BYTES


def tree_ll128_window_algbw(size, links, channels):
    """Algorithm bandwidth, bytes/s, the slot window allows a tree/LL128 all-reduce across domains:
    channels x NCCL_STEPS x chunk / links.net_round_trip_us (every byte crosses each tree edge once
    up and once down on connections of its own, so a channel's edge rate is the algorithm's rate).
    Infinite on one domain or where the network states no round trip."""
    rtt = np.asarray(links.net_round_trip_us, dtype=float) * 1e-6
    chunk = tree_ll128_chunk(size, channels, links.nodes, links.per_node)
    window = channels * NCCL_STEPS * chunk / np.where(rtt > 0, rtt, 1.0)
    return np.where((rtt > 0) & (np.asarray(links.nodes) > 1), window, np.inf)
