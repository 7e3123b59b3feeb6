"""Reading and writing the user's files safely: the only place gpuplan opens a path.

Reads: only regular files (a FIFO, a device such as /dev/zero, a directory or /proc/self/mem is
refused before it is opened), at most a size cap per kind of file, strict UTF-8, and for JSON
and YAML a nesting limit and no duplicate keys; YAML anchors/aliases are refused outright (the
"billion laughs" bomb needs them, and no gpuplan file uses them). Writes: a temporary file in the
target folder, fsync, then os.replace, so a failure never leaves a half-written or truncated
file; the file keeps its mode; a missing folder, a symbolic link or one of the command's own
inputs as the target is an error.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from gpuplan.errors import InputError

KiB, MiB = 1 << 10, 1 << 20
# Size caps by kind of file (bytes). Real Hugging Face config.json files are < 100 KiB; plan files
# a few KiB; calibration and measurement files < 1 MiB; training logs can be large (--max-log-mib).
MAX_BYTES = {"config": 4 * MiB, "plan file": 1 * MiB, "calibration": 16 * MiB, "measurement": 64 * MiB,
             "log": 256 * MiB}
MAX_DEPTH = 64
"""Nesting levels of lists/mappings accepted in JSON, YAML and TOML (HF configs use < 6)."""


def _fail(field: str, path: Any, why: str) -> InputError:
    return InputError(field, str(path), why)


def check_readable(path: str | Path, field: str, max_bytes: int) -> Path:
    """``path`` as a regular file of at most ``max_bytes``, checked before it is opened."""
    p = Path(path)
    try:
        info = p.stat()
    except FileNotFoundError:
        raise _fail(field, path, "no such file") from None
    except (OSError, ValueError) as exc:
        raise _fail(field, path, f"cannot be read ({getattr(exc, 'strerror', None) or exc.__class__.__name__})") \
            from None
    _check_kind(info, field, path, max_bytes)
    return p


def _check_kind(info: os.stat_result, field: str, path: Any, max_bytes: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise _fail(field, path, "is a directory; expected a file")
    if not stat.S_ISREG(info.st_mode):
        raise _fail(field, path, "is not a regular file (a device, FIFO or socket); expected a file")
    if info.st_size > max_bytes:
        raise _fail(field, path, f"is {info.st_size / MiB:,.1f} MiB; the limit for a {field} is "
                    f"{max_bytes / MiB:,.0f} MiB")


def open_regular(path: str | Path, field: str, max_bytes: int, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading as a regular file of at most ``max_bytes``. Checked before the
    open (check_readable) and again on the open descriptor: the name may have been swapped in
    between (for a FIFO, whose open would block forever, or a device). The open never blocks
    (O_NONBLOCK) and, with ``follow_links`` False, refuses a symbolic link (O_NOFOLLOW)."""
    check_readable(path, field, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _fail(field, path, "no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise _fail(field, path, "is a symbolic link; give the file itself") from None
        raise _fail(field, path, f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    try:
        _check_kind(os.fstat(fd), field, path, max_bytes)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path, field: str, max_bytes: int, follow_links: bool = True) -> bytes:
    """At most ``max_bytes`` of a regular file (open_regular), read in one go."""
    with open_regular(path, field, max_bytes, follow_links) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise _fail(field, path, f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    if len(data) > max_bytes:  # grew after the check
        raise _fail(field, path, f"is larger than the {max_bytes / MiB:,.0f} MiB limit for a {field}")
    return data


def read_text(path: str | Path, field: str, max_bytes: int, follow_links: bool = True) -> str:
    data = read_bytes(path, field, max_bytes, follow_links)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(field, path, f"is not UTF-8 text (byte {exc.start})") from None


def _depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of lists/dicts (iterative: no recursion limit on hostile input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


class _NotANumber:
    """Where a JSON text had NaN, Infinity or a number beyond float range (1e400)."""

    def __init__(self, text: str) -> None:
        self.text = text


def _json_float(text: str) -> Any:
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else _NotANumber(text)


def _json_int(text: str) -> Any:
    return int(text) if len(text) <= 64 else _NotANumber(text[:20] + "...")  # far past any real count


def _first_bad_number(data: Any) -> tuple[str, str] | None:
    """(dotted key path, text) of the first _NotANumber in parsed JSON (iterative)."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _NotANumber):
            return path or "(top level)", item.text
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def parse_json(text: str, field: str, where: Any) -> Any:
    """JSON text -> data; InputError on malformed JSON, duplicate keys, NaN/Infinity (and numbers
    that overflow to them, or integers of more than 64 digits: the error names the key) or deep
    nesting."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_NotANumber,
                          parse_float=_json_float, parse_int=_json_int)
    except RecursionError:
        raise _fail(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise _fail(field, where, f"is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise _fail(field, where, f"is not valid JSON ({exc})") from None
    if _depth(data) > MAX_DEPTH:
        raise _fail(field, where, f"is nested more than {MAX_DEPTH} levels deep")
    bad = _first_bad_number(data)
    if bad is not None:
        raise InputError(f"{field}: {bad[0]}", bad[1], "must be a finite JSON number")
    return data


def read_json(path: str | Path, field: str, max_bytes: int | None = None, follow_links: bool = True) -> Any:
    return parse_json(read_text(path, field, max_bytes or MAX_BYTES.get(field, 16 * MiB), follow_links), field, path)


def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader without aliases, with a depth limit and no duplicate mapping keys."""

        def compose_node(self, parent, index):  # noqa: ANN001
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.constructor.ConstructorError(None, None, "anchors and aliases are not accepted",
                                                        event.start_mark)
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.constructor.ConstructorError(None, None, f"nested more than {MAX_DEPTH} levels",
                                                            self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node, deep=False):  # noqa: ANN001
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    raise yaml.constructor.ConstructorError(None, None, f"keys must be names (text), got {key!r:.40}",
                                                            key_node.start_mark)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    # YAML 1.2's core schema for numbers: YAML 1.1's base-60 ("1:04" = 64) and other legacy forms
    # stay text, so the schema refuses them instead of reading a different number
    dropped = (INT_TAG, FLOAT_TAG, "tag:yaml.org,2002:timestamp")  # a date stays text: no field takes one
    Loader.yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag not in dropped]
                                      for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    Loader.add_implicit_resolver(INT_TAG, YAML12_INT, list("-+0123456789"))
    Loader.add_implicit_resolver(FLOAT_TAG, YAML12_FLOAT, list("-+.0123456789"))

    def construct_int(loader, node):
        text = loader.construct_scalar(node)
        if not YAML12_INT.match(text) or len(text.lstrip("+-")) > 64:  # an explicit !!int tag on other text
            raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not an integer (at most 64 "
                                                    "digits)", node.start_mark)
        return int(text, 16) if text.lstrip("+-").startswith("0x") else int(text, 8) if "0o" in text else int(text)

    def construct_float(loader, node):
        text = loader.construct_scalar(node)
        if not (YAML12_FLOAT.match(text) or YAML12_INT.match(text)):
            raise yaml.constructor.ConstructorError(None, None, f"{text[:40]!r} is not a number", node.start_mark)
        return yaml.SafeLoader.construct_yaml_float(loader, node)

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


INT_TAG, FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
YAML12_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
YAML12_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                          r"|\.(?:nan|NaN|NAN))$")


def parse_yaml(text: str, field: str, where: Any) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise _fail(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise _fail(field, where, f"is not valid YAML{at}: {first}") from None


def parse_toml(text: str, field: str, where: Any) -> Any:
    import tomllib

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise _fail(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise _fail(field, where, f"is not valid TOML: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise _fail(field, where, f"is not valid TOML: {str(exc).splitlines()[0][:80]}") from None
    if _depth(data) > MAX_DEPTH:
        raise _fail(field, where, f"is nested more than {MAX_DEPTH} levels deep")
    return _dates_as_text(data)


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


# ---- writing --------------------------------------------------------------------------------

def check_writable(path: str | Path, field: str = "out", inputs: tuple[Any, ...] = ()) -> Path:
    """Refuse an output path before any work: its folder must exist and be writable; the path
    must not be a directory, a symbolic link, anything but a regular file, or one of ``inputs``
    (the files the command reads: same path, or the same file through another name or link)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_symlink():
        # not followed: a link planted where an output goes (a shared /tmp) would otherwise make
        # gpuplan write wherever it points, past the kernel's protected_symlinks check
        raise _fail(field, path, f"is a symbolic link (to {os.readlink(target)}); give the file it points to, "
                    "or another name")
    if target.is_dir():
        raise _fail(field, path, "is a directory; give a file name")
    if not folder.is_dir():
        raise _fail(field, path, f"is in a folder that does not exist ({folder}); create it first")
    if not os.access(folder, os.W_OK):
        raise _fail(field, path, f"cannot be written: no permission in {folder}")
    if target.exists() and not target.is_file():
        raise _fail(field, path, "is not a regular file")
    if target.exists() and not os.access(target, os.W_OK):
        raise _fail(field, path, "is read-only; make it writable or give another name")
    same = next((str(i) for i in inputs if i is not None and _same_file(target, Path(str(i)))), None)
    if same is not None:
        raise _fail(field, path, f"is also an input ({same}); write to another file")
    try:  # the write goes through a temporary file in the folder: try one now (/proc, a read-only mount)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        raise _fail(field, path, f"cannot be written in {folder} ({exc.strerror or exc})") from None
    os.close(fd)
    _remove(probe)
    return target


def _same_file(target: Path, source: Path) -> bool:
    """True when ``target`` names ``source``: the same resolved path, or the same file (device and
    inode: a hard link)."""
    try:
        if os.path.realpath(target) == os.path.realpath(source):
            return True
        return target.exists() and source.exists() and os.path.samefile(target, source)
    except (OSError, ValueError):
        return False


def write_atomic(path: str | Path, data: bytes | str, field: str = "out", inputs: tuple[Any, ...] = ()) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder, fsync and os.replace
    (check_writable first). An existing file keeps its permission bits (and, where allowed, its
    owner and group); a new one gets 0666 less the umask, as any program's."""
    target = check_writable(path, field, inputs)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _fail(field, path, f"cannot be written ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        _take_mode(tmp, target)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise _fail(field, path, f"cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        _remove(tmp)
        raise
    return target


def _take_mode(tmp: str, target: Path) -> None:
    """The temporary file gets the target's mode bits (and owner/group when permitted), or the
    usual 0666 & ~umask for a new file (mkstemp creates 0600)."""
    try:
        old = os.stat(target)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        return
    try:
        os.chown(tmp, old.st_uid, old.st_gid)
    except OSError:  # another user's file: the mode is still kept
        pass
    os.chmod(tmp, stat.S_IMODE(old.st_mode))


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def write_json_atomic(path: str | Path, data: Any, field: str = "out", inputs: tuple[Any, ...] = ()) -> Path:
    return write_atomic(path, json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n", field, inputs)
