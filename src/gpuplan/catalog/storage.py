"""Storage tiers (catalog/storage.toml): effective read/write bandwidth per node, with sources."""

from __future__ import annotations

from functools import cache

from gpuplan.catalog.compiled import parsed_toml
from gpuplan.core.economics import io as IO
from gpuplan.errors import InputError


@cache
def _storage_entries() -> dict[str, dict]:
    return parsed_toml("storage.toml")


def storage_kinds() -> tuple[str, ...]:
    return tuple(_storage_entries())


def storage_spec(kind: str) -> IO.StorageSpec:
    """The storage tier ``kind`` from catalog/storage.toml, in bytes/s."""
    entries = _storage_entries()
    if kind not in entries:
        raise InputError("storage", kind, f"must be one of {', '.join(entries)}")
    e = entries[kind]
    gb = 1e9
    return IO.StorageSpec(kind=kind, name=e["name"], node_read=e["node_read"] * gb, node_write=e["node_write"] * gb,
                          shared_per_node=e["shared_per_node"] * gb if "shared_per_node" in e else None,
                          shared_per_node_high=e["shared_per_node_high"] * gb if "shared_per_node_high" in e else None,
                          confidence=e.get("confidence", "medium"), sources=tuple(e.get("sources", ())),
                          notes=e.get("notes", ""))
