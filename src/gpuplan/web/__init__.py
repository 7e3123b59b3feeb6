"""The local web page and JSON API (``gpuplan serve``; optional ``web`` extra).

Importing this package imports nothing heavy: FastAPI is imported by :func:`create_app` only,
so ``import gpuplan`` and the CLI start-up stay free of it. The static page and the i18n
catalogs live in ``static/`` and are read through importlib.resources.
"""

from __future__ import annotations

import os
from typing import Any

ALLOWED_HOSTS_ENV = "GPUPLAN_ALLOWED_HOSTS"
CALIBRATION_DIR_ENV = "GPUPLAN_CALIBRATION_DIR"


def create_app(**options: Any):
    """The FastAPI application (see :func:`gpuplan.web.app.create_app` for the options)."""
    from gpuplan.web.app import create_app as build

    return build(**options)


def create_app_from_env():
    """The application as ``gpuplan serve`` configures it (uvicorn factory
    ``gpuplan.web:create_app_from_env``): allowed Host names and the calibration folder come
    from GPUPLAN_ALLOWED_HOSTS (comma-separated; empty = any) and GPUPLAN_CALIBRATION_DIR; the
    estimators are warmed up before connections are accepted."""
    hosts = os.environ.get(ALLOWED_HOSTS_ENV, "")
    return create_app(allowed_hosts=[h for h in hosts.split(",") if h] or None,
                      calibration_dir=os.environ.get(CALIBRATION_DIR_ENV) or None, warm=True)


__all__ = ["create_app", "create_app_from_env"]
