"""Accelerators as the planner sees them. Units: bytes, bytes/s, FLOP/s (dense), watts.

Catalog files (catalog/hardware/*.toml) state vendor units (GB, TB/s, TFLOP/s, GB/s); the
loader converts them once to base units here. Peaks are dense (no 2:4 sparsity).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import InputError

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
XLA_VENDOR = "Google"
"""The catalog's vendor of its TPUs (catalog/hardware/tpu-v4 / v5e / v5p / v6e.toml): parts that run XLA, not CUDA /
ROCm (Accelerator.runs_xla; read by schema.device_rules, schema.tpu_rules and core.memory.device_memory)."""


@dataclass(frozen=True)
class Accelerator:
    """One accelerator type with its dense peak throughput per dtype and its memory system."""

    id: str
    name: str
    vendor: str
    memory_bytes: float
    memory_bandwidth: float
    """Peak DRAM bandwidth, bytes/s."""
    peak_flops: tuple[tuple[str, float], ...]
    """(dtype, dense peak FLOP/s) pairs; a dtype the part lacks is absent."""
    tdp_w: float | None = None
    devices_per_node: int | None = None
    scale_up_bandwidth: float | None = None
    """Scale-up fabric (NVLink, ...) bytes/s per device, both directions summed."""
    scale_up_domain: int | None = None
    scale_up_pcie: bool = False
    """The scale-up path is PCIe (no NVLink / switch fabric): NCCL's PCI latencies apply."""
    host_link_bandwidth: float | None = None
    """PCIe link per device, bytes/s both directions summed, that joins the scale-up domains of one host where a
    host holds several (H100 NVL: 4 NVLink-bridged pairs on PCIe Gen5 x16 in a server of devices_per_node 8);
    None = a host is one domain (or the part is PCIe-only). core.comm.topology's host tier."""
    scale_out_bandwidth: float | None = None
    """Scale-out network per device, bytes/s per direction (its NICs' line rate / devices per node)."""
    nics_per_node: int | None = None
    """Scale-out NICs per node of the reference system (DGX / HGX: 8; GB200 tray: 4)."""
    rail_optimized: bool = False
    """NIC i of every node on rail switch i (DGX SuperPOD): cross-rail traffic first hops over
    NVLink to the GPU on the target rail (NCCL PXN)."""
    in_network_reduction: bool = False
    """The reference fabric reduces in its switches (InfiniBand SHARP: Quantum-2 / X800), which NCCL
    uses as CollNet when asked (NCCL_COLLNET_ENABLE=1)."""
    nvls_gain: float | None = None
    """All-reduce bus bandwidth with NVLink SHARP (NVLS, NVSwitch gen 3+) over the ring's, measured;
    None = no NVLS."""
    scale_up_efficiency: float | None = None
    """Ring bus bandwidth over the scale-up line rate per direction, measured (NVLink: ~0.8); None =
    the topology default."""
    collective_arch: str | None = None
    """GPU generation as NCCL's tuner indexes its constants: volta, ampere, hopper, blackwell."""
    compute_capability: tuple[int, int] | None = None
    """CUDA compute capability (major, minor) as NVIDIA's CUDA GPUs page lists it (H100 (9, 0), B200 (10, 0),
    B300 (10, 3), RTX 5090 (12, 0)); None for other vendors' parts or where not stated."""
    kernels_like: str | None = None
    """Id of the catalog part whose measured kernel efficiencies (MAMF, attention) this one shares
    because it is the same die (a power-capped or repackaged variant); None = its own or defaults."""
    confidence: str = "medium"
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    notes: str = ""

    @property
    def pcie_only(self) -> bool:
        """Devices reach each other over PCIe only (the catalog names PCIe, or no scale-up fabric)."""
        return self.scale_up_pcie or self.scale_up_bandwidth is None

    @property
    def runs_xla(self) -> bool:
        """A TPU: programs run through XLA, with no CUDA context, NCCL or PyTorch caching allocator (XLA_VENDOR)."""
        return self.vendor == XLA_VENDOR

    @property
    def scale_up_ranks(self) -> int:
        """GPUs sharing one scale-up (NVLink) domain: the catalog's domain size (72 on GB200 NVL72, where a
        compute tray holds 4 GPUs but every GPU reaches the other 71 over NVLink switches), else the GPUs
        of a node, else 8 (DGX / HGX). The link model's node, HybridEP's domain and the planner's layout
        kinds all use it."""
        return self.scale_up_domain or self.devices_per_node or 8

    def link_node(self, gpus_per_node: int | None = None) -> int:
        """GPUs of the link model's node (core.comm.topology.cluster_for; the HSDP search's whole nodes):
        --gpus-per-node where given, else the host on a part whose host joins several scale-up domains over PCIe
        (host_link_bandwidth: H100 NVL), else the scale-up domain (scale_up_ranks)."""
        return gpus_per_node or (self.devices_per_node if self.host_link_bandwidth else None) or self.scale_up_ranks

    @property
    def fp8_any_layout_gemm(self) -> bool:
        """FP8 GEMMs take a column-wise (non-TN) operand without a transposed copy: Transformer Engine's
        is_non_tn_fp8_gemm_supported, (10, 0) <= cc < (12, 0) or cc >= (13, 0)
        (transformer_engine/pytorch/utils.py@v2.8 L462-467; common/transformer_engine.cpp L715-722, "a
        temporary restriction"): data-centre Blackwell, not sm_120 (RTX 50, RTX PRO Blackwell). False where
        the compute capability is not stated (TE's two copies: the larger memory)."""
        cc = self.compute_capability
        return cc is not None and ((10, 0) <= cc < (12, 0) or cc >= (13, 0))

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; InputError if the part has no such path."""
        table = dict(self.peak_flops)
        if dtype not in table:
            have = ", ".join(k for k, _ in self.peak_flops) or "none"
            raise InputError("dtype", dtype, f"{self.name} has no dense {dtype} peak; it has: {have}")
        return table[dtype]

    def has_dtype(self, dtype: str) -> bool:
        return dtype in dict(self.peak_flops)
