"""What NCCL's tuner believes NVLS delivers: the NVLS graph NCCL's search builds (channels, speed per channel)
and the tuner's bandwidth from it. The choice of algorithm follows these estimates; the time of the chosen
one keeps core.comm.collectives' physical NVLS rate.

One NVSwitch domain (nNodes 1, NCCL 2.26.2): the tuner rates NVLS at busBw = nChannels x min(bwIntra,
bwInter), algbw = 5/6 x busBw (src/graph/tuning.cc @v2.26.2-1 lines 251, 253, 293); latency = the NVLink
NVLS latency, 25 us (lines 336-337). The NVLS graph (src/graph/search.cc @v2.26.2-1): with every rank on one
node the NICs are trimmed (paths.cc ncclTopoTrimSystem), so nChannels = min(GPUs, NCCL_MAX_NVLS_ARITY) (line
975, minChannels = maxChannels, line 982) and the speeds are the intra-node table (lines 918, 923, 1000-1002);
the search starts at the first speed s <= maxBw with s x nChannels <= totalBw x GPUs / (GPUs - 1) (lines
1009-1013: maxBw, totalBw = a GPU's NVLink bandwidth to the switch) and lowers it until every channel fits:
channel c pulls from every GPU through the switch and twice from its head c (ncclTopoSearchTryNvls, lines
386-417, mult 2 where d == g), so a head's link carries (nChannels + 1) x s. Pass 2 raises only bwInter
(line 1112-1115), so min(bwIntra, bwInter) = that s. A GPU's NVLink to the switch is NVLinks x
ncclTopoNVLinkBw (nccl_nvlink_gbps).

Worked: 8 x H100 / H200: s x 8 <= 370.8 x 8/7 starts at 50, 9 x 50 > 370.8, 9 x 40 <= 370.8: 8 x 40 x 5/6 =
266.7 GB/s (the physical NVLS rate: 479.7 GB/s bus x 8/14 = 274.1); 8 x B200: starts at 90, 9 x 90 > 720,
9 x 80 = 720: 8 x 80 x 5/6 = 533.3 GB/s (physical 850.5 x 8/14 = 486.0); one NVL72 rack (72 GPUs, 32
channels): starts at 20 (24 x 32 > 720 x 72/71), 33 x 20 <= 720: 32 x 20 x 5/6 = 533.3 GB/s (physical 431.2);
5 x B200: 6 x 90 <= 720, 5 x 90 x 5/6 = 375 GB/s, under the ring's 680.4 x 5/8 = 425.3: NCCL runs the ring
there (measured: stas00/ml-engineering@744d01e, 5 B200 with NVLS on 677.8 GB/s busbw, the ring's 677.8).
NCCL 2.28 changed the formula (tuning.cc @v2.28.3-1 lines 285-299, 348: bwIntra x nvlsEfficiency (0.85
Hopper, 0.74 Blackwell) x (nCh - 1)/nCh x 2, capped by bwInter, x GPUs / (2 (GPUs - 1))); the model cites
2.26.2 here as for NVLS-tree. The published collective rows ran 2.26.2 (coreweave's three GB200 rows) or 2.27.3
/ 2.27.7 (stas00's B200 and H200 rows, NVIDIA/nccl#1801), none 2.28 (docs/step.md, which NCCL each row ran); 2.27's
all-reduce NVLS estimate is 2.26.2's (tuning.cc @v2.27.7-1 lines 267-269, 324), and its SM100_NVLINK_BW 40.1 (topo.h
line 21) leaves every validated domain's search speed as worked above (8 B200: 9 x 80 = 720 <= 18 x 40.1 = 721.8).
Units: GB/s in the tables, bytes/s returned.
"""

from __future__ import annotations

import numpy as np

NCCL_MAX_NVLS_ARITY = 32
"""NVLS heads per domain at most: src/include/device.h NCCL_MAX_NVLS_ARITY; search.cc gives the NVLS
graph min(NCCL_MAX_NVLS_ARITY, GPUs) channels, one head each (8 on an HGX node, 32 on an NVL72 rack).
Across nodes a head is a GPU with its NIC (NVIDIA/nccl#1357: 'NVLS Head 0..3' on nodes with 4 NICs);
the catalog's parts have one NIC per GPU, so heads = GPUs of the domain, at most 32."""
NVLS_TREE_ALGBW_RATIO = 5 / 6
"""NCCL's tuner's bus-to-algorithm bandwidth ratio for NVLS and NVLS-tree (tuning.cc @v2.26.2-1 line 293)."""
NVLS_SEARCH_SPEEDS_GBPS = {"hopper": (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
                           "blackwell": (90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0)}
"""Speeds NCCL's search tries for an intra-node graph, GB/s: search.cc @v2.26.2-1 sm90SpeedArrayIntra (line
918), sm100SpeedArrayIntra (line 923)."""
NCCL_NVLINK_GBPS = {"hopper": 20.6, "blackwell": 40.0}
"""One NVLink as NCCL's topology counts it, GB/s: ncclTopoNVLinkBw (topo.h @v2.26.2-1 SM90_NVLINK_BW 20.6,
SM100_NVLINK_BW 40.0); a GPU's link to the switch is NVLinks x that (topo.cc lines 586-587)."""
NVLINK_LINE_GBPS = {"hopper": 25.0, "blackwell": 50.0}
"""One NVLink's line rate per direction, GB/s, to count a GPU's NVLinks from its line rate: NVLink 4 (H100 /
H200 / H20 SXM: 18 links, 900 GB/s both directions; H800: 8 links, 400 GB/s), NVLink 5 (B200 / B300 / GB200 /
GB300: 18 links, 1.8 TB/s) (NVIDIA H100 and Blackwell datasheets)."""


def nccl_nvlink_gbps(arch: str, line: float):
    """A GPU's NVLink to the switch as NCCL counts it, GB/s: round(line / NVLINK_LINE_GBPS) links x
    NCCL_NVLINK_GBPS (18 x 20.6 = 370.8 on H100, 8 x 20.6 = 164.8 on H800, 18 x 40 = 720 on B200); ``line``
    bytes/s per direction. None where NCCL has no NVLS for ``arch`` or the line rate is unknown."""
    if arch not in NCCL_NVLINK_GBPS or not line:
        return None
    return np.round(line / 1e9 / NVLINK_LINE_GBPS[arch]) * NCCL_NVLINK_GBPS[arch]


def nvls_search_speed(arch: str, link: float, ranks, channels):
    """GB/s per channel NCCL's search gives the single-node NVLS graph of ``ranks`` GPUs and ``channels``
    channels on GPUs whose NVLink to the switch NCCL counts at ``link`` GB/s (module docstring)."""
    speeds = np.array(NVLS_SEARCH_SPEEDS_GBPS[arch])
    n, c = np.asarray(ranks, dtype=float)[..., None], np.asarray(channels, dtype=float)[..., None]
    total = link * n / np.maximum(n - 1, 1)  # totalBw x GPUs / (GPUs - 1) for a non-ring graph (line 1011)
    fits = (speeds <= link) & (speeds * c <= total) & ((c + 1) * speeds <= link + 1e-6)
    return np.where(fits, speeds, speeds[-1]).max(axis=-1)


def nvls_tuner_algbw(links):
    """Algorithm bandwidth NCCL's tuner gives NVLS on one domain, bytes/s: 5/6 x nChannels x the search's speed,
    nChannels = min(ranks, NCCL_MAX_NVLS_ARITY) (module docstring); None where ``links`` has no NCCL NVLink
    figure (nccl_nvlink_gbps; the caller keeps the physical rate then)."""
    link = nccl_nvlink_gbps(links.arch, links.nvlink_line)
    if link is None:
        return None
    channels = np.minimum(np.asarray(links.ranks, dtype=float), NCCL_MAX_NVLS_ARITY)
    return NVLS_TREE_ALGBW_RATIO * channels * nvls_search_speed(links.arch, link, links.ranks, channels) * 1e9
