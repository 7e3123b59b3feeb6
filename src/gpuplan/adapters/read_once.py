"""Files read once while their bytes are unchanged: a command (or a campaign's stages) looks the same config.json or
calibration up again and again (ModelFields.spec, position_limit_of, each stage's schema), and each look-up read, parsed
and checked the whole file (adapters.files: depth, numbers, duplicate keys). Near their size caps that was seconds a
read: a 16-stage campaign naming an 11 MB calibration read it 17 times, 48 s; a 3.7 MB config.json cost `memory` 4.8 s
of CPU (hostile wave 29). What is kept is the reader's result, shared read-only (a config dict as the catalog's are
shared; a Calibration is frozen)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

KEPT = 4
"""Files kept per kind, the first kept first out (by insertion, not by last read: a command reads one model and one
calibration, so the order hardly matters)."""
_KEPT: dict[tuple[str, str, bytes], Any] = {}


def read_once(path: str | Path, kind: str, load: Callable[[], Any]) -> Any:
    """``load()``'s result for the file at ``path``, called again only when the file's bytes changed (a SHA-256 of
    them: a rewrite within the file system's timestamp granularity keeps its size and mtime). ``kind``: its
    adapters.files.MAX_BYTES cap. Anything but a regular file within the cap goes to ``load`` each time, for its
    refusal (a FIFO or a device is never opened here, nor waited on where one replaces the file after its check); a
    refusal is raised, never kept. ``load`` reads the file itself, so its result is kept only where the file still
    holds the bytes hashed after it (a rewrite while it read was kept under the old bytes' key: review R2 N)."""
    import hashlib

    from gpuplan.adapters.files import MAX_BYTES, read_bytes
    from gpuplan.errors import InputError

    def key_now():
        # adapters.files.read_bytes: the name checked, opened without waiting (O_NONBLOCK), the descriptor checked
        # again and read at most to the cap + 1 (a read of the name after its stat waited forever on a FIFO swapped in
        # between, and read a file grown past the cap whole: hostile wave 30); what it refuses is load()'s to refuse
        try:
            data = read_bytes(path, kind, MAX_BYTES[kind])
        except InputError:
            return None
        return kind, str(Path(path).resolve()), hashlib.sha256(data).digest()

    try:
        key = key_now()
    except (OSError, ValueError, RuntimeError):  # no such file, a link loop, a NUL: the reader's own refusal
        key = None
    if key is None:
        return load()
    kept = _KEPT.get(key)
    if kept is not None:
        return kept
    value = load()  # a refusal is raised, never kept
    try:  # load() read the file again: kept only where it read the bytes hashed (not a rewrite in between)
        if key_now() != key:
            return value
    except (OSError, ValueError, RuntimeError):
        return value
    try:
        while sum(k[0] == kind for k in list(_KEPT)) >= KEPT:
            _KEPT.pop(next(k for k in list(_KEPT) if k[0] == kind), None)
    except (RuntimeError, StopIteration):  # another thread's change meanwhile (the web API's estimates run in threads)
        pass
    _KEPT[key] = value
    return value
