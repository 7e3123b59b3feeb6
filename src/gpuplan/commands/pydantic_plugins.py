"""pydantic's plugin loader, answered without importing importlib.metadata while plugins are off
(issue 39, docs/performance.md).

The CLI turns pydantic's plugins off (``PYDANTIC_DISABLE_PLUGINS=__all__``: gpuplan's schemas use
none, and the scan reads every installed package's entry points). pydantic then still imports
``pydantic.plugin._loader`` when it builds the first schema's validator
(``plugin/_schema_validator.py`` ``create_schema_validator``: ``from ._loader import get_plugins``),
and that module imports importlib.metadata at its top (email, zipfile, csv, socket...: ~12-15 ms of
a ~270 ms command on this project's machine) only to return ``()``: its ``get_plugins`` returns an
empty tuple when the variable is ``'__all__'``, ``'1'`` or ``'true'``.

An import hook (``sys.meta_path``) answers that one import with a module whose ``get_plugins``
returns the same ``()`` while the variable disables all, and otherwise imports the real loader and
asks it. It answers only for the pydantic releases read for this (TESTED_RELEASES: 2.7 to 2.14,
each's ``_schema_validator.py`` imports only ``get_plugins`` from the loader, and each loader
returns ``()`` for those values; 2.6's loader had no such variable); any other release, or the
variable set otherwise, imports pydantic's own loader as before.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec

LOADER = "pydantic.plugin._loader"
DISABLED_VALUES = ("__all__", "1", "true")
"""PYDANTIC_DISABLE_PLUGINS values for which pydantic's own get_plugins returns () (_loader.py)."""
TESTED_RELEASES = ((2, 7), (2, 14))
"""(first, last) pydantic minor releases whose loader and its one caller were read (2.7.4, 2.8.2,
2.9.2, 2.10.6, 2.11.7, 2.12.5, 2.13.0, 2.14.4)."""


def plugins_disabled() -> bool:
    return os.environ.get("PYDANTIC_DISABLE_PLUGINS") in DISABLED_VALUES


def pydantic_release() -> tuple[int, int] | None:
    """(major, minor) of the imported pydantic; None when it is not imported or unreadable."""
    version = sys.modules.get("pydantic.version")
    text = getattr(version, "VERSION", None)
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def get_plugins() -> tuple:
    """pydantic.plugin._loader.get_plugins: () while plugins are disabled (what pydantic's own
    returns then); otherwise pydantic's own loader takes this module's place and answers."""
    if plugins_disabled():
        return ()
    import importlib

    sys.modules.pop(LOADER, None)
    PluginLoaderFinder.declined = True
    return importlib.import_module(LOADER).get_plugins()


class PluginLoaderFinder:
    """Finds ``pydantic.plugin._loader`` (a module holding this module's get_plugins) on a tested
    release with plugins off; every other import goes on to the normal finders."""

    declined = False
    """Set once pydantic's own loader was asked for: the hook answers no more."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != LOADER or cls.declined or not plugins_disabled():
            return None
        release = pydantic_release()
        if release is None or not TESTED_RELEASES[0] <= release <= TESTED_RELEASES[1]:
            return None
        return ModuleSpec(name, cls)

    @staticmethod
    def create_module(spec):
        return None  # the default: an empty module named pydantic.plugin._loader

    @staticmethod
    def exec_module(module) -> None:
        """The stand-in's one name, the one its caller imports."""
        module.get_plugins = get_plugins


def install() -> None:
    """Put the hook first on sys.meta_path (once per process)."""
    if PluginLoaderFinder not in sys.meta_path and LOADER not in sys.modules:
        sys.meta_path.insert(0, PluginLoaderFinder)
