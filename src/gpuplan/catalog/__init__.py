"""Catalog data files (models, hardware, reference runs), read from the package's folder
(catalog.paths.CATALOG).

Every entry names its source. Loading is lazy and cached: nothing is read at import time.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from gpuplan.catalog.paths import CATALOG, catalog_files
from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.errors import InputError, unknown_name_error

_GB = 1e9


@cache
def model_entries() -> dict[str, dict[str, Any]]:
    """All model catalog entries by id (the trimmed config.json plus source metadata)."""
    entries = {}
    for path in catalog_files("models", ".json"):
        entry = json.loads(path.read_text(encoding="utf-8"))
        entries[entry["id"]] = entry
    return entries


@cache
def _model_file(model_id: str) -> dict[str, Any] | None:
    """The entry of catalog/models/<model_id>.json when that file exists and names itself
    ``model_id`` (every catalog file is named by its id), else None."""
    if not model_id or not all(c.isalnum() or c in "._-" for c in model_id) or model_id.startswith("."):
        return None
    path = CATALOG / "models" / f"{model_id}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return entry if entry.get("id") == model_id else None


@cache
def _hf_repos() -> dict[str, str]:
    """Lower-cased Hugging Face id -> catalog id."""
    return {str(e["hf_repo"]).lower(): model_id for model_id, e in model_entries().items() if e.get("hf_repo")}


def find_model_entry(name: str) -> dict[str, Any] | None:
    """The catalog entry whose id or Hugging Face id is ``name`` (case-insensitive), else None."""
    key = name.strip().lower()
    if model_entries.cache_info().currsize == 0:  # the catalog not read yet: a catalog id reads one file
        entry = _model_file(key)
        if entry is not None:
            return entry
    entries = model_entries()
    if key in entries:
        return entries[key]
    model_id = _hf_repos().get(key)
    return entries[model_id] if model_id else None


def model_entry(name: str) -> dict[str, Any]:
    """The catalog entry for ``name`` (id or hf_repo, case-insensitive); InputError with suggestions."""
    entry = find_model_entry(name)
    if entry is None:
        raise unknown_name_error("model", name, model_entries())
    return entry


def load_model(name: str) -> ModelSpec:
    """ModelSpec for a catalog model id (built once per process: a frozen spec; a bare --params
    reads its seven reference shapes on each resolution)."""
    return _catalog_spec(model_entry(name)["id"])


@cache
def _catalog_spec(model_id: str) -> ModelSpec:
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    entry = model_entry(model_id)
    return model_spec_from_hf_config(entry["config"], name=entry["id"], source=entry["config_source"])


@cache
def hardware_entries() -> dict[str, dict[str, Any]]:
    """All accelerator catalog entries (parsed TOML) by id."""
    from gpuplan.catalog.compiled import parsed_toml

    entries = {}
    for path in catalog_files("hardware", ".toml"):
        entry = parsed_toml(f"hardware/{path.name}")
        entries[entry["id"]] = entry
    return entries


@cache
def _gpu_aliases() -> dict[str, str]:
    table = {}
    for gpu_id, entry in hardware_entries().items():
        table[gpu_id] = gpu_id
        for alias in entry.get("aliases", []):
            table[alias.lower()] = gpu_id
    return table


def accelerator_from_entry(entry: dict[str, Any]) -> Accelerator:
    """Convert a catalog entry (vendor units) to an Accelerator (base units)."""
    peaks = tuple((k, float(v) * 1e12) for k, v in entry.get("peak_tflops", {}).items() if v)
    up = entry.get("scale_up", {})
    out = entry.get("scale_out", {})
    return Accelerator(
        id=entry["id"], name=entry["name"], vendor=entry.get("vendor", ""),
        memory_bytes=float(entry.get("memory_bytes") or entry["memory_gb"] * _GB),
        memory_bandwidth=float(entry["memory_bandwidth_tbps"]) * 1e12,
        peak_flops=peaks, tdp_w=entry.get("tdp_w"),
        devices_per_node=entry.get("devices_per_node"),
        scale_up_bandwidth=(up["bandwidth_gbyte_s_bidirectional"] * _GB
                            if up.get("bandwidth_gbyte_s_bidirectional") else None),
        scale_up_domain=up.get("domain_size"), scale_up_pcie=str(up.get("kind", "")).startswith("PCIe"),
        host_link_bandwidth=(up["host_link_gbyte_s_bidirectional"] * _GB
                             if up.get("host_link_gbyte_s_bidirectional") else None),
        scale_out_bandwidth=(out["gbit_s_per_device"] * _GB / 8 if out.get("gbit_s_per_device") else None),
        nics_per_node=out.get("nics_per_node"), rail_optimized=bool(out.get("rail_optimized", False)),
        in_network_reduction=bool(out.get("in_network_reduction", False)),
        nvls_gain=up.get("nvls_allreduce_gain"), collective_arch=up.get("nccl_arch"),
        compute_capability=compute_capability_of(entry),
        scale_up_efficiency=up.get("ring_efficiency"),
        kernels_like=entry.get("kernels_like"),
        confidence=entry.get("confidence", "medium"), aliases=tuple(entry.get("aliases", [])),
        sources=tuple(entry.get("sources", [])), notes=entry.get("notes", ""),
    )


def compute_capability_of(entry: dict[str, Any]) -> tuple[int, int] | None:
    """An entry's optional ``compute_capability``, text "MAJOR.MINOR" as NVIDIA's CUDA GPUs page lists it
    (developer.nvidia.com/cuda-gpus: "9.0", "10.3"), as (major, minor); None when absent. InputError naming
    the field for anything else, or for a part whose vendor is not NVIDIA (CUDA's numbering)."""
    import re

    value = entry.get("compute_capability")
    if value is None:
        return None
    where = f"compute_capability ({entry.get('id', '?')})"
    match = re.fullmatch(r"([1-9][0-9]?)\.([0-9])", value) if isinstance(value, str) else None
    if match is None:
        raise InputError(where, value, 'text "MAJOR.MINOR" as NVIDIA\'s CUDA GPUs page lists it, e.g. "9.0" '
                         '(H100), "10.0" (B200), "12.0" (RTX 5090)')
    if str(entry.get("vendor", "")).lower() != "nvidia":
        raise InputError(where, value, "a CUDA compute capability is for NVIDIA parts only; leave it out")
    return int(match.group(1)), int(match.group(2))


def load_accelerator(name: str) -> Accelerator:
    """Accelerator by id or alias (case-insensitive); InputError with suggestions."""
    key = name.strip().lower()
    gpu_id = _gpu_aliases().get(key)
    if gpu_id is None:
        raise unknown_name_error("gpu", name, _gpu_aliases())
    return accelerator_from_entry(hardware_entries()[gpu_id])


def reference_yaml(name: str) -> Any:
    """A YAML file of catalog/reference, parsed afresh (callers may edit what they get). libyaml's CSafeLoader
    where PyYAML was built with it: the same SafeConstructor and resolver as yaml.safe_load (pyyaml
    lib/yaml/cyaml.py: CSafeLoader = CParser + SafeConstructor + Resolver), the same objects for every
    reference file (checked), about 8x faster (published_throughput.yaml 0.91 -> 0.10 s)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((CATALOG / "reference" / name).read_text("utf-8"), Loader=loader)


def reference_runs() -> dict[str, Any]:
    """The packaged reference set of published training runs (see reference/README)."""
    data = reference_yaml("training_runs.yaml")
    if not isinstance(data, dict) or "runs" not in data:
        raise InputError("reference runs", "training_runs.yaml", "expected a mapping with 'runs'")
    return data


@cache
def reference_toml(name: str) -> dict[str, Any]:
    """A generated TOML file of catalog/reference (prediction_band.toml, model_track_record.toml)."""
    from gpuplan.catalog.compiled import parsed_toml

    return parsed_toml(f"reference/{name}")


@cache
def reference_json(name: str) -> dict[str, Any]:
    """A generated JSON file of catalog/reference (layout_uncertainty.json: read on every plan search,
    where tomllib's pure-Python parser would cost ~60 ms; hf_op_profiles.json, catalog.op_profiles)."""
    return json.loads((CATALOG / "reference" / name).read_text("utf-8"))


def prediction_band(dtype: str, moe: bool = False) -> tuple[float, str]:
    """Relative error of a predicted MFU: the step-time model's held-out mean |error| on published
    runs (reference/prediction_band.toml, generated by gpuplan.jobs.validation.band). A MoE model
    (``moe``) takes the MoE band whatever its precision; a dense one the band of ``dtype``
    (bf16/fp16 -> bf16, fp8/fp4 -> fp8)."""
    from gpuplan.core.time.step import precision_class

    key = "moe" if moe else "bf16" if precision_class(dtype) == "bf16" else "fp8"  # low precision: one band
    entry = reference_toml("prediction_band.toml")[key]
    return float(entry["held_out_mean_abs_error"]), str(entry["source"])
