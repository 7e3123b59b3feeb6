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
    """Print the table; with ``write``, append it (under ``heading``) to that Markdown file."""
    lines = ([preface, ""] if preface else []) + ["| what | measured | goal |", "|---|---|---|"]
    text = "\n".join(lines + [f"| {a} | {b} | {c} |" for a, b, c in rows])
    print(text)
    if write:
        with open(write, "a", encoding="utf-8") as fh:
            fh.write("\n" + (f"## {heading}\n\n" if heading else "") + text + "\n")
