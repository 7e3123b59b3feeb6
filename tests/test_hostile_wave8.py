"""Hostile inputs, wave 8 (2026-12-05): the input layer's leftovers of wave 7 and a fresh sweep of the four
doors (CLI, plan files, web API, Python API), each refusal one line naming the field, exit status 2 (422 on
the web), no traceback, no hang.

- a refusal re-quoted with the text typed (errors.as_typed) or with the web's temporary config path taken out
  (web.service._without_path) came back as a plain InputError: a NoLayoutFits lost its type, which callers
  free to pick the GPU count catch (jobs.training.timing._first_fitting);
- a pasted config was built 8 times per web request (now 2), and its quantization_config checked where the CLI
  does not read it (infer --quantization fp8: refused on the web, answered on the CLI);
- plan files read 0x10 / 0o10 (YAML) and 0x10 / 0o10 / 0b1000 / 1_000 (TOML) as numbers the flags refuse, and
  .inf / .nan with another message;
- a number past float range or NaN in a pasted config (the web body) was quoted as 'inf' / 'Infinity' where the CLI
  quotes the same config.json's '1e400', and a checked key's 1e400 was refused for its range, not as written.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import field_refusal, one_line_refusal

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60
"""Seconds any one case may take (a hang fails the case, it does not hold the suite)."""


CASE_SECONDS = 120
"""Seconds any one test may take in-process (the slowest here takes ~1 s): past it the test fails as a hang."""


@pytest.fixture(autouse=True)
def time_box():
    """Each in-process case is time-boxed too (SIGALRM in the main thread, where the CLI and the test client's
    caller run), so a hang fails the case rather than the suite."""
    import signal

    def expire(signum, frame):
        raise TimeoutError(f"the case ran past {CASE_SECONDS} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(CASE_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def gpuplan(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """The installed CLI in a subprocess, time-boxed: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "gpuplan", *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


def web_refusal(response, field: str, fragment: str = "") -> str:
    """A 4xx naming ``field`` (the same one-line message as the CLI's); returns the message."""
    assert 400 <= response.status_code < 500, response.text[:400]
    body = response.json()
    message = body.get("message") or str(body.get("detail"))
    assert body.get("field") == field or message.startswith(f"{field}: "), body
    assert fragment in message and "\n" not in message and "Traceback" not in message, message
    return message


# ---- leftover 1: a re-quoted refusal keeps its type ------------------------------------------------------

def test_a_refusal_quoting_the_text_typed_keeps_its_type():
    from gpuplan.errors import NoLayoutFits, as_typed

    error = as_typed(NoLayoutFits("gpus", 8, "no layout fits"), {"gpus": "0.008k"})
    assert isinstance(error, NoLayoutFits) and str(error) == "gpus: got '0.008k'; no layout fits"


def test_the_python_api_raises_no_layout_fits_with_the_text_passed():
    from gpuplan import estimate_training
    from gpuplan.errors import NoLayoutFits

    with pytest.raises(NoLayoutFits, match=r"^gpus: got '0.008k'; no layout fits"):
        estimate_training({"model": "llama-3.1-405b", "gpu": "a100-40gb", "gpus": "0.008k"})


def test_the_web_config_path_taken_out_keeps_the_type(tmp_path):
    from gpuplan.errors import NoLayoutFits
    from gpuplan.web.service import _without_path

    path = tmp_path / "llama.json"
    error = _without_path(NoLayoutFits("gpus", 8, f"no layout fits {path}"), path)
    assert isinstance(error, NoLayoutFits) and str(error) == "gpus: got 8; no layout fits config.json"


# ---- leftover 2: a pasted config is built once per reading, and read as the CLI reads it -----------------

def _counting_builds(monkeypatch) -> list[str]:
    import gpuplan.adapters.hf_config as H
    import gpuplan.adapters.resolve as R

    names: list[str] = []
    original = H.model_spec_from_hf_config

    def counted(config, name="custom", *args, **kwargs):
        names.append(name)
        return original(config, name, *args, **kwargs)

    monkeypatch.setattr(H, "model_spec_from_hf_config", counted)
    monkeypatch.setattr(R, "_SPECS", {}, raising=False)
    return names


@pytest.mark.parametrize("digits", [100, 5000])
def test_a_long_integer_in_a_pasted_config_gets_the_files_line(client, run_cli, tmp_path, digits):
    """Review w8 r2 SHOULD 3: past Python's 4,300-digit int conversion limit the web said 'body: ...; is not valid
    JSON (Exceeds the limit (4300 digits) ...)' for valid JSON, where `gpuplan memory` on the same config.json says
    "config.json: intermediate_size: got '99999999999999999999...'; must be a finite JSON number"."""
    text = json.dumps(_LLAMA_CONFIG).replace("1376", "9" * digits)  # its intermediate_size
    (tmp_path / "config.json").write_text(text)
    line = field_refusal(run_cli("memory", str(tmp_path)), "config.json: intermediate_size", "finite JSON number")
    body = '{"config": ' + text + ', "gpu": "h100", "search": false}'
    response = client.post("/api/inference", content=body, headers={"content-type": "application/json"})
    assert f"error: {web_refusal(response, 'config.json: intermediate_size')}\n" == line


def test_a_long_integer_at_the_top_level_gets_the_flags_line(client, run_cli):
    """A top-level "gpus": <5,000 digits> was 'not valid JSON' too; now the line --gpus gives the same digits."""
    line = field_refusal(run_cli("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", "9" * 5000), "gpus",
                         "too long for a number")
    for gpus in ("9" * 5000, f"[8, {'9' * 5000}]"):
        body = '{"model": "llama-3.1-8b", "gpu": "h100", "gpus": ' + gpus + "}"
        response = client.post("/api/training", content=body, headers={"content-type": "application/json"})
        assert f"error: {web_refusal(response, 'gpus')}\n" == line


def test_the_spec_cache_evicts_the_least_recently_used(monkeypatch):
    """Review w8 r2 SHOULD 5: the 16-entry cache evicted first-in first-out, so a model read on every request was
    pushed out by 16 one-off configs (each web request's temp path is a new key). Now a hit moves it to the end:
    read 'hot', then 16 one-off configs with a read of 'hot' between each, and 'hot' is still kept (1 build)."""
    from gpuplan.adapters import resolve as R

    names = _counting_builds(monkeypatch)
    config = _LLAMA_CONFIG
    R.spec_of_config(config, "hot")
    for i in range(R.SPECS_KEPT + 4):
        R.spec_of_config({**config, "vocab_size": 1000 + i}, f"one-off {i}")
        R.spec_of_config(config, "hot")
    assert names.count("hot") == 1 and len(R._SPECS) == R.SPECS_KEPT
    R.spec_of_config({**config, "vocab_size": 1000}, "one-off 0")  # long evicted: built again
    assert names.count("one-off 0") == 2


_LLAMA_CONFIG = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1376, "num_hidden_layers": 2,
                 "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000,
                 "max_position_embeddings": 2048}


def test_a_pasted_config_is_built_once_for_the_request_model_and_once_as_the_job_reads_it(client, monkeypatch):
    """It was built 8 times per /api/training request (3 by web.service.check_config: twice in the request model's
    defaults, pydantic running the after-validators again around JobInputs.__init__, once by the service; 5 more
    as the job resolved the temporary file): now once as pasted (the layer / expert bounds, the structure) and
    once as the job reads its file, as the CLI reads a config.json."""
    from gpuplan.catalog import model_entry

    names = _counting_builds(monkeypatch)
    config = dict(model_entry("qwen2.5-0.5b")["config"])
    response = client.post("/api/training", json={"config": config, "gpu": "h100", "gpus": 8})
    assert response.status_code == 200, response.text[:300]
    assert len(names) == 2 and names[0] == "pasted-config", names


def test_a_catalog_model_is_built_once_per_command(monkeypatch, run_cli):
    names = _counting_builds(monkeypatch)
    code, _, err = run_cli("train", "qwen2.5-0.5b", "--gpu", "h100", "--gpus", "8")
    assert code == 0, err
    assert names == ["qwen2.5-0.5b"], names


@pytest.fixture
def bogus_quantization_config(tmp_path) -> tuple[dict, Path]:
    from gpuplan.catalog import model_entry

    config = dict(model_entry("qwen2.5-0.5b")["config"]) | {"quantization_config": {"quant_method": "bogus"}}
    path = tmp_path / "qwen" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return config, path


def test_a_malformed_quantization_config_is_read_alike_by_the_cli_and_the_web(client, run_cli,
                                                                              bogus_quantization_config):
    """infer --quantization fp8 replaces the checkpoint's format, so its quantization_config is not read: the CLI
    answered and the web API refused the same config pasted (its check read the quantization_config always).
    Without --quantization both refuse it, naming the key."""
    config, path = bogus_quantization_config
    code, _, err = run_cli("infer", str(path), "--gpu", "h100", "--no-search", "--quantization", "fp8")
    assert code == 0, err
    response = client.post("/api/inference", json={"config": config, "gpu": "h100", "search": False,
                                                   "quantization": "fp8"})
    assert response.status_code == 200, response.text[:300]
    line = field_refusal(run_cli("infer", str(path), "--gpu", "h100", "--no-search"),
                         "config.json: quantization_config.quant_method", "got 'bogus'")
    message = web_refusal(client.post("/api/inference", json={"config": config, "gpu": "h100", "search": False}),
                          "config.json: quantization_config.quant_method", "got 'bogus'")
    assert line == f"error: {message}\n"


# ---- leftover 4: plan-file numbers read as the flags read them -------------------------------------------

def _plan(tmp_path, suffix: str, gpus: str) -> Path:
    plan = tmp_path / f"plan{suffix}"
    if suffix == ".toml":
        plan.write_text(f'model = "llama-3.1-8b"\ngpu = "h100"\ngpus = {gpus}   # a comment\n')
    else:
        plan.write_text(f"model: llama-3.1-8b\ngpu: h100\ngpus: {gpus}\n")
    return plan


@pytest.mark.parametrize("suffix, typed", [(".yaml", "0x10"), (".yaml", "0o10"), (".yaml", ".inf"), (".yaml", "-.inf"),
                                           (".yaml", ".nan"), (".yaml", "1_000"), (".yaml", "1:04"),
                                           (".toml", "0x10"), (".toml", "0o10"), (".toml", "0b1000"),
                                           (".toml", "1_000"), (".toml", "inf"), (".toml", "nan"), (".toml", "-inf")])
def test_a_number_written_otherwise_is_refused_in_a_plan_file_as_on_the_cli(run_cli, client, tmp_path, suffix, typed):
    """`gpus: 0x10` (YAML 1.2 hex) and `gpus = 0x10` / `0o10` / `0b1000` / `1_000` (TOML) planned 16 / 8 / 8 / 1,000
    GPUs where --gpus 0x10 and the web's "0x10" were refused; YAML's .inf was refused with another message ('got inf;
    must be a finite number'). Every door now quotes the text with the same reason."""
    cli = field_refusal(run_cli("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", typed), "gpus", f"got {typed!r}")
    plan = _plan(tmp_path, suffix, typed)
    from_file = field_refusal(run_cli("train", str(plan)), f"{plan}: gpus", f"got {typed!r}")
    assert from_file.split(": gpus: ", 1)[1] == cli.split("error: gpus: ", 1)[1]
    web = web_refusal(client.post("/api/training", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": typed}),
                      "gpus")
    assert f"error: {web}\n" == cli


@pytest.mark.parametrize("suffix, typed, gpus", [(".yaml", "010", 10), (".yaml", "1e3", 1000), (".yaml", "1.0e+3", 1000),
                                                 (".yaml", "+16", 16), (".toml", "1e3", 1000), (".toml", "1.0e+3", 1000),
                                                 (".toml", "16.0", 16)])
def test_a_plain_number_means_the_same_at_every_door(run_json, client, tmp_path, suffix, typed, gpus):
    """'010' is 10 (YAML 1.2; YAML 1.1 read 8), as --gpus 010 and the web's "010"."""
    assert run_json("train", str(_plan(tmp_path, suffix, typed)))["results"]["gpus"] == gpus
    assert run_json("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", typed)["results"]["gpus"] == gpus
    response = client.post("/api/training", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": typed})
    assert response.status_code == 200 and response.json()["results"]["gpus"] == gpus, response.text[:300]


@pytest.mark.parametrize("suffix, body, got, typed", [
    (".toml", "gpus = [0x10, 0o10]\n", "['0x10', '0o10']", "0x10,8"),
    (".toml", "gpus = [0x10, 8]\n", "['0x10', 8]", "0x10,8"),
    (".toml", "gpus = [\n  1_000,  # a comment\n  8,\n]\n", "['1_000', 8]", "1_000,8"),
    (".toml", '"gp\\u0075s" = 0x10\n', "'0x10'", "0x10,8"),
    (".toml", "'gpus' = inf\n", "'inf'", "inf"),
    (".yaml", "gpus: [0x10, 8]\n", "['0x10', 8]", "0x10,8"),
    (".yaml", "gpus:\n  - 16\n  - 0o10\n", "[16, '0o10']", "0x10,8"),
])
def test_a_number_written_otherwise_inside_a_list_or_under_an_escaped_key_is_refused(run_cli, tmp_path, suffix, body,
                                                                                     got, typed):
    """Review w8 r2 MUST 1: the TOML check looked for the key's `key = value` line as text and checked top-level
    numbers only, so `gpus = [0x10, 0o10]` planned 16 and 8 GPUs (exit 0), `"gp\\u0075s" = 0x10` (a TOML escape in
    the key) planned 16. Now every number in a value is read from its own text, wherever it stands, and refused as
    --gpus 0x10,8 is."""
    head = 'model = "llama-3.1-8b"\ngpu = "h100"\n' if suffix == ".toml" else "model: llama-3.1-8b\ngpu: h100\n"
    plan = tmp_path / f"plan{suffix}"
    plan.write_text(head + body)
    cli = field_refusal(run_cli("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", typed), "gpus")
    line = field_refusal(run_cli("plan", str(plan)), f"{plan}: gpus", f"got {got}")
    assert line.split(";", 1)[1] == cli.split(";", 1)[1]


def test_a_key_line_inside_a_multi_line_string_does_not_shadow_the_value():
    """Review w8 r2: the line lookup found `gpus = 16` inside an earlier multi-line string and kept the real 0x10."""
    from gpuplan.adapters.plan_formats import parse_toml

    text = 'note = """\ngpus = 16\n"""\nlit = \'\'\'\ngpus = 8\'\'\'\'\ngpus = 0x10 # 16\n'
    data = parse_toml(text, "plan", "p.toml")
    assert data == {"note": "gpus = 16\n", "lit": "gpus = 8'", "gpus": "0x10"}


@pytest.mark.parametrize("body, gpus", [("gpus = [16, 8]\n", "16,8"), ('"gp\\u0075s" = 16\n', "16"),
                                        ("[extra]\n0x10 = 'a key, not a number'\n", None)])
def test_a_plain_list_and_a_key_that_looks_like_a_number_are_kept(tmp_path, body, gpus):
    """The scanner quotes values only: plain lists keep their numbers, and a bare key spelled like a number stays
    a key (TOML 1.0: bare keys may be all digits and letters)."""
    from gpuplan.adapters.plan_formats import parse_toml

    data = parse_toml('model = "llama-3.1-8b"\n' + body, "plan", "plan.toml")
    if gpus is None:
        assert data["extra"] == {"0x10": "a key, not a number"}
    else:
        values = data["gpus"] if isinstance(data["gpus"], list) else [data["gpus"]]
        assert ",".join(map(str, values)) == gpus and all(type(g) is int for g in values), values


# ---- leftover 5: a boolean written as text means the same at every door --------------------------------

TRUE_WORDS = ("true", "yes", "on", "1", "True", " TRUE ")
FALSE_WORDS = ("false", "no", "off", "0")


@pytest.mark.parametrize("word", [*TRUE_WORDS, *FALSE_WORDS, True, False, 1, 0])
def test_a_boolean_as_text_means_the_same_on_the_web_in_a_plan_file_and_in_python(client, run_cli, tmp_path, word):
    """The schema reads true/false, yes/no, on/off and 1/0 (types.boolean, documented on --help): the web API's
    "true", a plan file's `compile: "true"` or `compile: yes` and the Python API's compile='1' all mean true.
    `compile` is torchtitan's, so a true value with --framework megatron is refused naming it, a false one
    answers, at every door."""
    from gpuplan import estimate_training
    from gpuplan.errors import InputError

    truthy = word is True or word == 1 or (isinstance(word, str) and word.strip().lower() in TRUE_WORDS)
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "framework": "megatron", "compile": word}
    response = client.post("/api/training", json=body)
    plan = tmp_path / "plan.yaml"
    plan.write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in body.items()))
    code, _, err = run_cli("train", str(plan))
    if truthy:
        web_refusal(response, "compile", "torchtitan")
        assert code == 2 and ": compile: " in err, err
        with pytest.raises(InputError, match="^compile: "):
            estimate_training(body)
    else:
        assert response.status_code == 200 and code == 0, (response.text[:300], err)
        estimate_training(body)


@pytest.mark.parametrize("word", ["2", 2, 0.5, "y", "n", "", "truee", "1.0", [True], {"a": 1}])
def test_other_values_for_a_boolean_are_refused_alike(client, word):
    from gpuplan.errors import InputError
    from gpuplan.jobs.training.schema import TrainingInputs

    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "framework": "torchtitan", "compile": word}
    message = web_refusal(client.post("/api/training", json=body), "compile")
    with pytest.raises(InputError) as caught:
        TrainingInputs.parse(body)
    assert str(caught.value) == message


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


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_plan_file_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    """No hang on a FIFO or /dev/zero (a subprocess with a time limit), one line naming the file."""
    _refused(gpuplan("train", str(_special_path(tmp_path, kind))))


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_calibration_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    path = _special_path(tmp_path, kind, "calibration.json")
    _refused(gpuplan("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--calibration", str(path)),
             "calibration")


@pytest.mark.parametrize("kind", SPECIAL)
def test_a_model_config_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    _refused(gpuplan("memory", str(_special_path(tmp_path, kind, "config.json")), "--gpu", "h100"))


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
def test_a_malformed_calibration_file_is_one_line(tmp_path, case):
    path = tmp_path / "calibration.json"
    path.write_text(CALIBRATIONS[case])
    _refused(gpuplan("train", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--calibration", str(path)),
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
def test_a_malformed_plan_file_is_one_line(tmp_path, case):
    path = tmp_path / "plan.yaml"
    if PLAN_TEXTS[case] is None:
        path.write_bytes(b"model: llama-\xff\xfe-8b\n")
    else:
        path.write_text(PLAN_TEXTS[case])
    _refused(gpuplan("train", str(path)))


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
def test_a_non_finite_number_in_a_pasted_config_is_refused_as_in_the_file(client, tmp_path, key, literal):
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
    code, out, err = gpuplan("memory", str(path), "--gpu", "h100")
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


# ---- leftover 6: a GPU range with a deadline says which counts it searched ----------------------------------

RANGE_NOTE = ("--gpus 100-300 searched 4 GPU counts (100, 128, 256, 300: a range stands for its powers of two and "
              "both ends)")


def test_a_range_with_a_deadline_says_which_counts_were_searched(run_json, client):
    """`plan --gpus 100-300 --days 10` answers 256 GPUs (the fewest of 128 and 256 meeting 10 days) where the same
    plan without --gpus finds 208: the answer now says the range stood for its powers of two and how to search
    between them, at the CLI, the web API and the Python API alike."""
    from gpuplan import plan_report

    cli = run_json("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "100-300", "--days", "10")
    assert cli["results"]["best_gpus"] == 256 and any(RANGE_NOTE in note for note in cli["notes"]), cli["notes"]
    free = run_json("plan", "llama-3.1-8b", "--gpu", "h100", "--days", "10")["results"]["best_gpus"]
    assert 128 < free < 256  # what the note points to: the counts between were not searched
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": "100-300", "days": 10}
    assert any(RANGE_NOTE in note for note in client.post("/api/plan", json=body).json()["notes"])
    assert any(RANGE_NOTE in note for note in plan_report(body).notes)


@pytest.mark.parametrize("gpus, days", [("128,256", "10"), ("100-300", None), ("256", "10")])
def test_no_range_note_without_a_range_and_a_deadline(run_json, gpus, days):
    args = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", gpus) + (("--days", days) if days else ())
    assert not any("a range stands" in note for note in run_json(*args)["notes"])


# ---- the sweep finding: a refusal inside a calibration names its place at every door --------------------------

def test_a_nan_inside_a_calibration_names_its_key_on_the_cli_as_on_the_web(client, run_cli, tmp_path):
    """The CLI said 'calibration: got 'NaN'' (schema.base.error_from_detail kept only the field's name of the
    reader's 'calibration: schema_version'), the web API 'calibration: schema_version: got 'NaN''; both now name
    the key."""
    log = ROOT / "tests" / "fixtures" / "logs" / "megatron_mixtral.log"
    made = tmp_path / "calibration.json"
    assert run_cli("calibrate", str(log), "--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len",
                   "2048", "--ep", "4", "--zero", "1", "--out", str(made), "--json")[0] == 0
    text = re.sub(r'"schema_version": [0-9]+', '"schema_version": NaN', made.read_text(), count=1)
    assert "NaN" in text
    broken = tmp_path / "broken.json"
    broken.write_text(text)
    err = field_refusal(run_cli("train", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--calibration", str(broken)),
                        "calibration: schema_version", "got 'NaN'; must be a finite JSON number")
    body = '{"model": "mixtral-8x7b", "gpu": "h100", "gpus": 16, "calibration": ' + text + "}"
    response = client.post("/api/training", content=body, headers={"content-type": "application/json"})
    assert err == f"error: {web_refusal(response, 'calibration: schema_version')}\n"
