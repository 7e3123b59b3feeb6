"""The type of `gpuplan serve --port`: a TCP port, a whole number from 1 to 65535 written in decimal digits.

Not a count (schema.types.count reads '1e3', '1000.0' and '+80' as 1,000 / 1,000 / 80, and '0080' as 80, a form
other tools read as octal): a port is written as its digits, as uvicorn's --port and the URL printed show it
(hostile wave 27: `serve --port 1e3` started a server on port 1000). Port 0 (the system picks a free port) is
refused: the URL printed would not name the port served on.
"""

from __future__ import annotations

import numbers
import re
from typing import Any

from pydantic import ValidationInfo

from gpuplan.errors import InputError, a_or_an
from gpuplan.schema.bound_words import bound_words
from gpuplan.schema.types import text_of, typed

LOWEST, HIGHEST = 1, 65535
"""The ports a server can listen on (TCP port numbers are 16 bits; 0 asks the system to pick one)."""
FORMS = f"a whole number from {LOWEST} to {HIGHEST} in decimal digits, e.g. 8000"
_DIGITS = re.compile(r"-?(?:0|[1-9][0-9]*)")
"""A port as written: digits without a leading zero, a '-' kept so that '-1' is refused by its bounds."""


def port(value: Any, info: ValidationInfo | None) -> int:
    """A TCP port from ``value``: an int, or text of decimal digits (trimmed); refused naming the field otherwise."""
    field = info.field_name if info is not None and info.field_name else "port"
    if isinstance(value, bool) or not isinstance(value, str | numbers.Integral):
        raise InputError(field, value, f"expected {FORMS}, not {a_or_an(type(value).__name__)}")
    if isinstance(value, str):
        text = value.strip() if "_" in value and value.isascii() else text_of(value, field, FORMS)  # '1_000': no 1e3
        if not _DIGITS.fullmatch(text):
            raise InputError(field, value, f"must be written as {FORMS} (no exponent, point, sign or leading zero)")
        number = int(text)
    else:
        number = int(value)
    if not LOWEST <= number <= HIGHEST:
        raise InputError(field, value, bound_words(LOWEST, HIGHEST, False, field))
    return number


Port = typed(int, port, {"type": "integer", "minimum": LOWEST, "maximum": HIGHEST})
