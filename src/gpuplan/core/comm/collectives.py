"""NCCL collectives by message size: every algorithm (ring, tree, NVLS, NVLS-tree, CollNet/SHARP)
with every protocol (LL, LL128, Simple) costed as latency + bytes / bandwidth on the group's
links (core.comm.topology.GroupLinks), and the fastest one taken — what NCCL's own tuner does
(NVIDIA/nccl src/graph/tuning.cc @5067397: ncclTopoTuneModel builds a latency and a bandwidth per
collective x algorithm x protocol, ncclTopoGetAlgoTime = latency + bytes / bandwidth, the minimum
is run).

What each algorithm moves over which link (per GPU, payload S, n ranks, g per scale-up domain,
k = n / g domains; ``intra`` = ring bus bandwidth inside the domain, ``net`` = the domain's NIC
bandwidth this group gets):

  ring       2(n-1)/n S per rank (all-reduce), (n-1)/n S (all-gather, reduce-scatter); a channel
             leaves the domain once, so NVLink carries (g-1)/g of it: bus = min(intra g/(g-1), net)
  tree       all-reduce only, chain inside the domain (each GPU sends S up and S down: intra / 2)
             and a double binary tree across domains, as fast as its busiest domain's NICs: S on two
             domains, 1.5 S on three, 2 S from four (tree_busiest_domain_load), x 0.92; Simple also
             pays its first chunk's crossing of the chain and the tree (tree_chain_fill). NCCL's
             tuner takes 2 S beyond two domains ("ratio .5"), so on three it picks the ring where
             the tree would be faster (NVIDIA/nccl#1801: 3 GB200 partitions, tree 485 vs ring 394
             GB/s): the choice follows NCCL's estimate, the time the volume
  NVLS       all-reduce inside one NVSwitch domain, reduced in the switch: bus = intra x the part's
             measured NVLS gain (catalog ``nvls_allreduce_gain``); NCCL's tuner rates it by its NVLS
             graph (nvls_tuner.nvls_tuner_algbw: channels x search speed x 5/6): that sets the choice
  NVLS-tree  NVLS inside, tree across: bus = min(NVLS bus, 2 net) / tree_busiest_domain_load
             (NVLS and NVLS-tree also pay their pipeline fill, two loops: NVLS_FILL_STAGES); NCCL's
             tuner rates it by its heads' NICs instead (nvls_tree_tuner_algbw): that sets the choice
  CollNet    IB SHARP (chain inside the domain, reduction in the switches): algbw = intra / 2
  PAT        all-gather / reduce-scatter at one GPU per node: log-depth latency, 0.75 x the ring's bw

Protocol factors on bandwidth (tuning.cc): LL 1/2 (8-byte lines carry 4 bytes of data) capped by
llMaxBw, LL128 0.92 (120 of 128 bytes), Simple 1. Latencies in microseconds are NCCL's constants
(ncclTunerConstantsDefaults: base latency per algorithm and protocol, hardware latency per step on
NVLink, PCIe and the network). Values may be numbers or numpy arrays (the planner evaluates layouts
in bulk). Units: bytes, bytes/s, seconds.
"""

from __future__ import annotations

import numpy as np

# NVLS's heads and NCCL's NVLS estimates live in nvls_tuner (NCCL's search and tuner, not the physical rate)
from gpuplan.core.comm.nvls_tuner import NCCL_MAX_NVLS_ARITY, NVLS_TREE_ALGBW_RATIO, nvls_tuner_algbw
# the load of NCCL's double binary tree on its busiest domain (src/graph/trees.cc)
from gpuplan.core.comm.nccl_trees import tree_busiest_domain_load
from gpuplan.core.comm.host_tier import intra_latency_us as intra_us  # NVLink / PCI steps (a host of several domains)

PROTOCOLS = ("LL", "LL128", "Simple")
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet", "pat")
KINDS = ("all_reduce", "all_gather", "reduce_scatter")

# tuning.cc ncclTunerConstantsDefaults, microseconds: baseLatencies[algo][proto] and
# hwLatencies[NVLINK | PCI | NET][algo][proto] (CollNet: the Chain row). The same in every release from
# v2.26.2-1 to @5067397 but NVLS-tree's network step: 14 us up to v2.28.7-1 (tuning.cc @v2.26.2-1 line 141,
# @v2.27.7-1 line 155, @v2.28.7-1 line 165), 20.9 from v2.28.9-1 (dbc86fd0, 2025-11-10). Every measured
# collective row ran 2.26.2 - 2.27.7 (docs/step.md, 'Which NCCL each published collective row ran'), and
# NVLS-tree's tuner rating is 2.26.2's (nvls_tree_tuner_algbw), so its latency is that release's too.
BASE_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "collnet": (0.0, 0.0, 0.0),
           "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0), "pat": (8.0, 8.0, 8.0)}
HW_US = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet": (0.0, 0.0, 2.8),
               "nvls": (0.0, 0.0, 25.0), "nvls_tree": (0.0, 0.0, 25.0)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "collnet": (0.0, 0.0, 2.8),
            "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet": (0.0, 0.0, 30.0),
            "nvls": (0.0, 0.0, 18.0), "nvls_tree": (0.0, 0.0, 14.0), "pat": (0.0, 0.0, 14.0)},
}
# PAT (tuning.cc): busBw x .75; latency log2i(nNodes) x (interLat / 3.5) + nRanks x 2.8 us
PAT_FACTOR, PAT_LOG_LATENCY_DIVISOR, PAT_PER_RANK_US = 0.75, 3.5, 2.8
NET_OVERHEAD_US = 1.0
"""Network post overhead per step of an inter-domain ring, x3 for Simple (getNetOverhead: 1 us Intel)."""
RING_PLATEAU = 1.4
"""Multi-domain Simple ring all-reduce latency factor (ncclTopoGetAlgoTime 'Plateau effect of ring')."""
# llMaxBws, GB/s: one domain by GPU generation; several by CPU (Intel/Arm row): 2 domains, more
LL_MAX_BUS_GBPS = {"volta": 39.0, "ampere": 87.7, "hopper": 141.0, "blackwell": 282.0}
LL_MAX_BUS_MULTI_GBPS = (39.0, 20.4)
LL_FACTOR, LL128_FACTOR = 0.5, 0.92
TREE_FACTOR = 0.92
TREE_LL_FACTOR = 1 / 3.8
# treeCorrectionFactor[proto][log2(bytes / 64)], 64 B ... 256 MiB: trees off their model at mid sizes
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)
NVLS_MIN_RANKS = 5
"""NVLS needs more than four GPUs of a switch domain: 'partitions that have less than or equal to
four GPUs will not benefit from multicast' (NVIDIA GB200 NVL Partition User Guide v1.0); measured,
NCCL picks it from 5 GPUs on 8x H200 and from 6 on 8x B200 (stas00/ml-engineering network/README.md
@744d01e, SHARP): on 5 B200 NCCL's own NVLS estimate is under the ring's (nvls_tuner module docstring)."""


NVLS_CHANNELS = {"hopper": (16, 16), "blackwell": (24, 32)}
"""NVLS channels (thread blocks) per GPU, (one domain, several): src/transport/nvls.cc @5067397
NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100_NVL 24 on one NVLink domain, NVLS_NCHANNELS_SM100 32
across domains."""
NVLS_CHUNK_BYTES = 128 * 1024
"""Bytes one NVLS channel moves per head and loop: nvls.cc NCCL_NVLS_CHUNKSIZE default 128 KiB."""
NVLS_TREE_CHUNK_BYTES_FROM_FOUR = 64 * 1024
"""NVLS-tree's chunk on four or more domains: calcCollChunking caps it at 64 KiB when nNodes >= 4 and
NCCL_NVLSTREE_MAX_CHUNKSIZE is unset (src/enqueue.cc @v2.26.2-1 lines 1894-1896, 'comm->nNodes >= 4 ?
65536 : chunkSize'); the smaller caps it applies to short payloads are not modelled."""
NVLS_FILL_STAGES = 2
"""Loops an NVLS all-reduce leaves exposed: its kernel (src/device/all_reduce.h, RunWorkColl NVLS /
NVLS_TREE) runs three warp groups in a pipeline over loops of heads x chunk per channel -- scatter
into the switch buffers, the multicast reduce + broadcast, gather back -- so the first loop's scatter
and the last loop's gather run alone: two loop-times beyond bytes / bandwidth."""
NVLS_TREE_BEYOND_TWO = 0.5
"""NVLS-tree's rate beyond two domains in NCCL's tuner (nvls_tree_tuner_algbw; the physical rate divides by
tree_busiest_domain_load instead, the same 0.5 from four domains, 2/3 on three): the tuner sets the bandwidth
to min(bwIntra, nNodes <= 2 ? bwInter : bwInter / 2) (src/graph/tuning.cc @v2.26.2-1 line 252), and the
NVLS graph search gives the channels one speed, bwIntra = bwInter (search.cc @v2.26.2-1: 'tmpGraph.bwIntra
= tmpGraph.bwInter = speedArray[speedIndex]'), so past two domains the double binary tree (each domain
receives from two children and sends to its parent) halves it. Measured: coreweave GB200 NVL72, 2 racks
408 GB/s algbw at 16 GiB, 20 racks 203 GB/s (0.50); NVIDIA/nccl#1221 (8x H100 nodes): NVLS on or off
makes no difference beyond two nodes (the ring, 8 NICs x 45 GB/s = 360 GB/s busbw, beats 480 / 2)."""
NCCL_COLLECTIVE_CTAS = 16
"""Thread blocks (one per channel, each alone on an SM) NCCL runs a collective on across a DGX-class
node with eight NICs: 'If you are on DGX with 8 NICs and a top speed of 190 GB/s, then it would use
16 SMs', and 'NCCL CTAs won't share an SM with compute kernels' (NVIDIA/nccl#689, sjeaugey); an
H800 node's NCCL log prints '16 coll channels' (NVIDIA/nccl#892)."""
TREE_SIMPLE_CHUNK_BYTES = (1 << 22) / 8
"""Bytes a tree/Simple all-reduce chunk holds: one step of the Simple buffer, DEFAULT_BUFFSIZE 4 MiB
(src/init.cc @v2.26.2-1 line 608) / NCCL_STEPS 8 (src/include/device.h line 24); the tree kernel runs
ProtoSimple<1, 1> (src/device/all_reduce.h lines 241-247: one step per chunk and per slice) and
calcCollChunking (src/enqueue.cc) shrinks chunks for tree/LL128, NVLS, NVLS-tree and CollNet, not
tree/Simple."""
SMS_BY_ARCH = {"volta": 80, "ampere": 108, "hopper": 132, "blackwell": 148}
"""Streaming multiprocessors of the SXM part of each generation NCCL's tuner indexes: V100 80, A100
108 (NVIDIA A100 / V100 whitepapers), H100 SXM5 132 (NVIDIA/cutlass#1921: 'H100 GPU with SXM5: 8
GPCs, 66 TPCs, 132 SMs'), B200 148 (tile-ai/TileFoundry#76: 'projects 148 SMs'). Parts of a
generation with fewer SMs (H20, PCIe cards) take their generation's figure."""


def nccl_sm_share(arch: str | None) -> float:
    """Share of a GPU's SMs an NCCL collective holds while it runs: NCCL_COLLECTIVE_CTAS of the
    generation's SMS_BY_ARCH (Hopper 16 / 132 = 0.121; an unknown generation takes Hopper's)."""
    return NCCL_COLLECTIVE_CTAS / SMS_BY_ARCH.get(arch or "hopper", SMS_BY_ARCH["hopper"])


def _arr(x):
    return np.asarray(x, dtype=float)


def _busbw_factor(kind: str, n):
    """nccl-tests' busbw over algbw for ``kind`` on ``n`` ranks: 2(n-1)/n for all-reduce, (n-1)/n for
    the others (PERFORMANCE.md)."""
    return (2 if kind == "all_reduce" else 1) * (n - 1) / np.maximum(n, 1)


def _tree_correction(size, proto: int):
    """NCCL's tree bandwidth correction for a payload (1 outside 64 B ... 256 MiB)."""
    log = np.floor(np.log2(np.maximum(_arr(size) / 64.0, 1.0))).astype(int)
    table = np.array(TREE_CORRECTION[proto] + (1.0,))
    return np.where(log < 23, table[np.clip(log, 0, 23)], 1.0)


def _ll_max(links):
    """LL protocol cap, bytes/s of bus bandwidth."""
    single = LL_MAX_BUS_GBPS.get(links.arch, LL_MAX_BUS_GBPS["volta"]) * 1e9
    k = _arr(links.nodes)
    return np.where(k <= 1, single, np.where(k <= 2, LL_MAX_BUS_MULTI_GBPS[0], LL_MAX_BUS_MULTI_GBPS[1]) * 1e9)


def _protocol_bus(bus, proto: int, links):
    """Ring-style bus bandwidth under a protocol."""
    if proto == 0:
        return np.minimum(bus * LL_FACTOR, _ll_max(links))
    return bus * LL128_FACTOR if proto == 1 else bus


def _ring_parts(kind: str, size, links):
    """What a ring's three protocols share (issue 39: computed once per collective, not per protocol):
    (multi-domain mask, one-rank-a-domain mask (n <= k: NCCL's ppn = nRanks / nNodes of 1), raw bus bandwidth before
    the protocol, bytes each rank moves, intra-domain steps, inter-domain steps)."""
    n, g, k = _arr(links.ranks), _arr(links.chain), _arr(links.nodes)
    multi = k > 1  # g: the longest NVLink chain (GroupLinks.chain: a straddling group's most members a domain)
    nvlink_bound = np.where(multi & (g > 1), links.intra * g / np.maximum(g - 1, 1), links.intra)
    nvlink_bound = np.where(multi & (g <= 1), np.inf, nvlink_bound)
    raw = np.minimum(nvlink_bound, np.where(multi, links.net, np.inf))
    factor = _busbw_factor(kind, n)
    steps = (2 if kind == "all_reduce" else 1) * (n - 1)
    inter_steps = np.where(multi, (2 if kind == "all_reduce" else 1) * (k - 1), 0)
    return multi, n <= k, raw, factor * _arr(size), steps - inter_steps, inter_steps  # tuning.cc ppn = nRanks / nNodes


def _ring(kind: str, size, links, proto: int, parts=None):
    """(seconds, bus bandwidth) of a ring; ``parts`` = _ring_parts(kind, size, links) when the caller
    costs several protocols of one collective."""
    multi, single, raw, volume, intra_steps, inter_steps = parts or _ring_parts(kind, size, links)
    bus = _protocol_bus(raw, proto, links)
    intra_lat = intra_us(HW_US, links, "ring", proto)
    overhead = NET_OVERHEAD_US * (3 if proto == 2 else 1)
    if np.any(overhead > intra_lat):  # a multi-domain ring's steps: at least the network post overhead
        intra_lat = np.where(multi, np.maximum(overhead, intra_lat), intra_lat)
    # ppn = 1 takes the tree's network latency (the same for Simple: no array work then)
    tree_net, ring_net = HW_US["net"]["tree"][proto], HW_US["net"]["ring"][proto]
    inter_lat = (np.where(single, tree_net, ring_net) if tree_net != ring_net else ring_net) + (
        links.net_latency_us * (2 if proto == 2 else 1))
    lat = BASE_US["ring"][proto] + intra_steps * intra_lat + inter_steps * inter_lat
    if kind == "all_reduce" and proto == 2:
        lat = np.where(multi, lat * RING_PLATEAU, lat)
    return lat * 1e-6 + volume / bus, bus


def _tree_algbw(size, links, proto: int, across):
    """Tree all-reduce algorithm bandwidth given the across-domain rate ``across``."""
    g = _arr(links.chain)  # the longest chain (GroupLinks.chain)
    chain = np.where(g > 1, links.intra / 2, np.inf)
    alg = TREE_FACTOR * np.minimum(across, chain)
    if proto == 0:
        alg = np.minimum(alg * TREE_LL_FACTOR, _ll_max(links) / 2)
    elif proto == 1:
        alg = alg * 120 / 128
    return alg * _tree_correction(size, proto)


def _tree(size, links, proto: int):
    """(seconds, bus bandwidth, seconds as NCCL's tuner estimates them) of the tree all-reduce
    (several domains only)."""
    n, g, k = _arr(links.ranks), _arr(links.chain), _arr(links.nodes)
    alg = _tree_algbw(size, links, proto, links.net / tree_busiest_domain_load(k))
    tuner = _tree_algbw(size, links, proto, np.where(k <= 2, links.net, links.net / 2))
    intra_lat = intra_us(HW_US, links, "tree", proto)
    inter_lat = HW_US["net"]["tree"][proto] + links.net_latency_us * (2 if proto == 2 else 1)
    lat = BASE_US["tree"][proto] + 2 * ((g - 1) * intra_lat + np.floor(np.log2(np.maximum(k, 1))) * inter_lat)
    fill = tree_chain_fill(size, links) if proto == 2 else 0.0
    seconds = np.where(k > 1, lat * 1e-6 + fill + _arr(size) / alg, np.inf)
    return seconds, alg * 2 * (n - 1) / n, np.where(k > 1, lat * 1e-6 + _arr(size) / tuner, np.inf)


def tree_chain_fill(size, links):
    """Seconds the first tree/Simple chunk of each channel spends crossing the tree alone, up and
    down, before the pipeline runs at its bandwidth (time only: NCCL's tuner counts per-step
    latencies, not the chunk's transfer). Each channel sends chunks of min(S / channels,
    TREE_SIMPLE_CHUNK_BYTES) and a GPU forwards a chunk when it has all of it; the chunk passes
    (g - 1) NVLink hops up the domain's chain and ceil(log2 k) network hops up the double binary tree,
    then the same down, each at its channel's share of the link: NVLink intra / channels, network
    min(net / channels, net / g) (a channel drives one NIC). ceil(log2 k) is the deepest node of NCCL's
    binary tree (src/graph/trees.cc ncclGetBtree; jobs/validation/collectives.nccl_btree_depths agrees
    for 2 ... 256 nodes). 0 on one domain, and where a network profile states its own staging fill
    (net_stages: the same crossing, fitted there; this formula with that profile's 1 MiB chunk gives
    0.82 ms where the fit gives 0.86, tests/test_collectives_tree_fill.py)."""
    g, k = _arr(links.per_node), _arr(links.nodes)
    channels = NCCL_COLLECTIVE_CTAS
    chunk = np.minimum(_arr(size) / channels, TREE_SIMPLE_CHUNK_BYTES)
    nvlink_hop = chunk * channels / links.intra
    net_hop = chunk / np.minimum(_arr(links.net) / channels, _arr(links.net) / np.maximum(g, 1))
    levels = np.ceil(np.log2(np.maximum(k, 1)))
    fill = 2 * ((g - 1) * nvlink_hop + levels * net_hop)
    return np.where((k > 1) & (links.net_stages == 0), fill, 0.0)


def _nvls(size, links, tree: bool):
    """(seconds, bus bandwidth, seconds as NCCL's tuner estimates them) of NVLS (one domain) or
    NVLS-tree (several), Simple protocol: the tuner's latency + bytes / bandwidth plus the fill. The
    estimate takes NCCL's own rate for both (nvls_tuner.nvls_tuner_algbw: 5 B200 run the ring, as measured)."""
    n, g, k = _arr(links.ranks), _arr(links.per_node), _arr(links.nodes)
    bus = links.intra * links.nvls_gain
    if tree:  # the NICs bound it, and its double binary tree runs at the busiest domain's rate (S, 1.5 S, 2 S)
        bus = np.minimum(bus, 2.0 * links.net) / tree_busiest_domain_load(k)  # ncclGetDtree, as the tree's
        lat = intra_us(HW_US, links, "nvls_tree", 2) + 2 * np.floor(np.log2(np.maximum(k, 1))) * (
            HW_US["net"]["nvls_tree"][2] + 2 * links.net_latency_us)
        usable = (k > 1) & (g >= NVLS_MIN_RANKS)
    else:
        lat = intra_us(HW_US, links, "nvls", 2) + 0 * n
        usable = (k <= 1) & (n >= NVLS_MIN_RANKS)
    usable = usable & (links.nvls_gain > 0)
    algbw = nvls_tree_tuner_algbw(links) if tree else nvls_tuner_algbw(links)
    if algbw is None:  # NCCL's NVLink figure unknown (generation or line rate): the physical rate
        algbw = np.where(bus > 0, bus, 1.0) * n / (2 * np.maximum(n - 1, 1))
    tuner = np.where(usable, lat * 1e-6 + _arr(size) / algbw, np.inf)
    seconds = np.where(usable, lat * 1e-6 + 2 * (n - 1) / n * _arr(size) / np.where(bus > 0, bus, 1.0), np.inf)
    return seconds + _nvls_fill(size, links, bus, tree), bus, tuner


def nvls_tree_tuner_algbw(links):
    """Algorithm bandwidth NCCL's tuner gives NVLS-tree, bytes/s (the choice; the time keeps _nvls's
    physical rate): tuning.cc @v2.26.2-1 lines 252-253, 293, busBw = nChannels x min(bwIntra, nNodes <= 2 ?
    bwInter : bwInter / 2), algbw = 5/6 x busBw, one channel per head, min(GPUs, NCCL_MAX_NVLS_ARITY)
    (search.cc line 975), at its NIC's search speed, bwIntra = bwInter (line 1013; here net / per_node).
    20 NVL72 racks: 32 x 45 / 2 x 5/6 = 600 GB/s (physical 212, the tree's estimate 313: NCCL runs
    NVLS-tree); HGX H100 beyond two nodes 8 x 45 / 2 x 5/6 = 150 GB/s, below the ring's 186."""
    g, k = _arr(links.per_node), _arr(links.nodes)
    heads = np.minimum(g, NCCL_MAX_NVLS_ARITY)
    per_head = _arr(links.net) / np.maximum(g, 1)
    bus = heads * per_head * np.where(k <= 2, 1.0, NVLS_TREE_BEYOND_TWO)
    return NVLS_TREE_ALGBW_RATIO * np.where(bus > 0, bus, 1.0)


def nvls_loop_bytes(links, tree: bool):
    """Bytes one NVLS loop moves across all channels: channels x heads x chunk (NVLS_CHANNELS,
    min(ranks per domain, NCCL_MAX_NVLS_ARITY) heads, NVLS_CHUNK_BYTES; NVLS-tree on four or more domains
    NVLS_TREE_CHUNK_BYTES_FROM_FOUR); 24 x 32 x 128 KiB = 96 MiB on one NVL72 rack, 16 x 8 x 128 KiB = 16 MiB
    on an HGX H100 node, 32 x 8 x 64 KiB = 16 MiB for NVLS-tree across 4 B200 nodes."""
    channels = NVLS_CHANNELS.get(links.arch, NVLS_CHANNELS["hopper"])[1 if tree else 0]
    chunk = np.where(_arr(links.nodes) >= 4, NVLS_TREE_CHUNK_BYTES_FROM_FOUR, NVLS_CHUNK_BYTES) if tree else NVLS_CHUNK_BYTES
    return channels * np.minimum(_arr(links.per_node), NCCL_MAX_NVLS_ARITY) * chunk


def _nvls_fill(size, links, bus, tree: bool):
    """Seconds of NVLS's pipeline fill (NVLS_FILL_STAGES loops at the algorithm bandwidth; a payload
    shorter than a loop fills with what it has), and for NVLS-tree its tree levels'
    (nvls_tree_levels_fill). NCCL's tuner leaves both out (latency + bytes / bw), so they move the time,
    not the choice. One whole loop per tree level (third and fifth passes, docs/step.md) contradicts
    the 2-rack and 4-node B200 curves."""
    n = _arr(links.ranks)
    algbw = np.where(bus > 0, bus, 1.0) * n / (2 * np.maximum(n - 1, 1))
    fill = NVLS_FILL_STAGES * np.minimum(nvls_loop_bytes(links, tree), _arr(size)) / algbw
    return fill + nvls_tree_levels_fill(size, links) if tree else fill


def nvls_tree_levels_fill(size, links):
    """Seconds the first NVLS-tree chunk of each channel spends crossing the inter-domain tree alone, up
    and down (time only), as tree_chain_fill for tree/Simple: a head's reduce warps receive a chunk from
    its children, add it and send it up one chunk per channel and loop (src/device/all_reduce.h
    @v2.26.2-1, RunWorkColl NVLS_TREE: directRecvDirectSend of chunkCount, ProtoSimple<1, 1>), the
    broadcast warps the same down, so the first chunk passes ceil(log2 k) network hops each way (the
    deepest node of ncclGetBtree), each at its channel's share of the head's NIC: chunk x channels /
    (net / per_node). Chunk = the loop's (nvls_loop_bytes / (channels x heads): 64 KiB from four domains)
    or the payload's share if smaller. 20 NVL72 racks: 2 x 5 x 32 x 64 KiB / 45 GB/s = 0.47 ms; two racks
    2 x 1 x 32 x 128 KiB / 45 GB/s = 0.19 ms (their measured intercept 0.87 ms, modelled 0.69 without it)."""
    g, k = _arr(links.per_node), _arr(links.nodes)
    channels = NVLS_CHANNELS.get(links.arch, NVLS_CHANNELS["hopper"])[1]
    share = channels * np.minimum(g, NCCL_MAX_NVLS_ARITY)
    chunk = np.minimum(nvls_loop_bytes(links, True), _arr(size)) / share
    hop = chunk * channels / (_arr(links.net) / np.maximum(g, 1))
    return 2 * np.ceil(np.log2(np.maximum(k, 1))) * hop


def _collnet(size, links):
    """(seconds, bus bandwidth) of CollNet chain all-reduce (IB SHARP), Simple protocol."""
    n, g, k = _arr(links.ranks), _arr(links.per_node), _arr(links.nodes)
    alg = np.minimum(np.where(g > 1, links.intra / 2, np.inf), links.net)
    lat = 2 * (g - 1) * intra_us(HW_US, links, "collnet", 2) + HW_US["net"]["collnet"][2] + 2 * links.net_latency_us
    seconds = np.where((k > 1) & links.collnet, lat * 1e-6 + _arr(size) / alg, np.inf)
    return seconds, alg * 2 * (n - 1) / n


def _pat(size, links):
    """(seconds, bus bandwidth) of PAT all-gather / reduce-scatter, Simple protocol: NCCL runs it only
    with one GPU per node (tuning.cc ncclPatEnable: nNodes == nRanks) and estimates it at latency
    8 + log2i(nodes) x net latency / 3.5 + 2.8 x ranks us and 0.75 of the ring's bandwidth over the
    whole buffer (no bus-to-algorithm ratio for non-ring all-gather / reduce-scatter): its log-depth
    schedule replaces the ring's ranks - 1 network steps. Time = NCCL's estimate (no source measures
    PAT here)."""
    n, g, k = _arr(links.ranks), _arr(links.per_node), _arr(links.nodes)
    net_lat = HW_US["net"]["pat"][2] + 2 * links.net_latency_us
    lat = BASE_US["pat"][2] + np.floor(np.log2(np.maximum(k, 1))) * net_lat / PAT_LOG_LATENCY_DIVISOR
    lat = lat + PAT_PER_RANK_US * n
    bus = np.where(k > 2, links.net, np.minimum(links.net, links.intra)) * PAT_FACTOR
    usable = (g <= 1) & (k > 1)
    return np.where(usable, lat * 1e-6 + _arr(size) / bus, np.inf), bus


def _with_net_fill(kind: str, size, links, algorithm: str, protocol: str, seconds, bus):
    """``seconds`` plus the network path's staging fill on several domains: net_stages passes of
    min(payload, net_stage_bytes) at the option's algorithm bandwidth (bus / the busbw factor; PAT's
    bus is already per byte of payload). The single-domain NVLS option never touches the network."""
    if algorithm == "nvls":
        return seconds
    n, k = _arr(links.ranks), _arr(links.nodes)
    factor = 1.0 if algorithm == "pat" else _busbw_factor(kind, n)
    algbw = np.where(_arr(bus) > 0, _arr(bus), 1.0) / factor
    if algorithm == "tree":  # the physical rate: NCCL's mid-size tree correction is its own fudge
        algbw = algbw / _tree_correction(size, PROTOCOLS.index(protocol))
    fill = links.net_stages * np.minimum(_arr(size), links.net_stage_bytes) / algbw
    return seconds + np.where(k > 1, fill, 0.0)


def options(kind: str, size, links) -> dict[tuple[str, str], tuple[object, object, object]]:
    """Every (algorithm, protocol) NCCL weighs for ``kind`` with its (seconds, bus bandwidth,
    seconds as NCCL's tuner estimates them); unavailable ones take infinite seconds."""
    ring = _ring_parts(kind, size, links)
    found = {("ring", p): _ring(kind, size, links, i, ring) for i, p in enumerate(PROTOCOLS)}
    if kind != "all_reduce":
        found[("pat", "Simple")] = _pat(size, links)
    if kind == "all_reduce":
        found |= {("nvls", "Simple"): _nvls(size, links, tree=False),
                  ("nvls_tree", "Simple"): _nvls(size, links, tree=True),
                  ("collnet", "Simple"): _collnet(size, links)}
    found = {key: (value + (value[0],) if len(value) == 2 else value) for key, value in found.items()}
    if kind == "all_reduce":
        found |= {("tree", p): _tree(size, links, i) for i, p in enumerate(PROTOCOLS)}
    if links.net_stages:  # the network path's staging (topology.NETWORK_PROFILES): time, not the choice
        found = {key: (_with_net_fill(kind, size, links, *key, value[0], value[1]),) + value[1:]
                 for key, value in found.items()}
    if links.algorithm is not None:  # NCCL_ALGO forced (a benchmark's setting), one or a comma list
        allowed = set(links.algorithm.split(","))
        found = {key: value for key, value in found.items() if key[0] in allowed}
    if links.protocol is not None:  # NCCL_PROTO forced, one or a comma list
        allowed = set(links.protocol.split(","))
        found = {key: value for key, value in found.items() if key[1] in allowed}
    return found


def collective_seconds(kind: str, size, links):
    """Seconds of one ``kind`` collective of ``size`` bytes (the full buffer: what all-reduce
    reduces, all-gather produces, reduce-scatter reads) on ``links``: the option NCCL's tuner
    estimates fastest, at its modelled time. 0 for a group of one."""
    if kind not in KINDS:
        raise ValueError(f"collective kind {kind!r}: one of {', '.join(KINDS)}")
    shape = np.broadcast(_arr(size), _arr(links.ranks), _arr(links.net)).shape
    found = list(options(kind, size, links).values())
    times = np.stack([np.broadcast_to(_arr(t), shape) for t, _, _ in found])
    tuner = np.stack([np.broadcast_to(_arr(c), shape) for _, _, c in found])
    best = np.take_along_axis(times, np.argmin(tuner, axis=0)[None], axis=0)[0]
    return np.where(_arr(links.ranks) > 1, best, 0.0)


def chosen(kind: str, size: float, links) -> tuple[str, str, float, float]:
    """(algorithm, protocol, seconds, bus bandwidth) NCCL's tuner picks for one scalar case."""
    found = options(kind, size, links)
    key = min(found, key=lambda k: float(found[k][2]))
    seconds, bus, _ = found[key]
    return key[0], key[1], float(seconds), float(bus)


def bus_bandwidth(kind: str, size, links):
    """nccl-tests' busbw for ``size``: algbw x 2(n-1)/n (all-reduce) or (n-1)/n (PERFORMANCE.md)."""
    return _busbw_factor(kind, _arr(links.ranks)) * _arr(size) / collective_seconds(kind, size, links)
