"""Measured step time, throughput and memory from real training logs (stdlib only): torchtitan
console lines, Megatron-LM ``iteration N/ M | ... | elapsed time per iteration (ms): ...`` lines and
memory reports, Hugging Face Trainer ``trainer_state.json`` or printed dicts, and a CSV/JSON table
(:data:`TABLE_COLUMNS`). docs/calibration.md section 2 shows each format; each parser cites its
source, and tests/fixtures/logs holds a real excerpt of each.

Files are read line by line (adapters/log_files.py), so a log of any size is refused from its
first lines when it is not one. An unreadable or unrecognised file raises InputError naming the
file and what was expected; so does a step or batch that is not a positive whole number, or a step
logged twice. Values no real run logs (negative, non-finite, absurd) are refused by
gpuplan.calibrate.log_checks, by the log's name.
"""

from __future__ import annotations

import ast
import math
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from gpuplan.adapters.files import parse_json
from gpuplan.adapters.log_files import LogFile, LogText, csv_rows, is_json_lines, json_lines
from gpuplan.adapters.hf_steps import hf_steps_run
from gpuplan.adapters.log_records import GiB, LogRecord, LogSummary, MiB, TrainingLog, check_reserved, summarize
from gpuplan.errors import InputError

__all__ = ["GiB", "MiB", "LogRecord", "LogSummary", "TrainingLog", "summarize", "parse_log", "parse_log_text",
           "read_training_log", "detect_format", "FORMATS", "TABLE_COLUMNS", "EXPECTED"]

FORMATS = ("torchtitan", "megatron", "hf-trainer", "table")
# column -> meaning; 'step' and at least one measured column are required
TABLE_COLUMNS = {
    "step": "optimizer step number", "step_time_s": "seconds per optimizer step",
    "tokens_per_s": "tokens per second, whole job (all devices)", "tokens_per_s_per_device": "tokens per second "
    "per device", "memory_gib": "peak allocated memory per device, GiB (2**30 bytes)", "memory_reserved_gib": "peak "
    "reserved memory per device, GiB", "tflops": "achieved TFLOP/s per device", "mfu": "model FLOPs utilisation, "
    "fraction (0.4) or percent ('40%')", "loss": "training loss"}
EXPECTED = ("a torchtitan, Megatron-LM or Hugging Face Trainer log, or a CSV/JSON table with columns step, "
            "step_time_s, tokens_per_s, memory_gib (docs/calibration.md)")
MAX_WHOLE = 10**9  # largest step number or batch of sequences believed
_UNITS = {"GiB": GiB, "MiB": MiB, "KiB": 2**10, "GB": 1e9, "MB": 1e6, "TiB": 2**40}


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUM = r"([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"


_GROUPED = re.compile(r"[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?(?:[eE][-+]?\d+)?")
"""A number whose commas group its whole part in threes, as Python's ',' format prints it (torchtitan's metrics line
`tps: {tps:,}`: 'tps: 7,282'; never a leading '0,'). Any other comma is not a thousands separator: a decimal comma
('6,5' s in a table read as 65 s, a factor 10 silently; '0,248' samples/s as 248: wave 21) or a slip ('7,0,0,0')."""


def _num(text: Any) -> float | None:
    """A number (non-finite ones kept, for the checks to refuse by name); None if not one. Commas are taken only as
    thousands separators in groups of three (_GROUPED)."""
    if text is None or isinstance(text, bool):
        return None
    text = str(text).strip()
    if text.endswith(",") and not text.endswith(",,"):  # a field separator after the number ('tps: 7,282, tflops'),
        text = text[:-1]  # which _NUM's [\d,]* takes: no thousands group ends in a comma (review s19 N7)
    if "," in text:
        if not _GROUPED.fullmatch(text):
            return None
        text = text.replace(",", "")
    if not text.isascii() or "_" in text:  # float() reads '٣' as 3 and '1_000' as 1000 (wave 7)
        return None
    try:
        return float(text)  # text past the float range reads as inf (an int's digits too): refused by name
    except ValueError:
        return None


def _comma_note(value: Any) -> str:
    """What a refused number with a comma missed (_GROUPED), else nothing."""
    return " (a comma only groups thousands, e.g. 7,282; decimals take '.')" if "," in str(value) else ""


def whole(value: Any, label: str, source: str, where: str = "") -> int:
    """A positive whole number up to MAX_WHOLE (a step or a batch of sequences), else InputError."""
    number = _num(value) if isinstance(value, str | int | float) else None
    if number is None or not 1 <= number <= MAX_WHOLE or number != int(number):
        raise InputError(label, value, f"in {source}{where}: must be a whole number from 1 to {MAX_WHOLE:,}")
    return int(number)


def _size(text: str, unit: float, label: str, source: str) -> float:
    """A logged memory size ``text`` (in ``unit`` bytes) as bytes; InputError naming ``label`` where the text the
    pattern took is not a number: its digits are '\\d', which takes '９' (a full-width 9) and '1.2.3', which _num
    reads as None ('None * int': an internal error, exit 70)."""
    size = _logged(text, label, source, "a size written as an ASCII number, e.g. 66.91")
    if math.isfinite(size) and not math.isfinite(size * unit):  # '1e300' GiB: echoed as logged, not as 'inf' (w25)
        raise InputError(label, text, f"in {source}: overflows the float range in bytes; a real run logs under 1e14 B")
    return size * unit


def _each_line(lines: Iterable[str] | str) -> Iterable[str]:
    return lines.splitlines() if isinstance(lines, str) else lines


def _logged(value: Any, label: str, source: str, what: str = "a number written in ASCII digits, e.g. 1234.5"
            ) -> float | None:
    """A logged number: None where absent (``value`` None), else its float; InputError naming ``label`` (and
    ``what`` is expected) where it is there but not an ASCII number (a full-width 'tps: １000' read as None,
    'missing', before review w10 r3 S4)."""
    if value is None:
        return None
    if (number := _num(value)) is None:
        raise InputError(label, value, f"in {source}: {what}{_comma_note(value)}")
    return number


def _field(line: str, pattern: re.Pattern, label: str, source: str) -> float | None:
    """The number ``pattern`` takes from ``line`` (None where the line has none): one rule for every logged
    number, refused by ``label`` where the pattern's '\\d' took a non-ASCII digit (_logged)."""
    return _logged(match.group(1), label, source) if (match := pattern.search(line)) else None


# ---------------------------------------------------------------------------------------------
# torchtitan: torchtitan/components/metrics.py, MetricsProcessor.log (pytorch/torchtitan)

_TITAN_STEP = re.compile(r"(?<!validate )\bstep:\s*(\d+)\s+loss:")
_TITAN_MEMORY = re.compile(rf"memory:\s*{_NUM}\s*([A-Za-z]*)")
_TITAN_RANK = re.compile(r"\[rank(\d+)\]")
_TITAN_LOSS, _TITAN_TPS = re.compile(rf"loss:\s*{_NUM}"), re.compile(rf"\b(?:tps|wps):\s*{_NUM}")
_TITAN_TFLOPS, _TITAN_MFU = re.compile(rf"tflops:\s*{_NUM}"), re.compile(rf"mfu:\s*{_NUM}\s*%")


def parse_torchtitan(lines: Iterable[str] | str, source: str) -> TrainingLog:
    by_step: dict[int, tuple[int, LogRecord]] = {}
    seen: set[tuple[int, int]] = set()
    for raw in _each_line(lines):
        line = _ANSI.sub("", raw)
        match = _TITAN_STEP.search(line)
        if not match:
            continue
        rank = int(rank_match.group(1)) if (rank_match := _TITAN_RANK.search(line)) else 0
        step = whole(match.group(1), "step", source)
        memory = _TITAN_MEMORY.search(line)
        if memory and memory.group(2) not in _UNITS:
            raise InputError("memory", memory.group(0)[7:].strip(), f"in {source}: a size in {', '.join(_UNITS)}")
        record = LogRecord(
            step=step, loss=_field(line, _TITAN_LOSS, "loss", source),
            memory_bytes=_size(memory.group(1), _UNITS[memory.group(2)], "memory", source) if memory else None,
            memory_kind="reserved" if memory else None,
            tokens_per_s_per_device=_field(line, _TITAN_TPS, "tps", source),
            tflops_per_device=_field(line, _TITAN_TFLOPS, "tflops", source),
            mfu=None if (mfu := _field(line, _TITAN_MFU, "mfu", source)) is None else mfu / 100.0)
        # several ranks print the same step: keep the lowest rank's line; a [rankN] prints it once
        if rank_match and ((rank, step) in seen or seen.add((rank, step))):
            raise InputError("step", step, f"in {source}: logged twice by rank {rank}; give one run's log")
        if step not in by_step or rank < by_step[step][0]:
            by_step[step] = (rank, record)
    records = tuple(r for _, (_, r) in sorted(by_step.items()))
    if not records:
        raise InputError("file", source, "has no torchtitan 'step: N  loss: ...' lines; expected " + EXPECTED)
    if all(r.tokens_per_s_per_device is None and r.memory_bytes is None for r in records):
        raise InputError("file", source, "torchtitan lines carry neither 'tps:' nor 'memory:'; nothing to measure")
    return TrainingLog(source, "torchtitan", records)


# ---------------------------------------------------------------------------------------------
# Megatron-LM: megatron/training/training.py training_log() and megatron/training/utils.py
# report_memory() (NVIDIA/Megatron-LM; megatron/training/utils/common_utils.py L313-324 @d98e8a64dd): memory in
# MB = 2**20 bytes ('memory (MB) | allocated: ... | max reserved: ...', torch.cuda.*memory*() / (1024.0 * 1024.0), .2f)

_MEGA_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+")
_MEGA_ELAPSED = re.compile(rf"elapsed time per iteration \(ms\):\s*{_NUM}")
_MEGA_LOSS = re.compile(rf"lm loss:\s*{_NUM}")
_MEGA_TFLOPS = re.compile(rf"throughput per GPU \(TFLOP/s/GPU\):\s*{_NUM}")
_MEGA_MEMORY = re.compile(r"(?:\[Rank\s+(\d+)\]\s*)?\(?after\s+(\d+)\s+iterations\)?\s+memory\s+\(MB\)\s*\|"
                          r"\s*allocated:\s*([\d.]+)\s*\|\s*max allocated:\s*([\d.]+)\s*\|"
                          r"\s*reserved:\s*([\d.]+)\s*\|\s*max reserved:\s*([\d.]+)")


def parse_megatron(lines: Iterable[str] | str, source: str) -> TrainingLog:
    records: dict[int, LogRecord] = {}
    batches: set[int] = set()
    max_allocated, max_reserved, after = None, None, 0  # the worst rank's; its '(after N iterations)' (tie: later)
    for line in _each_line(lines):
        memory = _MEGA_MEMORY.search(line)
        if memory:
            allocated = _size(memory.group(4), MiB, "max allocated", source)  # bytes from here on
            reserved = _size(memory.group(6), MiB, "max reserved", source)
            check_reserved(allocated, reserved, ("max allocated (MB)", "max reserved (MB)"), source, "", MiB)
            after = max((allocated, int(memory.group(2))), (max_allocated or 0.0, after))[1]
            max_allocated, max_reserved = max(allocated, max_allocated or 0.0), max(reserved, max_reserved or 0.0)
            continue
        match = _MEGA_ITER.search(line)
        elapsed = _field(line, _MEGA_ELAPSED, "elapsed time per iteration (ms)", source)
        if not match or elapsed is None:
            continue
        if batch := re.search(rf"global batch size:\s*{_NUM}", line):
            batches.add(whole(batch.group(1), "global batch size", source, " (a batch of sequences)"))
        step = whole(match.group(1), "iteration", source)
        if step in records:
            raise InputError("iteration", step, f"in {source}: logged twice; give one run's log, each iteration once")
        records[step] = LogRecord(
            step=step, step_time_s=elapsed / 1000.0, loss=_field(line, _MEGA_LOSS, "lm loss", source),
            tflops_per_device=_field(line, _MEGA_TFLOPS, "throughput per GPU (TFLOP/s/GPU)", source))
    if not records:
        raise InputError("file", source, "has no Megatron-LM 'iteration N/ M | ... | elapsed time per iteration (ms):' "
                         "lines; expected " + EXPECTED)
    meta: dict[str, Any] = {}
    if len(batches) == 1:
        meta["global_batch"] = batches.pop()
    elif batches:
        meta["global_batch_values"] = sorted(batches)  # batch-size ramp-up: ambiguous
    if max_allocated is not None:  # after 1: iteration 1's peak, its Adam moments made in its step (calibrate.predict)
        meta.update(memory_bytes=max_allocated, memory_kind="allocated", memory_reserved_bytes=max_reserved,
                    memory_after_iteration=after)
    return TrainingLog(source, "megatron", tuple(records[k] for k in sorted(records)), meta)


# ---------------------------------------------------------------------------------------------
# Hugging Face Trainer: transformers/trainer_utils.py speed_metrics() (train_runtime,
# train_samples_per_second, train_steps_per_second; huggingface/transformers#11818) and
# TrainerState.log_history. train_runtime covers the whole train() call, evaluation included.

def parse_hf_entries(entries: list, source: str, global_step: Any = None, max_steps: Any = None) -> TrainingLog:
    for bad in (e for e in entries if not isinstance(e, dict)):
        raise InputError("log_history", bad, f"in {source}: every entry must be an object ({{'loss': ...}})")
    final = next((e for e in reversed(entries) if "train_runtime" in e), None)
    if final is None:
        raise InputError("file", source, "has Trainer logs but no final 'train_runtime' entry (the run did not "
                         "finish, or this is a checkpoint's trainer_state.json); expected " + EXPECTED)
    runtime, steps_per_s, samples_per_s = (_hf_rate(final, k, source) for k in (
        "train_runtime", "train_steps_per_second", "train_samples_per_second"))
    global_step = None if global_step is None else whole(global_step, "global_step", source)
    if final.get("step") is not None:
        steps = whole(final["step"], "step", source, " (the final entry's)")
    elif global_step or not (runtime and steps_per_s):
        steps = global_step
    else:  # printed dicts carry no step number
        steps = whole(round(runtime * steps_per_s), "train_runtime x train_steps_per_second", source, " (steps)")
    if not runtime or not steps:
        raise InputError("file", source, "the final Trainer entry lacks train_runtime or the step count")
    losses = [(e.get("step"), _logged(e.get("loss"), "loss", source)) for e in entries if "loss" in e]
    stepped = [(s, x) for s, x in losses if isinstance(s, int) and not isinstance(s, bool) and x is not None]
    run, note = hf_steps_run(steps, global_step, max_steps, runtime, steps_per_s, _num(final.get("train_loss")),
                             stepped, source)
    first = steps - run  # the step the timed call resumed from (0: a fresh run); its evaluations are after it
    eval_seconds = sum(_hf_rate(e, "eval_runtime", source) or 0.0 for e in entries
                       if not (first and isinstance(e.get("step"), int) and e["step"] <= first))
    if eval_seconds >= runtime:
        raise InputError("eval_runtime", eval_seconds, f"in {source}: evaluation (summed) must take less than "
                         f"train_runtime, {runtime:g} s, which includes it")
    record = LogRecord(step=int(steps), step_time_s=(runtime - eval_seconds) / run,
                       loss=next((x for _, x in reversed(losses) if x is not None), None))
    meta = {"train_runtime": runtime, "eval_seconds": eval_seconds, "steps": int(run)}
    if note:  # what the rates cannot tell (adapters.hf_steps); the calibration's notes carry it
        meta["note"] = note
    if samples_per_s and steps_per_s:  # sequences per optimizer step
        ratio = samples_per_s / steps_per_s
        meta["global_batch"] = whole(round(ratio) if ratio < 1e15 else ratio, "train_samples_per_second / "
                                      "train_steps_per_second", source, " (sequences per step)")
    return TrainingLog(source, "hf-trainer", (record,), meta)


def _hf_rate(entry: dict, key: str, source: str) -> float | None:
    """A Trainer speed metric (number or, transformers 5, text): positive and finite, or absent."""
    value, number = entry.get(key), _num(entry.get(key))
    if value is not None and (number is None or not 0 <= number < math.inf or (number == 0 and key != "eval_runtime")):
        raise InputError(key, value, f"in {source}: must be a positive, finite number{_comma_note(value)}")
    return number


_HF_DICT = re.compile(r"\{'[^{}]*\}")


def _literal(text: str) -> Any:
    """A printed Trainer dict read by ast.literal_eval; None where it is not a literal. Its compile step's warnings
    are silenced: `'learning_rate': 6.6inf` printed '<unknown>:1: SyntaxWarning: invalid decimal literal' above the
    refusal (and `'\\d'` text an invalid-escape warning), a second stderr line beside the one the house rule allows."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_hf_printed(lines: Iterable[str] | str, source: str) -> TrainingLog:
    entries = [e for line in _each_line(lines) for e in map(_literal, _HF_DICT.findall(line)) if isinstance(e, dict)]
    if not entries:
        raise InputError("file", source, "has no printed Trainer dicts; expected " + EXPECTED)
    return parse_hf_entries(entries, source)


# ---------------------------------------------------------------------------------------------
# the documented table (CSV / JSON / JSON Lines)

def parse_table(rows: Iterable[dict], source: str) -> TrainingLog:
    records = []
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise InputError("file", source, f"row {i} is not an object with columns {', '.join(TABLE_COLUMNS)}")
        unknown = sorted(set(row) - set(TABLE_COLUMNS))
        if unknown:
            raise InputError("file", source, f"row {i}: unknown column(s) {', '.join(unknown)}; "
                             f"columns are {', '.join(TABLE_COLUMNS)}")
        values = {k: _cell(row.get(k), k, i, source) for k in TABLE_COLUMNS}
        if values["step"] is None:
            raise InputError("file", source, f"row {i} has no 'step'")
        if all(values[k] is None for k in ("step_time_s", "tokens_per_s", "tokens_per_s_per_device",
                                           "memory_gib", "memory_reserved_gib")):
            raise InputError("file", source, f"row {i} has no step_time_s, tokens_per_s or memory_gib")
        memory, kind = values["memory_gib"], "allocated"
        if memory is not None and values["memory_reserved_gib"] is not None:  # both peaks: reserved >= allocated
            check_reserved(memory, values["memory_reserved_gib"], ("memory_gib", "memory_reserved_gib"), source,
                           f", row {i}")
        if memory is None and values["memory_reserved_gib"] is not None:
            memory, kind = values["memory_reserved_gib"], "reserved"
        records.append(LogRecord(
            step=whole(values["step"], "step", source, f", row {i}"), step_time_s=values["step_time_s"],
            tokens_per_s=values["tokens_per_s"],
            tokens_per_s_per_device=values["tokens_per_s_per_device"], tflops_per_device=values["tflops"],
            mfu=values["mfu"], memory_bytes=None if memory is None else memory * GiB,
            memory_kind=None if memory is None else kind, loss=values["loss"]))
    if not records:
        raise InputError("file", source, "has no rows; expected " + EXPECTED)
    return TrainingLog(source, "table", tuple(sorted(records, key=lambda r: r.step)))


def _cell(value: Any, column: str, row: int, source: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip()
    percent = text.endswith("%")
    number = _num(text.rstrip("%"))
    if number is None or isinstance(value, bool) or not math.isfinite(number):
        raise InputError("file", source, f"row {row}, column '{column}': {value!r} is not a number{_comma_note(value)}")
    if percent and column != "mfu":  # '40%' in step_time_s was read as 40 s (wave 7)
        raise InputError("file", source, f"row {row}, column '{column}': {value!r} is a share; only mfu takes '%'")
    if 0 < abs(number) < sys.float_info.min:  # subnormal: not 0, too small to tell from it (schema.types)
        raise InputError("file", source, f"row {row}, column '{column}': {value!r} is too small to tell from 0")
    if column == "mfu" and (percent or number > 1):
        number /= 100.0
    return number


# ---------------------------------------------------------------------------------------------
# entry points: a LogFile (streamed) or a LogText (adapters/log_files.py)

def parse_log(log: LogFile | LogText, fmt: str | None = None) -> TrainingLog:
    """Parse a log of format ``fmt`` (detected from its first DETECT_BYTES when None): text logs
    and tables line by line, a JSON document (trainer_state.json, a JSON table) whole."""
    source = log.source
    fmt = fmt or detect_format(log)
    if fmt == "table" or (fmt == "hf-trainer" and _JSON_OBJECT.match(log.head_text.lstrip())):
        data = _structured(log)
        if isinstance(data, dict) and isinstance(data.get("log_history"), list):
            return parse_hf_entries(data["log_history"], source, data.get("global_step"), data.get("max_steps"))
        if isinstance(data, dict) and isinstance(data.get("records"), list):
            data = data["records"]
        if isinstance(data, dict) or not isinstance(data, list | Iterator):
            why = "is JSON but neither a trainer_state.json nor a table; expected "
            raise InputError("file", source, why + EXPECTED)
        return parse_table(data, source)
    parsers = {"torchtitan": parse_torchtitan, "megatron": parse_megatron, "hf-trainer": parse_hf_printed}
    if fmt not in parsers:
        raise InputError("format", fmt, f"one of {', '.join(FORMATS)}")
    return parsers[fmt](log.lines(), source)


def parse_log_text(text: str, source: str, fmt: str | None = None) -> TrainingLog:
    """Parse log text of format ``fmt`` (detected when None)."""
    return parse_log(LogText(text, source), fmt)


DETECT_BYTES = 8 << 20
"""A log's format is told from its first 8 MiB (a long preamble of arguments and NCCL lines
included); past that, --log-format names it, so an unknown 200 MB file is refused in a second."""


def detect_format(log: LogFile | LogText) -> str:
    head = log.head_text.lstrip()
    first_line = head.split("\n", 1)[0]
    if log.suffix in (".csv", ".jsonl") or _JSON_ARRAY.match(head) or _JSON_OBJECT.match(head):
        return "table"  # JSON objects: a trainer_state.json or a table, told apart after parsing
    if "," in first_line and "step" in [c.strip() for c in first_line.split(",")]:
        return "table"  # a CSV header
    seen = 0
    for chunk in log.chunks(DETECT_BYTES):  # ~1 MiB of whole lines at a time
        plain = _ANSI.sub("", chunk)
        if "elapsed time per iteration (ms)" in plain:
            return "megatron"
        if _TITAN_STEP.search(plain):
            return "torchtitan"
        if "'train_runtime'" in plain or "{'loss'" in plain:
            return "hf-trainer"
        seen += len(chunk)
    if seen >= DETECT_BYTES:
        raise InputError("file", log.source, f"has no line of a known format in its first {DETECT_BYTES >> 20} MiB; "
                         "give --log-format, or expected " + EXPECTED)
    raise InputError("file", log.source, "is not a format gpuplan recognises; expected " + EXPECTED)


_JSON_OBJECT = re.compile(r'\{\s*"')
_JSON_ARRAY = re.compile(r"\[\s*[{\]]")


def _structured(log: LogFile | LogText) -> Any:
    """CSV or JSON Lines rows (a generator: read line by line), or a parsed JSON document."""
    if log.suffix == ".csv" or not log.head_text.lstrip().startswith(("[", "{")):
        return csv_rows(log, EXPECTED)
    if is_json_lines(log):
        return json_lines(log)
    return parse_json(log.document(), "file", log.source)


def read_training_log(path: str | Path, fmt: str | None = None, max_bytes: int | None = None) -> TrainingLog:
    """Read a training log file, line by line; InputError naming the file and what was expected."""
    with LogFile(path, max_bytes) as log:
        return parse_log(log, fmt)
