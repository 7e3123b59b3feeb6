"""What the result cache keys a request's calibration files on: their bytes, not only their names.

A request may name a calibration file of the operator's folder (`gpuplan serve --calibration-dir DIR`, web.service
calibration_document); the result cache (web.service.cache_key) was keyed on the request body, which holds the name,
so a rewritten file kept being answered from the cache with the old factors (review R2 S2-7). Each name a body holds
(at any depth: a campaign's stages name theirs) is keyed with a SHA-256 of the file's bytes, as adapters.read_once
keys a file (a rewrite within the file system's timestamp granularity keeps its size and mtime). Nothing is followed
or blocked on: a symbolic link, a FIFO or anything but a regular file within the calibration cap is keyed by its kind
only, and calibration_document refuses it when the request runs. Units: bytes (the cap)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_NAMES = 64
"""Calibration names fingerprinted per request (a campaign holds at most 32 stages and its defaults)."""


def calibration_names(body: Any, depth: int = 0) -> list[str]:
    """The text values of every 'calibration' key in ``body``, in the order met (at most MAX_NAMES)."""
    found: list[str] = []
    if depth > 8:  # request bodies are nested a few levels (campaign -> stages -> fields)
        return found
    items = body.items() if isinstance(body, dict) else enumerate(body) if isinstance(body, list) else ()
    for key, value in items:
        if key == "calibration" and isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict | list):
            found += calibration_names(value, depth + 1)
        if len(found) >= MAX_NAMES:
            break
    return found[:MAX_NAMES]


def fingerprint(folder: str, name: str) -> str:
    """A SHA-256 of the bytes of the file ``name`` (or ``name``.json, as calibration_document looks them up) in
    ``folder``; the kind of entry where it is not a regular file within the cap; '' where there is none."""
    import hashlib

    from gpuplan.adapters.files import MAX_BYTES

    if not name or "/" in name or "\\" in name or "\0" in name or ".." in name:
        return ""
    path = calibration_candidate(folder, name)  # the file calibration_document reads (a directory 'cal' beside
    if path is None:                            # cal.json is passed over there, so here too: final read s25)
        return ""
    try:
        st = os.lstat(path)
        if st.st_size > MAX_BYTES["calibration"]:
            return f"mode {st.st_mode:o} size {st.st_size}"
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)  # swapped for a link or a FIFO since the check: not followed, not waited on
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return "not a regular file"
            return hashlib.sha256(file.read(MAX_BYTES["calibration"] + 1)).hexdigest()
    except (OSError, ValueError):
        return ""


def calibration_candidate(folder: str, name: str) -> Path | None:
    """The file a calibration name stands for in ``folder``: ``name`` or ``name``.json, the first that is a regular
    file and no symbolic link (never followed: a request cannot make the server open a path elsewhere); None."""
    candidates = (Path(folder) / name, Path(folder) / f"{name}.json")
    return next((c for c in candidates if not c.is_symlink() and c.is_file()), None)


def calibration_fingerprints(body: Any, folder: str | None) -> list[str]:
    """fingerprint() of each calibration name ``body`` holds; [] without a folder (names are refused then)."""
    return [] if folder is None else [fingerprint(folder, name) for name in calibration_names(body)]
