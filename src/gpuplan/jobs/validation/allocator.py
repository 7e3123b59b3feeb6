"""The caching-allocator reserve against published runs: reserved / allocated peaks read from
Megatron's memory log line (catalog/reference/allocator_ratios.yaml). The rows marked ``fit`` set
core/memory/device_memory.py FRAGMENTATION_DEFAULT_SEGMENTS (their median ratio, rounded to 0.01); the
``held-out`` rows are only scored.

    python -m gpuplan.jobs.validation.allocator     # prints the fit and the held-out errors
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


def main() -> None:
    rows = allocator_rows()
    held = [abs(r.error) for r in rows if r.role == "held-out"]
    print(f"fitted fragmentation {fitted_fragmentation(rows):.2f} (constant {FRAGMENTATION_DEFAULT_SEGMENTS:.2f}); "
          f"held-out reserved error mean {statistics.mean(held):.1%}, max {max(held):.1%} over {len(held)} runs")


if __name__ == "__main__":
    main()
