"""Reports that list the catalogs (``gpuplan catalog models|gpus``)."""

from __future__ import annotations

from gpuplan.catalog import (
    hardware_entries,
    load_accelerator,
    load_model,
    model_entries,
)
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.units import format_count
from gpuplan.report.model import Report, Table


def _matches(search: str | None, *texts: object) -> bool:
    return not search or any(search.lower() in str(t).lower() for t in texts)


def _no_match(search: str | None, rows: list, what: str) -> tuple[str, ...]:
    """A note when a filter matched nothing: filters are plain text, not patterns."""
    if not search or rows:
        return ()
    return (f"no {what} matches {search!r}: the filter is plain text found anywhere in the name, case-insensitive "
            "(no wildcards or regular expressions); run without --filter to list all",)


def model_catalog_report(search: str | None = None) -> Report:
    rows = []
    for model_id, entry in model_entries().items():
        if not _matches(search, model_id, entry.get("display_name"), entry.get("family")):
            continue
        spec = load_model(model_id)
        counts = count_parameters(spec)
        published = entry.get("published_params")
        rows.append((model_id, entry.get("display_name", ""), spec.attention.kind,
                     "moe" if spec.moe else "dense", spec.num_layers, spec.hidden_size,
                     format_count(counts.total), format_count(counts.active),
                     format_count(published) if published else "",
                     f"{(counts.total - published) / published:+.2%}" if published else "",
                     entry.get("published_params_source", "")))
    columns = ("id", "name", "attention", "mlp", "layers", "hidden", "params", "active",
               "published", "diff", "published source")
    return Report("catalog-models", f"Model catalog ({len(rows)} models)", (), (), (),
                  notes=_no_match(search, rows, "model"), tables=(Table("models", columns, tuple(rows)),))


def gpu_catalog_report(search: str | None = None) -> Report:
    rows = []
    for gpu_id, entry in hardware_entries().items():
        if not _matches(search, gpu_id, entry.get("name"), entry.get("vendor"), *entry.get("aliases", [])):
            continue
        gpu = load_accelerator(gpu_id)
        peaks = dict(gpu.peak_flops)
        rows.append((gpu_id, gpu.name, f"{entry.get('memory_gb')} GB",
                     f"{gpu.memory_bandwidth / 1e12:.3g} TB/s",
                     *(f"{peaks[d] / 1e12:.4g}" if d in peaks else "-" for d in ("bf16", "fp16", "fp8", "int8")),
                     f"{gpu.scale_up_bandwidth / 1e9:.0f} GB/s" if gpu.scale_up_bandwidth else "-",
                     gpu.confidence, ", ".join(gpu.aliases)))
    columns = ("id", "name", "memory", "HBM", "bf16 TF", "fp16 TF", "fp8 TF", "int8 TOPS",
               "scale-up", "confidence", "aliases")
    return Report("catalog-gpus", f"Accelerator catalog ({len(rows)} accelerators, dense peaks)", (), (), (),
                  notes=_no_match(search, rows, "accelerator"), tables=(Table("accelerators", columns, tuple(rows)),))
