"""A calibration file's reference.framework / reference.dtype are checked against the schema's words (review R2 S2-5),
and its warning is the first thing train, budget and plan say (S2-6).

S2-5: "framework": "jax" / "megatronn" and "dtype": "fp7" were read with exit 0 and quoted back ('fitted to the
--framework megatronn step'); now one line, exit 2, naming the field and the vocabulary (core.frameworks.FRAMEWORKS,
schema.vocabulary.DTYPES), at every door: the CLI's file, the web API's document, the Python API. '' stays valid
(files before session 25).
S2-6: train and budget rebuilt their answer (jobs.budget.estimate's TRAIN_HEADLINE / BUDGET_HEADLINE) without the
warning line, and listed its section after the time sections; plan showed it first. Now all three put it first.
"""

import json

import pytest

from helpers import field_refusal

LOG = "step,step_time_s\n1,1.0\n2,1.0\n3,1.0\n4,1.0\n5,1.0\n"
FLAGS = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--pp", "2", "--seq-len", "4096",
         "--zero", "1", "--micro-batch", "1", "--global-batch", "16", "--recompute", "none", "--framework", "megatron")
BAD = [("framework", "jax", "is not a framework; one of generic, torchtitan, megatron, deepspeed, hf, llmc"),
       ("framework", "megatronn", "is not a framework; one of generic"),
       ("dtype", "fp7", "is not a compute dtype; one of bf16, fp16, fp8, fp4, tf32, fp32"),
       ("dtype", "bf16, fp7", "got 'fp7'; is not a compute dtype")]


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    from gpuplan.cli import main

    folder = tmp_path_factory.mktemp("cal")
    (folder / "steps.csv").write_text(LOG)
    assert main(["calibrate", str(folder / "steps.csv"), *FLAGS, "--out", str(folder / "cal.json"), "--json"]) == 0
    return json.loads((folder / "cal.json").read_text())


def _with(doc, field, value):
    return doc | {"reference": doc["reference"] | {field: value}}


@pytest.mark.parametrize("field, value, fragment", BAD)
def test_the_cli_refuses_an_unknown_reference_word(run_cli, doc, tmp_path, field, value, fragment):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_with(doc, field, value)))
    field_refusal(run_cli("train", "--tokens", "1T", *FLAGS, "--calibration", str(path)),
                  f"calibration: reference.{field}", fragment)


@pytest.mark.parametrize("field, value, fragment", BAD[::2])
def test_the_python_api_and_the_web_document_refuse_it(client, doc, field, value, fragment):
    import gpuplan

    with pytest.raises(gpuplan.InputError, match=f"reference.{field}.*{fragment.split(';')[0]}"):
        gpuplan.estimate_training(gpuplan.TrainingInputs(model="llama-3-8b", gpu="h100", gpus=8, tokens=1e12,
                                                         calibration=_with(doc, field, value)))
    response = client.post("/api/training", json={"model": "llama-3-8b", "gpu": "h100", "gpus": 8, "tokens": 1e12,
                                               "calibration": _with(doc, field, value)})
    assert response.status_code == 422 and fragment.split(";")[0] in response.json()["message"]


def test_an_empty_word_is_a_file_before_session_25(run_json, doc, tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(_with(_with(doc, "framework", ""), "dtype", "")))
    assert run_json("train", "--tokens", "1T", *FLAGS, "--calibration", str(path))["results"]["gpus"] == 8


@pytest.mark.parametrize("command", ["train", "budget", "plan"])
def test_the_warning_is_first(run_cli, doc, tmp_path, command):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_cli(command, "--tokens", "1T", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8",
                             "--seq-len", "4096", "--global-batch", "16", "--framework", "torchtitan",
                             "--calibration", str(path))
    assert code == 0, err
    lines = out.splitlines()
    # line 4: the first row of the answer, under its title and the table's two header lines
    assert lines[3].startswith("calibration ") and "fitted to the --framework megatron step, planned under torchtitan" \
        in lines[3]
    notes = [ln for ln in lines if ln.startswith("note: ")]
    assert notes[0].startswith("note: calibration: calibration fitted to the --framework megatron step")
