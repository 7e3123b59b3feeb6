"""Hostile inputs, wave 8 (2026-12-05), the sweep of the four doors (CLI, plan files, web API, Python API):
files a plan, a config or a calibration names, every numeric option, paths in web requests, hostile names and
unknown choices, contradictory inputs, and what the sweep found (non-finite numbers in a pasted config or a body,
a deadline of minutes). Each refusal one line naming the field, exit status 2 (422 on the web), no traceback, no
hang. The wave's leftovers of wave 7 are tests/test_hostile_wave8.py."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import field_refusal, one_line_refusal, web_refusal

TIMEOUT_S = 60
"""Seconds any one subprocess case may take (a hang fails the case, it does not hold the suite)."""
pytestmark = pytest.mark.usefixtures("time_box")  # conftest: in-process cases are time-boxed too


def gpuplan(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """The installed CLI in a subprocess, time-boxed: (exit status, stdout, stderr); only for BLOCKING files (the
    rest run in-process through ``cli``: gpuplan.cli.main, ~0.3 s of CPU less a case than a Python start)."""
    done = subprocess.run([sys.executable, "-m", "gpuplan", *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


# ---- the sweep: files a plan, a config or a calibration names --------------------------------------------

def _refused(result: tuple[int, str, str], fragment: str = "") -> str:
    """exit 2, one 'error: ' line naming a field (text before ': '), no traceback, nothing on stdout."""
    code, out, err = result
    one_line_refusal(code, err, fragment)
    assert out == "" and ": " in err[len("error: "):], (out[-300:], err)
    return err


def _special_path(tmp_path: Path, kind: str, name: str = "plan.yaml") -> Path:
    import os

    if kind == "dev-zero":
        return Path("/dev/zero")
    if kind == "directory":
        folder = tmp_path / name
        folder.mkdir()
        return folder
    if kind == "fifo":
        fifo = tmp_path / name
        os.mkfifo(fifo)
        return fifo
    if kind == "missing":
        return tmp_path / f"missing-{name}"
    link = tmp_path / name
    link.symlink_to({"dangling-link": tmp_path / f"nowhere-{name}", "link-loop": link,
                     "link-to-dev-zero": Path("/dev/zero")}[kind])
    return link


SPECIAL = ("dev-zero", "directory", "fifo", "missing", "dangling-link", "link-loop", "link-to-dev-zero")
BLOCKING = ("dev-zero", "fifo", "link-to-dev-zero")  # a read could block or never end (one C call SIGALRM cannot stop)


@pytest.fixture
def cli(run_cli):
    """run_cli failing on any Python warning (pytest records them in-process; a subprocess printed them to stderr)."""
    def run(*args: str) -> tuple[int, str, str]:
        with warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            result = run_cli(*args)
        assert not raised, [str(w.message) for w in raised]
        return result
    return run


def _door(cli, kind: str):
    return gpuplan if kind in BLOCKING else cli  # a time-boxed subprocess where a read could block


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_plan_file_that_is_no_regular_file_is_refused_at_once(cli, tmp_path, kind):
    """No hang on a FIFO or /dev/zero (a subprocess with a time limit), one line naming the file."""
    _refused(_door(cli, kind)("train", str(_special_path(tmp_path, kind))))


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_calibration_that_is_no_regular_file_is_refused_at_once(cli, tmp_path, kind):
    path = _special_path(tmp_path, kind, "calibration.json")
    _refused(_door(cli, kind)("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--calibration", str(path)),
             "calibration")


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_model_config_that_is_no_regular_file_is_refused_at_once(cli, tmp_path, kind):
    _refused(_door(cli, kind)("memory", str(_special_path(tmp_path, kind, "config.json")), "--gpu", "h100"))


CALIBRATIONS = {
    "empty": "",
    "not-json": "{",
    "a-list": "[]",
    "a-scalar": "3",
    "nan": '{"factors": NaN}',
    "infinity": '{"factors": {"x": Infinity}}',
    "duplicate-keys": '{"factors": {}, "factors": {}}',
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge-int": '{"factors": {"x": ' + "9" * 400 + "}}",
    "unknown-key": '{"bogus": 1}',
    "binary": "\x00\x01\x02",
}


@pytest.mark.parametrize("case", sorted(CALIBRATIONS))
def test_a_malformed_calibration_file_is_one_line(cli, tmp_path, case):
    path = tmp_path / "calibration.json"
    path.write_text(CALIBRATIONS[case])
    _refused(cli("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--calibration", str(path)),
             "calibration")


PLAN_TEXTS = {
    "a-list": "- model: llama-3.1-8b\n",
    "a-scalar": "llama-3.1-8b\n",
    "a-number": "8\n",
    "duplicate-key": "model: llama-3.1-8b\ngpus: 8\ngpus: 16\n",
    "billion-laughs": "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
    "an-alias-as-a-value": "model: &m llama-3.1-8b\ngpu: *m\n",
    "deep": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-mapping": "".join(f"{'  ' * i}k{i}:\n" for i in range(400)) + "  " * 400 + "x: 1\n",
    "python-tag": "model: !!python/object/apply:os.system ['true']\n",
    "a-key-that-is-a-list": "? [a, b]\n: 1\n",
    "a-null-key": "~: 1\nmodel: llama-3.1-8b\n",
    "a-mapping-as-a-value": "model: {name: llama-3.1-8b}\n",
    "a-list-as-the-gpu": "model: llama-3.1-8b\ngpu: [h100, a100]\n",
    "binary": "model: \x00\x01\n",
    "not-utf8": None,
    "tab-indent": "model: llama-3.1-8b\n\tgpus: 8\n",
    "unknown-key": "model: llama-3.1-8b\nbogus: 1\n",
    "nested-plan": "train:\n  model: llama-3.1-8b\n",
}


@pytest.mark.parametrize("case", sorted(PLAN_TEXTS))
def test_a_malformed_plan_file_is_one_line(cli, tmp_path, case):
    path = tmp_path / "plan.yaml"
    if PLAN_TEXTS[case] is None:
        path.write_bytes(b"model: llama-\xff\xfe-8b\n")
    else:
        path.write_text(PLAN_TEXTS[case])
    _refused(cli("train", str(path)))


# ---- the sweep: every numeric option of train / plan / memory / infer / budget -----------------------------

COMMANDS = {"train": ("training", ("llama-3.1-8b", "--gpu", "h100", "--gpus", "8")),
            "budget": ("budget", ("llama-3.1-8b", "--gpu", "h100", "--gpus", "8")),
            "memory": ("memory", ("llama-3.1-8b", "--gpu", "h100", "--gpus", "8")),
            "plan": ("plan", ("llama-3.1-8b", "--gpu", "h100", "--gpus", "8")),
            "infer": ("inference", ("llama-3.1-8b", "--gpu", "h100"))}
HOSTILE_NUMBERS = ("nan", "inf", "-inf", "-1", "1e400", "9" * 400, "1e-400", "NaN%", "0x10", "٣", "1/0")
"""Text no numeric option reads as a number it can use (a count, a rate, a fraction, a duration, a size)."""


NUMBER_WORDS = ("number", "integer", "duration", "%", "count")
"""Words in an InputError's 'expected' that mark a numeric field."""


def _value_options(command: str) -> list[str]:
    """The options of ``command`` that read their value as a number ('abc' refused naming the field, for wanting
    one of NUMBER_WORDS): found by asking the schema, so a new option is swept without a change here."""
    from gpuplan.errors import InputError
    from gpuplan.jobs import JOBS

    name, base = COMMANDS[command]
    schema = JOBS[name].schema
    body = {"model": "llama-3.1-8b", "gpu": "h100"} | ({"gpus": 8} if name != "inference" else {})
    numeric = []
    for field in schema.model_fields:
        if field in body or schema.model_fields[field].annotation is bool:
            continue
        try:
            schema.parse(body | {field: "abc"})
        except InputError as exc:
            # refused naming the field, for wanting a number of some kind ('abc' accepted: a name or free text)
            if str(exc).startswith(field) and any(word in exc.expected for word in NUMBER_WORDS):
                numeric.append(field)
    return numeric


SWEPT = [(command, field) for command in COMMANDS for field in _value_options(command)]


def test_the_sweep_covers_the_numeric_options():
    """A floor, so an import-time change that empties the list fails here rather than passing vacuously."""
    by_command = {c: [f for cc, f in SWEPT if cc == c] for c in COMMANDS}
    assert all(len(fields) >= 5 for fields in by_command.values()), by_command
    assert ("train", "gpus") not in SWEPT and ("plan", "days") in SWEPT and ("infer", "rps") in SWEPT


@pytest.mark.parametrize("command, field", SWEPT)
def test_a_hostile_number_is_refused_naming_its_option(run_cli, command, field):
    _, base = COMMANDS[command]
    option = "--" + field.replace("_", "-")
    for text in HOSTILE_NUMBERS:
        code, out, err = run_cli(command, *base, option, text)
        one_line_refusal(code, err, f"error: {field}")
        assert out == "" and err.startswith(f"error: {field}") and "internal error" not in err, (text, err)


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 10**400, 1e308, -0.0])
def test_the_web_refuses_what_the_cli_refuses_for_each_numeric_field(client, run_cli, command, value):
    """The same field, the same line (JSON has no NaN / Infinity: the body is built in Python and sent as
    text, which read_body refuses naming the key, or as the number where JSON has one)."""
    name, base = COMMANDS[command]
    fields = [f for c, f in SWEPT if c == command]
    for field in fields:
        body = {"model": "llama-3.1-8b", "gpu": "h100"} | ({"gpus": 8} if name != "inference" else {})
        if isinstance(value, float) and value != value or value in (float("inf"),):
            text = json.dumps(body | {field: value})  # NaN / Infinity literals
            response = client.post(f"/api/{name}", content=text, headers={"content-type": "application/json"})
            web_refusal(response, field)
            continue
        response = client.post(f"/api/{name}", json=body | {field: value})
        code, _, err = run_cli(command, *base, "--" + field.replace("_", "-"), repr(value) if value == 1e308 else
                               str(value))
        if code == 0:
            assert response.status_code == 200, (field, value, response.text[:300])
            continue
        message = web_refusal(response, field)
        # the same field refused at both doors; the reason may differ with the form: the CLI's text '-1' for a
        # duration needs a unit where the body's number is seconds, 10**400 as text is too long, as a number too large
        assert err.startswith(f"error: {field}: got "), (err, message)


# ---- the sweep: the web API never opens a path a request names --------------------------------------------

WEB_BASE = {"training": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8},
            "budget": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8},
            "memory": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8},
            "plan": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8},
            "inference": {"model": "llama-3.1-8b", "gpu": "h100"}}


@pytest.fixture
def touched(monkeypatch, tmp_path):
    """(a folder holding a readable config.json and plan file, the paths under it that were stat'ed or opened)."""
    import os

    from gpuplan.catalog import model_entry

    folder = tmp_path / "private"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "config.json").write_text(json.dumps(model_entry("qwen2.5-0.5b")["config"]))
    (folder / "plan.yaml").write_text("model: qwen2.5-0.5b\n")
    seen: list[str] = []

    def spying(real):
        def call(path, *args, **kwargs):
            if str(folder) in str(path):
                seen.append(str(path))
            return real(path, *args, **kwargs)
        return call

    for name in ("stat", "lstat", "open", "scandir", "listdir"):
        monkeypatch.setattr(os, name, spying(getattr(os, name)))
    import builtins
    import io

    monkeypatch.setattr(builtins, "open", spying(builtins.open))
    monkeypatch.setattr(io, "open", spying(io.open))
    return folder, seen


def test_the_spy_sees_a_path_the_cli_opens(touched):
    """The control: the CLI's resolver does open the same path (so an empty list below means not opened)."""
    from gpuplan.adapters.resolve import resolve_model

    folder, seen = touched
    resolve_model(str(folder / "model" / "config.json"))
    assert seen


@pytest.mark.parametrize("name", sorted(WEB_BASE))
def test_a_path_in_any_field_of_a_request_is_never_opened(client, touched, name):
    """Every field of the job's schema (and `config`) given a path to a readable config.json, its folder or a
    plan file: refused (4xx), and nothing under that folder stat'ed or opened."""
    from gpuplan.jobs import JOBS

    folder, seen = touched
    paths = (folder / "model" / "config.json", folder / "model", folder / "plan.yaml")
    for field in [*JOBS[name].schema.model_fields, "config"]:
        for path in paths:
            response = client.post(f"/api/{name}", json=WEB_BASE[name] | {field: str(path)})
            assert 400 <= response.status_code < 500, (field, path, response.text[:300])
    assert seen == []


# ---- the sweep: names with control characters, bidi overrides, huge text; unknown choices ----------------

NAMES = ["llama\x1b[31m-3.1-8b", "llama\u202e-3.1-8b", "llama-3.1-8b\x00", "\u200b", "l" * 100_000, "🦙", "llama\n3",
         "llama\r\nx", " ", "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace")]


@pytest.mark.parametrize("field", ["model", "gpu"])
@pytest.mark.parametrize("text", NAMES, ids=range(len(NAMES)))
def test_a_hostile_name_is_one_printable_line(client, run_cli, field, text):
    """The refusal names the field, escapes control / bidi characters (no terminal escape reaches the screen)
    and cuts a long name (the 100,000-character name is quoted in at most a few hundred)."""
    args = {"model": "llama-3.1-8b", "gpu": "h100"} | {field: text}
    err = field_refusal(run_cli("memory", args["model"], "--gpu", args["gpu"]), field)
    assert err[:-1].isprintable(), repr(err)  # the one line, its newline aside (one_line_refusal)
    assert len(err) < 2_000, len(err)
    message = web_refusal(client.post("/api/memory", json=args), field)
    assert message.isprintable() and len(message) < 2_000


@pytest.mark.parametrize("command, option, word", [
    ("train", "--framework", "megatronn"), ("train", "--recompute", "partial"), ("plan", "--rank-by", "speed"),
    ("memory", "--zero", "4"), ("infer", "--engine", "tensorrt"), ("infer", "--quantization", "int3"),
    ("train", "--recipe", "fp4"), ("budget", "--storage", "tape"), ("memory", "--optimizer", "sgd\x1b")])
def test_an_unknown_choice_is_one_line_naming_the_valid_ones(client, run_cli, command, option, word):
    name, base = COMMANDS[command]
    field = option[2:].replace("-", "_")
    err = field_refusal(run_cli(command, *base, option, word), field)
    assert err[:-1].isprintable(), repr(err)
    body = {"model": "llama-3.1-8b", "gpu": "h100"} | ({"gpus": 8} if name != "inference" else {}) | {field: word}
    message = web_refusal(client.post(f"/api/{name}", json=body), field)
    assert err == f"error: {message}\n"


# ---- the sweep: inputs that contradict each other ------------------------------------------------------------

CONTRADICTIONS = [
    ("train", ("llama-3.1-8b", "--gpus", "8", "--tp", "4", "--pp", "2", "--cp", "2"), "tp"),
    ("plan", ("llama-3.1-8b", "--gpus", "8", "--tp", "4", "--pp", "2", "--cp", "2"), "tp"),
    ("memory", ("llama-3.1-8b", "--gpus", "8", "--tp", "4", "--pp", "2", "--cp", "2"), "gpus"),
    ("budget", ("llama-3.1-8b", "--gpus", "8", "--tp", "4", "--pp", "2", "--cp", "2"), "tp"),
    ("train", ("mixtral-8x7b", "--gpus", "24", "--ep", "3"), "ep"),
    ("plan", ("mixtral-8x7b", "--gpus", "24", "--ep", "3"), "ep"),
    ("memory", ("mixtral-8x7b", "--gpus", "24", "--ep", "3"), "ep"),
    ("train", ("llama-3.1-8b", "--gpus", "8", "--micro-batch", "64", "--global-batch", "32"), "micro_batch"),
    ("plan", ("llama-3.1-8b", "--gpus", "8", "--micro-batch", "64", "--global-batch", "32"), "micro_batch"),
    ("memory", ("llama-3.1-8b", "--gpus", "8", "--micro-batch", "64", "--global-batch", "32"), "micro_batch"),
    ("train", ("gpt2", "--gpus", "8", "--seq-len", "2048"), "seq_len"),
    ("plan", ("gpt2", "--gpus", "8", "--seq-len", "2048"), "seq_len"),
    ("memory", ("gpt2", "--gpus", "8", "--seq-len", "2048"), "seq_len"),
    ("infer", ("llama-3.1-8b", "--gpus", "8", "--tp", "16"), "gpus"),
    ("infer", ("llama-3.1-8b", "--tp", "3"), "tp"),
    ("budget", ("llama-3.1-8b", "--gpus", "8", "--tp", "16"), "tp"),
]


@pytest.mark.parametrize("command, args, field", CONTRADICTIONS)
def test_contradictory_inputs_are_refused_alike_by_the_cli_and_the_web(client, run_cli, command, args, field):
    err = field_refusal(run_cli(command, *args, "--gpu", "h100"), field)
    name = COMMANDS[command][0]
    body = {"model": args[0], "gpu": "h100"}
    for option, value in zip(args[1::2], args[2::2], strict=True):
        body[option[2:].replace("-", "_")] = value
    message = web_refusal(client.post(f"/api/{name}", json=body), field)
    assert err == f"error: {message}\n"


# ---- the sweep finding: a pasted config's non-finite number is refused as the same config.json is ---------------

@pytest.mark.parametrize("key, literal", [("rope_theta", "1e400"), ("rope_theta", "-1e400"), ("initializer_range", "NaN"),
                                          ("bogus", "Infinity"), ("bogus", "1e400"), ("bogus", "9" * 100),
                                          ("layer_types", "[1e400]")])
def test_a_non_finite_number_in_a_pasted_config_is_refused_as_in_the_file(client, cli, tmp_path, key, literal):
    """{"config": {..., "rope_theta": 1e400}} was refused as "rope_theta: got inf; must be a positive number or
    null" and an unread key's 1e400 quoted as 'Infinity' (the service wrote the parsed config back out), where the
    CLI reading the same text as config.json says "config.json: rope_theta: got '1e400'; must be a finite JSON
    number": web.body.read_body keeps such numbers as written (adapters.files.JSON_FLOAT_HOOKS) and refuses them
    with parse_json's line."""
    from gpuplan.catalog import model_entry

    config = {k: v for k, v in model_entry("qwen2.5-0.5b")["config"].items() if k != key}
    text = json.dumps(config)[:-1] + f', "{key}": {literal}}}'
    path = tmp_path / "qwen" / "config.json"
    path.parent.mkdir()
    path.write_text(text)
    code, out, err = cli("memory", str(path), "--gpu", "h100")
    assert code == 2 and err.startswith(f"error: config.json: {key}") and "must be a finite JSON number" in err, err
    response = client.post("/api/memory", content='{"gpu": "h100", "config": ' + text + "}",
                           headers={"content-type": "application/json"})
    field = f"config.json: {key}" + ("[0]" if literal.startswith("[") else "")
    assert f"error: {web_refusal(response, field)}\n" == err


@pytest.mark.parametrize("body, field", [('{"gpus": NaN}', "gpus"), ('{"mfu": -Infinity}', "mfu"),
                                         ('{"days": 1e400}', "days"), ('{"gpus": [1e400]}', "gpus[0]"),
                                         ('{"calibration": {"factors": {"x": NaN}}}', "calibration: factors.x")])
def test_a_non_finite_number_in_a_body_names_its_field_as_written(client, body, field):
    response = client.post("/api/training", content=body, headers={"content-type": "application/json"})
    message = web_refusal(response, field, "must be a finite JSON number")
    assert message.startswith(f"{field}: got '")


def test_a_top_level_integer_past_64_digits_is_still_its_fields_range(client):
    """Integers stay Python's at the top level (the field says what is valid: gpus at most 10,000,000)."""
    response = client.post("/api/training", content='{"gpus": ' + "9" * 100 + "}",
                           headers={"content-type": "application/json"})
    web_refusal(response, "gpus", "must be > 0")


# ---- the sweep finding: a deadline far too short for the GPUs given ------------------------------------------

@pytest.mark.parametrize("command", ["train", "budget"])
def test_a_deadline_of_minutes_on_a_few_gpus_is_refused_not_an_internal_error(client, run_cli, command):
    """`--gpus 8 --days 30min` searched for the GPU count the solved MFU needs, met counts where failures come
    faster than a checkpoint and a restart, and the refusal there read PlanInputs.gpu_counts, which train's and
    budget's inputs do not have: exit 70 (AttributeError) and HTTP 500. Now the MFU refusal, exit 2 / 422."""
    field_refusal(run_cli(command, "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--days", "30min"), "gpus/days",
                  "needs MFU")
    name = COMMANDS[command][0]
    response = client.post(f"/api/{name}", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "days": "30min"})
    web_refusal(response, "gpus/days", "needs MFU")
