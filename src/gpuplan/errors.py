"""The one exception type for bad input.

Every check on user input raises :class:`InputError`. The CLI prints its message as a single
line and exits with status 2; the Python API lets it propagate. It names the field, the value
that was given, and what would be valid, so the user can fix the input without reading code.
"""

from __future__ import annotations

from collections.abc import Iterable


class InputError(ValueError):
    """Invalid user input: names the field, the offending value, and what would be valid."""

    def __init__(self, field: str, value: object, expected: str):
        self.field = printable(field)
        self.value = value
        self.expected = expected
        given = "got no value" if value is None else f"got {shown(value)}"  # None: left out (or null in a file)
        super().__init__(f"{self.field}: {given}; {expected}")

    def retold(self, field: str, value: object, expected: str) -> "InputError":
        """The same refusal with its parts replaced, of the same type (a NoLayoutFits stays one: callers
        free to pick the count catch that type, jobs.training.timing._first_fitting); an InputError where
        a subclass takes other arguments."""
        try:
            return type(self)(field, value, expected)
        except TypeError:
            return InputError(field, value, expected)


class NoLayoutFits(InputError):
    """No layout fits the GPU on the count asked or fewer (planner.plan.best_plan): a caller free to pick
    the count may try larger ones (jobs.training.timing._first_fitting) rather than read the message."""

    enough: int | None = None
    """The smallest common cluster size above the count where a layout fits (planner.plan.smallest_fitting_count,
    which the message names); None where none up to 64x the count does."""


CAMPAIGN_KEY = "stages"
"""The key that makes a plan file, body or mapping a campaign (docs/campaign.md): jobs/campaign/document.py reads it,
schema/base.py refuses it to a one-run job, and the plan file and web body refuse it null."""
STAGES_NULL_TEXT = ("give a list of stages, each a mapping of `gpuplan budget` fields, for a campaign (gpuplan campaign "
                    "FILE, POST /api/campaign or gpuplan.estimate_campaign; docs/campaign.md)")
"""A null `stages` (plan file, web body, Python): one text at every door (review s20 N13, s20b S2). It has no default,
so the null rule's 'leave the key out for the default' does not fit it."""
MAX_SHOWN_CHARS = 240
"""Characters of a value quoted in a message: a 5,000-character choice from a plan file was echoed
whole, the valid choices after it (MAX_TEXT names are 256 at most; the API cuts at 80)."""


NULL_TEXT = "give a value, or leave the key out for the default"
"""The one refusal of a field given no value -- null in a plan file, a web body or a campaign stage, None from a
Python caller (null_refusal) -- at every door (session 25: a Python None read 'got no value; expected a number ...')."""


class PythonNone:
    """None as a Python caller's refusal quotes it ('got None'); InputError words a None value 'got no value', which
    is a field left out."""

    def __repr__(self) -> str:
        return "None"


def null_refusal(field: str, where: str | None = None, python: bool = False) -> InputError:
    """``field`` given no value: 'got 'null'' (a file or body) or 'got None' (``python``), NULL_TEXT."""
    return InputError(f"{where}: {field}" if where else field, PythonNone() if python else "null", NULL_TEXT)


def shown(value: object) -> str:
    """``value``'s repr as a message quotes it: at most about MAX_SHOWN_CHARS characters, the
    length named when cut."""
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_SHOWN_CHARS else \
            f"{value[:MAX_SHOWN_CHARS]!r}... ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1023:
        return huge_integer(value)  # past float range: described unquoted, its sign kept (review s20b N8)
    try:
        text = repr(value)
    except RecursionError:  # nested past the interpreter's limit (a Python API caller's 100,000-deep list)
        text = ""
    except Exception:  # a Python API caller's object whose own repr raises: its type, not a traceback ('an object
        return f"an object of type {type(value).__name__}"  # of type E', not 'a E': review s20b N8)
    if text and len(text) <= MAX_SHOWN_CHARS:
        return text
    import reprlib  # only an over-long value needs it

    cut = reprlib.Repr()
    cut.maxlevel, cut.maxstring, cut.maxother = 3, MAX_SHOWN_CHARS // 2, MAX_SHOWN_CHARS // 2
    try:
        return cut.repr(value)[:MAX_SHOWN_CHARS]
    except Exception:  # a big int inside a container, or an unprintable member
        return f"an object of type {type(value).__name__}"


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article as a refusal writes a type's name: 'a list', 'an int', 'an ndarray', 'an E'
    (review s20b N8: 'a E'). 'an' before a, e, i, o (not u: 'a uint8'), a one-letter name said with a vowel sound, and
    numpy's ndarray, said 'en-dee-array' (review s21 R3 N6: it gave 'a ndarray')."""
    vowel = word[:1].lower() in ("a", "e", "i", "o") or (len(word) == 1 and word.upper() in "AEFHILMNORSX") \
        or word.lower().startswith("ndarray")
    return f"{'an' if vowel else 'a'} {word}"


def huge_integer(value: int) -> str:
    """An integer past float range (over 1,023 bits) as a refusal describes it, unquoted: 'an integer of about 5,001
    digits', 'a negative integer of about 5,001 digits' (str() refuses past 4,300 digits)."""
    digits = int(value.bit_length() * 0.30103) + 1
    return f"{'a negative' if value < 0 else 'an'} integer of about {digits:,} digits"


def printable(text: str) -> str:
    """``text`` with control, format (bidi overrides, zero-width) and line-separator characters
    escaped as \\uXXXX: a field name from a hostile file or body can neither break the one-line
    error nor reorder what a terminal shows."""
    if not isinstance(text, str) or text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def whole_or(value: float) -> float | int:
    """A number as a refusal quotes it: an int where it is whole (180.0 -> 180, quoted 'got 180', not 'got 180.0'),
    else ``value`` itself (inf and nan too). The sweep's budget (profile.schema, profile.sweep) and the global batch
    of plan's completes refusal (jobs.plan.completes) and a spot price above on-demand (jobs.budget.model) are
    quoted so."""
    return int(value) if float(value).is_integer() else value


def closest_names(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` catalog names closest to ``name`` (case-insensitive), best first."""
    import difflib  # only a bad name needs it: every command imports this module (~1 ms)

    if not name.strip():  # '' is in every name: no suggestion rather than the first three
        return []
    pool = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(name.lower(), list(pool), n=n, cutoff=0.5)
    if not hits:  # fall back to substring matches ("llama" -> "llama-2-7b", ...)
        hits = [k for k in pool if name.lower() in k][:n]
    return [pool[h] for h in hits]


def unknown_name_error(field: str, name: str, candidates: Iterable[str]) -> InputError:
    """An InputError for a name not in a catalog, suggesting the closest names."""
    near = closest_names(name, candidates)
    hint = f"did you mean {', '.join(near)}?" if near else "see `gpuplan catalog` for valid names"
    return InputError(field, name, f"not in the catalog; {hint}")


def as_typed(error: InputError, raw: object) -> InputError:
    """``error`` quoting the text the user typed for its field (``raw``: the flags, plan-file fields or API
    body as given) where a check after parsing quoted the converted number: `--days 90min` was refused as
    'got 0.0625' (wave 6c). Any other error is returned as it is."""
    typed = raw.get(error.field) if hasattr(raw, "get") else None
    if not isinstance(typed, str) or error.value is None or isinstance(error.value, str):
        return error
    try:  # the number as typed ('3' for 3): the message stays as it was
        if float(typed) == error.value:
            return error
    except (TypeError, ValueError, OverflowError):
        pass
    return error.retold(error.field, typed.strip(), error.expected)
