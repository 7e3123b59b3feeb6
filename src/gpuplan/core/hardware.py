"""Accelerators as the planner sees them. Units: bytes, bytes/s, FLOP/s (dense), watts.

Catalog files (catalog/hardware/*.toml) state vendor units (GB, TB/s, TFLOP/s, GB/s); the
loader converts them once to base units here. Peaks are dense (no 2:4 sparsity).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import InputError

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


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
    scale_out_bandwidth: float | None = None
    """Scale-out network per device, bytes/s per direction."""
    kernels_like: str | None = None
    """Id of the catalog part whose measured kernel efficiencies (MAMF, attention) this one shares
    because it is the same die (a power-capped or repackaged variant); None = its own or defaults."""
    confidence: str = "medium"
    aliases: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    notes: str = ""

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; InputError if the part has no such path."""
        table = dict(self.peak_flops)
        if dtype not in table:
            have = ", ".join(k for k, _ in self.peak_flops) or "none"
            raise InputError("dtype", dtype, f"{self.name} has no dense {dtype} peak; it has: {have}")
        return table[dtype]

    def has_dtype(self, dtype: str) -> bool:
        return dtype in dict(self.peak_flops)
