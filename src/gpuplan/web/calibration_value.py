"""A calibration as the web API takes it, by its type and length: the request models' check (web/models.py) and the
campaign's stages' (web/service.calibration_document), in one wording (wave 22: the two doors worded it two ways)."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import InputError

CALIBRATION_NAME_CHARS = 128
"""Characters of a calibration file name in the server's --calibration-dir."""


def calibration_value(value: Any) -> Any:
    """A calibration document (an object) or a file name of at most 128 characters, checked as
    one field: a union would name its failing member (``calibration.dict[str,any]``) instead."""
    if value is None or isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise InputError("calibration", type(value).__name__, "give the calibration JSON document (an object) or a "
                         "file name from the server's --calibration-dir")
    if len(value) > CALIBRATION_NAME_CHARS:
        raise InputError("calibration", value, f"a calibration file name is at most {CALIBRATION_NAME_CHARS} "
                         "characters (letters, digits, '.', '_', '-')")
    return value
