"""Parse and print quantities: counts ("7B", "2T"), bytes ("80GiB", "98 GB"), durations ("7d").

Decimal (SI) and binary prefixes are kept apart explicitly: ``GB`` = 1e9 bytes, ``GiB`` =
2**30 bytes. Counts use the ML convention K/M/B(=G)/T for 1e3/1e6/1e9/1e12. Internally every
quantity is a plain number in base units (parameters, tokens, bytes, seconds, FLOPs).
"""

from __future__ import annotations

import decimal
import math
import re

from gpuplan.errors import InputError

COUNT_SUFFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
BYTE_UNITS = {
    "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
    "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50,
}
SECONDS_PER = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0,
               "d": 86400.0, "day": 86400.0, "days": 86400.0, "w": 604800.0, "wk": 604800.0,
               # the words in full, as 'days' is (wave 6c: '3 days' read, '72 hours' and '2 weeks' were refused)
               "secs": 1.0, "second": 1.0, "seconds": 1.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
               "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0, "wks": 604800.0, "week": 604800.0, "weeks": 604800.0}
SECONDS_PER_DAY = 86400.0
SECONDS_PER_HOUR = 3600.0

UNSIGNED_NUMBER = r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?"
"""A plain decimal as every parser here reads it ('8', '.5', '1.5e3'; not '8.'): schema.types' token lengths
read the number before their K / M by it too."""
_NUMBER = rf"([-+]?{UNSIGNED_NUMBER})"
_COUNT_RE = re.compile(rf"^\s*{_NUMBER}\s*([KMBGTP]?)\s*$", re.IGNORECASE)
_BYTES_RE = re.compile(rf"^\s*{_NUMBER}\s*([KMGTP]I?B|B)?\s*$", re.IGNORECASE)
_DURATION_RE = re.compile(rf"^\s*{_NUMBER}\s*([a-z]*)\s*$", re.IGNORECASE)


def integer_too_large(value: object) -> bool:
    """True for a Python int past float range (JSON and Python allow any digit count; float() of
    one raises OverflowError, about 309 digits)."""
    return isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1023


def refuse_huge_integer(value: object, field: str) -> None:
    """InputError naming ``field`` for an integer past float range (not an OverflowError later), described by
    errors.shown (errors.huge_integer: unquoted, its sign kept; review s20b N8: it was quoted as if typed, and
    -10**5000 read 'too large a number (past 1.8e308)')."""
    if integer_too_large(value):
        negative = value < 0  # type: ignore[operator]
        raise InputError(field, value, f"is too large {'a negative' if negative else 'a'} number (past "
                         f"{'-' if negative else ''}1.8e308)")


def as_float(value: object, field: str) -> float:
    """``float(value)`` with an integer past float range refused (refuse_huge_integer)."""
    refuse_huge_integer(value, field)
    return float(value)  # type: ignore[arg-type]


NOT_POSITIVE = "must be a positive, finite number"
"""The refusal of a count, size or duration that is not above 0 or not finite."""


class NotPositive(InputError):
    """parse_count / parse_bytes / parse_duration's refusal of a value that is 0, negative, NaN or infinite
    (NOT_POSITIVE): its own type, so a caller tells it from a refusal of the text's form without reading the
    message (schema.types names the field's bound for a number past it)."""


class Overflowed(NotPositive):
    """A NotPositive whose number was written finite but overflowed to an infinity in reading or scaling: '1e400',
    '-1e400', '1e300T' (x 1e12), '1e308' days (x 86,400 s). Not an infinity given as one (float('inf'))."""


def overflowed(text: object, value: float) -> bool:
    """Whether ``value``, read from ``text``, is an infinity that ``text`` did not write: digits ('1e400') or a
    finite number read or scaled past float range, not 'inf' / '.inf' / float('inf'). The one test the unit
    parsers (Overflowed) and the plan files' float readers (adapters.plan_formats) share."""
    if not math.isinf(value):
        return False
    return "inf" not in text.lower() if isinstance(text, str) else math.isfinite(float(text))  # type: ignore[arg-type]


def lost_to_zero(text: object, value: float) -> bool:
    """Whether ``value``, read from the text ``text``, underflowed to 0: the text has a non-zero digit before its
    exponent ('1e-400', '5e-999%') and reads as 0.0. The one test the schema (types.number / share) and the plan
    files' float readers (adapters.plan_formats) share."""
    return value == 0 and isinstance(text, str) and re.search(r"[1-9]", text.lower().split("e")[0]) is not None


def _positive(field: str, text: object, value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise (Overflowed if overflowed(text, value) else NotPositive)(field, text, NOT_POSITIVE)
    return value


def parse_count(text: str | int | float, field: str = "count") -> float:
    """'7B' -> 7e9, '2T' -> 2e12, '1.5e12' -> 1.5e12, 350 -> 350.0. Must be > 0."""
    if isinstance(text, bool):
        raise InputError(field, text, "expected a number such as 7B, 2T or 1.5e12")
    if isinstance(text, int | float):
        return _positive(field, text, as_float(text, field))
    match = _COUNT_RE.match(str(text))
    if not match:
        raise InputError(field, text, "expected a number with an optional K/M/B/T suffix, e.g. 7B or 2T")
    return _positive(field, text, float(match.group(1)) * COUNT_SUFFIXES[match.group(2).upper()])


def parse_bytes(text: str | int | float, field: str = "bytes") -> float:
    """'80GiB' -> 85899345920, '98 GB' -> 9.8e10; a bare number is bytes."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _positive(field, text, as_float(text, field))
    match = _BYTES_RE.match(str(text))
    if not match:
        raise InputError(field, text, "expected a size such as 80GB (1e9 bytes) or 80GiB (2**30 bytes)")
    unit = (match.group(2) or "B").upper()
    return _positive(field, text, float(match.group(1)) * BYTE_UNITS[unit])


def parse_duration(text: str | int | float, field: str = "duration", examples: str = "7d, 36h, 90min or 2w") -> float:
    """'7d' -> 604800 s, '36h' -> 129600 s; a bare number is days (the planner's unit). ``examples``: the durations
    an unknown unit is told, valid for the field (a step time's are not a deadline's)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _positive(field, text, as_float(text, field) * SECONDS_PER_DAY)
    match = _DURATION_RE.match(str(text))
    if not match or match.group(2).lower() not in SECONDS_PER | {"": 0}:
        raise InputError(field, text, f"expected a duration such as {examples}")
    if match.group(2) in ("M", "Min", "MIN"):  # '--days 3M' was 3 minutes; systemd.time reads M as a month
        raise InputError(field, text, "'M' reads as minutes or months: write min for minutes; for months give "
                         "days or weeks (e.g. 90d or 13w)")
    unit = match.group(2).lower() or "d"
    return _positive(field, text, float(match.group(1)) * SECONDS_PER[unit])


_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
"""Decimal arithmetic that never rounds a scaling by 100 (scaleb only moves the exponent)."""


def percent_share(number_text: str) -> float:
    """The share a percentage's number writes, '99.9' -> 0.999: the float nearest the exact decimal quotient
    (the number's decimal point moved two places, then rounded once), so a share typed as a percentage is the float
    its plain decimal gives and meets every bound as that decimal does: '99.9%' is 0.999, not 99.9 / 100 =
    0.9990000000000001 (wave 11: '--spot-discount 99.9%' was refused 'must be between 0 and 0.999'), while
    '99.90000000000001%' is 0.9990000000000001 and '100.0000000000001%' 1.000000000000001, refused as
    0.9990000000000001 and 1.000000000000001 are (review w11 r4 S3: rounding the binary quotient to 15 digits
    took them to 0.999 and 1.0). Raises ValueError as float() does."""
    float(number_text)  # the text float() refuses is refused alike (ValueError), 'snan' included
    return float(decimal.Decimal(number_text).scaleb(-2, _EXACT))


def parse_fraction(text: str | int | float, field: str = "fraction") -> float:
    """'40%' -> 0.4, '0.4' -> 0.4. Must lie in (0, 1]."""
    refuse_huge_integer(text, field)
    raw = str(text).strip()
    try:
        value = percent_share(raw[:-1]) if raw.endswith("%") else float(raw)
    except ValueError:
        raise InputError(field, text, "expected a fraction such as 0.4 or 40%") from None
    if not (0 < value <= 1):
        raise InputError(field, text, "must be between 0 and 1 (or 0% and 100%)")
    return value


def format_usd_per_gpu_hour(usd: float) -> str:
    """A price in USD per GPU-hour: format_usd(usd, 2) + '/GPU-h' ('$2.49/GPU-h', '$0.001/GPU-h', '$0.00171/GPU-h'),
    so a price prints as the same amount does (review w12 r3 S1: the two had different cut-offs)."""
    return format_usd(usd, 2) + "/GPU-h"


NO_PRICE_TEXT = "n/a (no price: give --price)"
"""What a cost line prints where no price is known (no catalog row for the GPU and no --price): plan's, budget's and
the serving sizes' cost lines and infer's cost per million tokens (jobs.plan.estimate, jobs.budget.sections,
jobs.inference.sizing, jobs.inference.estimate) say it alike."""


def format_usd(usd: float, decimals: int = 0) -> str:
    """Dollars to ``decimals`` places, thousands separated ('$93,792', '$2.49'); a non-zero amount under one unit of
    the last place keeps three significant digits ('$0.0094', '$0.007', '$1.23e-07'): '--price 1e-300' printed a $0
    budget and '$0.00/GPU-hour' (wave 12 hostile sweep), and $0.007 printed '$0.01', 43% off (review w12 r3 S1)."""
    if usd and abs(usd) < 10.0**-decimals:
        return f"${usd:.3g}"
    return f"${usd:,.{decimals}f}"


def format_percent(share: float) -> str:
    """A share as a percentage with up to three significant digits: 0.6 -> '60%', 0.999 -> '99.9%' (':.0%' printed
    '100%' for the largest --spot-discount)."""
    return f"{share * 100:.3g}%"


def format_percent_past(share: float, bound: float = 1.0) -> str:
    """A share above ``bound`` as a percentage with the fewest decimals (1 to 6) that still read above it: 1.0004 ->
    '100.04%', 69.035 -> '6,903.5%' (review s21 R3 N8: ':.1%' printed '100.0% MFU, faster than the peak')."""
    for decimals in range(1, 7):
        shown = f"{share * 100:,.{decimals}f}"
        if float(shown.replace(",", "")) > bound * 100:
            return shown + "%"
    return f"{share * 100:,.6f}%"


def format_count(value: float, digits: int = 3) -> str:
    """7.24e9 -> '7.24B', 999,885,952 -> '1B'; counts of 1e15 and more print as exponents."""
    if abs(value) >= 999.5e12:
        return f"{value:.{digits - 1}e}"
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(float(f"{value:.{digits}g}")) >= scale:
            return f"{float(f'{value:.{digits}g}') / scale:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


def format_bytes(value: float, binary: bool = True) -> str:
    """Print bytes labelled: binary=True gives GiB (2**30), else GB (1e9)."""
    units = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)) if binary else (
        ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3))
    for name, scale in units:
        if abs(value) >= scale:
            return f"{value / scale:.2f} {name}"
    return f"{value:.0f} B"


DURATION_UNITS = (("days", SECONDS_PER_DAY), ("h", SECONDS_PER_HOUR), ("min", 60.0), ("s", 1.0))
"""The units format_duration picks from, largest first, with their seconds."""


def duration_unit(seconds: float) -> tuple[str, float]:
    """The unit format_duration writes ``seconds`` in and its seconds: the largest of DURATION_UNITS not above
    them, else s."""
    return next(((name, size) for name, size in DURATION_UNITS if seconds >= size), DURATION_UNITS[-1])


def duration_in(seconds: float, unit: str) -> str:
    """Seconds written in ``unit`` (days, h, min, s or ms) at the precision format_duration uses
    for it, so a range reads like its value: '1,230.77 days', '2.00 h', '18.7 min', '36.1 s'."""
    if unit == "days":
        return f"{seconds / SECONDS_PER_DAY:,.2f} days"
    if unit == "h":
        return f"{seconds / SECONDS_PER_HOUR:,.2f} h"
    if unit == "min":
        return f"{seconds / 60:.1f} min"
    if unit == "ms":
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def format_duration(seconds: float) -> str:
    """Seconds as the largest sensible unit: '7.00 days', '3.10 h', '42 s'."""
    return duration_in(seconds, duration_unit(seconds)[0])


def duration_up(seconds: float) -> float:
    """``seconds`` rounded UP to the step format_duration prints in its unit (duration_in: 0.01 day, 0.01 h,
    0.1 min, 3 significant figures of s), so a time offered, typed back as --days, is at least the time needed:
    rounded to nearest, budget offered '11.02 days on 64 GPUs' that --days 11.02 refused again (review w14 R2 M3)."""
    unit, scale = duration_unit(seconds)
    if unit == "s":
        step = 10.0 ** (math.floor(math.log10(seconds)) - 2) if seconds > 0 else 1.0
    else:
        step = scale * (0.1 if unit == "min" else 0.01)
    return math.ceil(seconds / step) * step


def plural(count: float, word: str, spec: str = ",") -> str:
    """'1 sequence', '2 sequences', '1,024 notes'; ``spec`` formats the count ('g': '1 day', '0.5 days')."""
    return f"{count:{spec}} {word}" + ("" if count == 1 else "s")


def signed_percent(change: float) -> str:
    """A relative change with its sign, to 0.1% ('+8.6%'); one that rounds to zero keeps two significant
    figures ('-0.024%': a batch of 4,095 against 4,096 printed '-0.0%'), and none is '+0.0%'."""
    if change == 0 or abs(change) >= 0.0005:
        return f"{change + 0.0:+.1%}"
    return f"{change * 100:+.2g}%" if abs(change) >= 1e-6 else f"{'-' if change < 0 else '+'}<0.0001%"


def format_gpu_time(amount: float) -> str:
    """GPU-hours or GPU-days as a count: whole above 10, three significant figures below (a
    short run's 0.0695 GPU-days is not "0")."""
    return f"{amount:,.0f}" if abs(amount) >= 10 else f"{amount:#.3g}"


def parse_allowance(text: str | int | float, field: str = "allowance", high: float = 5.0) -> float:
    """An overhead fraction that may be 0 or exceed 1: '20%' -> 0.2, '0' -> 0.0, 1.5 -> 1.5; at
    most ``high`` (the refusal names it: '--margin 50' said 'between 0 and 5' where 0.9 is the top)."""
    refuse_huge_integer(text, field)
    raw = str(text).strip()
    try:
        value = percent_share(raw[:-1]) if raw.endswith("%") else float(raw)
    except ValueError:
        raise InputError(field, text, "expected a fraction such as 0.2 or 20%") from None
    if not (math.isfinite(value) and 0 <= value <= high):
        raise InputError(field, text, f"must be between 0 and {high:g} (0.2 = 20%)")
    return value


def parse_bool(value: object, field: str = "flag") -> bool:
    """'true'/'yes'/'on'/'1' -> True, 'false'/'no'/'off'/'0' -> False; anything else is an error."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InputError(field, value, "must be true or false")
