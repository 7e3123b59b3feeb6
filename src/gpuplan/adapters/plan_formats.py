"""YAML and TOML text -> data for plan files, strictly: numbers as the flags write them (YAML 1.1's
base-60 "1:04", hex, octal, 1_000, inf and nan stay text, refused by their field as on the CLI), no
anchors or aliases (the "billion laughs" bomb needs them, and the docs promise none), no duplicate or non-text keys, no Python-object tags, at most
MAX_DEPTH levels of nesting; TOML dates as their ISO text. Files are read by adapters.files."""

from __future__ import annotations

import re
from typing import Any

from gpuplan.adapters.files import MAX_DEPTH, MAX_INT_DIGITS, nesting_depth, refusal
from gpuplan.core import units


def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader without anchors or aliases, with a depth limit and no duplicate mapping keys."""

        def compose_node(self, parent, index):  # noqa: ANN001
            event = self.peek_event()
            if isinstance(event, yaml.events.AliasEvent) or getattr(event, "anchor", None):  # used or not
                raise yaml.constructor.ConstructorError(None, None, "anchors and aliases are not accepted",
                                                        event.start_mark)
            self._nodes = getattr(self, "_nodes", 0) + 1  # pure-Python PyYAML: 400,000 list items took 22 s
            if self._nodes > MAX_NODES:  # valid YAML, too large to read: its own refusal (parse_yaml)
                raise TooManyNodes(event.start_mark.line + 1)
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.constructor.ConstructorError(None, None, f"nested more than {MAX_DEPTH} levels",
                                                            self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_scalar(self, node):  # noqa: ANN001
            """Text with a JSON-style surrogate pair ("\\ud83d\\ude80", as json.dumps writes a character past
            U+FFFF) as the one character JSON reads: PyYAML kept two lone surrogates, so a plan file written as JSON
            refused the name POST /api/campaign took (hostile wave 27). A lone surrogate stays, refused as before."""
            value = super().construct_scalar(node)
            if isinstance(value, str) and not value.isascii():
                return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            return value

        def construct_document(self, node):  # noqa: ANN001
            self._root = node  # the plan file's own mapping: its keys are field names (construct_mapping)
            return super().construct_document(node)

        def construct_mapping(self, node, deep=False):  # noqa: ANN001
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # no constructor: 'could not determine a constructor
                    raise yaml.constructor.ConstructorError(None, None, "the merge key '<<' is not accepted (write "
                                                            "its keys out)", key_node.start_mark)  # (wave 9)
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str) and node is self._root and isinstance(key, int | float | bool | None):
                    continue  # a top-level key: refused by the plan file with the schema's words (key_refusal)
                if not isinstance(key, str):
                    from gpuplan.schema.base import key_text  # a top-level list / mapping key: the schema's words

                    said = f"{key!r:.40} {key_text(key)}" if node is self._root else \
                        f"keys must be names (text), got {key!r:.40}"
                    raise yaml.constructor.ConstructorError(None, None, said, key_node.start_mark)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    # numbers as the flags write them (PLAIN_INT / PLAIN_FLOAT): YAML 1.1's base-60 ("1:04" = 64), octal
    # ("010" = 8), 1_000, and YAML 1.2's 0x10 / 0o10 / .inf / .nan stay text, so the field refuses them
    # with the message the CLI, the web API and the Python API give (wave 8: `gpus: 0x10` planned 16 GPUs
    # where --gpus 0x10 was refused)
    dropped = (INT_TAG, FLOAT_TAG, "tag:yaml.org,2002:timestamp")  # a date stays text: no field takes one
    Loader.yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag not in dropped]
                                      for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver(INT_TAG, PLAIN_INT, list("-+0123456789"))
    Loader.add_implicit_resolver(FLOAT_TAG, PLAIN_FLOAT, list("-+.0123456789"))

    def construct_int(loader, node):
        text = loader.construct_scalar(node)
        if not PLAIN_INT.match(text) or len(text.lstrip("+-")) > MAX_INT_DIGITS:  # an explicit !!int tag on other text
            raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not an integer (decimal digits, "
                                                    f"at most {MAX_INT_DIGITS})", node.start_mark)
        return int(text)

    def construct_float(loader, node):
        text = loader.construct_scalar(node)
        if not (PLAIN_FLOAT.match(text) or PLAIN_INT.match(text)):
            raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not a number", node.start_mark)
        number = yaml.SafeLoader.construct_yaml_float(loader, node)  # '1e400' overflows: kept as written, as the
        return text if _lost(text, number) else number  # web quotes it (wave 12); '1e-400' underflows: the same

    def construct_bool(loader, node):
        text = loader.construct_scalar(node)
        if text.lower() not in yaml.SafeLoader.bool_values:  # true/false, yes/no, on/off
            raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not true or false", node.start_mark)
        return yaml.SafeLoader.bool_values[text.lower()]

    def refuse_tag(loader, node):
        raise yaml.constructor.ConstructorError(None, None, f"the tag {node.tag} is not accepted (plain text, "
                                                "numbers, true/false, lists and mappings only)", node.start_mark)

    Loader.add_constructor(INT_TAG, construct_int)
    Loader.add_constructor(FLOAT_TAG, construct_float)
    Loader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    for tag in ("timestamp", "binary", "omap", "pairs", "set"):  # Python objects a plan file has no use for
        Loader.add_constructor(f"tag:yaml.org,2002:{tag}", refuse_tag)
    return Loader


MAX_NODES = 10_000
"""The most YAML nodes (keys, values, list items) a plan file holds: a plan file maps names to values, a few dozen
(the largest YAML under examples/ and tests/ holds 932 nodes); a 1 MiB file of 400,000 list items took 22 s to
refuse (PyYAML's Python composer, ~55 us a node), now it stops at the 10,001st node (wave 16)."""
INT_TAG, FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
PLAIN_INT = re.compile(r"^[-+]?[0-9]+$")
"""A whole number as every door reads one (units.parse_number: decimal digits; '010' is 10, as YAML 1.2 reads it)."""
PLAIN_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
"""A decimal number with an optional exponent (1e3, 1.0e+3): no inf / nan, no '_', no hex / octal / binary."""


class TooManyNodes(Exception):
    """A YAML plan file past MAX_NODES nodes: valid YAML, refused for its size (not 'is not valid YAML', review w15
    R4 S4); ``line`` (1-based) is where the node past the cap starts."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


YAML_ONLY_BREAKS = {"\x85": "NEXT LINE", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}
"""Characters YAML 1.1 (PyYAML's reader) ends a line at and an editor, `cat` or a diff shows inside one (YAML 1.2 and
TOML do not break there): `# 8 GPUs<U+2028>gpus: 4096` read as a key what shows as a comment (hostile wave 27)."""


def _lone_cr_line(text: str) -> int | None:
    """The 1-based line (as an editor counts them, by line feeds) of the first carriage return that has text after it
    on its line: PyYAML ends a line there, vim and less show it inside one as ^M (`# 8 GPUs\rgpus: 4096` planned 4,096
    GPUs; review R1, session 24). CRLF files are read as before; a CR with only blanks after it before the line feed or
    the end of the file hides nothing and is read as the line's end (hostile wave 28: `gpus: 8\r` at the end of a file,
    a CRLF whose LF a tool cut, was refused). One pass over the lines (a lookahead regex rescans per CR)."""
    if "\r" not in text:
        return None
    return next((number for number, line in enumerate(text.split("\n"), 1) if "\r" in line.rstrip()), None)


def _no_hidden_breaks(text: str, field: str, where: Any) -> None:
    """Refuse YAML text holding one of YAML_ONLY_BREAKS or a lone carriage return, naming its line as an editor
    counts them."""
    if (line := _lone_cr_line(text)) is not None:
        raise refusal(field, where, f"cannot be read safely (line {line}): a carriage "
                      "return not followed by a line feed ends a line for YAML but not for an editor, which shows what "
                      "follows on the same line; use LF or CRLF line endings")
    at = next((i for i, char in enumerate(text) if char in YAML_ONLY_BREAKS), None) \
        if not text.isascii() else None
    if at is not None:
        char = text[at]
        raise refusal(field, where, f"cannot be read safely (line {text.count(chr(10), 0, at) + 1}): U+{ord(char):04X} "
                      f"({YAML_ONLY_BREAKS[char]}) ends a line for YAML 1.1 but not for an editor, which shows what "
                      "follows on the same line; remove it, or start a new line")


def parse_yaml(text: str, field: str, where: Any) -> Any:
    import yaml

    _no_hidden_breaks(text, field, where)
    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except TooManyNodes as exc:
        raise refusal(field, where, f"holds more than {MAX_NODES:,} values (line {exc.line}; a plan file maps a "
                      "few dozen input names to values)") from None
    except RecursionError:
        raise refusal(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise refusal(field, where, f"is not valid YAML{at}: {first}") from None


def parse_toml(text: str, field: str, where: Any) -> Any:
    import tomllib

    try:
        data = tomllib.loads(text, parse_float=_float_as_written)
        if nesting_depth(data) <= MAX_DEPTH:
            quoted = odd_numbers_quoted(text)
            data = tomllib.loads(quoted, parse_float=_float_as_written) if quoted != text else data
    except RecursionError:
        raise refusal(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise refusal(field, where, f"is not valid TOML: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise refusal(field, where, f"is not valid TOML: {str(exc).splitlines()[0][:80]}") from None
    if nesting_depth(data) > MAX_DEPTH:
        raise refusal(field, where, f"is nested more than {MAX_DEPTH} levels deep")
    return _dates_as_text(data)


def _float_as_written(text: str) -> float | str:
    """A TOML float; one that overflows ('1e400') as its text, so the refusal quotes what was written (as the web's
    and YAML's do: 'tokens: got '1e400'', not 'got inf'); TOML's own inf literal stays inf."""
    number = float(text.replace("_", ""))
    return text if _lost(text, number) else number


def _lost(text: str, number: float) -> bool:
    """Whether a float literal lost its value in reading: it overflowed to inf ('1e400'; not the inf literal) or
    underflowed to 0 ('1e-400': a non-zero digit before the exponent). Kept as text, the field refuses what was
    written, as the flag does ('price: got '1e-400'; is too small to tell from 0', review w12 r3 S3; a plan file
    said 'got 0.0; must be at least $0.0001')."""
    return units.overflowed(text, number) or units.lost_to_zero(text, number)


TOML_NUMBER = re.compile(
    r"[-+]?(?:0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|0o[0-7](?:_?[0-7])*|0b[01](?:_?[01])*|inf|nan"
    r"|(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][-+]?[0-9](?:_?[0-9])*)?)")
"""A TOML 1.0 integer or float literal (toml.io/en/v1.0.0 'Integer' and 'Float'): hex / octal / binary, '_'
between digits, inf and nan."""
_BARE = re.compile(r"[A-Za-z0-9_+\-.:]+")  # a bare key, number, date, time, true or false (toml.io/en/v1.0.0)


def odd_numbers_quoted(text: str) -> str:
    """The TOML text with every number in a value written other than as the flags write them (TOML's 0x10, 0o10,
    0b10, 1_000, inf, nan) put in double quotes: it then reads as text, and its field refuses that text with the
    message the other doors give (wave 8: `gpus = 0x10` planned 16 GPUs where --gpus 0x10 was refused; review w8 r2:
    so did `gpus = [0x10, 0o10]` and `"gp\\u0075s" = 0x10`, which a lookup of the key's line missed). A small
    scanner over valid TOML (tomllib has read it once): strings and comments are skipped, a number is a value when
    it follows '=' or opens / continues an array; keys and table headers are left as written."""
    out, stack, prev, i, n = [], [], "", 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif c in "\"'":
            j = _string_end(text, i)
            prev = '"'
        elif c in "[{":
            value = prev == "=" or (bool(stack) and stack[-1] == "[" and prev in "[,")
            stack.append("[" if c == "[" and value else "{" if c == "{" else "header")
            j, prev = i + 1, c
        elif c in "]}":
            if stack:
                stack.pop()
            j, prev = i + 1, c
        elif c in "=,":
            j, prev = i + 1, c
        elif (bare := _BARE.match(text, i)) is not None:
            j, token = bare.end(), bare.group()
            value = prev == "=" or (bool(stack) and stack[-1] == "[" and prev in "[,")
            if value and TOML_NUMBER.fullmatch(token) and not (PLAIN_INT.match(token) or PLAIN_FLOAT.match(token)):
                out.append(f'"{token}"')
                i, prev = j, "a"
                continue
            prev = "a"
        else:
            j = i + 1
        out.append(text[i:j])
        i = j
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """The index just past the TOML string opening at text[i] (basic "..", literal '..', and their triple-quoted
    multi-line forms, which may end in up to two more quotes)."""
    quote = text[i]
    triple = text.startswith(quote * 3, i)
    j = i + (3 if triple else 1)
    while j < len(text):
        if text[j] == "\\" and quote == '"':
            j += 2
            continue
        if triple and text.startswith(quote * 3, j):
            j += 3
            extra = 0
            while extra < 2 and j < len(text) and text[j] == quote:
                j, extra = j + 1, extra + 1
            return j
        if not triple and text[j] == quote:
            return j + 1
        j += 1
    return j


def _dates_as_text(value: Any) -> Any:
    """TOML dates and times as their ISO text (no field takes one; an error then quotes the text)."""
    import datetime

    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _dates_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_dates_as_text(v) for v in value]
    return value
