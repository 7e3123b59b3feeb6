"""Regenerate commands/dataclass_code.bin: ``python -m gpuplan.commands.record_dataclass_code``.

Runs the benchmark commands in this process and keeps the compiled code of every dataclass
method text they exec (gpuplan.commands.dataclass_code says why and how it is used)."""

from __future__ import annotations

import builtins
import sys
from typing import Any

from gpuplan.cli import main
from gpuplan.commands.dataclass_code import FILE, compiled, write

COMMANDS = (["train"], ["plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1024"],
            ["memory", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--zero", "3"], ["budget"])
"""The commands whose dataclass methods the file keeps (benchmarks/bench_cli.py's, and budget)."""


def record(commands: tuple[list[str], ...] = COMMANDS) -> dict[str, Any]:
    """Run ``commands`` in this process (output discarded) and return the text -> code of every
    dataclass method they define."""
    import dataclasses
    import io
    from contextlib import redirect_stdout

    if any(name.startswith(("pydantic", "gpuplan.core", "gpuplan.jobs")) for name in sys.modules):
        raise RuntimeError("record in a fresh process: the dataclasses already defined are missed")
    texts: dict[str, Any] = {}

    def exec_recording(source: Any, globals: Any = None, locals: Any = None) -> None:
        if isinstance(source, str):
            texts[source] = compiled(source)
        builtins.exec(source, globals, locals)

    dataclasses.exec = exec_recording  # type: ignore[attr-defined]
    try:
        for argv in commands:
            with redirect_stdout(io.StringIO()):
                main(list(argv))
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    return texts


if __name__ == "__main__":
    kept = record()
    print(f"{FILE.name}: {len(kept)} method texts, {write(kept):,} bytes")
