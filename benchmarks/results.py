"""Print a benchmark's (what, measured, goal) rows as a Markdown table and append it to a doc;
the timing helper the benchmarks share."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, calls: int, warm: bool = True) -> float:
    """Median wall time of ``calls`` calls of ``fn`` (after one untimed call when ``warm``)."""
    if warm:
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def publish(rows: list[tuple[str, str, str]], write: str | None, heading: str = "", preface: str = "") -> None:
    """Print the table; with ``write``, put it (under ``heading``) in that Markdown file: the table
    of a section with the same heading is replaced (prose below it stays), otherwise the table is appended."""
    lines = ([preface, ""] if preface else []) + ["| what | measured | goal |", "|---|---|---|"]
    text = "\n".join(lines + [f"| {a} | {b} | {c} |" for a, b, c in rows])
    print(text)
    if not write:
        return
    section = (f"## {heading}\n\n" if heading else "") + text + "\n"
    try:
        with open(write, encoding="utf-8") as fh:
            doc = fh.read()
    except FileNotFoundError:
        doc = ""
    marker = f"## {heading}\n"
    start = doc.find(marker) if heading else -1
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + section if doc else section
    else:
        # the old section runs to the last row of its first table; prose written below it stays
        lines = doc[start:].split("\n")
        row = next(i for i, line in enumerate(lines) if line.startswith("|"))
        while row < len(lines) and lines[row].startswith("|"):
            row += 1
        doc = doc[:start] + section + "\n".join(lines[row:])
    with open(write, "w", encoding="utf-8") as fh:
        fh.write(doc)
