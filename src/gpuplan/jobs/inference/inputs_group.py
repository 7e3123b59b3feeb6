"""`infer --group-size`: the int4 group size as typed, -1 (or none) for one group a channel.

One reader for the four doors (flag, plan file, web body, Python API): 0, -2, 1e9 and 1e400 are refused naming -1 as
well as the whole sizes (they said 'must be a positive, finite number' or 'must be > 0 and <= 65536', wrong of -1,
which is valid), and '-1.0' reads as the JSON number -1.0 does (wave 13). Text is read as a number, as a plan file's
YAML reads it (adapters.plan_formats PLAIN_INT / PLAIN_FLOAT), not matched against spellings of -1: '-1e0', '-01' and
'-1.0e0' are per channel at every door (review w13 r4 M1: the flag refused them while the plan files took them)."""

from __future__ import annotations

import math
from typing import Any

from gpuplan.adapters.plan_formats import PLAIN_FLOAT, PLAIN_INT
from gpuplan.core import units
from gpuplan.errors import InputError
from gpuplan.schema import types as T

MAX_GROUP_SIZE = 1 << 16
"""The largest --group-size taken (a bound on input: real checkpoints use 32 to 256, or -1)."""
_WHOLE_SIZES = f"a whole number from 1 to {MAX_GROUP_SIZE}, e.g. 32, 64 or 128"
GROUP_SIZES = f"-1 (per channel) or {_WHOLE_SIZES}"
"""What --group-size takes, as its refusals say."""
GROUP_SIZE_FORMS = f"expected -1 or none (per channel), or {_WHOLE_SIZES}"
"""The refusal of text that is not a number ('abc', '0x80', '+-1'): it names -1 / none (review w13 r4 S1)."""


def _per_channel(text: str) -> bool:
    """Whether ``text`` (trimmed) means one group a channel: 'none', or a plain decimal number equal to -1 ('-1',
    '-1.0', '-1.', '-1e0', '-01'), read as the YAML loader of a plan file reads numbers."""
    if text.lower() == "none":
        return True
    return bool(PLAIN_INT.match(text) or PLAIN_FLOAT.match(text)) and float(text) == -1


def group_size(value: Any, info) -> int | None:
    """The group size in weights, or None for per channel (-1); InputError naming GROUP_SIZES otherwise."""
    field = info.field_name if info is not None and info.field_name else "group_size"
    if isinstance(value, str) and _per_channel(T.text_of(value, field)):
        return None
    if value == -1:
        return None
    try:
        size = T.count(math.inf)(value, info)  # no bound, no whole check here: the ones below name -1 as well
    except units.NotPositive as exc:  # 0, -2, 1e400 and -1e400 (units.Overflowed)
        raise InputError(exc.field, exc.value, f"must be {GROUP_SIZES}") from None  # a plain refusal (N4)
    except T.NotACount as exc:  # text that is no number ('abc', '0x80'): its forms offered '1K', no group size;
        raise InputError(exc.field, exc.value, GROUP_SIZE_FORMS) from None  # 'nan', '1_0': their own words
    if size > MAX_GROUP_SIZE or size != int(size):  # 65537, 1e9; 0.5, 1.5 ('must be a whole number' named no -1)
        raise InputError(field, value, f"must be {GROUP_SIZES}")
    return int(size)
