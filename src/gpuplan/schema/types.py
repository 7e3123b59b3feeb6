"""Field types of the job schemas: what a user may type for each kind of quantity.

Every type accepts the raw text of a flag or plan-file value ("7B", "2T", "8K", "40%", "7d",
"true") and the JSON number or boolean an API body sends (and, for a duration, the Python API's
datetime.timedelta: this module is the one place it is converted), and turns it into the base unit
(parameters, tokens, seconds, days, fractions, bytes). Parsing is done by gpuplan.core.units, so
the CLI, plan files, the web API and the Python API read a value the same way and refuse the
same values with the same message (field, value, what would be valid).

Refused everywhere: empty text, NaN and infinities (also "1e400", which overflows to inf),
negative or zero counts, fractions where a whole number is needed ("4096.7"), doubled suffixes
("8KK"), and values over a field's stated upper bound (so no count can overflow int64 later).
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from contextvars import ContextVar
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema

from gpuplan.core import units
from gpuplan.schema.bound_words import bound_words
from gpuplan.schema.unseen_text import REFUSAL as UNSEEN_REFUSAL, unseen
from gpuplan.errors import InputError, a_or_an

# JSON schema of a value that may be typed with a unit ("2T") or sent as a number (2e12).
NUMBER_OR_TEXT = {"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 64}]}
BOOL_OR_TEXT = {"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 8}]}
MAX_TEXT = 256
"""Longest text value accepted (a model name, a path, a provider): longer is refused."""
TOO_LONG = "is too long for a number (at most 64 characters)"
"""The refusal of a number written in more than 64 characters (NUMBER_OR_TEXT's maxLength), after a flag or in the
web API's body (web.body: an integer past Python's digit limit)."""
PLAN_FILE: ContextVar[str | None] = ContextVar("gpuplan_plan_file", default=None)
"""The plan file whose values are being checked (JobInputs.parse / check_values with ``where``)."""


def _name(info: ValidationInfo | None) -> str:
    return info.field_name if info is not None and info.field_name else "value"


UNICODE_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"
"""Hyphens, en / em dashes and minus signs a word processor puts where '-' was typed (wave 6c: `--gpus 8–16`
was refused as 'must be written with ASCII digits')."""


NUMBER_FORMS = "a number or its text, e.g. 8, '8' or '7B'"
"""What a numeric field takes (the refusal of a value that is neither)."""


def text_of(value: Any, field: str, valid: str = NUMBER_FORMS) -> str:
    """A raw value as trimmed text, with the refusals every numeric field gives its text: empty, over-long,
    non-ASCII, '_', and a value that is neither text nor a number (``valid`` says what is): str() read the Python
    API's Path("8") as 8 and any object by its str(). Also for a reader with spellings of its own
    (jobs.inference.inputs_group's 'none')."""
    if not isinstance(value, str | numbers.Number):
        raise InputError(field, value, f"expected {valid}, not {a_or_an(type(value).__name__)}")
    text = str(value).strip()
    if not text:
        raise InputError(field, value, "must not be empty")
    if len(text) > 64:
        raise InputError(field, value[:40] + "..." if isinstance(value, str) else value, TOO_LONG)
    if not text.isascii():  # float() reads other scripts' digits ("١٢" = 12): refuse them
        raise InputError(field, value, _not_ascii(text))
    if "_" in text:  # float() reads '0.4_0' as 0.4 and '1_0' as 10 (PEP 515); the unit parsers refused '1_000'
        raise InputError(field, value, "must be written without '_' (e.g. 1000, 1e3 or 40%)")
    return text


def _not_ascii(text: str) -> str:
    """Why non-ASCII number text is refused, naming its first such character: a dash (wave 6c), another script's
    digit ('８' is 8), or anything else. 'must be written with ASCII digits' was said of `--tpot 5µs`, `--seq-len
    8Ｋ` and `--price 2€` too, whose digits were all ASCII."""
    import unicodedata

    dash = next((c for c in text if c in UNICODE_DASHES), None)
    if dash:
        return (f"must be written with ASCII characters: {dash!r} (U+{ord(dash):04X}) is not the ASCII '-' of a sign "
                "or a range")
    first = next(c for c in text if not c.isascii())
    digit = unicodedata.decimal(first, None)  # a decimal digit of another script; not superscripts ("8²")
    if digit is not None:
        return f"must be written with ASCII digits: {first!r} (U+{ord(first):04X}) is the digit {digit}; write {digit}"
    return f"must be written with ASCII characters: {first!r} (U+{ord(first):04X}) is not one"


def _finite(value: Any, field: str) -> None:
    if isinstance(value, bool):
        raise InputError(field, value, "expected a number, not true/false")
    units.refuse_huge_integer(value, field)  # a JSON integer of 310+ digits: float() would overflow
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(field, value, "must be a finite number")


_NUMBER_AND_UNIT = re.compile(r"\s*[-+]?((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?)\s*[a-z]*\s*")
"""A number as typed, with a sign and a unit or suffix or neither ('1e400', '-1e400', '1e308h', '1e300T')."""


def _past_bound(text: Any, value: Any, field: str, low: float, high: float, low_open: bool,
                unit: str | None = None) -> None:
    """InputError naming the field's bounds (bound_words) where ``text`` is a number written with a size past
    ``high``; nothing otherwise. A number that overflowed in reading ('1e400' to inf, '1e308' days in seconds) is
    past the field's bound, as a large finite one is ('--tokens 1e308': '<= 1e+18'), not 'not finite' (review w12
    r3 S3)."""
    match = _NUMBER_AND_UNIT.fullmatch(str(text).lower())
    if match and float(match.group(1)) > high:
        raise InputError(field, value, bound_words(low, high, low_open, field, unit))


def _bounded(number: float, value: Any, field: str, low: float, high: float, low_open: bool,
             unit: str | None = None) -> float:
    """``number`` within its bounds, refused in bound_words (in ``unit``; None: the field's own)."""
    if not math.isfinite(number):
        if isinstance(value, str):  # typed digits that overflowed ('1e400'), not the text 'inf'
            _past_bound(value, value, field, low, high, low_open, unit)
        raise InputError(field, value, "must be a finite number")
    _not_subnormal(number, value, field)
    if (number <= low if low_open else number < low) or number > high:
        raise InputError(field, value, bound_words(low, high, low_open, field, unit))
    return number


_NOT_FINITE = re.compile(r"[-+]?\.?(?:inf|infinity|nan)")
"""Text that float() reads as an infinity or NaN, and YAML's own spellings '.nan', '.inf', '-.inf' (a plan file keeps
them as text, adapters.plan_formats): a count and a number refuse them as 'must be a finite number', not by their
form (review w13 r4 S2: a plan file's `tp: .nan` was told 'expected a whole number such as 8 or 1K')."""


def _refuse_not_finite(text: Any, value: Any, field: str) -> None:
    """InputError 'must be a finite number' where ``text`` is 'nan', 'inf', '.nan', '-.inf' ... (_NOT_FINITE)."""
    if isinstance(text, str) and _NOT_FINITE.fullmatch(text.strip().lower()):
        raise InputError(field, value, "must be a finite number")


_TOKENS_1024 = re.compile(rf"\+?({units.UNSIGNED_NUMBER})\s*([km])", re.IGNORECASE)
"""A token length with a K (2**10) or M (2**20) suffix: any plain decimal before it, an exponent and a '+' included
('8e0K' and '+8K' are 8,192 as '8K' is; they fell through to parse_count's K = 1,000, review w13 r4 N2), in the form
units reads a number: '8.K' and '8.e0K' were 8,192 while '8.', '8.e0' and a count's '8.K' are refused (w14)."""


class NotACount(InputError):
    """count()'s refusal of text that is no count in any form it reads ('abc', '0x80', '+-1'), in count_forms' words:
    its own type, so a caller that retells the forms in its field's words (jobs.inference.inputs_group) tells it
    from the other refusals by type, not by comparing the message (as units.NotPositive / Overflowed)."""


def count_forms(whole: bool, suffix_base: float) -> str:
    """What a count's text may look like, for the refusal of text that is not a count: a token length takes K
    (1,024), a whole count a number such as 8, any other the K/M/B/T suffixes of a parameter or token count."""
    if suffix_base == 1024:
        return "expected a number of tokens, e.g. 4096, 8K or 128K"
    if whole:
        return "expected a whole number such as 8 or 1K"
    return "expected a number with an optional K/M/B/T suffix, e.g. 7B or 2T"


def count(high: float, *, low: float = 0.0, whole: bool = False, suffix_base: float = 1000.0):
    """A positive count with an optional K/M/B/T suffix ("7B", "2T", 1.5e12), in (0, ``high``]
    (or [``low``, ``high``]). ``whole``: refuse fractions. ``suffix_base`` 1024 reads K/M as
    2**10/2**20 (token lengths: "8K" = 8,192, "128K" = 131,072 as model cards name contexts)."""

    forms = count_forms(whole, suffix_base)

    def parse(value: Any, info: ValidationInfo) -> float | int:
        field = _name(info)
        _finite(value, field)
        if not isinstance(value, int | float):
            text = text_of(value, field)
            _refuse_not_finite(text, value, field)  # as number() and the Python API's float('nan') say
            match = _TOKENS_1024.fullmatch(text.lower()) if suffix_base == 1024 else None
            if match and math.isfinite(tokens := float(match.group(1)) * (1024 if match.group(2) == "k" else 2**20)):
                value = tokens  # an overflow ('1e308K') stays text: parse_count's Overflowed names the bound
        try:
            counted = units.parse_count(value, field)
        except units.Overflowed as exc:  # '1e400', '1e300T' overflow to inf: past the high bound (_past_bound)
            if isinstance(value, str):
                _past_bound(value, value, field, low, high, low == 0)
            raise exc from None
        except units.NotPositive:
            raise
        except InputError as exc:  # the text's form: say the field's ('--tp true' was told 'e.g. 7B or 2T')
            raise NotACount(exc.field, exc.value, forms) from None
        number = _bounded(counted, value, field, low, high, low == 0)
        if whole:
            if number != int(number):
                raise InputError(field, value, "must be a whole number")
            return int(number)
        return number

    return parse


def number(low: float, high: float, *, low_open: bool = False, whole: bool = False, percent: bool = False):
    """A plain number in [low, high] (or (low, high] with ``low_open``); no unit suffixes but, with
    ``percent`` (a share), a trailing % ('40%' = 0.4, as every fraction reads it)."""

    def parse(value: Any, info: ValidationInfo) -> float | int:
        field = _name(info)
        _finite(value, field)
        text = value if isinstance(value, int | float) else \
            text_of(value, field, f"a number from {low:g} to {high:g} or its text")
        _refuse_not_finite(text, value, field)  # '.nan' / '.inf' (a plan file's YAML) as 'nan' / 'inf' read
        share = percent and isinstance(text, str) and text.endswith("%")
        try:
            parsed = units.percent_share(text[:-1]) if share else float(text)
        except (TypeError, ValueError):
            shown = f" (or {low * 100:g}% to {high * 100:g}%)" if percent else ""
            raise InputError(field, value, f"expected a number between {low:g} and {high:g}{shown}") from None
        _no_underflow(parsed, text, field, f"expected a number between {low:g} and {high:g}")
        parsed = _bounded(parsed, value, field, low, high, low_open)
        if whole:
            if parsed != int(parsed):
                raise InputError(field, value, "must be a whole number")
            return int(parsed)
        return parsed

    return parse


def _not_subnormal(number: float, value: Any, field: str) -> None:
    """Refuse a value below the smallest normal float (2.2e-308) but not 0 ('5e-324', '1e-310'): it
    has lost its precision, and dividing by it overflows to inf (--mfu 5e-324 ended in a
    ZeroDivisionError, --failure-rate 5e-324 in NaN warnings)."""
    if number and abs(number) < sys.float_info.min:
        raise InputError(field, value, "is too small to tell from 0 (below 2.2e-308, the smallest normal float)")


def _no_underflow(parsed: float, text: Any, field: str, expected: str) -> None:
    """Refuse text with a non-zero digit that parses to 0 ("1e-400" underflows to 0.0; units.lost_to_zero)."""
    if units.lost_to_zero(text, parsed):
        raise InputError(field, text, f"is too small to tell from 0; {expected}")


def fraction(value: Any, info: ValidationInfo) -> float:
    """'40%' or 0.4, in (0, 1]."""
    field = _name(info)
    _finite(value, field)
    parsed = units.parse_fraction(value if isinstance(value, int | float) else
                                  text_of(value, field, "a fraction or its text, e.g. 0.4 or '40%'"), field)
    _not_subnormal(parsed, value, field)
    return parsed


def efficiency(value: Any, info: ValidationInfo) -> float:
    """A kernel or link efficiency: '40%' or 0.4, in [0.001, 1] (below 0.1% no step finishes: a
    smaller value only overflows the time model)."""
    parsed = fraction(value, info)
    return _bounded(parsed, value, _name(info), 0.001, 1, False)


def share(high: float = 5.0):
    """An overhead share that may be 0 or above 1: '20%', 0.2, 0, 1.5 (at most ``high``)."""

    def parse(value: Any, info: ValidationInfo) -> float:
        field = _name(info)
        _finite(value, field)
        text = value if isinstance(value, int | float) else \
            text_of(value, field, f"a share from 0 to {high:g} or its text, e.g. 0.2 or '20%'")
        parsed = units.parse_allowance(text, field, high)
        _no_underflow(parsed, text, field, f"expected a share from 0 to {high:g} (0.2 = 20%)")  # 1e-400 is not 0
        return _bounded(parsed, value, field, 0, high, False)

    return parse


MAX_DAYS = 36_500
"""The longest --days the schema takes, in days (a century: a bound on input, not on any run)."""


DURATION_FORMS = "datetime.timedelta (the Python API)"
"""A duration field's further form: the schema is the one place it is converted (seconds = total_seconds());
the CLI, plan files and the web API give text or numbers, and read them as before."""


def days(value: Any, info: ValidationInfo) -> float:
    """A wall-clock duration in days: 7, '7d', '36h', '2w' (a bare number is days) or a datetime.timedelta,
    0 < days <= MAX_DAYS."""
    field = _name(info)
    if isinstance(value, timedelta):
        days_given = value.total_seconds() / units.SECONDS_PER_DAY
        return _bounded(days_given, value, field, 0, MAX_DAYS, True, "days")
    _finite(value, field)
    text = value if isinstance(value, int | float) else \
        text_of(value, field, f"a number of days, text such as '7d', '36h' or '2w', or a {DURATION_FORMS}")
    try:
        seconds = units.parse_duration(text, field)
    except units.Overflowed as exc:  # '1e308' (days, x 86,400 s) and '1e308h' overflow to inf: past the bound,
        _past_bound(text, value, field, 0, MAX_DAYS, True, "days")  # not 'not a positive, finite number' ('1e6'
        # named it)
        raise exc from None
    return _bounded(seconds / units.SECONDS_PER_DAY, value, field, 0, MAX_DAYS, True, "days")


def seconds(high: float, positive: bool = False, examples: str = "30min, 2h or 90s"):
    """A duration with a unit ('30min', '2h', '90s'); bare text such as '30' is refused (minutes
    or days?), as is a plan file's bare number, but 0 is 0 and a JSON number is seconds (the base unit). ``positive``: 0 is refused
    however it is written (0, "0", "0s", "0min"), as a duration that cannot be zero. ``examples``: the durations a
    refusal offers, valid for the field ('give a unit, e.g. ...'): a latency's are not a restart's (`--tpot 50` was
    told '30min, 2h or 90s', two of them past tpot's 1min bound)."""

    def parse(value: Any, info: ValidationInfo) -> float:
        field = _name(info)
        try:
            number = value.total_seconds() if isinstance(value, timedelta) else _typed_seconds(value, field, examples)
        except units.Overflowed:  # '1e400ms', '1e300h': past the bound as '2h' is, named in its unit (r4 S3)
            typed = str(value).strip()  # quoted as typed less spaces, as the '-1e400ms' refusal (units) quotes it
            if typed.startswith("-"):
                raise  # '-1e400ms': not positive, as '-5ms' is
            raise InputError(field, typed, f"must be at most {_duration_text(high)} ({high:,.0f} s)") from None
        if positive and number == 0:
            raise InputError(field, value, "must be a positive duration, e.g. 10min")
        return _bounded_duration(number, value, field, high, positive)

    return parse


def _typed_seconds(value: Any, field: str, examples: str) -> float:
    """seconds()' reading of a typed or JSON ``value`` (not a timedelta) as seconds, refusals naming ``examples``."""
    _finite(value, field)
    if isinstance(value, int | float) and value and PLAN_FILE.get():
        # `restart: 15` in a plan file is the text typed after --restart, not 15 seconds (the API's unit)
        raise InputError(field, value, f"give a unit, e.g. {examples}")
    text = value if isinstance(value, int | float) else \
        text_of(value, field, f"text with a unit (e.g. {examples}), seconds as a number, or a {DURATION_FORMS}")
    zero = re.fullmatch(r"0*\.?0*\s*([a-z]*)", text.lower()) if isinstance(text, str) and "0" in text else None
    if zero and zero.group(1) in {**units.SECONDS_PER, "": 0}:
        return 0.0  # zero with any unit (or none) is zero
    if isinstance(text, str) and re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?", text.lower()):
        # any bare number ('+15', '30.', '1e3'), not only '30': parse_duration read those as days
        raise InputError(field, value, f"give a unit, e.g. {examples}")
    # an unknown unit is told the field's own examples (review w10 r4 S2: `--step-time 6x` was told a deadline's)
    return float(text) if isinstance(text, int | float) else units.parse_duration(text, field, examples)


def _bounded_duration(number: float, value: Any, field: str, high: float, positive: bool) -> float:
    """``number`` seconds within [0, ``high``] (``positive``: above 0); past ``high`` the bound is named with its
    unit, 'at most 1h (3,600 s)': the bare bound in seconds ('must be >= 0 and <= 3600' for `--ttft-p99 2h`, '<=
    604800' for `--restart 30d`) named no unit, and the field was typed in hours or days."""
    if math.isfinite(number) and number > high:
        raise InputError(field, value, f"must be at most {_duration_text(high)} ({high:,.0f} s)")
    return _bounded(number, value, field, 0, high, positive, "s")


def _duration_text(seconds: float) -> str:
    """A bound in the largest unit that writes it whole: 3,600 -> '1h', 604,800 -> '7d', 60 -> '1min'."""
    for unit, size in (("d", units.SECONDS_PER_DAY), ("h", units.SECONDS_PER_HOUR), ("min", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:,.0f}{unit}"
    return f"{seconds:g}s"


def boolean(value: Any, info: ValidationInfo) -> bool:
    """true/false, yes/no, on/off, 1/0."""
    field = _name(info)
    if isinstance(value, bool):
        return value
    return units.parse_bool(text_of(value, field, "true or false (or text: yes/no, on/off, 1/0)")
                            if not isinstance(value, int | float) else value, field)


def word(value: Any, info: ValidationInfo) -> Any:
    """A choice as typed: trimmed and lower-cased text (the Literal check follows)."""
    if isinstance(value, str):
        stripped = value.strip().lower()
        if not stripped:
            raise InputError(_name(info), value, "must not be empty")
        return stripped
    return value


def name(value: Any, info: ValidationInfo, *, controls: bool = False) -> str:
    """A catalog name, a Hugging Face id or a path: non-empty text without control characters, trimmed (with
    ``controls``, one with a control character is kept as typed: a file name the shell can pass, report's plan)."""
    field = _name(info)
    if not isinstance(value, str):
        raise InputError(field, value, "expected a name (text)")
    odd = any(map(unseen, value))  # before trimming: 'x.html\n' is not x.html
    text = value if controls and odd else value.strip()
    if not value.strip():
        raise InputError(field, value, "must not be empty")
    if len(text) > MAX_TEXT:
        raise InputError(field, text[:40] + "...", f"is longer than {MAX_TEXT} characters")
    if odd and not controls:
        raise InputError(field, value, UNSEEN_REFUSAL)
    return text


def choice(*values: str) -> Any:
    """``Literal[values]`` read case-insensitively (the annotation of a choice field); a word not among them
    is refused quoting it as typed (wave 6c: `--quantization AWQ` was quoted as 'awq')."""
    def pick(value: Any, info: ValidationInfo) -> Any:
        chosen = word(value, info)
        if isinstance(chosen, str) and chosen not in values:
            raise InputError(_name(info), value.strip(), f"must be one of {', '.join(map(str, values))}")
        return chosen

    return Annotated[Literal[values], BeforeValidator(pick)]  # type: ignore[valid-type]


def typed(kind: Any, parser, schema: dict | None = None) -> Any:
    """``kind`` parsed from raw text by ``parser``, with the JSON schema an API client sees."""
    return Annotated[kind, BeforeValidator(parser), WithJsonSchema(schema or NUMBER_OR_TEXT)]


Name = Annotated[str, BeforeValidator(name), WithJsonSchema({"type": "string", "maxLength": MAX_TEXT})]
Bool = typed(bool, boolean, BOOL_OR_TEXT)
Fraction = typed(float, fraction)
Efficiency = typed(float, efficiency)
Days = typed(float, days)
