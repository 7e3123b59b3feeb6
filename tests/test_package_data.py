"""Every data file the package reads at run time is declared as package data, so a wheel (not
only an editable install) carries it: a wheel built before reference/*.toml was listed lacked
catalog/reference/prediction_band.toml, which `plan` and `train --mfu predicted` read."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_SUFFIXES = {".json", ".toml", ".yaml", ".yml", ".html", ".js", ".css"}


def test_every_data_file_under_the_package_is_declared():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    missing = []
    for path in (ROOT / "src" / "gpuplan").rglob("*"):
        if path.suffix not in DATA_SUFFIXES or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(ROOT / "src")
        package = ".".join(rel.parts[:-1])
        # the nearest enclosing package that declares data, and the file's path inside it
        declared = False
        for owner, globs in patterns.items():
            owner_dir = Path(*owner.split("."))
            if rel.is_relative_to(owner_dir):
                inner = rel.relative_to(owner_dir).as_posix()
                # setuptools globs do not cross folders: '*' stays inside one path segment
                declared = declared or any(fnmatch.fnmatch(inner, g) and inner.count("/") == g.count("/") for g in globs)
        if not declared:
            missing.append(f"{rel} (package {package})")
    assert not missing, "add to [tool.setuptools.package-data] in pyproject.toml: " + ", ".join(missing)
