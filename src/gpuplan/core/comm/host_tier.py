"""The host tier of the link model: a host of several scale-up domains joined by PCIe (H100 NVL: 4
NVLink-bridged pairs in a server of 8, catalog h100-nvl.toml devices_per_node and
host_link_gbyte_s_bidirectional). core.comm.topology.Cluster reads it: a group inside one domain rides
the bridge, one whose members in the host span several domains rides PCIe there, one past the host the
network.

Why the bridge adds nothing to a group past its pair: NCCL gives every hop of a channel one speed
(src/graph/search.cc @v2.26.2-1 L79-100 followPath subtracts the graph's bwIntra from each link of
each path and the channel fails where a link lacks it; L1081-1084 'Decrease bw until we find a
solution'), so a ring through 4 pairs runs at its PCIe hops' rate and the bridge hops idle at it.

Units: bytes/s per GPU per direction, seconds, microseconds where named.
"""

from __future__ import annotations

import numpy as np

HOST_PCIE_EFFICIENCY = 0.80
"""Bus bandwidth over the PCIe line rate per direction: the figure the link model gives every PCIe-only
part (core.comm.topology.DEFAULT_SCALE_UP_EFFICIENCY, from NCCL's ~80% of line rate on NVLink,
NVIDIA/nccl-tests#212). Cross-check, not fitted: 8 PCIe Gen5 cards on a dual-Xeon host measured 28 GB/s
all-reduce busbw (NVIDIA/nccl#1639, 8x RTX 5090; 'on PCI systems, the performance you get is usually
determined by the bandwidth your CPU and memory can deliver', sjeaugey), 0.55 of this tier's 0.8 x 64 =
51.2 GB/s: the tier times a host whose cards reach each other peer-to-peer through PCIe switches, not one
that routes every flow through host memory."""
HOST_PCIE_LATENCY = 5e-6
"""Seconds per point-to-point transfer on the host tier: the link model's scale-up alpha
(core.comm.topology.DEFAULT_SCALE_UP_LATENCY), which PCIe-only parts take too."""


def intra_latency_us(table, links, algorithm: str, proto: int):
    """NCCL's per-step hardware latency inside a domain, microseconds: ``table`` (collectives.HW_US) for
    ``links.intra_kind``, 'nvlink' or 'pci', or an array of them where the host tier puts some layouts'
    groups past their domain (topology.Cluster.group)."""
    kind = links.intra_kind
    if isinstance(kind, str):
        return table[kind][algorithm][proto]
    return np.where(np.asarray(kind) == "pci", table["pci"][algorithm][proto], table["nvlink"][algorithm][proto])
