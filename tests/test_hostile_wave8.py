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
