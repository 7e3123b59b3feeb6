"""`infer --group-size`: the int4 group size as typed, -1 (or none) for one group a channel.

One reader for the four doors (flag, plan file, web body, Python API): 0, -2, 1e9 and 1e400 are refused naming -1 as
well as the whole sizes (they said 'must be a positive, finite number' or 'must be > 0 and <= 65536', wrong of -1,
which is valid), and '-1.0' reads as the JSON number -1.0 does (wave 13)."""

from __future__ import annotations

import math
import re
from typing import Any

from gpuplan.core import units
from gpuplan.errors import InputError
from gpuplan.schema import types as T

MAX_GROUP_SIZE = 1 << 16
"""The largest --group-size taken (a bound on input: real checkpoints use 32 to 256, or -1)."""
GROUP_SIZES = f"-1 (per channel) or a whole number from 1 to {MAX_GROUP_SIZE}, e.g. 32, 64 or 128"
"""What --group-size takes, as its refusals say."""
_PER_CHANNEL = re.compile(r"-1(?:\.0*)?|none")
"""Text for one group a channel: '-1', '-1.0' (as the JSON number -1.0 reads) or 'none'."""


def group_size(value: Any, info) -> int | None:
    """The group size in weights, or None for per channel (-1); InputError naming GROUP_SIZES otherwise."""
    if isinstance(value, str) and _PER_CHANNEL.fullmatch(value.strip().lower()):
        return None
    if value == -1:
        return None
    try:
        size = T.count(math.inf, whole=True)(value, info)  # no bound here: the one below names -1 as well
    except units.NotPositive as exc:  # 0, -2, 1e400 and -1e400 (units.Overflowed)
        raise exc.retold(exc.field, exc.value, f"must be {GROUP_SIZES}") from None
    if size > MAX_GROUP_SIZE:
        raise InputError(T._name(info), value, f"must be {GROUP_SIZES}")
    return size
