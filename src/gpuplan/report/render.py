"""Render a Report as a rich table (terminal), JSON, or Markdown. Formatting only."""

from __future__ import annotations

import json
import math
from typing import Any

from gpuplan.report.model import Report


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, default=_json_default, allow_nan=False)


COUNT_UNITS = ("GPU-hours", "GPU-days", "GPUs", "tokens", "nodes", "cores", "sequences", "params", "checkpoints",
               "interruptions", "ranks", "tokens/s")


def value_text(value: float, unit: str) -> str:
    """A number printed in its unit the way the report prints such values (for ranges)."""
    from gpuplan.core.units import format_bytes, format_duration

    if unit == "days":
        return f"{value:,.2f} days"
    if unit in COUNT_UNITS:
        return f"{value:,.0f}" + ("" if unit in ("GPU-hours", "GPU-days", "GPUs") else f" {unit}")
    if unit == "s":
        return f"{value * 1e3:.3g} ms" if value < 1 else format_duration(value)
    if unit == "bytes":
        return format_bytes(value)
    if unit == "bytes/s":
        return f"{value / 1e9:,.2f} GB/s" if value >= 1e8 else f"{value / 1e6:,.2f} MB/s"
    if unit.startswith("fraction"):
        return f"{value:.1%}"
    if unit == "USD":
        return f"${value:,.0f}"
    if unit in ("USD/GPU-hour",):
        return f"${value:,.2f}"
    if unit == "x":
        return f"{value:,.3g}x"
    if unit == "FLOPs":
        return f"{value:.3e}"
    return f"{value:.4g} {unit}".strip()


def _range_text(line) -> str:
    if line.low is None or line.high is None:
        return ""
    return f"{value_text(line.low, line.unit)} – {value_text(line.high, line.unit)}"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def table_markdown(table) -> list[str]:
    out = [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |",
           "|" + "---|" * len(table.columns)]
    out += ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |" for row in table.rows]
    return out + [""]


def to_markdown(report: Report) -> str:
    out = [f"# {report.title}", ""]
    if report.inputs:
        out += ["## Inputs", "", "| input | value |", "|---|---|"]
        out += [f"| {line.label} | {line.display} |" for line in report.inputs] + [""]
    if report.assumptions:
        out += ["## Assumptions", "", "| assumption | value | source | flag |", "|---|---|---|---|"]
        out += [f"| {a.label} | {a.value}{' (set)' if a.user_set else ''} | {a.source} | `{a.flag}` |"
                for a in report.assumptions]
    for section in report.sections:
        out += ["", f"## {section.title}", "", "| quantity | value | range | formula |",
                "|---|---|---|---|"]
        out += [f"| {line.label} | {line.display} | {_range_text(line)} | {line.formula} |"
                for line in section.lines]
    for table in report.tables:
        out += [""] + table_markdown(table)
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(out) + "\n"


SUMMARY_NOTES = 3
SUMMARY_ROWS = 5


def print_summary(report: Report, width: int | None = None) -> None:
    """The answer first: the headline lines, the assumptions that move them most, the warnings;
    a hint to --full for everything else (well under 40 lines at 100 columns)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table, box

    headline = report.lines(report.headline)
    if not headline:
        print_rich(report)
        return
    console = Console(width=width)
    console.print(f"[bold]{escape(report.title)}[/bold]")
    answer = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left")
    answer.add_column("answer", style="cyan", overflow="fold")
    answer.add_column("value", justify="right", overflow="fold")
    answer.add_column("range", justify="right", overflow="fold")
    for line in headline:
        answer.add_row(escape(line.label), escape(line.display), _range_text(line))
    console.print(answer)
    table = next((t for t in report.tables if t.title == report.summary_table), None)
    if table is not None and table.rows:
        shown = Table(title=f"{table.title} (first {min(SUMMARY_ROWS, len(table.rows))})", title_justify="left",
                      box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        keep = [i for i, c in enumerate(table.columns) if not report.summary_columns or c in report.summary_columns]
        for i in keep:
            shown.add_column(table.columns[i], overflow="fold")
        for row in table.rows[:SUMMARY_ROWS]:
            shown.add_row(*(escape(_cell(row[i])) for i in keep))
        console.print(shown)
    moving = [a for a in (report.assumption(k) for k in report.key_assumptions) if a is not None][:3]
    if moving:
        console.print("[bold]assumptions that move it most[/bold]")
        for a in moving:
            console.print(f"  {escape(a.label)}: {escape(str(a.value))}" + (" (set)" if a.user_set else "")
                          + f"  [dim]{escape(a.flag)}[/dim]", overflow="ellipsis", no_wrap=True)
    for note in report.notes[:SUMMARY_NOTES]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", overflow="ellipsis", no_wrap=True)
    hidden = sum(len(s.lines) for s in report.sections) - len(headline)
    console.print(f"[dim]--full: {len(report.sections)} sections ({hidden} more lines), "
                  f"{len(report.assumptions)} assumptions with sources, {len(report.notes)} notes; "
                  "--json: everything in base units[/dim]")


def print_rich(report: Report) -> None:
    """Print the report as tables on the terminal (rich imported here, not at start-up)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{report.title}[/bold]")
    if report.inputs:
        inputs = Table(title="Inputs", show_header=False, title_justify="left")
        inputs.add_column("input", style="cyan")
        inputs.add_column("value")
        for line in report.inputs:
            inputs.add_row(escape(line.label), escape(line.display))
        console.print(inputs)
    if report.assumptions:
        assumptions = Table(title="Assumptions", title_justify="left")
        for column in ("assumption", "value", "source", "flag"):
            assumptions.add_column(column, overflow="fold")
        for a in report.assumptions:
            value = escape(f"{a.value}") + (" [green](set)[/green]" if a.user_set else "")
            assumptions.add_row(escape(a.label), value, escape(a.source), escape(a.flag))
        console.print(assumptions)
    for section in report.sections:
        table = Table(title=section.title, title_justify="left")
        table.add_column("quantity", style="cyan")
        table.add_column("value", justify="right")
        table.add_column("range", justify="right")
        table.add_column("formula", style="dim", overflow="fold")
        for line in section.lines:
            table.add_row(escape(line.label), escape(line.display), _range_text(line), escape(line.formula))
        console.print(table)
    for item in report.tables:
        table = Table(title=item.title, title_justify="left")
        for column in item.columns:
            table.add_column(column, overflow="fold")
        for row in item.rows:
            table.add_row(*(escape(_cell(v)) for v in row))
        console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
