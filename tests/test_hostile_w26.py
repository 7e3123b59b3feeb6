"""Hostile inputs, wave 26 (2026-12-07, helper H3 of session 23): plan files, report --out, campaign/calibrate
measurement files, web bodies and number spellings, serve options. Found, each fixed where every door passes (one
line naming the field, exit 2):

(1) a trial measurement (`gpuplan profile`) whose config.settings.lora_rank is not a rank was read by int():
    'x' was an internal error (exit 70), -4 / 10**9 / true calibrated a LoRA run of that rank, 2.5 one of rank 2,
    0 a full fine-tune; now a whole number from 1 to MAX_DEGREE, or null (full fine-tuning), as --lora-rank
    (calibrate/trial_checks.FIELDS);
(2) config.settings.attention and config.settings.optimizer_impl took any text ('banana', or 5 read as '5') and
    calibrated with it; now one of the values a trial writes (profile.trial_plan ATTENTIONS, OPTIMIZER_IMPLS) or
    null, read as the trial's defaults sdpa / foreach (attention: null was read as the text 'None' before);
(3) a malformed calibration over the web API was quoted as "calibration: got 'calibration'", whether the body held
    the document or named a file of the server's --calibration-dir: a named file is now checked where it is read
    and quoted by the name the request gave (web/service.calibration_document), a document as 'the JSON document'
    (schema.vocabulary._calibration, the Python API's too).
"""

from __future__ import annotations

import json

import pytest

from tests.test_calibrate_hostile_more import refused, trial

REFUSED = [
    ({"config__settings__lora_rank": "x"}, "error: config.settings.lora_rank: got 'x'"),
    ({"config__settings__lora_rank": -4}, "error: config.settings.lora_rank: got -4"),
    ({"config__settings__lora_rank": 0}, "error: config.settings.lora_rank: got 0"),
    ({"config__settings__lora_rank": 2.5}, "error: config.settings.lora_rank: got 2.5"),
    ({"config__settings__lora_rank": True}, "error: config.settings.lora_rank: got True"),
    ({"config__settings__lora_rank": 10**9}, "error: config.settings.lora_rank: got 1000000000"),
    ({"config__settings__lora_rank": [8]}, "error: config.settings.lora_rank: got 'a list'"),
    ({"config__settings__attention": "banana"}, "error: config.settings.attention: got 'banana'"),
    ({"config__settings__attention": ["sdpa"]}, "error: config.settings.attention: got 'a list'"),
    ({"config__settings__optimizer_impl": "banana"}, "error: config.settings.optimizer_impl: got 'banana'"),
    ({"config__settings__optimizer_impl": 5}, "error: config.settings.optimizer_impl: got 5"),
]


@pytest.mark.parametrize("changes, fragment", REFUSED, ids=[f[7:48] for _, f in REFUSED])
def test_trial_settings_out_of_their_values_are_one_line(run_cli, tmp_path, changes, fragment):
    path = tmp_path / "trial.json"
    path.write_text(json.dumps(trial(**changes)))
    err = refused(run_cli, tmp_path, str(path), fragment=fragment)
    tail = ("must be a whole number from 1 to 1,048,576, or null" if "lora_rank" in fragment else "must be one of")
    assert tail in err, err  # each field's own valid values: a rank as --lora-rank bounds it, a name from its list


@pytest.mark.parametrize("changes", [
    # a LoRA run's peak near gpuplan's 174 MB for it: the full fine-tune's 550 MB fit activation memory 14.4x, past the
    # 0.1-10 a calibration factor may be (calibrate/model.FACTOR_RANGE, hostile wave 27b)
    {"config__settings__lora_rank": 8, "results__memory__peak_allocated_bytes": 1.8e8},
    {"config__settings__lora_rank": None},
    {"config__settings__attention": None, "config__settings__optimizer_impl": None},
    {"config__settings__attention": "eager", "config__settings__optimizer_impl": "fused"},
], ids=["lora-8", "lora-null", "nulls", "eager-fused"])
def test_the_values_a_trial_writes_are_still_read(run_cli, tmp_path, changes):
    path = tmp_path / "trial.json"
    path.write_text(json.dumps(trial(**changes)))
    code, _, err = run_cli("calibrate", str(path))
    assert code == 0, err


def test_a_null_attention_is_read_as_the_trials_default():
    from gpuplan.calibrate.measurement import measurement_from_trial

    data = trial(config__settings__attention=None, config__settings__lora_rank=8)
    m = measurement_from_trial(data, "t.json")
    assert m.attention == "sdpa"  # was the text 'None'
    assert (m.finetune, m.lora_rank) == ("lora", 8)


BAD_CALIBRATION = {"schema_version": 2, "kind": "gpuplan.calibration", "compute_time": {"value": -1}}


@pytest.fixture
def calibration_folder(tmp_path):
    folder = tmp_path / "calibrations"
    folder.mkdir()
    (folder / "neg.json").write_text(json.dumps(BAD_CALIBRATION))
    return folder


@pytest.mark.parametrize("route, body, field, quoted", [
    ("/api/budget", {"gpus": 64, "calibration": "neg.json"}, "calibration", "neg.json"),
    ("/api/budget", {"gpus": 64, "calibration": "neg"}, "calibration", "neg"),
    ("/api/budget", {"gpus": 64, "calibration": BAD_CALIBRATION}, "calibration", "the JSON document"),
    ("/api/campaign", {"stages": [{"tokens": "1T", "gpus": 64, "calibration": "neg"}]}, "stages[0].calibration",
     "neg"),
], ids=["file", "name", "document", "campaign-stage"])
def test_a_malformed_calibration_is_quoted_by_what_the_request_gave(calibration_folder, route, body, field, quoted):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app(calibration_dir=str(calibration_folder)))
    response = client.post(route, json=body)
    assert response.status_code == 422, response.text
    message = response.json()["detail"][0]["msg"]
    assert message.startswith(f"{field}: got '{quoted}'; is incomplete or malformed"), message
    assert "\n" not in message and str(calibration_folder) not in message  # the server's folder is not told
