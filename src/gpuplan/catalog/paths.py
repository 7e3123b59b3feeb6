"""Where the catalog's data files are."""

from __future__ import annotations

from pathlib import Path

CATALOG = Path(__file__).resolve().parent
"""catalog/ on disk. The package is installed as files (setuptools, not zip-safe), so its data is
read by path: the first importlib.resources.files() of a process imports zipfile and the resource
readers (~3 ms of every command)."""


def catalog_files(folder: str, suffix: str) -> list[Path]:
    """The files of catalog/``folder`` whose names end in ``suffix``, sorted by name."""
    root = CATALOG / folder
    return sorted((p for p in root.iterdir() if p.name.endswith(suffix)), key=lambda p: p.name)
