"""Which flags round-trip a calibration, and a warning where the plan's differ in a way calibrate cannot state
(review R2 S1-3). Session 26: calibrate takes --cp, --vpp and --tp-overlap (tests/test_calibration_step_options_s26.py);
not given, a log is timed at cp 1, vpp 1 and the framework's TP overlap, as below, and the warning no longer says
calibrate cannot state them.

calibrate times a log at cp 1, vpp 1 and the framework's TP overlap (it takes no --cp, --vpp, --tp-overlap); the file
records them (reference.layout) and train / plan / budget say so, beside the other calibration warnings, when they
plan another. llama-3-8b, tp 2 pp 2, ZeRO-1, 8 H100, megatron, a 1.0 s log: train 1.000 s at --cp 1 --vpp 1; 0.905 s
with vpp left to train (it picks 16); 0.952 s at --vpp 2; 0.985 s at --tp-overlap 0.5 (the megatron default without
recompute is 0.25); tp 2 pp 1 at --cp 2, 1.051 s.
"""

import json

import pytest

LOG = "step,step_time_s\n1,1.0\n2,1.0\n3,1.0\n4,1.0\n5,1.0\n"
BASE = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "2", "--seq-len", "4096", "--zero", "1",
        "--micro-batch", "1", "--global-batch", "16", "--recompute", "none", "--framework", "megatron")
TRAIN = ("--tokens", "1T", "--mfu", "predicted")


def _calibrated(run_json, tmp_path, pp):
    log = tmp_path / "steps.csv"
    log.write_text(LOG)
    out = tmp_path / "cal.json"
    run_json("calibrate", str(log), *BASE, "--pp", str(pp), "--out", str(out))
    return out


@pytest.mark.parametrize("pp, extra, step, said", [
    (2, ("--cp", "1", "--vpp", "1"), 1.000, None),
    (2, (), 0.905, "calibration timed its log at --vpp 1, planned at --vpp 16"),
    (2, ("--cp", "1", "--vpp", "2"), 0.952, "planned at --vpp 2"),
    (2, ("--cp", "1", "--vpp", "1", "--tp-overlap", "0.5"), 0.985,
     "calibration timed its log at --tp-overlap 0.25, planned at --tp-overlap 0.5"),
    (1, ("--cp", "2"), 1.051, "calibration timed its log at --cp 1, planned at --cp 2"),
])
def test_a_plan_at_options_calibrate_cannot_state_is_told(run_json, tmp_path, pp, extra, step, said):
    cal = _calibrated(run_json, tmp_path, pp)
    assert json.loads(cal.read_text())["reference"]["layout"] == {"cp": 1, "vpp": 1, "tp_overlap": 0.25}
    results = run_json("train", *TRAIN, *BASE, "--pp", str(pp), *extra, "--calibration", str(cal))["results"]
    assert results["io_step_seconds"] == pytest.approx(step, abs=1e-3)
    if said is None:
        assert "calibration_warning" not in results
    else:
        assert said in results["calibration_warning"] and "to reproduce it" in results["calibration_warning"]


def test_a_file_without_the_record_is_not_told(run_json, tmp_path):
    cal = _calibrated(run_json, tmp_path, 2)
    doc = json.loads(cal.read_text())
    doc["reference"].pop("layout")
    cal.write_text(json.dumps(doc))
    results = run_json("train", *TRAIN, *BASE, "--pp", "2", "--calibration", str(cal))["results"]
    assert "calibration_warning" not in results


def test_a_malformed_record_is_refused(run_cli, tmp_path):
    from helpers import field_refusal

    cal = _calibrated(lambda *a: None if run_cli(*a, "--json")[0] == 0 else pytest.fail(), tmp_path, 2)
    doc = json.loads(cal.read_text())
    doc["reference"]["layout"] = {"vpp": "two"}
    cal.write_text(json.dumps(doc))
    field_refusal(run_cli("train", *TRAIN, *BASE, "--pp", "2", "--calibration", str(cal)), "calibration",
                  "reference.layout must map cp, vpp, tp_overlap to numbers")
