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
