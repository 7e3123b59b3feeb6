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
from pathlib import Path

import pytest
from helpers import field_refusal, web_refusal

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite
# The sweep of the four doors is tests/test_hostile_wave8_sweep.py.


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
    R._kept_spec.cache_clear()  # builds counted from an empty cache
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
    assert names.count("hot") == 1 and R._kept_spec.cache_info().currsize == R.SPECS_KEPT
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
    # by hand: 2T tokens x 51.47 GFLOP a token (exact, seq 4,096) = 1.029e23 FLOPs in 10 days (864,000 s) of H100s
    # (989.4 TFLOP/s) need MFU 94% on 128 (above any layout's) and 47% on 256: 256 is the fewest if its MFU is between
    assert 1.029e23 / (256 * 989.4e12 * 864_000) < cli["results"]["best_mfu"] < 1.029e23 / (128 * 989.4e12 * 864_000)
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
