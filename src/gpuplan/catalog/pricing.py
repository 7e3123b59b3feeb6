"""GPU rental prices: the dated price catalog (catalog/prices/*.toml) and look-ups over it.

One TOML file per provider; each ``[[price]]`` row names an accelerator by its hardware-catalog
id, a SKU, USD per GPU-hour for ``on_demand`` / ``reserved`` / ``spot`` (whichever the provider
publishes), the ``as_of`` date and the ``source`` it was read from. Nothing is read at import.

How one price is chosen (``lookup_price``):
  * a provider's price for a GPU = the median of that provider's rows for it (RunPod lists a
    Community and a Secure row, AWS an instance and a Capacity Block row, ...);
  * with no provider given, the median over providers of those per-provider prices (so one
    provider with many SKUs does not dominate), and the source string says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache
from typing import Any

from gpuplan.catalog.compiled import parsed_toml
from gpuplan.catalog.paths import catalog_files
from gpuplan.errors import InputError, closest_names
from gpuplan.report.model import Table

KINDS = ("on_demand", "reserved", "spot")


@dataclass(frozen=True)
class PriceRow:
    """One published price line: USD per GPU-hour for each purchase kind the provider lists."""

    provider_id: str
    """File stem of catalog/prices/<provider_id>.toml (lower case)."""
    provider: str
    gpu: str
    """Hardware catalog id (catalog/hardware/<gpu>.toml)."""
    sku: str
    as_of: str
    source: str
    on_demand: float | None = None
    reserved: float | None = None
    spot: float | None = None
    region: str = ""
    reserved_term: str = ""
    confidence: str = "medium"
    notes: str = ""

    def price(self, kind: str) -> float | None:
        """USD per GPU-hour for ``kind`` (on_demand, reserved, spot), None if not published."""
        return getattr(self, _check_kind(kind))


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError("price kind", kind, f"must be one of {', '.join(KINDS)}")
    return kind


def _row(provider_id: str, provider: str, raw: dict[str, Any]) -> PriceRow:
    fields = {k: raw[k] for k in ("gpu", "sku", "as_of", "source") if k in raw}
    missing = {"gpu", "sku", "as_of", "source"} - set(fields)
    if missing:
        raise InputError("price catalog", f"{provider_id}.toml", f"row lacks {', '.join(sorted(missing))}")
    prices = {k: float(raw[k]) for k in KINDS if raw.get(k) is not None}
    if not prices:
        raise InputError("price catalog", f"{provider_id}.toml {raw['sku']}", "row has no price")
    extra = {k: str(raw[k]) for k in ("region", "reserved_term", "confidence", "notes") if k in raw}
    return PriceRow(provider_id=provider_id, provider=provider, **{k: str(v) for k, v in fields.items()},
                    **prices, **extra)


@cache
def _catalog() -> tuple[dict[str, dict[str, Any]], tuple[PriceRow, ...]]:
    """(provider id -> provider header, all rows), read once."""
    headers: dict[str, dict[str, Any]] = {}
    rows: list[PriceRow] = []
    for path in catalog_files("prices", ".toml"):
        data = parsed_toml(f"prices/{path.name}")
        provider_id = path.name.removesuffix(".toml")
        headers[provider_id] = {k: v for k, v in data.items() if k != "price"}
        rows.extend(_row(provider_id, data.get("provider", provider_id), raw) for raw in data.get("price", []))
    return headers, tuple(rows)


def providers() -> tuple[str, ...]:
    """Provider ids in the price catalog (file stems: aws, gcp, lambda, ...)."""
    return tuple(_catalog()[0])


def provider_info(provider: str) -> dict[str, Any]:
    """The provider header (display name, url, spot notice) for an id or display name."""
    return dict(_catalog()[0][resolve_provider(provider)])


def resolve_provider(provider: str) -> str:
    """Provider id for an id or display name (case-insensitive); InputError with suggestions."""
    headers = _catalog()[0]
    key = provider.strip().lower()
    for provider_id, header in headers.items():
        if key in (provider_id, str(header.get("provider", "")).lower()):
            return provider_id
    near = closest_names(provider, headers)
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise InputError("provider", provider, f"{hint}providers with prices: {', '.join(headers)}")


def resolve_gpu_id(gpu: str) -> str:
    """Hardware-catalog id for an accelerator id or alias ('a100' -> 'a100-sxm4-80gb')."""
    from gpuplan.catalog import load_accelerator

    return load_accelerator(gpu).id


def price_rows(gpu: str | None = None, provider: str | None = None) -> tuple[PriceRow, ...]:
    """Rows for one accelerator (id or alias) and/or one provider; all rows when both are None."""
    rows = _catalog()[1]
    if gpu is not None:
        gpu_id = resolve_gpu_id(gpu)
        rows = tuple(r for r in rows if r.gpu == gpu_id)
    if provider is not None:
        provider_id = resolve_provider(provider)
        rows = tuple(r for r in rows if r.provider_id == provider_id)
    return rows


def priced_gpus() -> tuple[str, ...]:
    """Accelerator ids with at least one price row."""
    return tuple(sorted({r.gpu for r in _catalog()[1]}))


def provider_prices(gpu: str, kind: str = "on_demand") -> dict[str, tuple[float, tuple[PriceRow, ...]]]:
    """Per provider: (median of its rows' ``kind`` price, the rows used), for one accelerator."""
    _check_kind(kind)
    grouped: dict[str, list[PriceRow]] = {}
    for row in price_rows(gpu):
        if row.price(kind) is not None:
            grouped.setdefault(row.provider_id, []).append(row)
    return {pid: (statistics.median(r.price(kind) for r in rows), tuple(rows))  # type: ignore[misc]
            for pid, rows in grouped.items()}


def _dates(rows) -> str:
    dates = sorted({r.as_of for r in rows})
    return dates[0] if len(dates) == 1 else f"{dates[0]}..{dates[-1]}"


def lookup_price(gpu_id: str, kind: str = "on_demand", provider: str | None = None) -> tuple[float, str] | None:
    """USD per GPU-hour and a source string, or None when nothing is published for that pair.

    ``provider`` None: the median over providers (each provider = median of its rows), and the
    source string lists the providers and says it is a median. Unknown GPU or provider names
    raise InputError; a known GPU with no price of this kind returns None.
    """
    per_provider = provider_prices(gpu_id, kind)
    label = kind.replace("_", "-")
    if provider is not None:
        provider_id = resolve_provider(provider)
        if provider_id not in per_provider:
            return None
        value, rows = per_provider[provider_id]
        skus = "; ".join(f"{r.sku} ({r.region or 'any region'})" for r in rows)
        sources = "; ".join(dict.fromkeys(r.source for r in rows))
        return value, f"{rows[0].provider} {label} {skus}, as of {_dates(rows)}: {sources}"
    if not per_provider:
        return None
    values = {pid: v for pid, (v, _) in per_provider.items()}
    median = statistics.median(values.values())
    all_rows = [r for _, rows in per_provider.values() for r in rows]
    listing = ", ".join(f"{per_provider[p][1][0].provider} {v:.2f}" for p, v in sorted(values.items(), key=lambda x: x[1]))
    who = "1 provider's" if len(values) == 1 else f"{len(values)} providers'"
    return median, f"median of {who} {label} prices ({listing}) as of {_dates(all_rows)}; catalog/prices/*.toml"


def published_discount(gpu: str | None, kind: str, provider: str | None = None
                       ) -> tuple[float, tuple[tuple[PriceRow, float], ...]] | None:
    """Fraction off on-demand that ``kind`` (spot, reserved) is published at: the median of 1 - price / on-demand over
    the rows that publish both for one SKU, this accelerator's (one provider's, if given; every row's with ``gpu``
    None), with the (row, fraction) pairs it is the median of; None when no row publishes both."""
    _check_kind(kind)
    pairs = tuple((r, 1.0 - r.price(kind) / r.on_demand) for r in price_rows(gpu, provider)  # type: ignore[operator]
                  if r.price(kind) is not None and r.on_demand)
    return (statistics.median(d for _, d in pairs), pairs) if pairs else None


def spot_discount(gpu_id: str, provider: str | None = None) -> tuple[float, str] | None:
    """Fraction off on-demand for spot (published_discount): this GPU's rows (one provider's, if given) first, else
    every such row in the catalog. Returns (median discount, source) or None when no row publishes both."""
    found = published_discount(gpu_id, "spot", provider)
    where = f"{resolve_gpu_id(gpu_id)}" + (f" at {provider}" if provider else "")
    if found is None:
        found, where = published_discount(None, "spot"), "all catalog GPUs (none published for this GPU)"
    if found is None:
        return None
    detail = ", ".join(f"{r.provider} {r.gpu} {d:.0%}" for r, d in found[1])
    return found[0], f"median spot discount over {where}: {detail}"


def price_table(gpu: str | None = None, provider: str | None = None) -> Table:
    """All matching rows as a Table (for listings and reports)."""
    rows = tuple((r.provider, r.gpu, r.sku, r.region, r.on_demand, r.reserved, r.spot, r.as_of, r.confidence,
                  r.source) for r in price_rows(gpu, provider))
    return Table("GPU prices (USD per GPU-hour)",
                 ("provider", "gpu", "sku", "region", "on_demand", "reserved", "spot", "as_of", "confidence",
                  "source"), rows)
