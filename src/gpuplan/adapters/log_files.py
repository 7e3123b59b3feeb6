"""Training logs and measurement files as a stream: whatever their size, a log is refused from its
first MiB (not a log, binary, a JSON document over its limit, flags it needs and lacks), and read
line by line otherwise, so refusing a 200 MB file takes well under a second and a few MB.

A :class:`LogFile` (a file, opened once: regular files only, size-capped, never blocking; see
adapters.files.open_regular) and a :class:`LogText` (text already in memory) offer the same
three views to the parsers of adapters.training_logs: ``head_text`` (the first HEAD_BYTES, for
detecting the format), ``lines()`` (every line, one at a time) and ``document()`` (the whole
text, only for a JSON document, which the json module parses whole: at most MAX_BYTES['JSON log']).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuplan.adapters.files import MAX_BYTES, MiB, NotJSON, open_regular, parse_json, refusal
from gpuplan.errors import InputError

HEAD_BYTES = 1 * MiB
"""Bytes read to tell what a file is (a torchtitan / Megatron log's first step line, a CSV
header, a JSON document's first bracket all come far earlier)."""
MAX_LINE_BYTES = 1 * MiB
"""Longest line read (a log line is < 1 KiB; a one-line 200 MB file is refused at its first MiB)."""
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark (Excel's CSV)


def decode(raw: bytes) -> str:
    """UTF-8, else Latin-1 (old logs; every byte is a character), line by line."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


class LogText:
    """Log text already in memory (tests, the Python API), with LogFile's views."""

    def __init__(self, text: str, source: str) -> None:
        self.source, self.suffix = source, Path(source).suffix.lower()
        self.text = text.removeprefix("\ufeff")
        self.head_text = self.text[:HEAD_BYTES]

    def lines(self, keepends: bool = False) -> Iterator[str]:
        return iter(self.text.splitlines(keepends))

    def chunks(self, limit: int) -> Iterator[str]:
        """The first ``limit`` characters in pieces of whole lines (LogFile.chunks)."""
        start = 0
        while start < min(limit, len(self.text)):
            end = self.text.find("\n", start + HEAD_BYTES)
            end = len(self.text) if end < 0 else end + 1
            yield self.text[start:end]
            start = end

    def document(self) -> str:
        return self.text


class LogFile:
    """A log or measurement file opened once and read as a stream (a context manager)."""

    def __init__(self, path: str | Path, max_bytes: int | None = None) -> None:
        self.source, self.suffix = str(path), Path(path).suffix.lower()
        self._handle = open_regular(path, "log", max_bytes or MAX_BYTES["log"])
        try:
            self.size = os.fstat(self._handle.fileno()).st_size
            head = self._handle.read(HEAD_BYTES).removeprefix(BOM)
        except OSError as exc:
            self._handle.close()
            raise refusal("file", path, f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None
        if b"\x00" in head[:4096]:
            self._handle.close()
            raise refusal("file", path, "is binary; expected a training log or a measurement file")
        self.head_text = decode(head[: len(head) - _cut_character(head)])

    def __enter__(self) -> LogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def lines(self, keepends: bool = False) -> Iterator[str]:
        """Every line from the start, decoded one at a time (str.splitlines' line ends: a
        progress bar's carriage returns end lines too); a line over MAX_LINE_BYTES is refused."""
        self._handle.seek(0)
        number, first = 0, True
        while raw := self._handle.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise refusal("file", self.source, f"line {number} is longer than {MAX_LINE_BYTES // MiB} MiB; no "
                              "training log has such lines")
            if first:
                raw, first = raw.removeprefix(BOM), False
            yield from decode(raw).splitlines(keepends)

    def chunks(self, limit: int) -> Iterator[str]:
        """The first ``limit`` bytes as decoded pieces of about HEAD_BYTES that end at a line end
        (a search over each piece runs at C speed; no per-line Python work)."""
        self._handle.seek(0)
        done, rest = 0, b""
        while done < limit and (block := self._handle.read(HEAD_BYTES)):
            done += len(block)
            data = rest + block
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            if len(rest) > MAX_LINE_BYTES:
                raise refusal("file", self.source, f"has a line longer than {MAX_LINE_BYTES // MiB} MiB; no "
                              "training log has such lines")
            if cut:
                yield decode(data[:cut].removeprefix(BOM))
        if rest:
            yield decode(rest)

    def document(self) -> str:
        """The whole file as text, for a JSON document: refused over MAX_BYTES['JSON log'] before
        any of it is read past the head (a JSON table or trainer_state.json of 16 MiB holds
        ~170,000 steps; a longer log is CSV or JSON Lines, which are read line by line)."""
        limit = MAX_BYTES["JSON log"]
        if self.size > limit:
            raise refusal("file", self.source, f"is a JSON document of {self.size / MiB:,.0f} MiB; a JSON log or "
                          f"measurement is parsed whole, so at most {limit // MiB} MiB (write a long table as CSV or "
                          "JSON Lines, which are read line by line)")
        self._handle.seek(0)
        return decode(self._handle.read(limit + 1)).removeprefix("\ufeff")


def _cut_character(head: bytes) -> int:
    """Bytes of a UTF-8 character cut at the end of ``head`` (0 to 3), left out of head_text."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:  # the lead byte: is its character complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back if back < need else 0
    return 0


def is_json_lines(log: LogFile | LogText) -> bool:
    """JSON Lines: named .jsonl, or a first line that is a whole JSON object with more lines after
    it (a pretty-printed document's first line is a lone bracket)."""
    if log.suffix == ".jsonl":
        return True
    lines = [line for line in log.head_text.splitlines()[:64] if line.strip()]  # the head only: a
    return len(lines) > 1 and _is_json_object(lines[0])  # minified document may be one long line


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def json_lines(log: LogFile | LogText) -> Iterator[Any]:
    """JSON Lines rows, parsed one line at a time (each strictly: adapters.files.parse_json)."""
    for n, line in enumerate(log.lines(), start=1):
        try:
            if line.strip():
                yield parse_json(line, "file", log.source)
        except NotJSON:
            raise InputError("file", log.source, f"is not valid JSON Lines (line {n})") from None


def csv_rows(log: LogFile | LogText, expected: str) -> Iterator[dict]:
    """CSV rows as dicts, read one line at a time; a repeated column or a row with more cells
    than the header refused."""
    try:
        reader = csv.DictReader(log.lines(keepends=True))
        header = [str(c).strip() for c in reader.fieldnames or ()]
        if len(set(header)) < len(header):
            twice = next(c for c in header if header.count(c) > 1)
            raise InputError("file", log.source, f"has the column {twice!r} twice; give each column once")
        for i, row in enumerate(reader, start=1):
            if None in row:
                raise InputError("file", log.source, f"row {i} has more cells than the header's {len(header)} "
                                 "columns")
            yield {k.strip(): v for k, v in row.items()}
    except csv.Error as exc:
        raise InputError("file", log.source, f"is not valid CSV ({exc}); expected " + expected) from None
