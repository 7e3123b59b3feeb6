"""Plan files: the same inputs as the CLI flags, from YAML or TOML.

A plan file is a flat mapping of input names to values (``tokens: 2T``, ``gpu: h100``,
``days: 7``). Unknown keys and malformed files raise InputError naming the key or line; pydantic
(imported here only) checks the types.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from gpuplan.errors import InputError

PLAN_SUFFIXES = (".yaml", ".yml", ".toml")


def is_plan_file(text: str | None) -> bool:
    return bool(text) and str(text).lower().endswith(PLAN_SUFFIXES)


def read_plan_file(path: str | Path) -> dict[str, Any]:
    """Parse a YAML/TOML plan file into a dict (no validation of the keys yet)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("plan file", str(path), "no such file")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # yaml.YAMLError / tomllib.TOMLDecodeError: report, don't trace
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError("plan file", str(path), f"is not valid {p.suffix[1:].upper()}: {first}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError("plan file", str(path), "expected a mapping of input names to values")
    return data


def validate_plan_fields(data: dict[str, Any], model_class: type, where: str) -> dict[str, Any]:
    """Check ``data`` against a pydantic model (extra keys forbidden); return the clean dict."""
    import pydantic

    try:
        checked = model_class.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            valid = ", ".join(model_class.model_fields)
            raise InputError(f"{where}: {field}", err.get("input"), f"unknown field; valid fields: {valid}") from None
        raise InputError(f"{where}: {field}", err.get("input"), err["msg"]) from None
    return checked.model_dump(exclude_none=True)


Scalar = str | int | float


def plan_model(field_names: tuple[str, ...]) -> type:
    """The pydantic model of a plan file with these fields (built on first use: pydantic is
    not imported on the CLI's start-up path). Values are scalars; units are parsed later."""
    from pydantic import ConfigDict, create_model

    fields = {name: (Scalar | bool | None, None) for name in field_names}
    return create_model("Plan", __config__=ConfigDict(extra="forbid"), **fields)


def plan_and_flags(target: str | None, flags: dict[str, Any], field_names: tuple[str, ...]) -> dict[str, Any]:
    """The raw inputs of a command: the plan file's fields (when ``target`` is a plan file)
    overridden by the flags given (``None`` = not given). A ``target`` that is not a plan file is
    the model; a model or parameter count from the command line replaces the plan's."""
    given = {k: v for k, v in flags.items() if v is not None}
    raw: dict[str, Any] = {}
    if is_plan_file(target):
        raw = validate_plan_fields(read_plan_file(target), plan_model(field_names), str(target))
    elif target:
        given.setdefault("model", target)
    if "model" in given or "params" in given:
        raw = {k: v for k, v in raw.items() if k not in ("model", "params")}
    return raw | given
