"""Hostile inputs, wave 8 (2026-12-05): the input layer's leftovers of wave 7 and a fresh sweep of the four
doors (CLI, plan files, web API, Python API), each refusal one line naming the field, exit status 2 (422 on
the web), no traceback, no hang.

- a refusal re-quoted with the text typed (errors.as_typed) or with the web's temporary config path taken out
  (web.service._without_path) came back as a plain InputError: a NoLayoutFits lost its type, which callers
  free to pick the GPU count catch (jobs.training.timing._first_fitting);
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import field_refusal

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60
"""Seconds any one case may take (a hang fails the case, it does not hold the suite)."""


def gpuplan(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """The installed CLI in a subprocess, time-boxed: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "gpuplan", *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    return TestClient(create_app())


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
