"""Hostile wave 29b (lead, session 25): a calibration file's misspelt or missing key.

A calibration file's unknown keys were read as absent: a misspelt optional factor (`comm_tme`) or reference field
(`framewrok`) changed nothing and said nothing, and a factor without its `value` was refused in Python's words
('Factor.__init__() missing 1 required positional argument: 'value''). Each is now one line naming the key
(calibrate/model.py: TOP_KEYS, _build), with the close match where there is one.
"""

import json
from pathlib import Path

import pytest
from helpers import field_refusal

TRIAL = Path(__file__).parent / "fixtures" / "h200" / "profile_llama-3.2-1b_bf16_mb2_s2048.json"


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A calibration `gpuplan calibrate` writes from the packaged H200 trial."""
    from gpuplan.cli import main

    path = tmp_path_factory.mktemp("cal") / "cal.json"
    assert main(["calibrate", str(TRIAL), "--out", str(path), "--json"]) == 0
    return json.loads(path.read_text())


def _edit(calibration, tmp_path, edit):
    data = json.loads(json.dumps(calibration))
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return str(path)


def _rename(node, old, new):
    node[new] = node.pop(old)


@pytest.mark.parametrize("edit, fragment", [
    (lambda d: _rename(d, "comm_time", "comm_tme"), "comm_tme is not a key of a calibration (did you mean comm_time?)"),
    (lambda d: d["reference"].update(framewrok="megatron"),
     "reference.framewrok is not a field of it (did you mean framework?)"),
    (lambda d: _rename(d["compute_time"], "value", "valeu"), "compute_time.valeu is not a field of it (did you mean value?)"),
    (lambda d: d["compute_time"].pop("value"), "compute_time.value is missing"),
    (lambda d: d["measurements"][0].update(zzz=1), "measurements[0].zzz is not a field of it"),
])
def test_a_calibration_key_that_is_not_one_is_named(run_cli, tmp_path, calibration, edit, fragment):
    path = _edit(calibration, tmp_path, edit)
    field_refusal(run_cli("memory", "llama-3.2-1b", "--gpu", "h200", "--gpus", "8", "--calibration", path),
                  "calibration", fragment)


def test_the_file_as_written_is_still_read(run_cli, tmp_path, calibration):
    path = _edit(calibration, tmp_path, lambda d: None)
    code, out, err = run_cli("memory", "llama-3.2-1b", "--gpu", "h200", "--gpus", "8", "--calibration", path)
    assert code == 0, err
