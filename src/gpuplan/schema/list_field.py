"""One reader for every list-valued input: plan --gpus, memory --compare, report --sections, --recompute-modules,
measure --depths and --batch-ramp. A list comes as comma-separated text (a flag, a plan file's string, a JSON
string) or as a list (a plan file's list, the web API's JSON array, the Python API's list or tuple); every field
reads it by the same rules, so each door answers the same value with the same line:

* spaces around the text and around each entry are stripped (' 8 , 16 ' is 8,16); any other character (a tab, a
  newline) is the entry's to take or refuse, as the field's one-value form does (a count's text is trimmed, a name
  with a control character is refused: schema.types.name);
* an empty value ('', ' ', []) is refused: 'must not be empty; give <forms>';
* an empty entry ('8,,16', a trailing or leading comma, a list's '' or null) is refused naming its position;
* more entries than the field takes are refused, counted;
* each entry is read by the field's own parser (the element type: a GPU count, a catalog name, a word of a list),
  its refusal in the field's own words, quoting the whole value;
* a repeated entry ('8,8', 'budget,BUDGET', a list's [8, '8']) is refused naming the value and both positions
  (plan --gpus and report --sections kept it once silently, --compare twice): except where the order is the
  point, a batch ramp's phases (``distinct`` False), where a phase given twice runs twice.

A value that is neither text nor a list (8, true, a mapping) is one entry, for the field's parser to take or
refuse (plan's gpus 8 is the list 8).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuplan.errors import InputError, shown


def _same(item: Any) -> Any:
    return item


@dataclass(frozen=True)
class ListRule:
    """How one field reads its list."""

    field: str
    """The field's name, as every refusal names it."""
    forms: str
    """What the field takes, ending every refusal: 'whole GPU counts separated by commas, e.g. 256,512'."""
    noun: str
    """The entries' plural, counting them: 'GPU counts' ('257 GPU counts'; '1 to 256 GPU counts')."""
    entry: Callable[[Any], Any]
    """One entry (text stripped) -> its value; raises InputError in the field's words."""
    most: int
    """Most entries (bounds the work of one request); the fewest is one, or ``most`` where ``exact``."""
    exact: bool = False
    """Exactly ``most`` entries (measure's two depths); a count that is not is refused with ``forms``."""
    distinct: bool = True
    """Refuse an entry given twice; False where the list is a sequence (a ramp's phases run in order)."""
    key: Callable[[Any], Any] = _same
    """What makes two entries the same (a name's lower case: 'a100,A100' is a100 twice)."""


def _entries(value: Any, rule: ListRule) -> list[Any]:
    """The entries of ``value``, stripped where text; [value] for a value that is neither text nor a list."""
    if isinstance(value, str):
        return [part.strip(" ") for part in value.strip(" ").split(",")] if value.strip() else []
    if isinstance(value, list | tuple):
        return [item.strip(" ") if isinstance(item, str) else item for item in value]
    return [value]


def read_list(value: Any, rule: ListRule, quoted: Any = None) -> tuple[Any, ...]:
    """The field's entries, each read by ``rule.entry``, or InputError naming ``rule.field`` (one line) and quoting
    the value (``quoted`` where given: a list of parsed phases quotes their text)."""
    parts = _entries(value, rule)
    value = value if quoted is None else quoted
    if not parts:
        raise InputError(rule.field, value, f"must not be empty; give {rule.forms}")
    count = len(parts)
    empty = next((at for at, part in enumerate(parts, 1) if part is None or part == "" or
                  isinstance(part, str) and not part.strip()), None)
    if empty is not None:
        raise InputError(rule.field, value, f"entry {empty} of {count} is empty; give {rule.forms}")
    if count > rule.most or (rule.exact and count != rule.most):
        if rule.exact:
            raise InputError(rule.field, value, f"{count} entr{'y' if count == 1 else 'ies'}; give {rule.forms}")
        raise InputError(rule.field, f"{count:,} {rule.noun}", f"1 to {rule.most:,} {rule.noun}")
    read = []
    for part in parts:
        try:
            read.append(rule.entry(part))
        except InputError as exc:  # the field's words, quoting the whole value as the field's own reader did
            raise exc.retold(rule.field, value, exc.expected) from None
    if rule.distinct:
        _refuse_repeats(value, read, rule)
    return tuple(read)


def _refuse_repeats(value: Any, read: list[Any], rule: ListRule) -> None:
    """InputError naming the first entry given twice (its value as read, and both positions)."""
    first: dict[Any, int] = {}
    for at, item in enumerate(read, 1):
        seen = first.setdefault(rule.key(item), at)
        if seen != at:
            raise InputError(rule.field, value, f"{shown(item)} is given twice (entries {seen} and {at}); give "
                             f"each once: {rule.forms}")


def list_schema(items: dict, most: int, longest: int = 1000) -> dict:
    """The JSON schema an API client sees for a list field: comma-separated text or an array of ``items``."""
    return {"anyOf": [{"type": "string", "maxLength": longest}, {"type": "array", "items": items, "maxItems": most}]}
