"""Hostile input on the command line: every option of every command gets bad values (curated and
generated); the answer is always one line on stderr with exit status 2 (or a normal answer when a
generated value happens to be valid), never a traceback, never a hang, never a half-written file."""

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuplan.cli import main
from gpuplan.commands.reference import all_commands

# Commands whose options are fuzzed with everything else at its default. `serve` would start a
# server on a valid port: its options are checked on their own below. Output paths are fuzzed in
# a temporary folder.
SKIP = {"serve"}
NUMERIC_HINTS = ("number", "count", "fraction", "share", "days", "seconds")
BAD_FOR_ANY = ["", " ", "\x00", "a" * 300]
BAD_FOR_NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1", "8KK", "abc", "1" * 40, "0x10",
                   "½", "1,5", "--1"]
TIME_LIMIT = 10.0


def _option_matrix() -> list[tuple[str, str, bool]]:
    """(command, flag, numeric?) for every option that takes a value."""
    from gpuplan.commands import reference

    rows = []
    for name, command in all_commands().items():
        if name in SKIP:
            continue
        for info in reference.options(name, command):
            if info.is_flag or info.name in ("--format",):
                continue
            numeric = any(h in info.help.lower() for h in ("gib", "usd", "tokens", "gb/s")) or \
                _field_is_numeric(command, info.name)
            rows.append((name, info.name, numeric))
    return rows


def _field_is_numeric(command, flag: str) -> bool:
    """Is the schema field behind ``flag`` parsed as a number (its JSON schema says number)?"""
    field = flag[2:].replace("-", "_")
    schema = getattr(command, "gpuplan_schema", None)
    if schema is None or field not in schema.model_fields:
        return False
    from pydantic import TypeAdapter

    info = schema.model_fields[field]
    try:
        text = str(TypeAdapter(info.annotation).json_schema())
    except Exception:
        return False
    return "'number'" in text and "'enum'" not in text


MATRIX = _option_matrix()


def run(capsys, *args: str) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err, time.perf_counter() - start


def _args(command: str, flag: str, value: str) -> list[str]:
    return [*command.split(), f"{flag}={value}"]


def check(code: int, out: str, err: str, seconds: float) -> None:
    assert "Traceback" not in out + err and "internal error" not in err, err
    assert seconds < TIME_LIMIT, f"{seconds:.1f} s"
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.fixture(autouse=True)
def _sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # any file a valid --out names lands here
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a generated 'org/name' must not wait for a network


def test_the_matrix_covers_every_command():
    covered = {c for c, _, _ in MATRIX}
    assert covered >= {"train", "budget", "memory", "plan", "infer", "measure", "profile", "calibrate", "validate",
                       "report", "catalog models", "catalog gpus"}
    assert sum(numeric for _, _, numeric in MATRIX) >= 60, "numeric options are recognised"


@pytest.mark.parametrize("command, flag, numeric", MATRIX, ids=[f"{c} {f}" for c, f, _ in MATRIX])
def test_curated_bad_values(capsys, command, flag, numeric):
    values = BAD_FOR_ANY + (BAD_FOR_NUMBERS if numeric else [])
    if (command, flag) == ("plan", "--gpus"):
        values = [v for v in values if v != "1,5"]  # a list of two GPU counts: valid for plan
    for value in values:
        code, out, err, seconds = run(capsys, *_args(command, flag, value))
        check(code, out, err, seconds)
        assert code == 2, f"{command} {flag}={value!r} was accepted"


@settings(max_examples=900, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(row=st.sampled_from(MATRIX),
       value=st.one_of(st.text(max_size=40), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                       st.integers(min_value=-(10**30), max_value=10**30).map(str),
                       st.sampled_from(BAD_FOR_NUMBERS + BAD_FOR_ANY)))
def test_generated_values_never_crash(capsys, row, value):
    command, flag, _ = row
    if "\x00" in value:
        value = value.replace("\x00", "")
    code, out, err, seconds = run(capsys, *_args(command, flag, value))
    check(code, out, err, seconds)


@pytest.mark.parametrize("args", [
    ("serve", "--port", "99999"), ("serve", "--port", "0"), ("serve", "--port", "nan"), ("serve", "--port", ""),
    ("serve", "--host", ""), ("serve", "--calibration-dir", "/nonexistent"),
])
def test_serve_refuses_bad_options(capsys, args):
    code, out, err, seconds = run(capsys, *args)
    check(code, out, err, seconds)
    assert code == 2


def test_an_internal_error_is_one_line_not_a_traceback(capsys, monkeypatch):
    from gpuplan.jobs.training import estimate

    def broken(*args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(estimate, "training_report", broken)  # what `train` (the budget view) calls
    code, out, err, _ = run(capsys, "train")
    assert code == 70 and err.startswith("internal error: ZeroDivisionError: boom") and err.count("\n") == 1
    monkeypatch.setenv("GPUPLAN_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["train"])
    assert "GPUPLAN_DEBUG" in os.environ


# The reproducers reported against the landed code (issue 12), each refused in one line.
REPRODUCERS = [
    ("train", "--params", "0.001"), ("train", "--gpus", "0.5"), ("train", "--seq-len", "4096.7"),
    ("budget", "--token-bytes", "1.5"), ("budget", "--price", "inf"), ("budget", "--keep-checkpoints", "1e400"),
    ("budget", "--host-copy", "inf"), ("infer", "--context", "8KK"), ("train", "--dtype", "int8"),
    ("memory", "--gpus", "8", "--dp", "4"), ("memory", "--vpp", "2"), ("plan", "--implementation", "jax"),
    ("train", "--model", "x" * 300), ("train", "--gpu", ""), ("train", "--tokens", ""),
    ("plan", "--gpus", "1-1048576", "--top", "1000000000"), ("train", "--mfu", "predicted", "--gpus", str(2**60)),
]


@pytest.mark.parametrize("args", REPRODUCERS, ids=lambda a: " ".join(a)[:60])
def test_reported_reproducers_are_refused(capsys, args):
    code, out, err, seconds = run(capsys, *args)
    check(code, out, err, seconds)
    assert code == 2


@pytest.mark.parametrize("change, fragment", [
    ({"config": {"settings": {"seq_len": "abc"}}}, "seq_len"), ({"config": {"settings": {"seq_len": 0}}}, "seq_len"),
    ({"config": {"settings": {"seq_len": -64}}}, "seq_len"), ({"environment": {"world_size": "two"}}, "world_size"),
    ({"environment": {"world_size": 0}}, "world_size"),
    ({"results": {"memory": {"peak_allocated_bytes": -5}}}, "peak_allocated_bytes"),
])
def test_bad_measurement_files(capsys, tmp_path, change, fragment):
    import json

    data = {"schema_version": 1, "kind": "gpuplan.trial",
            "environment": {"device_type": "cpu", "world_size": 1},
            "config": {"model": "pythia-70m", "settings": {"micro_batch": 1, "seq_len": 64, "precision": "bf16",
                                                          "recompute": "none", "parallelism": "auto"}},
            "results": {"step_time_s": {"median": 0.5}, "tokens_per_s": 128.0,
                        "memory": {"peak_allocated_bytes": 1000}}}
    for part, values in change.items():
        for key, value in values.items():
            if isinstance(value, dict):
                data[part][key].update(value)
            else:
                data[part][key] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(data))
    code, out, err, seconds = run(capsys, "calibrate", str(path))
    check(code, out, err, seconds)
    assert code == 2 and fragment in err


def test_calibrate_checks_its_output_first(capsys, tmp_path):
    code, out, err, seconds = run(capsys, "calibrate", "nonexistent.json", "--out", str(tmp_path))
    assert code == 2 and "is a directory" in err


@pytest.mark.parametrize("args, field, reason", [
    (("plan", "--model", "llama-3.1-8b", "--gpus", "16", "--ep", "2"), "ep", "no experts"),
    (("train", "--model", "llama-3.1-8b", "--gpus", "16", "--ep", "2", "--mfu", "predicted"), "ep", "no experts"),
    (("plan", "--model", "qwen3-30b-a3b", "--gpus", "72", "--ep", "7"), "ep", "number of experts (128)"),
    (("budget", "--model", "llama-3.1-8b", "--gpus", "16", "--tp", "5"), "tp", "32 attention heads"),
    (("plan", "--model", "llama-3.1-8b", "--gpus", "64", "--pp", "64"), "pp", "32 layers"),
    (("plan", "--model", "llama-3.1-8b", "--gpus", "64", "--cp", "3"), "cp", "2 x cp must divide the sequence length 4,096"),
])
def test_a_fixed_degree_the_model_rules_out_is_named(capsys, args, field, reason):
    """A degree the model itself forbids is named, not reported as 'no layout can use these GPU
    counts' (which sends the user looking at the GPU count)."""
    code, out, err, seconds = run(capsys, *args)
    check(code, out, err, seconds)
    assert code == 2 and err.startswith(f"error: {field}: got ") and reason in err, err


@pytest.mark.parametrize("args, field", [
    (("plan", "--nic-gbit-per-gpu", "1e-300"), "nic_gbit_per_gpu"),
    (("plan", "--nic-gbit-per-gpu", "0.5"), "nic_gbit_per_gpu"),
    (("plan", "--attention-efficiency", "1e-300"), "attention_efficiency"),
    (("infer", "--bandwidth-efficiency", "1e-9"), "bandwidth_efficiency"),
    (("infer", "--compute-efficiency", "0.0005"), "compute_efficiency"),
])
def test_vanishing_speeds_are_refused_not_overflowed(capsys, args, field):
    """A 1e-300 Gb/s NIC or kernel efficiency used to overflow the time model into a plan of
    infinite days with numpy warnings; efficiencies start at 0.1%, NICs at 1 Gb/s."""
    code, out, err, seconds = run(capsys, *args)
    check(code, out, err, seconds)
    assert code == 2 and err.startswith(f"error: {field}:") and "Warning" not in err
