"""Render a Report as a rich table (terminal), JSON, or Markdown. Formatting only."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from gpuplan.core.units import format_usd, format_usd_per_gpu_hour, plural
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


def value_text(value: float, unit: str, like: str = "") -> str:
    """A number printed in its unit the way the report prints such values (for ranges); a
    duration (unit "s" or "days") takes the unit of ``like``, its line's own text ("0.69 days" ->
    "0.68 days – 0.70 days", "2.00 h" -> "1.84 h – 2.17 h"), at that unit's precision."""
    from gpuplan.core.units import (DURATION_UNITS, SECONDS_PER_DAY, duration_in, format_bytes, format_duration,
                                    format_gpu_time)

    if unit in ("s", "days"):
        seconds = value * SECONDS_PER_DAY if unit == "days" else value
        word = like.split("(")[0].split()[-1:] if like else []
        if word and word[0] in (*dict(DURATION_UNITS), "ms"):
            return duration_in(seconds, word[0])
        if unit == "days":
            return f"{value:,.2f} days"
        return duration_in(value, "ms") if value < 1 else format_duration(value)
    if unit in ("GPU-hours", "GPU-days"):
        return format_gpu_time(value)
    if unit in COUNT_UNITS:  # the unit word only where the line's own text carries it ("111" -> "85 – 123")
        return f"{value:,.0f}" + (f" {unit}" if unit != "GPUs" and (not like or unit in like) else "")
    if unit == "bytes":
        return format_bytes(value)
    if unit == "bytes/s":  # in the line's own unit: '58.29 KB/s' had '0.05 MB/s – 0.06 MB/s' (wave 7 sweep)
        scale = {"KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}
        word = like.split("(")[0].split()[-1:] if like else []
        if word and word[0] in scale:
            return f"{value / scale[word[0]]:,.2f} {word[0]}"
        return f"{value / 1e9:,.2f} GB/s" if value >= 1e8 else f"{value / 1e6:,.2f} MB/s"
    if unit.startswith("fraction"):
        return f"{value:.1%}"
    if unit == "USD":
        return format_usd(value)
    if unit == "USD/GPU-hour":
        return format_usd_per_gpu_hour(value) if like.endswith("/GPU-h") else format_usd(value, 2)
    if unit == "x":
        return f"{value:,.3g}x"
    if unit == "FLOPs":
        return f"{value:.3e}"
    return f"{value:.4g} {unit}".strip()


def range_text(line) -> str:
    """'low – high' in the line's unit; empty when there is no range, or when both ends print
    the same (a range of one value says nothing the value does not)."""
    if line.low is None or line.high is None:
        return ""
    low, high = value_text(line.low, line.unit, line.display), value_text(line.high, line.unit, line.display)
    return "" if low == high else f"{low} – {high}"


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def md_text(value: Any) -> str:
    """A value as Markdown text (a heading, a table cell, a note): '|' escaped, newlines as
    spaces, and a '<' that could open an HTML tag written as &lt; ('<= 0.9' stays as it is). A
    model named after its folder ('x<img src=x onerror=...>/config.json') put raw HTML in the
    Markdown a renderer may show; a '|' in it split the table's row."""
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", cell(value)).replace("|", "\\|").replace("\n", " ")




def headline_rows(report: Report) -> list[tuple[str, Any]]:
    """(label, line) for each headline line, in order. When two headline lines share a label (a
    disaggregated sizing: TTFT of the pools and of the colocated answer), each section's lines
    are headed by a (section title, None) row so that no number stands without its context."""
    lines = report.lines(report.headline)
    labels = [line.label for line in lines]
    if len(set(labels)) == len(labels):
        return [(line.label, line) for line in lines]
    rows: list[tuple[str, Any]] = []
    current = None
    for line in lines:
        section = report.section_of(line.key)
        if section != current:
            rows.append((section or "inputs", None))
            current = section
        rows.append((line.label, line))
    return rows


def moving_assumptions(report: Report) -> list[tuple[str, str]]:
    """(text, flag) of the (at most three) assumptions that move the headline most; '(set)' only
    on values the user gave."""
    moving = [a for a in (report.assumption(k) for k in report.key_assumptions) if a is not None][:3]
    return [(f"{a.label}: {a.value}" + (" (set)" if a.user_set else ""), a.flag) for a in moving]


def footer(report: Report, shown: int) -> str:
    hidden = sum(len(s.lines) for s in report.sections) - shown
    return (f"--full: {plural(len(report.sections), 'section')} ({hidden} more lines), "
            f"{plural(len(report.assumptions), 'assumption')} with sources, {plural(len(report.notes), 'note')}; "
            "--json: everything in base units")


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A CSV cell starting with one of these is read as a formula by spreadsheets (OWASP, "CSV Injection":
=, +, -, @, tab, carriage return)."""
PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%?")


def csv_cell(value: Any) -> Any:
    """``value`` safe to open in a spreadsheet: a text cell that starts a formula gets a leading
    apostrophe (OWASP's advice; the spreadsheet shows it as text); numbers, and text that is a plain
    number ('-3', '-1.5e3', '-12%'), are written as they are. None: an empty cell."""
    if value is None:
        return ""
    if not isinstance(value, str) or PLAIN_NUMBER.fullmatch(value):
        return value
    # a formula behind leading blanks (' =1', a line feed, a no-break space) or a NUL (OWASP ASVS 1.2.10) too
    if not value.lstrip(" \n\xa0").startswith(FORMULA_STARTS) and "\0" not in value[:1]:
        return value
    return "'" + value


def to_csv(report: Report) -> str:
    """CSV: the result lines (section, key, quantity, value in base units, unit, low, high, as
    printed) when the report has any, then each table; several blocks are separated by a blank
    line and headed by '# title'. A report that is one table (a catalog) is that table alone.
    Text cells that would start a spreadsheet formula are neutralised (csv_cell); numbers stay numbers."""
    import csv
    import io

    blocks: list[tuple[str, tuple[str, ...], list[tuple[Any, ...]]]] = []
    lines = [(s.title, line.key, line.label, line.value, line.unit, line.low, line.high, line.display)
             for s in report.sections for line in s.lines]
    if lines:
        blocks.append(("results", ("section", "key", "quantity", "value", "unit", "low", "high", "text"), lines))
    blocks += [(t.title, t.columns, list(t.rows)) for t in report.tables]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    # csv quotes a field that holds the line terminator ("\n") but not a bare "\r", which ends the row
    # for spreadsheets and csv.reader alike: such a row is written with every field quoted
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for i, (title, columns, rows) in enumerate(blocks):
        if len(blocks) > 1:
            buffer.write(("\n" if i else "") + f"# {title}\n")
        for row in (columns, *rows):
            cells = [csv_cell(v) for v in row]
            (quoted if any(isinstance(c, str) and "\r" in c for c in cells) else writer).writerow(cells)
    return buffer.getvalue()


def markdown_table(title: str, columns, rows) -> list[str]:
    """A '### title' heading and a Markdown table, every cell through md_text, then a blank line."""
    out = [f"### {md_text(title)}", "", "| " + " | ".join(md_text(c) for c in columns) + " |",
           "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(md_text(v) for v in row) + " |" for row in rows]
    return out + [""]


def table_markdown(table) -> list[str]:
    return markdown_table(table.title, table.columns, table.rows)


def to_markdown(report: Report) -> str:
    m = md_text
    out = [f"# {m(report.title)}", ""]
    if report.inputs:
        out += ["## Inputs", "", "| input | value |", "|---|---|"]
        out += [f"| {m(line.label)} | {m(line.display)} |" for line in report.inputs] + [""]
    if report.assumptions:
        out += ["## Assumptions", "", "| assumption | value | source | flag |", "|---|---|---|---|"]
        out += [f"| {m(a.label)} | {m(a.value)}{' (set)' if a.user_set else ''} | {m(a.source)} | `{a.flag}` |"
                for a in report.assumptions]
    for section in report.sections:
        out += ["", f"## {m(section.title)}", "", "| quantity | value | range | formula |",
                "|---|---|---|---|"]
        out += [f"| {m(line.label)} | {m(line.display)} | {m(range_text(line))} | {m(line.formula)} |"
                for line in section.lines]
    for table in report.tables:
        out += [""] + table_markdown(table)
    if report.notes:
        out += ["", "## Notes", ""] + [f"- {m(n)}" for n in report.notes]
    return "\n".join(out) + "\n"


SUMMARY_NOTES = 3
SUMMARY_ROWS = 5


def print_summary(report: Report, width: int | None = None) -> None:
    """The answer first, on a terminal: the headline lines, the assumptions that move them most,
    the warnings (wrapped, never cut); a hint to --full for everything else."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table, box

    rows = headline_rows(report)
    if not rows:
        print_rich(report, width)
        return
    console = Console(width=width, highlight=False)
    console.print(f"[bold]{escape(report.title)}[/bold]")
    answer = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left")
    answer.add_column("answer", style="cyan", overflow="fold")
    answer.add_column("value", justify="right", overflow="fold")
    answer.add_column("range", justify="right", overflow="fold")
    for label, line in rows:
        if line is None:
            answer.add_row(f"[bold]{escape(label)}[/bold]", "", "")
        else:
            answer.add_row(escape(label), escape(line.display), range_text(line))
    console.print(answer)
    table = next((t for t in report.tables if t.title == report.summary_table), None)
    if table is not None and table.rows:
        keep = [i for i, c in enumerate(table.columns) if not report.summary_columns or c in report.summary_columns]
        _print_table(console, f"{table.title} (first {min(SUMMARY_ROWS, len(table.rows))})",
                     [table.columns[i] for i in keep], [[cell(row[i]) for i in keep] for row in table.rows[:SUMMARY_ROWS]])
    moving = moving_assumptions(report)
    if moving:
        console.print("[bold]assumptions that move it most[/bold]")
        for text, flag in moving:
            console.print(f"  {escape(text)}  [dim]{escape(flag)}[/dim]")
    for note in report.notes[:SUMMARY_NOTES]:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
    console.print(f"[dim]{escape(footer(report, len([r for r in rows if r[1] is not None])))}[/dim]")


def _print_table(console, title: str, columns, rows) -> None:
    """A table that fits the terminal as columns; one wider than the terminal as one block of
    'column: value' lines per row (readable at 80 columns, nothing squeezed to 4 characters)."""
    from rich.markup import escape
    from rich.table import Table, box

    natural = sum(max([len(str(c))] + [len(str(r[i])) for r in rows]) + 3 for i, c in enumerate(columns))
    if natural <= console.width:
        shown = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for column in columns:
            shown.add_column(escape(str(column)), overflow="fold")
        for row in rows:
            shown.add_row(*(escape(str(v)) for v in row))
        console.print(shown)
        return
    console.print(f"[bold]{escape(title)}[/bold] ({len(rows)} rows; wider than the terminal: one block per row)")
    name_width = max(len(str(c)) for c in columns)
    for row in rows:
        for i, (column, value) in enumerate(zip(columns, row)):
            mark = "- " if i == 0 else "  "
            console.print(f"{mark}[cyan]{escape(str(column).ljust(name_width))}[/cyan]  {escape(str(value))}")


def print_rich(report: Report, width: int | None = None) -> None:
    """Print the report as tables on the terminal (rich imported here, not at start-up)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(width=width, highlight=False)
    console.print(f"[bold]{escape(report.title)}[/bold]")
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
        table = Table(title=escape(section.title), title_justify="left")
        table.add_column("quantity", style="cyan")
        table.add_column("value", justify="right")
        table.add_column("range", justify="right")
        table.add_column("formula", style="dim", overflow="fold")
        for line in section.lines:
            table.add_row(escape(line.label), escape(line.display), range_text(line), escape(line.formula))
        console.print(table)
    for item in report.tables:
        _print_table(console, item.title, item.columns, [[cell(v) for v in row] for row in item.rows])
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
