"""In-loop evaluation in the training budget (--eval-interval / --eval-iters; core.economics.evaluation,
jobs.budget.evaluation): hand-worked counts and seconds through the Python API, the CLI, a plan file and
the web API, and one refusal per bad input."""

import json
import math

import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core.economics import evaluation as E
from gpuplan.core.model import flops as F
from gpuplan.errors import InputError
from gpuplan.jobs.budget.compute import compute_budget, wall_with_failures
from gpuplan.jobs.budget.evaluation import step_forward_share
from gpuplan.jobs.budget.model import BudgetSettings
from gpuplan.jobs.budget.schema import BudgetInputs
from gpuplan.jobs.training.schema import TrainingInputs
from tests.helpers import web_refusal

# a small run by hand: 1e9 tokens in 1e6-token steps = 1,000 steps of 10 s on 8 H100s (10,000 s of training)
SMALL = dict(gpus=8.0, wall_seconds=10_000.0, gpu_hours=8 * 10_000 / 3600, tokens=1e9, global_batch_tokens=1e6,
             step_seconds=10.0)


def _small(settings, share=0.25):
    return compute_budget(resolve_model("llama-3.1-8b"), resolve_gpu("h100"), settings=settings,
                          forward_share=share, **SMALL)


def _value(budget, key):
    return next(line.value for sec in budget.sections for line in sec.lines if line.key == key)


def test_small_run_by_hand():
    # 1,000 steps // 100 + 1 = 11 evaluations; each 10 iterations x 10 s x 0.25 = 25 s; 275 s in all
    with_eval = _small(BudgetSettings(eval_interval=100, eval_iters=10))
    assert _value(with_eval, "eval_steps") == 1000
    assert _value(with_eval, "eval_count") == 11
    assert _value(with_eval, "eval_seconds_each") == pytest.approx(25.0, rel=1e-12)
    assert _value(with_eval, "eval_wall_seconds") == pytest.approx(275.0, rel=1e-12)
    assert _value(with_eval, "eval_gpu_hours") == pytest.approx(8 * 275 / 3600, rel=1e-12)
    # the failure model runs 10,000 + 275 s of failure-free work (its 'failure-free' time), the budget bills it
    plain = _small(BudgetSettings())
    assert "In-loop evaluation" not in [s.title for s in plain.sections]
    wall, wall0 = _value(with_eval, "fail_wall_seconds"), _value(plain, "fail_wall_seconds")
    assert wall0 > 10_000 and wall - wall0 == pytest.approx(275.0, rel=0.01)  # goodput > 99% on 8 GPUs
    budget, budget0 = _value(with_eval, "budget_gpu_hours"), _value(plain, "budget_gpu_hours")
    assert budget - budget0 == pytest.approx(8 * 275 / 3600, rel=0.01)


def test_default_iters_and_model_share():
    # no --eval-iters: 100 (Megatron/NeoX default); no forward share given: 1/3 (2 of 6 FLOPs per weight)
    budget = _small(BudgetSettings(eval_interval=500), share=None)
    assert _value(budget, "eval_count") == 3  # 1,000 // 500 + 1
    assert _value(budget, "eval_seconds_each") == pytest.approx(100 * 10.0 / 3, rel=1e-12)
    settings = BudgetInputs(model="llama-3.1-8b", tokens="1T", gpus=64, eval_interval=500).budget_settings()
    assert (settings.eval_interval, settings.eval_iters) == (500, 100)


def test_deadline_wall_clock_carries_evaluations():
    spec, gpu = resolve_model("llama-3.1-8b"), resolve_gpu("h100")
    kw = dict(gpus=8, work_seconds=10_000.0, tokens=1e9, global_batch_tokens=1e6, step_seconds=10.0)
    base = wall_with_failures(spec, gpu, BudgetSettings(), **kw)
    evals = wall_with_failures(spec, gpu, BudgetSettings(eval_interval=100, eval_iters=10), forward_share=0.25, **kw)
    assert evals - base == pytest.approx(275.0, rel=0.01)


def test_forward_share_from_flops():
    spec = resolve_model("llama-3.1-8b")
    inputs = TrainingInputs(model="llama-3.1-8b", tokens="1T", gpus=64)
    assert step_forward_share(spec, inputs, "none") == pytest.approx(1 / 3, rel=1e-12)  # forward / 3 x forward
    # full recompute re-runs the layers' forward (not the LM head): hardware = 3F + (F - head) = 4F - head
    parts = F.training_flops_per_token(spec, inputs.seq_len, "full", "full")
    share = parts.forward / (4 * parts.forward - parts.lm_head_forward)
    assert step_forward_share(spec, inputs, "full") == pytest.approx(share, rel=1e-12)
    assert 0.25 < share < 1 / 3


def test_cli_train_door(run_cli):
    args = ("train", "llama-3.1-8b", "--gpus", "64", "--tokens", "1T", "--json")
    code, out, err = run_cli(*args, "--eval-interval", "1000", "--eval-iters", "50")
    assert code == 0, err
    r = json.loads(out)["results"]
    steps = math.ceil(1e12 / r["io_global_batch_tokens"])  # 1e12 / 4,194,304 = 238,418.6 -> 238,419
    assert r["eval_steps"] == steps == 238_419 and r["eval_count"] == 239
    assert r["eval_forward_share"] == pytest.approx(1 / 3, rel=1e-12)  # no recompute on this layout
    assert r["eval_seconds_each"] == pytest.approx(50 * r["io_step_seconds"] / 3, rel=1e-12)
    assert r["eval_gpu_hours"] == pytest.approx(64 * 239 * r["eval_seconds_each"] / 3600, rel=1e-12)
    code, out, _ = run_cli(*args)
    plain = json.loads(out)
    assert "eval_steps" not in plain["results"]
    row = next(a for a in plain["assumptions"] if a["key"] == "budget_eval")
    assert row["value"].startswith("none") and row["flag"] == "--eval-interval / --eval-iters"
    # the expected wall-clock with failures carries the evaluations (goodput > 99%)
    assert r["fail_wall_seconds"] - plain["results"]["fail_wall_seconds"] == pytest.approx(
        r["eval_wall_seconds"], rel=0.01)


def test_plan_file_and_web_api(run_cli, tmp_path, client):
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: llama-3.1-8b\ntokens: 1T\ngpus: 64\neval_interval: 1000\neval_iters: 50\n")
    code, out, err = run_cli("budget", str(plan), "--json")
    assert code == 0, err
    from_file = json.loads(out)["results"]
    response = client.post("/api/budget", json={"model": "llama-3.1-8b", "tokens": "1T", "gpus": 64,
                                                "eval_interval": 1000, "eval_iters": 50})
    assert response.status_code == 200, response.text[:400]
    from_web = response.json()["results"]
    assert from_file["eval_count"] == from_web["eval_count"] == 239
    assert from_file["eval_wall_seconds"] == pytest.approx(from_web["eval_wall_seconds"], rel=1e-12)
    web_refusal(client.post("/api/budget", json={"model": "llama-3.1-8b", "eval_iters": 50}), "eval_iters",
                "needs eval_interval (--eval-interval")


@pytest.mark.parametrize("args, fragment", [
    (("--eval-interval", "0"), "eval_interval: got '0'"),
    (("--eval-interval", "-100"), "eval_interval: got '-100'"),
    (("--eval-interval", "2.5"), "must be a whole number"),
    (("--eval-interval", "often"), "eval_interval: got 'often'"),
    (("--eval-interval", "1e12"), "eval_interval: got '1e12'"),
    (("--eval-iters", "10"), "needs eval_interval (--eval-interval"),
    (("--eval-interval", "100", "--eval-iters", "0"), "eval_iters: got '0'"),
    (("--eval-interval", "100", "--eval-iters", "1.5"), "must be a whole number"),
    (("--eval-interval", "100", "--eval-iters", "2e6"), "eval_iters: got '2e6'"),
])
def test_cli_refusals(run_cli, args, fragment):
    code, out, err = run_cli("train", "llama-3.1-8b", "--gpus", "64", *args)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("settings, field", [
    (BudgetSettings(eval_iters=10), "eval_iters"),
    (BudgetSettings(eval_interval=0), "eval_interval"),
    (BudgetSettings(eval_interval=10.5), "eval_interval"),
    (BudgetSettings(eval_interval=True), "eval_interval"),
    (BudgetSettings(eval_interval=100, eval_iters=E.MAX_EVAL_ITERS + 1), "eval_iters"),
])
def test_python_api_refusals(settings, field):
    with pytest.raises(InputError) as caught:
        _small(settings)
    assert caught.value.field == field


def test_inputs_refuse_iters_without_interval():
    with pytest.raises(InputError) as caught:
        BudgetInputs(model="llama-3.1-8b", tokens="1T", gpus=64, eval_iters=20)
    assert caught.value.field == "eval_iters"


def test_section_translated_to_chinese():
    import re

    from gpuplan.jobs import JOBS
    from gpuplan.report import i18n

    job = JOBS["budget"]
    zh = i18n.translate_report(job.run(job.schema.parse({"eval_interval": 1000})), "zh")
    section = next(s for s in zh.sections if any(line.key == "eval_count" for line in s.lines))
    labels = [section.title] + [line.label for line in section.lines]
    labels += [a.label for a in zh.assumptions if a.key == "budget_eval"]
    assert len(labels) == 8 and all(re.search(r"[\u4e00-\u9fff]", label) for label in labels), labels


def test_plan_deadline_weighs_evaluations(run_cli):
    # the search's failure shares carry 1 + evaluations x iters x forward share / steps (jobs.budget.evaluation.
    # work_factors): the chosen layout's own budget meets the 30 days with them (before: 104 GPUs, 37.0 days)
    args = ("plan", "llama-3.1-8b", "--tokens", "1T", "--days", "30", "--json")
    plain = json.loads(run_cli(*args)[1])["results"]
    code, out, err = run_cli(*args, "--eval-interval", "100", "--eval-iters", "100")
    assert code == 0, err
    r = json.loads(out)["results"]
    assert r["fail_wall_seconds"] <= 30 * 86400 and r["best_gpus"] > plain["best_gpus"]
    steps = r["eval_steps"]  # 238,419: 2,385 evaluations x 100 x 1/3 / steps = +33.3% work, the step cancelling
    assert r["eval_wall_seconds"] / (r["fail_wall_seconds"] * r["fail_goodput"] - r["eval_wall_seconds"]) == \
        pytest.approx((steps // 100 + 1) * 100 * r["eval_forward_share"] / steps, rel=1e-6)
