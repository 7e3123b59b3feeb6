"""Cluster topology: scale-up domains of G accelerators (NVLink / NVSwitch, 72 on NVL72) joined by a
scale-out network (NICs per node, rail-optimised), each link with an achievable-bandwidth
efficiency; ``Cluster.group`` gives the links one communicator rides (core.comm.collectives costs it).

Units: bytes/s per GPU per direction, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from gpuplan.core.comm.group_geometry import domain_split, split_label
from gpuplan.core.hardware import Accelerator
from gpuplan.errors import InputError

# NCCL's own figures: ring busbw on 8x H100 NVLink ~370 GB/s of 450 GB/s per direction (~80%,
# NVIDIA maintainer, NVIDIA/nccl-tests#212); per NDR 400G NIC 46-48 GB/s of 50 (~93%,
# NVIDIA/nccl-tests#290); per HDR 200G NIC 24 GB/s of 25 (96%, nccl-tests#160).
DEFAULT_SCALE_UP_EFFICIENCY = 0.80
DEFAULT_SCALE_OUT_EFFICIENCY = 0.90
# Latency per collective step: ~2-10 us inside a node (NVLink), ~10-20 us across IB. Rounded
# alpha terms of the alpha-beta model (Thakur et al. 2005, "Optimization of collective
# communication operations in MPICH"); they matter only for small messages.
DEFAULT_SCALE_UP_LATENCY = 5e-6
DEFAULT_SCALE_OUT_LATENCY = 15e-6
# A typical InfiniBand NDR rail-optimised node: one 400 Gb/s NIC per GPU (DGX H100 BasePOD).
DEFAULT_NIC_GBIT_PER_GPU = 400.0

NETWORK_PROFILES = {
    # GCP A3 Mega, GPUDirect-TCPXO (TCP offload through the FasTrak net plugin, not RDMA): 8 x 200 Gb/s
    # per node (GCP "A3 Mega" machine type; AI-Hypercomputer/gpu-recipes@d9e8da3 a3mega nccl-tests).
    # NCCL has no latency constants for it and the TCPX plugin reports latency 0 (google/
    # nccl-plugin-gpudirecttcpx@4b8ea7f src/net_tcpx.cc 'props->latency = 0'), so both figures below
    # are FITTED on named rows of the one public A3 Mega nccl-tests log (lessizzmore/create-a3mega-
    # ztan-fork ztan-NCCL-test-result@02dd8f4, all_reduce, 16 ranks, out-of-place column;
    # jobs/validation/collectives.py tcpxo_fit reproduces both):
    # - net_latency_us: the 8 B - 16 KiB rows (12 rows, 123-147 us, not in the scored sweep): NCCL's
    #   tree/Simple latency 8.4 + 2 x (7 x 4.0 + 14 + 2 x lat) meets their median 125 us at 8.4 us;
    # - net_stages: a least-squares line through the 1 - 8 GiB rows (4 rows, scored as 'fitted'):
    #   intercept 0.93 ms = the latency + one fixed fill (slope 184 GB/s algbw; the model's tree is
    #   bound by H100's NVLink chain at 0.92 x 360 / 2 = 166 GB/s): 8.5 passes of net_stage_bytes at
    #   166 GB/s. net_stage_bytes is not fitted: under the profile's NCCL_BUFFSIZE=8388608 a tree/Simple
    #   step is 8 MiB / NCCL_STEPS 8 = 1 MiB and calcCollChunking (src/enqueue.cc @v2.26.2-1: chunkSteps
    #   = 1 except ring/Simple) keeps that chunk, so with NCCL_COLLECTIVE_CTAS = 16 channels up to
    #   16 x 1 MiB = 16 MiB each channel's share is one chunk that crosses the whole tree alone (up the
    #   chain, across, down) and the fill grows with the payload; beyond, chunks queue behind it and the
    #   fill stays. The held-out 32 KiB - 8 MiB rows test the unpipelined part: their time grows at
    #   ~21 GB/s, the model's 166 / (1 + 8.5) = 17.5 GB/s. Cross-check, not used: a lone chunk per
    #   channel crossing 14 NVLink hops at 360 / 16 = 22.5 GB/s and 2 network hops at 23 / 2 = 11.5 GB/s
    #   (16 channels on 8 NICs) moves S / 20.1 GB/s below 16 MiB, and a 1 MiB chunk's crossing less its
    #   share of the bandwidth time is 0.73 ms of fill (fitted: 8.5 x 16 MiB / 166 GB/s = 0.86 ms).
    "gpudirect-tcpxo": {"nic_gbit_per_gpu": 200.0, "net_latency_us": 8.4,
                        "net_stage_bytes": 16 * 2**20, "net_stages": 8.5},
}
"""Scale-out networks whose path NCCL's tuner constants do not describe (name -> Cluster fields)."""


def network_profile(name: str) -> dict:
    """A copy of NETWORK_PROFILES[name]: nic_gbit_per_gpu for cluster_for plus Cluster fields
    (cluster_for(gpu, nic_gbit_per_gpu=p.pop('nic_gbit_per_gpu'), **p))."""
    if name not in NETWORK_PROFILES:
        raise InputError("network.profile", name, f"one of {', '.join(sorted(NETWORK_PROFILES))}")  # the yaml's key
    return dict(NETWORK_PROFILES[name])


@dataclass(frozen=True)
class GroupLinks:
    """The links of one communicator of ``ranks`` ranks, ``per_node`` of them in each scale-up
    domain (``nodes`` = ranks / per_node domains). Values may be numpy arrays (one per layout)."""

    ranks: object
    per_node: object
    nodes: object
    intra: float
    """Ring bus bandwidth inside the domain, bytes/s per GPU (NVLink line rate x efficiency)."""
    net: object
    """Network bandwidth of one domain for this group, bytes/s: its per_node ranks' share of the NICs
    (every group of a layout's kind runs at once, so each gets its members' share)."""
    arch: str = "ampere"
    intra_kind: str = "nvlink"
    nvls_gain: float = 0.0
    collnet: bool = False
    net_latency_us: float = 0.0
    algorithm: str | None = None
    protocol: str | None = None
    net_stage_bytes: float = 0.0
    """Bytes the network path holds before it forwards (Cluster.net_stage_bytes); 0 = none."""
    net_stages: float = 0.0
    """How many such holds a multi-domain collective passes (Cluster.net_stages)."""
    nvlink_line: float = 0.0
    """NVLink line rate per GPU per direction, bytes/s, before efficiency (NCCL's NVLS graph counts its
    links: core.comm.nvls_tuner); 0 = unknown."""
    most: object = None
    """Where the slowest group straddles domains unevenly, the most members one domain holds of it (its longest
    NVLink chain: the tree's intra steps, the ring's NVLink bound; core.comm.collectives); None = per_node."""
    split: str = ""
    """Where the group straddles domains it does not divide evenly, its slowest group's members per domain
    ('over 6-GPU domains: 2 + 2', core.comm.group_geometry.split_label; scalar groups only): plan --explain's link."""

    @property
    def chain(self):
        """The longest NVLink chain of the slowest group: ``most`` where it straddles domains unevenly, else
        per_node (the ring's NVLink bound and the tree's intra steps, core.comm.collectives)."""
        return self.per_node if self.most is None else self.most


@dataclass(frozen=True)
class Cluster:
    """``nodes`` x ``gpus_per_node`` accelerators."""

    gpu: Accelerator
    gpus_per_node: int
    scale_up_bandwidth: float
    """Per GPU, per direction, bytes/s (NVLink: half the catalog's bidirectional figure)."""
    scale_out_bandwidth: float
    """Per GPU, per direction, bytes/s (NIC bandwidth divided among the node's GPUs)."""
    scale_up_efficiency: float = DEFAULT_SCALE_UP_EFFICIENCY
    scale_out_efficiency: float = DEFAULT_SCALE_OUT_EFFICIENCY
    scale_up_latency: float = DEFAULT_SCALE_UP_LATENCY
    scale_out_latency: float = DEFAULT_SCALE_OUT_LATENCY
    nvls_gain: float = 0.0
    """All-reduce bus bandwidth with NVLink SHARP (NVLS) over the ring's (0: no NVLS); catalog."""
    collnet: bool = False
    """NCCL CollNet (IB SHARP in-network reduction) in use: off unless asked (NCCL_COLLNET_ENABLE)."""
    net_latency_us: float = 0.0
    """Latency the network plugin adds per inter-domain step (NCCL graph latencyInter; 0 on IB)."""
    algorithm: str | None = None
    """NCCL algorithms allowed (NCCL_ALGO: one, or a comma list such as 'ring,tree'), None = NCCL's choice."""
    protocol: str | None = None
    """NCCL protocols allowed (NCCL_PROTO: 'LL', 'LL128', 'Simple' or a comma list), None = all."""
    net_stage_bytes: float = 0.0
    """Bytes of a collective the network path stages before forwarding (NETWORK_PROFILES); 0 = none."""
    net_stages: float = 0.0
    """Staging passes a collective across domains pays, each min(payload, net_stage_bytes) / algbw."""
    host_bandwidth: float = 0.0
    """The host tier: PCIe per GPU per direction, bytes/s, joining the node's scale-up domains where the node is
    a host of several (H100 NVL: 4 bridged pairs in a server of 8; cluster_for sets it from the catalog's
    host_link_gbyte_s_bidirectional / 2); 0 = the node is one scale-up domain."""
    domain: int = 0
    """GPUs of one scale-up domain inside the node where host_bandwidth > 0 (H100 NVL: the pair, 2)."""
    host_gpus: int = 0
    """GPUs of one host where the scale-up domain joins several (GB200 NVL72: a tray of 4 of the rack's 72), which
    the scheduler fills in segments that keep a group inside one domain where it fits (core.comm.group_geometry);
    0 = the domain is one host, filled by rank order."""
    job_gpus: object = field(default=None, compare=False)
    """The job's GPUs (a number, or an array of the planner's layouts: tp x cp x dp x pp; for_job), whose ranks fill
    the domains in order: group() then times the slowest of the job's groups of a kind; None = the communicator
    asked for is the job (a benchmark, a serving replica). Not compared and not hashed (it may be an array): two
    Clusters for jobs of different sizes are equal and hash alike, so a cache keyed on a Cluster must key on
    job_gpus too (or be given the cluster before for_job)."""

    def for_job(self, gpus) -> "Cluster":
        """This cluster for the groups of a job of ``gpus`` GPUs (number or array; core.time.step.step_time)."""
        return replace(self, job_gpus=gpus)

    def past_domain(self, per_node, stride):
        """Where a group's ``per_node`` members in one node, ``stride`` ranks apart, span more than one of the
        host's scale-up domains ((per_node - 1) x stride >= domain: tp 2 sits in a pair, tp 4 or a dp pair of
        stride 2 does not); False without a host tier. Array-friendly."""
        if not self.host_bandwidth:
            return False
        return (np.asarray(per_node) > 1) & ((np.asarray(per_node) - 1) * np.asarray(stride) >= self.domain)

    def group(self, ranks, stride=1) -> GroupLinks:
        """The links of a communicator of ``ranks`` ranks whose members are ``stride`` ranks apart
        in the rank order (tp innermost): a domain holds domain // stride of them (at least 1). Where the
        groups do not divide the domains evenly, the slowest group's split (core.comm.group_geometry: the
        fewest members one domain holds of it, its NIC share there, and the domains it spans; tp 4 on 6-GPU
        domains 2 + 2 over two). On a host of several scale-up domains (the host tier) a group whose members
        in the host span more than one rides PCIe there (past_domain), NCCL's PCI latencies with it."""
        per_node = np.clip(self.gpus_per_node // np.maximum(np.asarray(stride), 1), 1, np.maximum(ranks, 1))
        nodes = np.maximum(np.asarray(ranks) / per_node, 1)
        per_node, nodes, most = self._straddle(ranks, stride, per_node, nodes)
        pcie = self.gpu.pcie_only
        intra, kind = self.scale_up_bandwidth * self.scale_up_efficiency, "pci" if pcie else "nvlink"
        past = self.past_domain(per_node, stride)
        if np.any(past):  # collectives.intra_latency_us reads a mixed array of kinds
            intra = np.where(past, self.host_bandwidth * DEFAULT_SCALE_UP_EFFICIENCY, intra)
            kind = "pci" if np.all(past) else np.where(past, "pci", kind)
        return GroupLinks(ranks, per_node, nodes, intra,
                          per_node * self.scale_out_bandwidth * self.scale_out_efficiency,
                          arch=self.gpu.collective_arch or "ampere", intra_kind=kind,
                          nvls_gain=self.nvls_gain, collnet=self.collnet, net_latency_us=self.net_latency_us,
                          algorithm=self.algorithm, protocol=self.protocol,
                          net_stage_bytes=self.net_stage_bytes, net_stages=self.net_stages,
                          nvlink_line=0.0 if pcie else self.scale_up_bandwidth, most=most,
                          split=self._split_label(ranks, stride))

    def _straddle(self, ranks, stride, per_node, nodes):
        """(per_node, nodes, most) of the even rule, replaced by the slowest group's split in the rows where the
        groups straddle domains unevenly (core.comm.group_geometry.domain_split); the even rule's values elsewhere
        (most: None where no row straddles, per_node there)."""
        found = domain_split(ranks, stride, self.gpus_per_node, self.host_gpus > 0, self.job_gpus)
        if found is None:
            return per_node, nodes, None
        fewest, spans, most, straddle = found
        if np.ndim(straddle) == 0:  # one layout that straddles: domain_split's numbers as they are
            return fewest, spans, most
        return (np.where(straddle, fewest, per_node), np.where(straddle, spans, nodes),
                np.where(straddle, most, per_node))

    def _split_label(self, ranks, stride) -> str:
        """GroupLinks.split: the straddle, or the scheduler's segments a group larger than one is spread over."""
        label = split_label(ranks, stride, self.gpus_per_node, self.host_gpus > 0, self.job_gpus)
        if label.startswith("as "):  # the placement the model assumes (core.comm.group_geometry)
            label += " (TPU slices)" if self.gpu.runs_xla else " (Slurm topology/block)"
        return label

    def link(self, group_span: int) -> tuple[float, float]:
        """(achievable bandwidth per GPU per direction, latency) for a group spanning
        ``group_span`` consecutive ranks: inside a node it rides the scale-up fabric, on a host of
        several domains (host_bandwidth) only inside one of them and PCIe past it."""
        bandwidth, latency = self.span_link(group_span)
        return float(bandwidth), float(latency)

    def span_link(self, span):
        """Cluster.link for an array of spans: scale-up inside a domain, the host tier (PCIe) past one
        inside the node where the node has one, the network past the node."""
        span = np.asarray(span)
        domain = self.domain if self.host_bandwidth else self.gpus_per_node
        up = (self.scale_up_bandwidth * self.scale_up_efficiency, self.scale_up_latency)
        host = (self.host_bandwidth * DEFAULT_SCALE_UP_EFFICIENCY, DEFAULT_SCALE_UP_LATENCY)  # PCIe-only parts'
        out = (self.scale_out_bandwidth * self.scale_out_efficiency, self.scale_out_latency)
        return tuple(np.where(span <= domain, u, np.where(span <= self.gpus_per_node, h, o))
                     for u, h, o in zip(up, host, out))


def cluster_for(gpu: Accelerator, gpus_per_node: int | None = None, nic_gbit_per_gpu: float | None = None,
                scale_up_efficiency: float | None = None,
                scale_out_efficiency: float = DEFAULT_SCALE_OUT_EFFICIENCY, **network) -> Cluster:
    """A cluster of ``gpu`` with catalog defaults: scale-up domain and bandwidth from the
    hardware catalog, scale-out from the catalog's per-device NIC figure or 400 Gb/s."""
    # the link model's "node" is the scale-up (NVLink) domain (Accelerator.scale_up_ranks: 8 on HGX, 72 on
    # GB200 NVL72); on a part whose host joins several domains over PCIe (host_link_bandwidth: H100 NVL) the
    # host (devices_per_node), its domains inside it (Cluster.host_bandwidth, domain)
    per_node = gpu.link_node(gpus_per_node)
    if per_node < 1:
        raise InputError("gpus_per_node", per_node, "must be a positive integer")
    up = (gpu.scale_up_bandwidth or 64e9) / 2  # catalog figures are both directions summed
    if nic_gbit_per_gpu is not None:
        if nic_gbit_per_gpu <= 0:
            raise InputError("nic_gbit_per_gpu", nic_gbit_per_gpu, "must be positive (Gb/s per GPU)")
        out = nic_gbit_per_gpu * 1e9 / 8
    else:
        out = gpu.scale_out_bandwidth or DEFAULT_NIC_GBIT_PER_GPU * 1e9 / 8
    # NVLS needs the part's NVSwitch with SHARP and the whole domain on it (not a PCIe or pairwise fabric)
    nvls = gpu.nvls_gain or 0.0
    scale_up_efficiency = scale_up_efficiency or gpu.scale_up_efficiency or DEFAULT_SCALE_UP_EFFICIENCY
    if gpu.host_link_bandwidth and per_node > gpu.scale_up_ranks:  # the host tier
        network = {"host_bandwidth": gpu.host_link_bandwidth / 2, "domain": gpu.scale_up_ranks, **network}
    elif (gpu.devices_per_node and per_node > gpu.devices_per_node and per_node % gpu.devices_per_node == 0
          and (gpu.vendor == "NVIDIA" or gpu.runs_xla)):
        # a domain of several hosts (NVL72: 18 trays of 4, Slurm's topology/block segments; a TPU pod's slices),
        # filled by the scheduler (core.comm.group_geometry). Not for parts with no scheduler source (Ascend
        # 910C's 384-NPU supernode of 8-NPU hosts: filled by rank order)
        network = {"host_gpus": gpu.devices_per_node, **network}
    return Cluster(gpu, per_node, up, out, scale_up_efficiency, scale_out_efficiency,
                   nvls_gain=network.pop("nvls_gain", nvls), **network)
