"""Under a pipeline the step's op-class lines (jobs/step_classes.py, `plan --explain` / `--full`) add up to the
step they break down. core/time/step.py step_time paces the step by the slower of the first (fullest) stage and
the last (the LM head, its loss, any MTP modules); the lines followed the first stage (num_layers / pp layers, no
head, no loss), so for the bare `gpuplan plan --params 125M --gpu b200 --gpus 1911 --days 30` (dp384 tp1 pp2 cp2
mb1) they summed to 6.50 ms against a 7.94 ms step. Now they describe the stage the step reports, and say which.
Each test fails on the parent of the fix (6.50 / 7.94 = 0.82; the DeepSpeed one: 0.87-0.96, its accumulation pass
unlisted)."""

from __future__ import annotations

import json

import pytest

from gpuplan import plan_report

DEFAULT_ASK = {"params": "125M", "gpu": "b200", "gpus": 1911, "days": 30, "explain": True}


def _section(report) -> list:
    return next(s for s in report.sections if "op class" in s.title).lines


def test_the_default_asks_class_lines_add_up_to_its_pipelined_step():
    """generic-0.125B (7 layers: stage_span gives the first stage 4, the last 3 + the LM head) on dp384 tp1 pp2 cp2:
    the last stage paces the step (its 3 layers + head outrun the first's 4), so the lines are its: the loss line
    comes back (it was dropped under any pipeline) and the sum is the step, 9.07 ms (7.94 before TE's CP ring kernels
    were charged: core.time.context_parallel.ring_kernels), within rounding (1e-9)."""
    report = plan_report(DEFAULT_ASK)
    assert report.value("best_layout").startswith("dp384 tp1 pp2 cp2 ZeRO-0 mb1")
    step = report.value("best_step_seconds")
    # relations in place of the pinned 9.07 ms: the step is its breakdown's sum, and under 1F1B at pp 2, vpp 1 the
    # bubble is (pp - 1) / vpp = 1 paced micro-batch while the compute is its 1,152 / (dp 384 x mb 1) = 3 of them
    parts = [ln.value for s in report.sections for ln in s.lines  # the nonzero ones are listed (explain.step_lines)
             if ln.key.startswith("best_step_") and ln.key != "best_step_seconds"]
    assert len(parts) >= 4 and step == pytest.approx(sum(parts), rel=1e-12)
    assert report.value("global_batch") == 1152
    assert report.value("best_step_compute") == pytest.approx(3 * report.value("best_step_bubble"), rel=1e-9)
    lines = {ln.key: ln for ln in _section(report)}
    assert sum(ln.value for ln in lines.values()) == pytest.approx(step, rel=1e-9)
    assert min(ln.value for ln in lines.values()) >= 0
    assert lines["class_megatron_loss"].value > 0
    assert "the last of 2 stages (3 layers + LM head and loss) paces the step" in lines["class_gemm"].label
    assert lines["class_gemm"].formula.endswith("the communication the first stage's")  # the words the label dropped


@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "generic", "deepspeed"])
def test_uneven_pipeline_stages_class_lines_add_up(framework):
    """llama-3.1-8b on 64 H100 at pp 3 (32 layers: 11, 11, 10 + head): each framework's lines sum to the step
    (deepspeed's also need its BF16_Optimizer accumulation pass, charged per micro-batch in step_time and now
    its own line)."""
    report = plan_report({"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64, "pp": 3, "framework": framework,
                          "explain": True})
    assert " pp3 " in report.value("best_layout")
    lines = _section(report)
    assert sum(ln.value for ln in lines) == pytest.approx(report.value("best_step_seconds"), rel=1e-9)
    assert "of 3 stages (" in lines[0].label and "paces the step" in lines[0].label


def test_the_cli_json_and_the_web_api_show_the_same_lines(run_cli, client):
    """`gpuplan plan ... --explain --json` and POST /api/plan carry the lines the Python API makes, adding up
    to the step each reports."""
    report = plan_report(DEFAULT_ASK)
    expected = [(ln.key, ln.label, ln.value) for ln in _section(report)]
    code, out, err = run_cli("plan", "--params", "125M", "--gpu", "b200", "--gpus", "1911", "--days", "30",
                             "--explain", "--json")
    assert code == 0, err
    docs = [json.loads(out)]
    response = client.post("/api/plan?lang=en", json=DEFAULT_ASK)
    assert response.status_code == 200
    docs.append(response.json())
    for doc in docs:
        section = next(s for s in doc["sections"] if "op class" in s["title"])
        got = [(ln["key"], ln["label"], ln["value"]) for ln in section["lines"]]
        assert [g[:2] for g in got] == [e[:2] for e in expected]
        assert [g[2] for g in got] == pytest.approx([e[2] for e in expected], rel=1e-12)
        assert sum(g[2] for g in got) == pytest.approx(doc["results"]["best_step_seconds"], rel=1e-9)
