"""Plots of a Report: the chart series (plain data) and their matplotlib figures.

The series are read from the report alone — its lines in base units and its tables — never
recomputed, so a chart cannot disagree with the table beside it. The web page draws the same
series as SVG in the browser (``web/static/app.js``); ``gpuplan report`` draws them here with
matplotlib (the optional ``plot`` extra), imported inside the drawing functions only.

Charts per report kind: ``memory`` (the per-GPU peak by category, stacked, against each GPU
type's capacity and the safety margin), ``budget`` (wall-clock and cost vs GPU count, from the
cluster-size table), ``plan`` (ranked layouts and the Pareto front, days vs GPUs), ``infer``
(the serving capacity curve: output tokens/s and time per token vs concurrent sequences).
"""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

# The stacked categories of the memory report's peak section (keys peak_<name>), bottom first,
# then what lives outside the allocator; colours shared with the page through the series.
MEMORY_PARTS = ("weights", "grads", "master", "optimizer", "activations", "outside_layers", "temporaries",
                "fsdp_working_set", "allocator_reserve", "overheads")
COLORS = {"weights": "#4e79a7", "grads": "#f28e2b", "master": "#76b7b2", "optimizer": "#e15759",
          "activations": "#59a14f", "outside_layers": "#edc948", "temporaries": "#b07aa1",
          "fsdp_working_set": "#ff9da7", "allocator_reserve": "#d4a6c8", "overheads": "#9c755f", "on_demand": "#4e79a7", "spot": "#f28e2b",
          "top": "#bab0ac", "front": "#e15759", "throughput": "#4e79a7", "latency": "#e15759"}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def number(cell: Any) -> float | None:
    """A table cell as a number: 1,493 -> 1493, '$673,924' -> 673924, '15.3%' -> 0.153,
    '45.15 GiB' -> 45.15 (the unit is the column's), 'n/a' or '' -> None."""
    if isinstance(cell, bool) or cell is None:
        return None
    if isinstance(cell, int | float):
        return float(cell) if math.isfinite(cell) else None
    text = str(cell).replace(",", "").replace("$", "").strip()
    match = _NUMBER.match(text)
    if not match:
        return None
    value = float(match.group())
    return value / 100 if text[match.end():].strip().startswith("%") else value


def _table(report, prefix: str):
    return next((t for t in report.tables if t.title.startswith(prefix)), None)


def _value(report, key: str) -> Any:
    try:
        return report.value(key)
    except KeyError:
        return None


# ----------------------------------------------------------------------------- series
def memory_series(report) -> dict[str, Any] | None:
    """The worst GPU's peak by category (bytes) and, per GPU type of the verdict table, its
    capacity (bytes, from the catalog) and verdict; the margin as a share of capacity."""
    from gpuplan.catalog import load_accelerator

    keys = {name: ("overheads" if name == "overheads" else f"peak_{name}") for name in MEMORY_PARTS
            if name != "allocator_reserve"}
    values = {name: _value(report, key) for name, key in keys.items()}
    reserved, allocated = _value(report, "peak_reserved"), _value(report, "peak_allocated")
    values["allocator_reserve"] = None if reserved is None or allocated is None else reserved - allocated
    values = {name: values[name] for name in MEMORY_PARTS}
    capacity, margin, total = (_value(report, k) for k in ("capacity", "margin", "peak_total"))
    if None in values.values() or not capacity or margin is None or total is None:
        return None
    main = _value(report, "gpu")
    gpus = [{"id": main, "capacity": float(capacity), "fits": bool(_value(report, "fits"))}]
    verdicts = _table(report, "verdict per GPU type")
    for row in verdicts.records() if verdicts else ():
        if row["gpu"] != main:
            gpus.append({"id": row["gpu"], "capacity": load_accelerator(row["gpu"]).memory_bytes,
                         "fits": row["verdict"] == "fits"})
    parts = [{"key": k, "bytes": float(v), "color": COLORS[k]} for k, v in values.items() if v > 0]
    return {"parts": parts, "total": float(total), "margin_fraction": float(margin) / float(capacity),
            "gpus": gpus}


def cluster_series(report) -> dict[str, Any] | None:
    """Wall-clock (days) and cost (USD, on-demand and spot) vs GPU count, from the budget's
    cluster-size table; ``selected`` is the GPU count the report rents."""
    table = _table(report, "Cluster size")
    if table is None:
        return None
    rows = table.records()
    return {"gpus": [number(r["gpus"]) for r in rows], "days": [number(r["days"]) for r in rows],
            "on_demand_usd": [number(r["on-demand USD"]) for r in rows],
            "spot_usd": [number(r["spot USD"]) for r in rows], "selected": _value(report, "gpus_rented"),
            "colors": {"on_demand": COLORS["on_demand"], "spot": COLORS["spot"]}}


def layout_series(report) -> dict[str, Any] | None:
    """The planner's ranked layouts and its Pareto front as points (GPUs, days, cost, MFU). ``days``: each
    layout's 'ranked days', the time it is ranked and the front is drawn by (the slow end with failures at
    the range's high rate, planner.plan.ranked_seconds_per_token), not the failure-free days: the front is
    a front on that axis; the best layout is the top table's first row."""
    top, front = _table(report, "top "), _table(report, "Pareto front")
    if top is None or front is None:
        return None

    def points(table) -> list[dict[str, Any]]:
        return [{"gpus": number(r["GPUs"]), "days": number(r["ranked days"]), "cost": number(r["cost"]),
                 "mfu": number(r["MFU"]), "layout": r["layout"]} for r in table.records()]

    ranked = points(top)
    return {"top": ranked, "front": sorted(points(front), key=lambda p: p["gpus"] or 0),
            "best": {"gpus": _value(report, "best_gpus"), "days": ranked[0]["days"] if ranked else None,
                     "layout": _value(report, "best_layout")},
            "colors": {"top": COLORS["top"], "front": COLORS["front"]}}


def capacity_series(report) -> dict[str, Any] | None:
    """Output tokens/s and time per output token (ms) vs concurrent sequences, and the number
    of sequences the KV cache holds (``max_sequences``)."""
    table = _table(report, "throughput vs batch")
    if table is None:
        return None
    rows = table.records()
    return {"batch": [number(r["batch"]) for r in rows], "tokens_per_s": [number(r["tokens/s"]) for r in rows],
            "tpot_ms": [number(r["TPOT ms"]) for r in rows],
            "usd_per_million": [number(r["USD per 1M tokens"]) for r in rows],
            "max_sequences": _value(report, "max_sequences"),
            "colors": {"throughput": COLORS["throughput"], "latency": COLORS["latency"]}}


SERIES: dict[str, tuple[tuple[str, Callable], ...]] = {
    "memory": (("memory", memory_series),), "budget": (("cluster", cluster_series),),
    "plan": (("layouts", layout_series),), "infer": (("capacity", capacity_series),),
}


def chart_series(report) -> dict[str, dict[str, Any]]:
    """{chart name: series} for every chart this report's kind has and its tables support."""
    found = {}
    for name, build in SERIES.get(report.kind, ()):
        series = build(report)
        if series:
            found[name] = series
    return found


# ----------------------------------------------------------------------------- figures
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC", "WenQuanYi Micro Hei",
             "WenQuanYi Zen Hei", "Droid Sans Fallback", "AR PL UMing CN", "Microsoft YaHei", "PingFang SC",
             "SimHei")
GiB = 2**30


@dataclass(frozen=True)
class Figure:
    """One drawn chart: ``name`` (memory, cluster, layouts, capacity), its title, the image."""

    name: str
    title: str
    data: bytes
    mime: str


def cjk_font() -> str | None:
    """An installed font with Chinese glyphs that matplotlib can use, if any."""
    from matplotlib import font_manager

    def found() -> str | None:
        installed = {f.name for f in font_manager.fontManager.ttflist}
        return next((name for name in CJK_FONTS if name in installed), None)

    if found() is None:  # matplotlib's font cache may predate a font installed since (.ci/run's)
        for path in font_manager.findSystemFonts():
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a font file FreeType cannot read
                continue
    return found()


def draw(series: dict[str, dict[str, Any]], t: Callable[..., str], fmt: str = "svg",
         font: str | None = None) -> list[Figure]:
    """Draw each chart of ``series`` (from :func:`chart_series`); labels from ``t``
    (gpuplan.i18n.translator). ``fmt``: svg or png. ``font``: a family to put first."""
    import matplotlib
    from matplotlib.figure import Figure as MplFigure

    rc = {"svg.fonttype": "none", "svg.hashsalt": "gpuplan", "font.size": 9, "axes.grid": True,
          "grid.alpha": 0.3}
    if font:
        rc |= {"font.family": "sans-serif", "font.sans-serif": [font, "DejaVu Sans"]}
    drawers = {"memory": _draw_memory, "cluster": _draw_cluster, "layouts": _draw_layouts,
               "capacity": _draw_capacity}
    out = []
    with matplotlib.rc_context(rc):
        for name, data in series.items():
            fig = MplFigure(figsize=(8, 3.2 if name != "memory" else 1.2 + 0.45 * len(data["gpus"])),
                            layout="constrained")
            title = drawers[name](fig, data, t)
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, dpi=110, metadata={"Date": None} if fmt == "svg" else None)
            out.append(Figure(name, title, buffer.getvalue(), "image/svg+xml" if fmt == "svg" else "image/png"))
    return out


def _plain_ticks(ax, *axes: str, at: list | None = None) -> None:
    """Tick labels as plain numbers (1,024, 2.5, 350k) instead of powers on log axes; log axes
    get ticks at 1-2-5, or ``at`` (the data's x values) on the x axis."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    def compact(value: float, _pos=None) -> str:
        if value == int(value) and abs(value) < 1e4:
            return f"{value:,.0f}"
        for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(value) >= scale:
                return f"{value / scale:.3g}{suffix}"
        return f"{value:.3g}"

    for name in axes:
        axis = getattr(ax, f"{name}axis")
        if name == "x" and at:
            axis.set_major_locator(FixedLocator([v for v in at if v]))
        elif axis.get_scale() == "log":
            axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(compact))
        axis.set_minor_formatter(NullFormatter())


def _draw_memory(fig, data: dict[str, Any], t) -> str:
    ax = fig.add_subplot()
    rows = data["gpus"]
    for y, gpu in enumerate(rows):
        left = 0.0
        for part in data["parts"]:
            ax.barh(y, part["bytes"] / GiB, left=left, color=part["color"], height=0.6,
                    label=t(f"chart.{part['key']}") if y == 0 else None)
            left += part["bytes"] / GiB
        cap = gpu["capacity"] / GiB
        band = cap * data["margin_fraction"]
        ax.barh(y, band, left=cap - band, height=0.8, color="none", edgecolor="#555", hatch="///",
                label=t("chart.margin") if y == 0 else None)
        ax.plot([cap, cap], [y - 0.45, y + 0.45], color="black", lw=2, label=t("chart.capacity") if y == 0 else None)
        ax.annotate(t("chart.fits" if gpu["fits"] else "chart.does_not_fit"), (max(cap, left), y),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8,
                    color="#2e7d32" if gpu["fits"] else "#c62828")
    ax.set_yticks(range(len(rows)), [g["id"] for g in rows])
    ax.invert_yaxis()
    ax.set_xlabel(t("chart.memory_axis"))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(rows) < 3 else -0.18), ncol=5, fontsize=7,
              frameon=False)
    title = t("chart.memory_title")
    ax.set_title(title)
    return title


def _draw_cluster(fig, data: dict[str, Any], t) -> str:
    days_ax, cost_ax = fig.subplots(1, 2)
    gpus = data["gpus"]
    days_ax.plot(gpus, data["days"], marker="o", color=data["colors"]["on_demand"])
    days_ax.set(xscale="log", yscale="log", xlabel=t("chart.gpus"), ylabel=t("chart.days"), title=t("chart.time_title"))
    for key, label in (("on_demand_usd", "chart.on_demand"), ("spot_usd", "chart.spot")):
        cost_ax.plot(gpus, data[key], marker="o", label=t(label), color=data["colors"][key.removesuffix("_usd")])
    cost_ax.set(xscale="log", xlabel=t("chart.gpus"), ylabel=t("chart.usd"), title=t("chart.cost_title"))
    cost_ax.set_ylim(bottom=0)
    if data.get("selected"):
        for ax in (days_ax, cost_ax):
            ax.axvline(data["selected"], color="#555", ls="--", lw=1, label=t("chart.selected"))
    cost_ax.legend(fontsize=7)
    _plain_ticks(days_ax, "x", "y", at=gpus)
    _plain_ticks(cost_ax, "x", "y", at=gpus)
    return f"{t('chart.time_title')} · {t('chart.cost_title')}"


def _draw_layouts(fig, data: dict[str, Any], t) -> str:
    ax = fig.add_subplot()
    top = [p for p in data["top"] if p["gpus"] and p["days"]]
    front = [p for p in data["front"] if p["gpus"] and p["days"]]
    ax.scatter([p["gpus"] for p in top], [p["days"] for p in top], color=data["colors"]["top"], s=28,
               label=t("chart.top_layouts"), zorder=2)
    ax.plot([p["gpus"] for p in front], [p["days"] for p in front], marker="o", color=data["colors"]["front"],
            label=t("chart.pareto_front"), zorder=3)
    best = data["best"]
    if best.get("gpus") and best.get("days"):
        ax.scatter([best["gpus"]], [best["days"]], marker="*", s=180, color="black", zorder=4,
                   label=f"{t('chart.best')}: {best['layout']}")
    ax.set(xscale="log", yscale="log", xlabel=t("chart.gpus"), ylabel=t("chart.ranked_days"))
    ax.set_xscale("log", base=2)
    _plain_ticks(ax, "x", "y", at=sorted({p["gpus"] for p in top + front}))
    title = t("chart.pareto_title")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return title


def _draw_capacity(fig, data: dict[str, Any], t) -> str:
    rate_ax, tpot_ax = fig.subplots(1, 2)
    rate_ax.plot(data["batch"], data["tokens_per_s"], marker="o", color=data["colors"]["throughput"])
    rate_ax.set(xscale="log", xlabel=t("chart.batch"), ylabel=t("chart.tokens_per_s"))
    tpot_ax.plot(data["batch"], data["tpot_ms"], marker="o", color=data["colors"]["latency"])
    tpot_ax.set(xscale="log", xlabel=t("chart.batch"), ylabel=t("chart.tpot_ms"))
    tpot_ax.set_ylim(bottom=0)
    rate_ax.set_ylim(bottom=0)
    _plain_ticks(rate_ax, "x", "y", at=data["batch"])
    _plain_ticks(tpot_ax, "x", at=data["batch"])
    if data.get("max_sequences"):
        for ax in (rate_ax, tpot_ax):
            ax.axvline(data["max_sequences"], color="#555", ls="--", lw=1, label=t("chart.max_sequences"))
        rate_ax.legend(fontsize=7)
    title = t("chart.capacity_title")
    fig.suptitle(title)
    return title
