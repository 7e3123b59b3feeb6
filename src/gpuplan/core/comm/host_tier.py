"""The host tier of the link model: a host of several scale-up domains joined by PCIe (H100 NVL: 4
NVLink-bridged pairs in a server of 8, catalog h100-nvl.toml devices_per_node and
host_link_gbyte_s_bidirectional). core.comm.topology.Cluster reads it: a group inside one domain rides
the bridge, one whose members in the host span several domains rides PCIe there, one past the host the
network.

Why the bridge adds nothing to a group past its pair: NCCL gives every hop of a channel one speed
(src/graph/search.cc @v2.26.2-1 L79-100 followPath subtracts the graph's bwIntra from each link of
each path and the channel fails where a link lacks it; L1081-1084 'Decrease bw until we find a
solution'), so a ring through 4 pairs runs at its PCIe hops' rate and the bridge hops idle at it -- per
channel: with several channels NCCL may order the pairs' partners differently, so the cards' PCIe links can
carry more than one channel's rate in all where the switches' uplinks allow (review w16 R1 N3); not modelled.

Units: bytes/s per GPU per direction, seconds, microseconds where named.
"""

from __future__ import annotations

import numpy as np

# The tier's bandwidth and latency are the ones every PCIe-only part takes, one rule, not a copy:
# core.comm.topology.DEFAULT_SCALE_UP_EFFICIENCY (0.80 of the line rate per direction) and DEFAULT_SCALE_UP_LATENCY
# (5 us), read there by Cluster.group / span_link: 0.8 x 64 = 51.2 GB/s on PCIe Gen5 x16.
# NCCL's own figure for that link is 48 GB/s (src/graph/topo.cc@v2.26.2-1 L409-410 kvDictPciGen '32.0 GT/s PCIe' ->
# 240 per lane, L476 width x speed / 80 = 16 x 240 / 80), 6% below; it is not taken because h100-pcie's PCIe Gen5 x16
# link is timed at 51.2 (validate rows stand on it) and the same hop must cost the same on both parts.
# Cross-check, not fitted: 8 PCIe Gen5 cards on a dual-Xeon host measured 28 GB/s all-reduce busbw (NVIDIA/nccl#1639,
# 8x RTX 5090; 'on PCI systems, the performance you get is usually determined by the bandwidth your CPU and memory
# can deliver', sjeaugey), 0.55 of 51.2; the serving side's PCIe rule (core.serving.kernels.PCIE_NCCL_SLOWDOWN, the
# ring through host memory) applies past the pair as on every PCIe-only part (core.serving.tp_span.on_pcie).


def intra_latency_us(table, links, algorithm: str, proto: int):
    """NCCL's per-step hardware latency inside a domain, microseconds: ``table`` (collectives.HW_US) for
    ``links.intra_kind``, 'nvlink' or 'pci', or an array of them where the host tier puts some layouts'
    groups past their domain (topology.Cluster.group)."""
    kind = links.intra_kind
    if isinstance(kind, str):
        return table[kind][algorithm][proto]
    return np.where(np.asarray(kind) == "pci", table["pci"][algorithm][proto], table["nvlink"][algorithm][proto])


def assumed_host_note(gpu, gpus_per_node: int | None) -> tuple[str, ...]:
    """The answer's one line naming the host it assumed, where the catalog gives ``gpu`` (a core.hardware.Accelerator)
    a host of several scale-up domains joined by PCIe (host_link_bandwidth: the H100 NVL) and --gpus-per-node was not
    given: a group past a domain is timed on the host's PCIe and one past the host on the network, so the host's
    size moves the answer. The catalog's host of 8 is one vendor's MLPerf system (h100-nvl.toml sources), not every
    server. () otherwise."""
    if gpus_per_node or not gpu.host_link_bandwidth or not gpu.devices_per_node:
        return ()
    n, d = gpu.devices_per_node, gpu.scale_up_ranks
    return (f"host: {n} {gpu.name} a server, {n // d} NVLink domains of {d} joined by PCIe "
            f"({gpu.host_link_bandwidth / 2e9:.0f} GB/s a card a direction; the catalog's server, from one vendor's "
            "MLPerf system): a group past its domain is timed on that PCIe, past the server on the network; "
            "--gpus-per-node to change it",)
