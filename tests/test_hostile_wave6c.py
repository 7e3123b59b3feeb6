"""Hostile inputs, wave 6 (2026-12-05), third part (the first two: tests/test_hostile_wave6.py, _wave6b.py):
the defects wave 6b found and left open. Each refusal is one line naming the field, exit 2; the valid
neighbour still answers.

- `plan --gpus 1-10000000` (a range) chose 8,388,608 GPUs, where failures outpace the checkpoints, then
  refused (gpus/failure_rate), although smaller counts in the range complete (jobs/plan/completes.py);
- `--mtp-layers` was taken under frameworks that train no MTP module (hf, deepspeed; torchtitan but for
  DeepSeek-V3): schema/layout_rules.check_mtp, citing the code read;
- a trial file whose config.model names another model than its config.hf_config builds was calibrated and
  labelled with the named model (calibrate/model_match.py);
- a config.json / plan file / API body starting with a UTF-8 byte-order mark was refused with Python's
  "decode using utf-8-sig" wording: it is read (adapters/files.read_text, parse_json; web/body.py);
- `--days 90min` was refused quoting the converted 0.0625: the text typed is quoted (errors.as_typed);
- `infer --no-search --rps`: kept (it drops the plain search's section and table; docs/inference.md).
"""

import json
from pathlib import Path

import pytest

from helpers import field_refusal, one_line_refusal

ROOT = Path(__file__).resolve().parents[1]
TRIAL = ROOT / "tests/fixtures/h200/profile_llama-3.2-1b_bf16_mb2_s2048.json"
LLAMA2 = json.loads((ROOT / "examples/llama-2-7b/config.json").read_text())
BOM = b"\xef\xbb\xbf"


def api(path: str, body=None, raw: bytes | None = None):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app(), raise_server_exceptions=False)
    if raw is not None:
        return client.post(path, content=raw, headers={"content-type": "application/json"})
    return client.post(path, json=body)


# ---- 1. a GPU-count range whose largest counts never complete -------------------------------------

def test_a_range_answers_with_a_count_where_the_run_completes(run_json):
    """llama-3.1-405b on H100s, 1-10,000,000 GPUs: 8,388,608 was chosen (fastest before failures) and the
    budget refused it, MTBI 12.7 s; 4,194,304 refuses at the high end of the failure-rate range (MTBI
    9.45 s). The answer is now a count whose expected run with failures is finite."""
    data = run_json("plan", "llama-3.1-405b", "--gpu", "h100", "--gpus", "1-10000000")
    results = data["results"]
    assert 1 <= results["best_gpus"] <= 2_097_152, results["best_gpus"]
    assert 0 < results["fail_wall_seconds"] < float("inf")


def test_a_range_where_no_count_completes_is_refused_naming_gpus(run_cli):
    field_refusal(run_cli("plan", "llama-3.1-405b", "--gpu", "h100", "--gpus", "8388608-10000000"), "gpus",
            "completes with failures")


def test_the_api_plan_range_answers_too():
    response = api("/api/plan", {"model": "llama-3.1-405b", "gpu": "h100", "gpus": "1-10000000"})
    assert response.status_code == 200, response.text[:300]


# ---- 2. --mtp-layers where the framework trains no MTP module ------------------------------------

@pytest.mark.parametrize("framework, fragment", [("hf", "_keys_to_ignore_on_load_unexpected"),
                                                 ("deepspeed", "edaa722"), ("torchtitan", "DeepSeekV3Model")])
def test_mtp_layers_under_a_framework_without_mtp_is_refused(run_cli, framework, fragment):
    field_refusal(run_cli("train", "llama-2-7b", "--gpus", "64", "--framework", framework, "--mtp-layers", "1"),
            "mtp_layers", fragment)


@pytest.mark.parametrize("args", [("llama-2-7b", "--gpus", "64", "--framework", "megatron", "--mtp-layers", "1"),
                                  ("llama-2-7b", "--gpus", "64", "--framework", "hf", "--mtp-layers", "0"),
                                  ("deepseek-v3", "--gpus", "1024", "--framework", "torchtitan", "--mtp-layers", "1")])
def test_mtp_layers_where_the_framework_trains_them_still_answers(run_cli, args):
    code, _, err = run_cli("train", *args)
    assert code == 0, err


def test_the_api_refuses_mtp_layers_under_hf():
    response = api("/api/training", {"model": "llama-2-7b", "gpus": 64, "framework": "hf", "mtp_layers": 1})
    assert response.status_code == 422 and response.json()["field"] == "mtp_layers", response.text[:300]


# ---- 3. a trial file naming another model than its hf_config -------------------------------------

def _trial(tmp_path, **config) -> str:
    data = json.loads(TRIAL.read_text())
    data["config"].update(config)
    out = tmp_path / "trial.json"
    out.write_text(json.dumps(data))
    return str(out)


@pytest.mark.parametrize("model, fragment", [("llama-3.1-8b", "hidden_size is 2048, llama-3.1-8b's is 4096"),
                                             ("qwen2.5-0.5b", "model_type")])
def test_a_trial_naming_another_model_is_refused(run_cli, tmp_path, model, fragment):
    """config.model llama-3.1-8b over Llama-3.2-1B's hf_config calibrated as 'llama-3.1-8b'."""
    field_refusal(run_cli("calibrate", _trial(tmp_path, model=model)), "config.model", fragment)


def test_a_trial_whose_layer_count_names_another_model_is_refused(run_cli, tmp_path):
    field_refusal(run_cli("calibrate", _trial(tmp_path, config_num_layers=32)), "config.model", "config_num_layers is 32")


def test_the_real_trial_and_its_hf_id_still_calibrate(run_cli, tmp_path):
    assert run_cli("calibrate", str(TRIAL))[0] == 0
    code, _, err = run_cli("calibrate", _trial(tmp_path, model="meta-llama/Llama-3.2-1B"))
    assert code == 0, err


# ---- 4. a UTF-8 byte-order mark ------------------------------------------------------------------

def test_a_config_json_with_a_byte_order_mark_is_read(run_json, tmp_path):
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    for folder, prefix in ((plain, b""), (marked, BOM)):
        folder.mkdir()
        (folder / "config.json").write_bytes(prefix + json.dumps(LLAMA2).encode())
    with_bom = run_json("memory", str(marked / "config.json"))["results"]
    assert with_bom == run_json("memory", str(plain / "config.json"))["results"]


@pytest.mark.parametrize("name, text", [("plan.yaml", "model: llama-2-7b\ngpus: 8\n"),
                                        ("plan.toml", "model = 'llama-2-7b'\ngpus = 8\n")])
def test_a_plan_file_with_a_byte_order_mark_is_read(run_cli, tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(BOM + text.encode())
    code, _, err = run_cli("train", str(path))
    assert code == 0, err


def test_an_api_body_with_a_byte_order_mark_is_read():
    response = api("/api/training", raw=BOM + b'{"model": "llama-2-7b", "gpus": 8}')
    assert response.status_code == 200, response.text[:300]


def test_a_calibration_file_with_a_byte_order_mark_is_read(run_cli, tmp_path):
    path = tmp_path / "trial.json"
    path.write_bytes(BOM + TRIAL.read_bytes())
    code, _, err = run_cli("calibrate", str(path))
    assert code == 0, err


# ---- 5. the value typed, not the value converted --------------------------------------------------

def test_the_days_refusal_quotes_what_was_typed(run_cli):
    err = field_refusal(run_cli("budget", "--params", "7B", "--days", "90min"), "days")
    assert err.startswith("error: days: got '90min';") and "0.0625" not in err, err


def test_a_plan_file_days_refusal_quotes_what_was_written(run_cli, tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("params: 7B\ndays: 90min\n")
    err = field_refusal(run_cli("budget", str(path)), f"{path}: days")  # a plan file's value names the file
    assert "'90min'" in err and "0.0625" not in err, err


def test_the_api_days_refusal_quotes_what_was_sent():
    response = api("/api/budget", {"params": "7B", "days": "90min"})
    assert response.status_code == 422 and "'90min'" in response.json()["message"], response.text[:300]


# ---- 6. infer --no-search with --rps --------------------------------------------------------------

def test_no_search_with_rps_drops_the_plain_search_only(run_json):
    """Not a contradiction (docs/inference.md 5b): the sizing table is the same; the plain search's table
    (which GPUs hold --batch sequences, no load target) is left out."""
    searched = run_json("infer", "llama-3.1-8b", "--rps", "5")
    plain = run_json("infer", "llama-3.1-8b", "--rps", "5", "--no-search")
    sizing = "Configurations meeting the target (cheapest TP per GPU type)"
    assert searched["tables"][sizing] == plain["tables"][sizing]
    assert len(searched["tables"]) == len(plain["tables"]) + 1
    assert any(t.startswith("catalog configurations") for t in searched["tables"])
    assert not any(t.startswith("catalog configurations") for t in plain["tables"])


# ---- classes tried this wave that already held (regression guards) -------------------------------

@pytest.mark.parametrize("text, field", [
    ("model: llama-2-7b\ngpus: !!python/object/apply:os.system ['true']\n", "plan file"),
    ("model = 'llama-2-7b'\n[a]\nx = 1\n[a]\ny = 2\n", "plan file"),
    ("model: llama-2-7b\ngpus: 8\ngpus: 9\n", "plan file"),
    ("model: llama-2-7b\ngpus: '８'\n", "gpus"),
])
def test_hostile_plan_files_are_refused_in_one_line(run_cli, tmp_path, text, field):
    path = tmp_path / ("plan.toml" if "[a]" in text else "plan.yaml")
    path.write_text(text, encoding="utf-8")
    code, _, err = run_cli("train", str(path))
    one_line_refusal(code, err, field)


# ---- found this wave, beyond the brief -----------------------------------------------------------

@pytest.mark.parametrize("days", ["1w", "2 weeks", "7d"])
def test_a_deadline_needing_fewer_gpus_than_the_model_fits_answers_with_the_smallest_that_fits(run_json, days):
    """`budget --params 7B --tokens 1e9 --days 1w` solved 1 A100 (0.6 GPUs of compute) and was refused 'gpus:
    got 1; no layout fits ... (--gpus 2)' though --gpus was not given: the answer is the smallest common cluster
    size that holds the model (2 GPUs: 7B's 16 bytes/parameter of states, 112 GB, do not fit one 80 GB A100)."""
    results = run_json("budget", "--params", "7B", "--tokens", "1e9", "--days", days)["results"]
    assert results["gpus"] == 2, results["gpus"]


@pytest.mark.parametrize("text, seconds", [("72 hours", 259_200), ("2 weeks", 1_209_600), ("90 minutes", 5_400),
                                           ("1 hour", 3_600), ("30 seconds", 30), ("1 week", 604_800)])
def test_durations_in_words_read_as_days_does(text, seconds):
    """'3 days' was read and '72 hours' / '2 weeks' refused ('expected a duration such as 7d')."""
    from gpuplan.core.units import parse_duration

    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("args, field, shown", [
    (("infer", "llama-3.1-8b", "--quantization", "AWQ", "--no-search"), "quantization", "'AWQ'"),
    (("train", "llama-2-7b", "--gpus", "8", "--framework", "Banana"), "framework", "'Banana'"),
])
def test_a_choice_refusal_quotes_the_word_as_typed(run_cli, args, field, shown):
    """The choice was lower-cased before the check, and the refusal quoted 'awq' for AWQ."""
    err = field_refusal(run_cli(*args), field, f"got {shown}; must be one of ")
    assert shown.lower() not in err.replace(shown, ""), err


def test_a_choice_in_capitals_still_reads(run_cli):
    assert run_cli("train", "llama-2-7b", "--gpus", "8", "--framework", "MEGATRON")[0] == 0


@pytest.mark.parametrize("args, field, dash", [
    (("plan", "llama-2-7b", "--gpus", "8\u201316"), "gpus", "U+2013"),
    (("train", "llama-2-7b", "--gpus", "8", "--mfu", "\u22120.4"), "mfu", "U+2212"),
])
def test_a_unicode_dash_is_named_not_called_a_non_ascii_digit(run_cli, args, field, dash):
    """`--gpus 8–16` (an en dash, as a word processor writes a range) was refused as 'must be written with
    ASCII digits', though every digit was ASCII."""
    field_refusal(run_cli(*args), field, f"{dash}) is not the ASCII '-'")


def test_architectures_as_text_is_refused_whole(run_cli, tmp_path):
    """`"architectures": "LlamaForCausalLM"` (text, not a list) was read letter by letter: 'got 'L'; does not
    match model_type'."""
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA2, "architectures": "LlamaForCausalLM"}))
    field_refusal(run_cli("memory", str(tmp_path / "config.json"), "--gpus", "8"), "config.json: architectures",
            "got 'LlamaForCausalLM'; must be a list of class names")
