"""The Report: what every command, the Python API and (later) the web API return.

A report is inputs + assumptions (each with its source and the flag that changes it) +
sections of result lines (each with its unit and the formula that produced it). Renderers only
format; they never compute, so a number cannot differ between the CLI, JSON and Python.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


_PLURAL_COUNTS = ("sequences", "GPUs", "tokens", "nodes", "cores", "checkpoints", "interruptions", "ranks",
                  "requests", "layers", "experts")
"""Count units a line of value 1 prints in the singular."""


@dataclass(frozen=True)
class Line:
    """One reported quantity. ``value`` is in base units (``unit``); ``text`` is for display."""

    key: str
    label: str
    value: Any
    unit: str = ""
    text: str = ""
    formula: str = ""
    low: float | None = None
    high: float | None = None

    @property
    def display(self) -> str:
        if self.text:
            return self.text
        if self.unit in _PLURAL_COUNTS and not isinstance(self.value, bool) and self.value == 1:
            return f"1 {self.unit[:-1]}"  # "1 sequence", not "1 sequences"
        if isinstance(self.value, float):
            return f"{self.value:.4g} {self.unit}".strip()
        return f"{self.value} {self.unit}".strip()


@dataclass(frozen=True)
class Assumption:
    """A default or user-set input that the result depends on, with where it comes from."""

    key: str
    label: str
    value: Any
    source: str
    flag: str = ""
    user_set: bool = False


@dataclass(frozen=True)
class Section:
    title: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Table:
    """Rows of like items (catalog entries, validation cases). Cells are plain values."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


@dataclass(frozen=True)
class Report:
    kind: str
    title: str
    inputs: tuple[Line, ...]
    assumptions: tuple[Assumption, ...]
    sections: tuple[Section, ...]
    notes: tuple[str, ...] = field(default=())
    tables: tuple[Table, ...] = field(default=())
    headline: tuple[str, ...] = field(default=())
    """Keys of the lines that answer the question, in the order the answer-first view shows them."""
    key_assumptions: tuple[str, ...] = field(default=())
    """Keys of the (at most three) assumptions that move the headline most."""
    summary_table: str = ""
    """Title of a table whose first rows the answer-first view shows (e.g. the ranked layouts)."""
    summary_columns: tuple[str, ...] = field(default=())
    """The columns of that table the answer-first view shows (all when empty)."""
    device_noun: str = "GPU"
    """What the answer calls one device: 'chip' on a TPU (schema.tpu_rules.in_device_words), which the renderers
    apply to titles, columns, formulas and notes at render time (report.device_words; keys and titles stay)."""

    def line(self, key: str) -> Line:
        """The result line with ``key`` (searched across sections and inputs)."""
        for section in self.sections:
            for line in section.lines:
                if line.key == key:
                    return line
        for line in self.inputs:
            if line.key == key:
                return line
        raise KeyError(key)

    def value(self, key: str) -> Any:
        return self.line(key).value

    def section_of(self, key: str) -> str | None:
        """The title of the section holding the line ``key`` (None for an input line)."""
        return next((s.title for s in self.sections for line in s.lines if line.key == key), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form for JSON: ``results`` maps each key to its value in base units."""
        return {
            "kind": self.kind,
            "title": self.title,
            "inputs": {line.key: line.value for line in self.inputs},
            "assumptions": [asdict(a) for a in self.assumptions],
            "results": {line.key: line.value for s in self.sections for line in s.lines},
            "sections": [{"title": s.title, "lines": [asdict(line) for line in s.lines]}
                         for s in self.sections],
            "tables": {t.title: t.records() for t in self.tables},
            "notes": list(self.notes),
            # only the keys this report has (a deadline's "gpus_compute_only" is absent when GPUs are given)
            "headline": [line.key for line in self.lines(self.headline)],
        } | ({"device_noun": self.device_noun} if self.device_noun != "GPU" else {})  # a GPU's JSON as before

    def lines(self, keys: tuple[str, ...]) -> list[Line]:
        """The lines with these keys that exist, in that order."""
        found = []
        for key in keys:
            try:
                found.append(self.line(key))
            except KeyError:
                continue
        return found

    def assumption(self, key: str) -> Assumption | None:
        return next((a for a in self.assumptions if a.key == key), None)

    def with_note(self, note: str) -> Report:
        """This report with ``note`` first among its notes."""
        return replace(self, notes=(note, *self.notes))
