"""Plain text for a pipe, a file or a log: no colour, no box drawing, every column as wide as its
widest cell, nothing folded or cut ("…"). What the terminal view shows, in the same order; the
terminal view (render.py, rich) is only for a terminal. Imports nothing beyond the standard
library and the Report, so a piped answer does not pay for rich."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuplan.report.model import Report

GAP = "  "


def text_table(columns: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = (),
               title: str = "") -> list[str]:
    """Columns padded to their widest cell (header included), a dashed rule under the header;
    ``right``: indices of right-aligned columns. Trailing blanks are stripped."""
    cells = [[str(c) for c in columns]] + [[str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]

    def fmt(row: list[str]) -> str:
        parts = [row[i].rjust(w) if i in right else row[i].ljust(w) for i, w in enumerate(widths)]
        return GAP.join(parts).rstrip()

    out = [title] if title else []
    out += [fmt(cells[0]), GAP.join("-" * w for w in widths)]
    return out + [fmt(row) for row in cells[1:]]


def summary_lines(report: Report) -> list[str]:
    """The answer-first view (render.print_summary's content) as plain lines."""
    from gpuplan.report.render import (
        SUMMARY_NOTES,
        SUMMARY_ROWS,
        cell,
        footer,
        headline_rows,
        moving_assumptions,
        range_text,
    )

    rows = headline_rows(report)
    if not rows:
        return full_lines(report)
    out = [report.title]
    body = [(label, line.display, range_text(line)) for label, line in rows if line is not None]
    table = text_table(("answer", "value", "range"), body, right=(1, 2))
    out += table[:2]  # header and rule; a section heading (rows sharing labels) stands on its own line
    lines = iter(table[2:])
    out += [f"{label}:" if line is None else next(lines) for label, line in rows]
    table = next((t for t in report.tables if t.title == report.summary_table), None)
    if table is not None and table.rows:
        keep = [i for i, c in enumerate(table.columns) if not report.summary_columns or c in report.summary_columns]
        shown = [[cell(row[i]) for i in keep] for row in table.rows[:SUMMARY_ROWS]]
        out += [""] + text_table([table.columns[i] for i in keep], shown,
                                 title=f"{table.title} (first {min(SUMMARY_ROWS, len(table.rows))})")
    moving = moving_assumptions(report)
    if moving:
        out += ["", "assumptions that move it most"] + [f"  {text}  {flag}" for text, flag in moving]
    out += [f"note: {note}" for note in report.notes[:SUMMARY_NOTES]]
    return out + [footer(report, len([r for r in rows if r[1] is not None]))]


def full_lines(report: Report) -> list[str]:
    """Every input, assumption, section, table and note (render.print_rich's content)."""
    from gpuplan.report.render import cell, range_text

    out = [report.title]
    if report.inputs:
        out += [""] + text_table(("input", "value"), [(line.label, line.display) for line in report.inputs],
                                 title="Inputs")
    if report.assumptions:
        rows = [(a.label, f"{a.value}" + (" (set)" if a.user_set else ""), a.source, a.flag)
                for a in report.assumptions]
        out += [""] + text_table(("assumption", "value", "source", "flag"), rows, title="Assumptions")
    for section in report.sections:
        rows = [(line.label, line.display, range_text(line), line.formula) for line in section.lines]
        out += [""] + text_table(("quantity", "value", "range", "formula"), rows, right=(1, 2), title=section.title)
    for table in report.tables:
        rows = [[cell(v) for v in row] for row in table.rows]
        out += [""] + text_table(table.columns, rows, title=table.title)
    if report.notes:
        out += [""] + [f"note: {note}" for note in report.notes]
    return out


def write(lines: list[str], stream: Any) -> None:
    stream.write("\n".join(lines) + "\n")
