"""Compiled code of the methods `dataclasses` writes, kept so that a command does not compile them
again on every start (issue 39, docs/performance.md).

Python 3.11's ``dataclasses._create_fn`` writes each method of a dataclass (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` / ``__delattr__``) as
source text and ``exec()``s it: ~530 compiles for the ~110 dataclasses a ``gpuplan train`` defines
(gpuplan's specs, pydantic's and annotated_types'), 30-40 ms of CPU on this project's machine.
The text depends only on the class's fields, so its compiled form can be kept:
``dataclass_code.bin`` holds the interpreter's bytecode magic number, the CRC-32 of the rest and a
marshalled map from each text to its code object, uncompressed (~0.7 MB: decompressing it took
~2 ms of every command; git and the wheel compress it anyway; a zlib-compressed file, the earlier
form, is still read, its own Adler-32 checking it). A file whose checksum does not match (one
flipped bit had a text run another text's code, or marshal raise SystemError) is not read. While a command runs, the ``exec`` that
``dataclasses`` calls takes the kept code for a text it holds and compiles any other text as
before. The look-up is by the exact text, so a stale file only compiles more; a file of another
Python (its magic number differs) is not read.

Regenerate after adding dataclasses or changing Python: ``python -m gpuplan.commands.record_dataclass_code``
(records the texts the benchmark commands of benchmarks/bench_cli.py run).
"""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("dataclass_code.bin")


def compiled(text: str) -> Any:
    """``text`` compiled as ``exec(text)`` in dataclasses.py compiles it (no __future__ flags)."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def magic_number() -> bytes:
    """The interpreter's bytecode magic number (as in its .pyc files), without importing
    importlib.util (~10 ms here)."""
    try:
        from _frozen_importlib_external import MAGIC_NUMBER  # CPython's import system, always loaded
    except ImportError:
        from importlib.util import MAGIC_NUMBER
    return MAGIC_NUMBER


CHECKSUM_BYTES = 4
"""zlib.crc32 of the marshalled map, big-endian, after the magic number (~0.2 ms over 0.7 MB)."""


def kept_code(path: Path | None = None) -> dict[str, Any]:
    """Text -> code object from the shipped file; empty when it is missing, from another Python,
    or damaged (its checksum, or its compressed form's, does not match; marshal refuses it; it is
    not a map of texts to code objects)."""
    import marshal
    import zlib

    MAGIC_NUMBER = magic_number()
    try:
        data = (path or FILE).read_bytes()
    except OSError:
        return {}
    start = len(MAGIC_NUMBER)
    if data[:start] == MAGIC_NUMBER:
        payload = memoryview(data)[start + CHECKSUM_BYTES:]  # a view: no copy of the 0.7 MB
        if zlib.crc32(payload) != int.from_bytes(data[start:start + CHECKSUM_BYTES], "big"):
            return {}
    else:  # the earlier, compressed form (or another Python's)
        try:
            data = zlib.decompress(data)
        except zlib.error:
            return {}
        if data[:start] != MAGIC_NUMBER:
            return {}
        payload = memoryview(data)[start:]
    try:
        codes = marshal.loads(payload)
    except Exception:  # noqa: BLE001 - a damaged file is only a slower start
        return {}
    code_type = type(compiled.__code__)
    if not isinstance(codes, dict) or not all(isinstance(k, str) and isinstance(v, code_type)
                                              for k, v in codes.items()):
        return {}
    return codes


def install() -> None:
    """Make ``dataclasses``' exec take the kept code (once per process; a no-op without the file)."""
    import dataclasses

    if "exec" in vars(dataclasses):  # installed already, or replaced by someone else: leave it
        return
    codes = kept_code()
    if not codes:
        return

    def exec_kept(source: Any, globals: Any = None, locals: Any = None) -> None:
        code = codes.get(source) if isinstance(source, str) else None
        builtins.exec(source if code is None else code, globals, locals)

    dataclasses.exec = exec_kept  # type: ignore[attr-defined]


def write(codes: dict[str, Any]) -> int:
    """Write ``codes`` to the shipped file; its size in bytes."""
    import marshal

    import zlib

    payload = marshal.dumps(dict(sorted(codes.items())))
    data = magic_number() + zlib.crc32(payload).to_bytes(CHECKSUM_BYTES, "big") + payload
    FILE.write_bytes(data)
    return len(data)
