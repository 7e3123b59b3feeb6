"""`gpuplan campaign FILE` (jobs/campaign, docs/campaign.md): a `stages:` list of budget plans, each stage budgeted as
`gpuplan budget` budgets it, the totals their sums; every refusal one line naming the stage, exit 2, nothing printed."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "olmo3-7b-campaign.yaml"
REL = 1e-9
"""Totals against sums of independent budget answers: the same estimate on the same inputs, deterministic, so equal
up to float summation order (the sums' relative rounding is ~1e-16 a term)."""

SMALL = {"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4,
         "stages": [{"name": "short", "tokens": "200B", "gpus": 64, "seq_len": 4096},
                    {"name": "long", "tokens": "20B", "gpus": 32, "seq_len": 16384, "gpu": "a100"},
                    {"tokens": "10B", "gpus": 16}]}
"""Three stages on the article's MFU mode (fast: no step model): the second overrides gpu and seq_len."""


@pytest.fixture(scope="module")
def small():
    from gpuplan import estimate_campaign

    return estimate_campaign(SMALL)


def _budget(fields: dict):
    from gpuplan import BudgetInputs, estimate_budget

    return estimate_budget(BudgetInputs(**fields))


def test_totals_are_sums_of_independent_budget_answers(small):
    defaults = {k: v for k, v in SMALL.items() if k != "stages"}
    reports = [_budget(defaults | {k: v for k, v in stage.items() if k != "name"}) for stage in SMALL["stages"]]
    keys = {"gpu_hours": "cost_gpu_hours_on_demand", "cost_on_demand_usd": "cost_on_demand_usd",
            "cost_spot_usd": "cost_spot_usd", "spot_gpu_hours": "cost_spot_gpu_hours",
            "budget_gpu_hours": "budget_gpu_hours", "budget_usd_on_demand": "budget_usd_on_demand",
            "budget_usd_spot": "budget_usd_spot", "calendar_seconds": "fail_wall_seconds",
            "spot_calendar_seconds": "cost_spot_wall_seconds", "interruptions": "fail_interruptions",
            "checkpoints": "ckpt_count"}
    totals = small.totals.to_dict()
    assert set(totals) == set(keys)
    for name, key in keys.items():
        expected = sum(r.value(key) for r in reports)
        assert totals[name] == pytest.approx(expected, rel=REL), name
    for answer, report in zip(small.stages, reports):  # each stage's row is its own budget's
        assert answer.figure("gpu_hours") == pytest.approx(report.value("cost_gpu_hours_on_demand"), rel=REL)
        assert answer.figure("mfu") == pytest.approx(0.4, rel=REL)


def test_calendar_is_the_sum_of_stage_wall_clocks_by_hand(small):
    walls = [s.report.value("fail_wall_seconds") for s in small.stages]
    assert small.totals.calendar_seconds == pytest.approx(walls[0] + walls[1] + walls[2], rel=REL)
    assert small.totals.calendar_seconds > max(walls)  # sequential, not the longest of parallel stages


def test_inheritance_and_override_by_hand(small):
    first, second, third = (s.stage for s in small.stages)
    assert (first.inputs.gpu, second.inputs.gpu, third.inputs.gpu) == ("h100", "a100", "h100")  # override, inherit
    assert (first.inputs.seq_len, second.inputs.seq_len) == (4096, 16384)
    assert all(s.inputs.model == "llama-3.1-8b" and s.inputs.mfu == 0.4 for s in (first, second, third))
    assert (first.name, second.name, third.name) == ("short", "long", "stage 3")  # unnamed: its place from 1
    assert dict(second.raw) == {"model": "llama-3.1-8b", "gpu": "a100", "mfu": 0.4, "tokens": "20B", "gpus": 32,
                                "seq_len": 16384}
    # by hand: 6ND at MFU 0.4 on the H100's dense bf16 peak (989.4 TFLOP/s): the short stage's failure-free GPU-hours
    report = small.stages[0].report
    flops = report.value("flops_used")
    assert flops == pytest.approx(6 * report.value("params_active") * 200e9, rel=1e-9)
    assert report.value("gpu_hours") == pytest.approx(flops / (0.4 * 989.4e12) / 3600, rel=1e-6)


def test_the_example_runs_and_its_stages_are_the_readme_s(run_cli):
    code, out, err = run_cli("campaign", str(EXAMPLE), "--json")
    assert code == 0, err
    data = json.loads(out)
    stages = data["stages"]
    assert [s["name"] for s in stages] == ["pretraining", "midtraining", "long-context"]
    assert [s["gpus"] for s in stages] == [512, 128, 256]  # OLMo-core OLMo3 README @fa6c5014c
    assert [s["tokens"] for s in stages] == [5.93e12, 100e9, 50e9]
    assert [s["seq_len"] for s in stages] == [8192, 8192, 65536]
    assert all(s["model"] == "olmo-3-7b" and s["gpu"] == "h100-sxm" for s in stages)
    assert data["totals"]["gpu_hours"] == pytest.approx(sum(s["gpu_hours"] for s in stages), rel=REL)
    assert data["totals"]["calendar_seconds"] == pytest.approx(
        sum(s["budget"]["results"]["fail_wall_seconds"] for s in stages), rel=REL)
    code, out, err = run_cli("campaign", str(EXAMPLE))
    assert code == 0 and "pretraining" in out and "calendar time, sequential" in out, err
    code, full, err = run_cli("campaign", str(EXAMPLE), "--full")
    assert code == 0, err
    assert full.count("Training budget: olmo-3-7b") == 3 and "Campaign totals" in full


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


STAGE = "  - {model: llama-3.1-8b, gpu: h100, tokens: 1T, gpus: 64, mfu: 0.4}\n"
REFUSALS = [  # (file text, the refused field after the file's name, a phrase of the message)
    ("stages: {a: 1}\n", "stages", "must be a list"),
    ("stages: []\n", "stages", "is empty"),
    ("stages:\n" + STAGE * 33, "stages", "at most 32"),
    ("gpu: h100\n", "stages", "is required"),
    ("stages:\n" + STAGE * 2 + "  - {model: llama-3.1-8b, gpu: h100, tokens: 1T, gpus: -3}\n", "stages[2].gpus",
     "positive"),
    ("stages:\n" + STAGE + "  - {model: llama-3.1-8b, tokens: 1T, gpsu: 3}\n", "stages[1].gpsu", "unknown field"),
    ("gpux: h100\nstages:\n" + STAGE, "gpux", "unknown field"),
    ("stages:\n  - just text\n", "stages[0]", "expected a mapping"),
    ("stages:\n" + STAGE + "  - {model: llama-3.1-8b, tokens: 1T, gpus_per_node: null}\n", "stages[1].gpus_per_node",
     "give a value"),
    ("stages:\n  - {name: a, model: llama-3.1-8b, tokens: 1T}\n  - {name: a, model: llama-3.1-8b, tokens: 1T}\n",
     "stages[1].name", "earlier stage"),
    ("stages:\n  - {name: [1], model: llama-3.1-8b, tokens: 1T}\n", "stages[0].name", "printable"),
    ("gpu: a100\nmfu: 0.4\nstages:\n" + STAGE + "  - {model: llama-3.1-405b, tokens: 1T, gpus: 8}\n",
     "stages[1].gpus", "no layout fits"),  # refused by the stage's estimate, after its schema passed
    ("stages:\n  - {model: llama-3.1-8b, tokens: 1T, gpus: 64, days: 3, mfu: 0.4}\n", "stages[0].gpus/days/mfu",
     "at most two"),
    ("tokens: 1e400\nstages:\n" + STAGE, "tokens", "<= 1e+18"),  # a default every stage overrides is still checked
]


@pytest.mark.parametrize("text,field,phrase", REFUSALS, ids=[r[1] + ":" + r[2] for r in REFUSALS])
def test_cli_refuses_in_one_line_naming_the_stage(run_cli, tmp_path, text, field, phrase):
    path = _write(tmp_path, text)
    code, out, err = run_cli("campaign", path)
    assert code == 2 and out == ""  # nothing half-written: no stage's answer before the refusal
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: {field}: "), err
    assert phrase in err


@pytest.mark.parametrize("text,reason", [
    ("a: &x {b: 1}\nstages: [*x]\n", "anchors and aliases"),
    ("stages:\n  - {tokens: 1T}\nstages: []\n", "duplicate"),
])
def test_cli_reuses_the_plan_file_loader_protections(run_cli, tmp_path, text, reason):
    code, out, err = run_cli("campaign", _write(tmp_path, text))
    assert code == 2 and out == "" and reason in err and err.count("\n") == 1


def test_cli_refuses_an_oversized_file_and_a_non_plan_file(run_cli, tmp_path):
    big = _write(tmp_path, "# " + "x" * (1 << 20) + "\nstages: []\n")
    code, out, err = run_cli("campaign", big)
    assert code == 2 and out == "" and "plan file" in err
    code, out, err = run_cli("campaign", _write(tmp_path, "{}", "c.json"))
    assert code == 2 and out == "" and err.startswith("error: file: ")
    code, out, err = run_cli("campaign", str(tmp_path / "absent.yaml"))
    assert code == 2 and out == "" and "no such file" in err


def test_toml_campaign_and_subprocess_exit_status(tmp_path):
    import subprocess
    import sys

    path = _write(tmp_path, 'gpu = "h100"\nmfu = 0.4\n[[stages]]\nmodel = "llama-3.1-8b"\ntokens = "1T"\n'
                  'gpus = 64\n[[stages]]\nmodel = "llama-3.1-8b"\ntokens = "1T"\ngpus = 0\n', "c.toml")
    done = subprocess.run([sys.executable, "-m", "gpuplan", "campaign", path], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: {path}: stages[1].gpus: ") and "Traceback" not in done.stderr


def test_python_api_refusals_name_the_stage():
    from gpuplan import InputError, estimate_campaign

    with pytest.raises(InputError, match=r"^stages\[1\]\.gpus: "):
        estimate_campaign({"gpu": "h100", "stages": [{"model": "llama-3.1-8b", "tokens": "1T"},
                                                     {"model": "llama-3.1-8b", "tokens": "1T", "gpus": -1}]})
    with pytest.raises(InputError, match=r"^campaign: "):
        estimate_campaign([1, 2])


@pytest.fixture(scope="module")
def api():
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    return TestClient(create_app())


def test_web_api_answers_the_cli_s_totals(api, small):
    response = api.post("/api/campaign", json=SMALL)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["totals"] == pytest.approx(small.totals.to_dict(), rel=REL)
    assert [s["name"] for s in data["stages"]] == ["short", "long", "stage 3"]
    assert data["stages"][1]["budget"]["kind"] == "budget" and data["report"]["kind"] == "campaign"


WEB_REFUSALS = [
    ({"stages": "x"}, "stages", "must be a list"),
    ({"stages": []}, "stages", "is empty"),
    ({"stages": [{"model": "llama-3.1-8b", "tokens": "1T"}] * 33}, "stages", "at most 32"),
    ({"gpu": "h100", "stages": [{"model": "llama-3.1-8b", "tokens": "1T"}, {"model": "llama-3.1-8b", "tokens": "1T"},
                                {"model": "llama-3.1-8b", "tokens": "1T", "gpus": -3}]}, "stages[2].gpus", "positive"),
    ({"stages": [{"model": "llama-3.1-8b", "tokens": "1T", "bogus": 1}]}, "stages[0].bogus", "unknown field"),
    ({"stages": [{"model": "/etc/passwd", "tokens": "1T"}]}, "stages[0].model", "catalog"),  # never a path
    ({"model": "../config.json", "stages": [{"tokens": "1T"}]}, "model", "catalog"),
    ({"stages": [{"model": "llama-3.1-8b", "tokens": "1T", "calibration": "/etc/passwd"}]}, "stages[0].calibration",
     "no folders"),
    ({"stages": [{"model": "llama-3.1-8b", "tokens": "1T", "config": {"num_hidden_layers": 2}}]}, "stages[0].config",
     "unknown field"),
]


@pytest.mark.parametrize("body,field,phrase", WEB_REFUSALS, ids=[w[1] + ":" + w[2] for w in WEB_REFUSALS])
def test_web_api_refuses_naming_the_stage(api, body, field, phrase):
    response = api.post("/api/campaign", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and phrase in response.json()["message"]


def test_web_api_body_is_read_strictly(api):
    for raw in (b"[1]", b'{"stages": [], "stages": []}', b'{"stages": null}'):
        response = api.post("/api/campaign", content=raw, headers={"content-type": "application/json"})
        assert response.status_code == 422, raw


def _watch_opens(monkeypatch) -> list:
    """Every path opened through builtins.open or os.open (the plan-file and config readers' call, adapters/files.py)
    while the test runs."""
    import builtins
    import os

    opened: list = []
    real_open, real_os_open = builtins.open, os.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    monkeypatch.setattr(os, "open", lambda f, *a, **k: opened.append(str(f)) or real_os_open(f, *a, **k))
    return opened


def test_web_api_never_opens_a_named_path(api, monkeypatch):
    opened = _watch_opens(monkeypatch)
    api.post("/api/campaign", json={"stages": [{"model": "/etc/hostname", "tokens": "1T"}]})
    assert not any("/etc/" in name for name in opened)


def test_web_campaign_stops_before_a_stage_once_answered_for_time():
    import threading

    from gpuplan.web import campaign
    from gpuplan.web.limits import Stopped

    stop = threading.Event()
    stop.set()
    body = dict(SMALL, name="stopped before its first stage")  # not a kept answer of another test
    with pytest.raises(Stopped, match=r"before stages\[0\]"):
        campaign.answer(body, "en", None, stop)


def test_web_api_in_chinese_keeps_the_numbers(api, small):
    data = api.post("/api/campaign?lang=zh", json=SMALL).json()
    assert data["lang"] == "zh" and data["totals"] == pytest.approx(small.totals.to_dict(), rel=REL)


def test_full_markdown_heads_each_stage(run_cli):
    code, out, err = run_cli("campaign", str(EXAMPLE), "--full", "--format", "markdown")
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("## stages[")] == [
        "## stages[0]: pretraining", "## stages[1]: midtraining", "## stages[2]: long-context"]


def test_a_stage_s_own_model_replaces_the_inherited_parameter_count():
    from gpuplan import estimate_campaign

    answer = estimate_campaign({"params": "7B", "gpu": "h100", "mfu": 0.4, "tokens": "10B", "gpus": 8,
                                "stages": [{}, {"model": "llama-3.1-8b"}]})
    first, second = (s.stage for s in answer.stages)
    assert first.raw["params"] == "7B" and "model" not in first.raw
    assert second.raw.get("model") == "llama-3.1-8b" and "params" not in second.raw
    assert answer.stages[1].report.value("params_total") == answer.stages[1].report.value("params_active") > 7.5e9


def test_web_api_refuses_a_path_model_among_the_defaults(api, monkeypatch):
    opened = _watch_opens(monkeypatch)
    response = api.post("/api/campaign", json={"model": "/etc/hostname", "stages": [{"tokens": "1T"}]})
    assert response.status_code == 422 and response.json()["field"] == "model"
    assert not any("/etc/" in name for name in opened)


def test_a_stage_with_its_own_stages_is_told_stages_do_not_nest():
    # hostile wave 22 (lead item 1): it read 'stages[0].stages: ... did you mean storage, storage_read, storage_write?'
    import gpuplan

    with pytest.raises(gpuplan.InputError, match=r"stages\[0\]\.stages: got \[1\]; stages do not nest"):
        gpuplan.estimate_campaign({"model": "llama-3.1-8b", "stages": [{"stages": [1]}]})


def test_a_slow_campaign_is_told_fewer_stages(client, monkeypatch):
    # hostile wave 22 (lead item 7): POST /api/campaign over its time was told the budget's hint alone ('give "gpus"
    # ... or fix "tp" and "pp"'); a campaign runs its stages one after another, so fewer stages is the first remedy
    import time

    import gpuplan.web.campaign as campaign
    import gpuplan.web.limits as limits

    monkeypatch.setattr(limits, "REQUEST_SECONDS", 0.05)
    monkeypatch.setattr(campaign, "answer", lambda *args: time.sleep(0.5))
    response = client.post("/api/campaign", json={"model": "llama-3.1-8b", "stages": [{"tokens": "1T"}]})
    assert response.status_code == 503, response.text[:300]
    message = response.json()["message"]
    assert limits.CAMPAIGN_NARROWER in message and 'fewer "stages"' in message, message


@pytest.mark.parametrize("command", ["budget", "campaign"])
def test_a_null_stages_key_asks_for_a_list(run_cli, tmp_path, command):
    # review s20 N13: 'stages: got null; give a value, or leave the key out for the default' (no default exists)
    plan = tmp_path / "c.yaml"
    plan.write_text("model: llama-3.1-8b\ngpus: 8\nstages: null\n")
    code, out, err = run_cli(command, str(plan))
    assert code == 2 and "stages: got 'null'; give a list of stages" in err and "default" not in err, err


def test_a_null_stages_reads_alike_at_the_web_and_python_doors(client):
    # review s20b S2: POST /api/campaign said 'give a value, or leave the key out for the default'; one text now
    import gpuplan
    from gpuplan.errors import STAGES_NULL_TEXT

    response = client.post("/api/campaign", json={"model": "llama-3.1-8b", "stages": None})
    assert response.status_code == 422 and response.json()["message"] == f"stages: got 'null'; {STAGES_NULL_TEXT}"
    with pytest.raises(gpuplan.InputError, match=r"^stages: got 'null'; give a list of stages"):
        gpuplan.estimate_campaign({"model": "llama-3.1-8b", "stages": None})
