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
import stat
from pathlib import Path
from typing import Any, BinaryIO

from gpuplan.errors import InputError

KiB, MiB = 1 << 10, 1 << 20
# Size caps by kind of file (bytes). Real Hugging Face config.json files are < 100 KiB; plan files
# a few KiB; calibration and measurement files < 1 MiB; text training logs can be large
# (--max-log-mib) and are read line by line; a JSON log (trainer_state.json, a JSON table) is
# parsed whole, so it is held to the JSON limit.
MAX_BYTES = {"config": 4 * MiB, "plan file": 1 * MiB, "calibration": 16 * MiB, "measurement": 16 * MiB,
             "log": 256 * MiB, "JSON log": 16 * MiB}
MAX_DEPTH = 64
"""Nesting levels of lists/mappings accepted in JSON, YAML and TOML (HF configs use < 6)."""
MAX_JSON_CONTAINERS = 250_000
MAX_JSON_VALUES = 2_500_000
"""Lists/objects and values in one JSON document: parsed, they stay under ~120 MB (a 16 MB table
of 168,000 rows of 5 columns, the largest real case, holds 168,000 objects and 840,000 values and
parses into 74 MB)."""


def refusal(field: str, path: Any, why: str) -> InputError:
    return InputError(field, str(path), why)


def check_readable(path: str | Path, field: str, max_bytes: int) -> Path:
    """``path`` as a regular file of at most ``max_bytes``, checked before it is opened."""
    p = Path(path)
    try:
        info = p.stat()
    except FileNotFoundError:
        raise refusal(field, path, "no such file") from None
    except (OSError, ValueError) as exc:
        raise refusal(field, path, f"cannot be read ({getattr(exc, 'strerror', None) or exc.__class__.__name__})") \
            from None
    _check_kind(info, field, path, max_bytes)
    return p


def _check_kind(info: os.stat_result, field: str, path: Any, max_bytes: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise refusal(field, path, "is a directory; expected a file")
    if not stat.S_ISREG(info.st_mode):
        raise refusal(field, path, "is not a regular file (a device, FIFO or socket); expected a file")
    if info.st_size > max_bytes:
        raise refusal(field, path, f"is {info.st_size / MiB:,.1f} MiB; the limit for a {field} is "
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
        raise refusal(field, path, "no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise refusal(field, path, "is a symbolic link; give the file itself") from None
        raise refusal(field, path, f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None
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
            raise refusal(field, path, f"cannot be read ({exc.strerror or exc.__class__.__name__})") from None
    if len(data) > max_bytes:  # grew after the check
        raise refusal(field, path, f"is larger than the {max_bytes / MiB:,.0f} MiB limit for a {field}")
    return data


def read_text(path: str | Path, field: str, max_bytes: int, follow_links: bool = True) -> str:
    data = read_bytes(path, field, max_bytes, follow_links)
    try:  # utf-8-sig: a leading byte-order mark (Windows editors, Excel) is read past, as the log reader does
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise refusal(field, path, f"is not UTF-8 text (byte {exc.start})") from None


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
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
    return int(text) if len(text) <= MAX_INT_DIGITS else _NotANumber(text[:20] + "...")  # far past any real count


class LongInteger(_NotANumber):
    """An integer whose text Python will not convert (past sys.get_int_max_str_digits, 4,300 digits by default):
    quoted as its first 20 digits, as _json_int quotes one; ``digits`` keeps the whole text."""

    def __init__(self, text: str) -> None:
        super().__init__(text[:20] + "...")
        self.digits = text


def _json_int_any_length(text: str) -> Any:
    try:
        return int(text)
    except ValueError:  # Python's int max_str_digits: json.loads said 'Exceeds the limit (4300 digits)'
        return LongInteger(text)


JSON_FLOAT_HOOKS = {"parse_constant": _NotANumber, "parse_float": _json_float, "parse_int": _json_int_any_length}
"""json.loads hooks that keep NaN, Infinity, numbers past float range and integers past Python's 4,300-digit
conversion limit as their text (first_bad_number finds them): the web API's body reader's (web.body.read_body), so
a pasted config.json and the same file are refused with the same line (review w8 r2: 5,000 digits in a pasted
config were 'not valid JSON'); its other integers stay Python's (a top-level field's refusal says 'too large a
number')."""
JSON_NUMBER_HOOKS = JSON_FLOAT_HOOKS | {"parse_int": _json_int}
"""parse_json's: JSON_FLOAT_HOOKS, and integers of more than 64 digits kept as their first 20 digits."""
FINITE_NUMBER = "must be a finite JSON number"
MAX_INT_DIGITS = 64


def first_bad_number(data: Any, long_ints: bool = False) -> tuple[str, str] | None:
    """(dotted key path, text as written) of the first NaN / Infinity / out-of-range number in data read with
    JSON_FLOAT_HOOKS or JSON_NUMBER_HOOKS; with ``long_ints`` also the first integer of more than
    MAX_INT_DIGITS digits (as _json_int quotes it); None when there is none."""
    found = _first_bad_number(data)
    if found is not None or not long_ints:
        return found
    return _first_where(data, lambda item: isinstance(item, int) and not isinstance(item, bool)
                        and len(str(abs(item))) > MAX_INT_DIGITS, lambda item: str(item)[:20] + "...")


def _first_bad_number(data: Any) -> tuple[str, str] | None:
    """(dotted key path, text) of the first _NotANumber in parsed JSON."""
    return _first_where(data, lambda item: isinstance(item, _NotANumber), lambda item: item.text)


def _first_where(data: Any, bad: Any, text: Any) -> tuple[str, str] | None:
    """(dotted key path, text(item)) of the first item in document order for which bad(item) holds (iterative: no
    recursion on hostile input); None when there is none."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, path = stack.pop()
        if bad(item):
            return path or "(top level)", text(item)
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


class NotJSON(InputError):
    """The text is not one JSON document (a syntax error): the caller may try another reading
    (JSON Lines); every other refusal of parse_json is final."""


def _check_counts(text: str, field: str, where: Any) -> None:
    """Refuse, before parsing, text that would hold more than MAX_JSON_CONTAINERS lists/objects or
    MAX_JSON_VALUES values (counted from the brackets and commas, strings included: an upper
    bound): 15 MB of ``[],`` parses into 5M lists, ~360 MB."""
    containers, values = text.count("[") + text.count("{"), text.count(",") + 1
    if containers > MAX_JSON_CONTAINERS or values > MAX_JSON_VALUES:
        raise refusal(field, where, f"holds up to {containers:,} lists/objects and {values:,} values; the limit is "
                      f"{MAX_JSON_CONTAINERS:,} and {MAX_JSON_VALUES:,}")


def parse_json(text: str, field: str, where: Any) -> Any:
    """JSON text -> data; InputError on malformed JSON (NotJSON), more values than the limits
    (_check_counts), duplicate keys, NaN/Infinity (and numbers that overflow to them, or integers
    of more than 64 digits: the error names the key) or deep nesting (the parser stops where the
    nesting passes Python's recursion limit; anything past MAX_DEPTH is refused after)."""
    text = text.removeprefix("\ufeff")  # a byte-order mark: harmless (read_text drops it from files too)
    _check_counts(text, field, where)
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, **JSON_NUMBER_HOOKS)
    except RecursionError:
        raise refusal(field, where, f"is nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise NotJSON(field, str(where), f"is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise refusal(field, where, f"is not valid JSON ({exc})") from None
    if nesting_depth(data) > MAX_DEPTH:
        raise refusal(field, where, f"is nested more than {MAX_DEPTH} levels deep")
    bad = _first_bad_number(data)
    if bad is not None:
        raise InputError(f"{field}: {bad[0]}", bad[1], FINITE_NUMBER)
    return data


def read_json(path: str | Path, field: str, max_bytes: int | None = None, follow_links: bool = True) -> Any:
    return parse_json(read_text(path, field, max_bytes or MAX_BYTES.get(field, 16 * MiB), follow_links), field, path)


# ---- writing --------------------------------------------------------------------------------

def check_writable(path: str | Path, field: str = "out", inputs: tuple[Any, ...] = (),
                   suffixes: tuple[str, ...] = ()) -> Path:
    """Refuse an output path before any work: its folder must exist and be writable; the path
    must not be a directory, a symbolic link, anything but a regular file, or one of ``inputs``
    (the files the command reads: same path, or the same file through another name or link);
    given ``suffixes`` (lower case), its name ends in one of them: the format written there (an
    HTML report over plan.yaml, a calibration over train.log, was written)."""
    if str(path).endswith(("/", os.sep)):  # Path() drops the separator: 'x.html/' wrote x.html (report)
        raise refusal(field, path, "ends in a path separator, so names a folder; give a file name")
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_symlink():
        # not followed: a link planted where an output goes (a shared /tmp) would otherwise make
        # gpuplan write wherever it points, past the kernel's protected_symlinks check
        raise refusal(field, path, f"is a symbolic link (to {os.readlink(target)}); give the file it points to, "
                    "or another name")
    if target.is_dir():
        raise refusal(field, path, "is a directory; give a file name")
    if folder.exists() and not folder.is_dir():  # was 'in a folder that does not exist' (it exists)
        raise refusal(field, path, f"is in {folder}, which is not a folder (a file or a device)")
    if not folder.is_dir():
        raise refusal(field, path, f"is in a folder that does not exist ({folder}); create it first")
    if not os.access(folder, os.W_OK):
        raise refusal(field, path, f"cannot be written: no permission in {folder}")
    if target.exists() and not target.is_file():
        raise refusal(field, path, "is not a regular file")
    if target.exists() and not os.access(target, os.W_OK):
        raise refusal(field, path, "is read-only; make it writable or give another name")
    same = next((str(i) for i in inputs if i is not None and _same_file(target, Path(str(i)))), None)
    if same is not None:
        raise refusal(field, path, f"is also an input ({same}); write to another file")
    if suffixes and not target.name.lower().endswith(suffixes):
        raise refusal(field, path, f"must end in {' or '.join(suffixes)}, the format written (another name could "
                    "overwrite a file of another kind)")
    try:  # the write goes through a temporary file in the folder: try one now (/proc, a read-only mount)
        _probe_write(folder, f".{target.name}.")
    except OSError as exc:
        raise refusal(field, path, f"cannot be written in {folder} ({exc.strerror or exc})") from None
    return target


def check_out_folder(path: str | Path, field: str = "out") -> Path:
    """An output folder, checked before any work: an existing folder, or a new one whose parent
    exists (created here, one level: a missing parent is an error, as for files); not a file,
    device or symbolic link; writable (`profile --sweep --out plan.yaml` ended in an internal
    FileExistsError, `--out a/b/c` created a and b)."""
    folder = Path(path)
    if folder.is_symlink():
        raise refusal(field, path, f"is a symbolic link (to {os.readlink(folder)}); give the folder itself")
    if folder.exists() and not folder.is_dir():
        raise refusal(field, path, "is not a folder (a file or a device); give a folder for the sweep's files")
    parent = folder.parent if str(folder.parent) else Path(".")
    if not folder.exists() and not parent.is_dir():
        raise refusal(field, path, f"is in a folder that does not exist ({parent}); create it first")
    try:
        folder.mkdir(exist_ok=True)
        _probe_write(folder, ".gpuplan.")
    except OSError as exc:
        raise refusal(field, path, f"cannot be written ({exc.strerror or exc})") from None
    return folder


def _probe_write(folder: Path, prefix: str) -> None:
    """Create and remove an empty temporary file in ``folder`` (OSError where files cannot be made there:
    /proc, a read-only mount, no permission)."""
    import tempfile  # here: tempfile imports shutil, bz2, lzma and random (~7 ms), which no answer needs

    fd, probe = tempfile.mkstemp(prefix=prefix, suffix=".probe", dir=folder)
    os.close(fd)
    _remove(probe)


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
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise refusal(field, path, f"cannot be written ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        _take_mode(tmp, target)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise refusal(field, path, f"cannot be written ({exc.strerror or exc})") from None
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
