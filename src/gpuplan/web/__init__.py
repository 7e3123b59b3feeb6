"""The local web page and JSON API (``gpuplan serve``; optional ``web`` extra).

Importing this package imports nothing heavy: FastAPI is imported by :func:`create_app` only,
so ``import gpuplan`` and the CLI start-up stay free of it. The static page and the i18n
catalogs live in ``static/`` and are read through importlib.resources.
"""

from __future__ import annotations

from typing import Any


def create_app(**options: Any):
    """The FastAPI application (see :func:`gpuplan.web.app.create_app` for the options)."""
    from gpuplan.web.app import create_app as build

    return build(**options)


__all__ = ["create_app"]
