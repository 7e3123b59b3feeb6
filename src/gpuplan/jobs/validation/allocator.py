"""The caching-allocator reserve against published runs: reserved / allocated peaks read from
Megatron's memory log line (catalog/reference/allocator_ratios.yaml). The rows marked ``fit`` set
core/memory/device_memory.py FRAGMENTATION_DEFAULT_SEGMENTS (their median ratio, rounded to 0.01); the
``held-out`` rows are only scored.

    python -m gpuplan.jobs.validation.allocator     # prints the fit and the held-out errors

Public FSDP / FSDP2 runs printing both peaks (catalog/reference/fsdp_allocator_logs.yaml) are read as evidence
(fsdp_log_rows) and set nothing: none is a torchtitan-size FSDP2 run with expandable segments (docs/memory.md).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gpuplan.core.memory.device_memory import FRAGMENTATION_DEFAULT_SEGMENTS
from gpuplan.report.model import Table


@dataclass(frozen=True)
class AllocatorRow:
    id: str
    role: str
    max_allocated_mib: float
    max_reserved_mib: float
    source: str

    @property
    def ratio(self) -> float:
        return self.max_reserved_mib / self.max_allocated_mib

    @property
    def error(self) -> float:
        """gpuplan's reserved (allocated x (1 + fragmentation)) vs the logged reserved peak."""
        return self.max_allocated_mib * (1 + FRAGMENTATION_DEFAULT_SEGMENTS) / self.max_reserved_mib - 1


def allocator_rows() -> list[AllocatorRow]:
    from gpuplan.catalog import reference_yaml

    return [AllocatorRow(r["id"], r["role"], float(r["max_allocated_mib"]), float(r["max_reserved_mib"]), r["source"])
            for r in reference_yaml("allocator_ratios.yaml")["runs"]]


def fitted_fragmentation(rows: list[AllocatorRow] | None = None) -> float:
    """Median reserved/allocated - 1 of the fit rows, rounded to 0.01."""
    rows = allocator_rows() if rows is None else rows
    return round(statistics.median(r.ratio for r in rows if r.role == "fit") - 1, 2)


def allocator_table() -> Table:
    rows = allocator_rows()
    body = tuple((r.id, r.role, f"{r.max_allocated_mib / 1024:.2f}", f"{r.max_reserved_mib / 1024:.2f}",
                  f"{r.ratio:.3f}", f"{r.error:+.1%}") for r in rows)
    return Table(f"Caching-allocator reserve (default segments): reserved = allocated x "
                 f"{1 + FRAGMENTATION_DEFAULT_SEGMENTS:.2f}",
                 ("run", "role", "max allocated GiB", "max reserved GiB", "reserved/allocated", "gpuplan error"),
                 body)


@dataclass(frozen=True)
class FsdpLogRow:
    """One public FSDP / FSDP2 run printing a peak in use and the reserved peak (catalog/reference/
    fsdp_allocator_logs.yaml; role 'evidence': read, sets nothing). ``in_use``: the allocated or active peak
    (``in_use_kind``), in the log's own unit (``unit_label``), like ``reserved``."""

    id: str
    framework: str
    allocator: str
    in_use_kind: str
    in_use: float
    reserved: float
    unit_label: str
    quote: str
    source: str

    @property
    def ratio(self) -> float:
        """Reserved / in-use peak (unit-free)."""
        return self.reserved / self.in_use


def fsdp_log_rows() -> list[FsdpLogRow]:
    from gpuplan.catalog import reference_yaml

    return [FsdpLogRow(r["id"], r["framework"], r["allocator"], r["in_use_kind"], float(r["in_use"]),
                       float(r["reserved"]), r["unit_label"], r["quote"], r["source"])
            for r in reference_yaml("fsdp_allocator_logs.yaml")["runs"]]


def main() -> None:
    rows = allocator_rows()
    held = [abs(r.error) for r in rows if r.role == "held-out"]
    print(f"fitted fragmentation {fitted_fragmentation(rows):.2f} (constant {FRAGMENTATION_DEFAULT_SEGMENTS:.2f}); "
          f"held-out reserved error mean {statistics.mean(held):.1%}, max {max(held):.1%} over {len(held)} runs")
    for r in fsdp_log_rows():  # evidence only (fsdp_allocator_logs.yaml): no FSDP2 reserve is fitted from them
        print(f"  {r.id}: {r.framework}, allocator {r.allocator}: reserved / {r.in_use_kind} {r.ratio:.3f}")


if __name__ == "__main__":
    main()
