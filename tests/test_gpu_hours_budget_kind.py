"""The budget kind of `gpuplan validate` (jobs/validation/gpu_hours.KIND_BUDGET, session 24): the 'GPU-hours budget'
line `gpuplan budget` prints for a published run's inputs, against the run's wall-clock total. The budget is the
failure-free hours plus the contingency lines: restarts, tuning and evaluation 5% each of the failure-free hours
(jobs/budget/fields.py, the article's 20% split in 2588afc5) and the failure model's expected loss."""

import json
import subprocess
import sys

import pytest

from gpuplan.catalog import reference_runs
from gpuplan.jobs.validation.estimate import KIND_END_TO_END
from gpuplan.jobs.validation.gpu_hours import EIGHTH_SET, KIND_BUDGET, end_to_end_and_budget, reported_as
from tests.helpers import validation_cases_once

HELD = KIND_BUDGET.format(role="held out")


def _runs() -> dict:
    return {r["id"]: r for r in reference_runs()["runs"]}


def test_budget_is_the_end_to_end_hours_plus_fifteen_percent_of_the_failure_free_hours():
    # Pythia 12B (256 A100, GPT-NeoX): the end-to-end kind's expected hours hold the failure-free run, its in-loop
    # evaluation and the failure model's loss (the budget's 'failures' line is expected - run hours); the budget adds
    # restarts, tuning and evaluation at 5% each of the failure-free compute hours: budget = expected + 0.15 x free
    from gpuplan.jobs.budget.estimate import estimate_budget
    from gpuplan.jobs.validation.gpu_hours import run_inputs

    run = _runs()["pythia-12b"]
    report = estimate_budget(run_inputs(run))
    free = report.value("gpu_hours_with_comm")
    (expected, _), (budget, basis) = end_to_end_and_budget(run)
    assert budget == pytest.approx(report.value("budget_gpu_hours"), rel=1e-12)
    for name in ("restarts", "tuning", "evaluation"):
        assert report.value(f"contingency_{name}") == pytest.approx(0.05 * free, rel=1e-12)
    assert budget == pytest.approx(expected + 0.15 * free, rel=1e-9)
    assert basis.startswith(f"budget {budget:,.0f} GPU-hours = failure-free {free:,.0f} + contingency (restarts ")


def test_rate_totals_get_no_budget_case():
    # a total that is tokens / the source's own rate holds no downtime, rollbacks or evaluation: no budget to hold it to
    runs = _runs()
    rates = [i for i, r in runs.items() if "gpus" in r and reported_as(r) == "rate"]
    assert {"llama1-65b", "deepseek-v3", "tinyllama-1.1b", "smollm3-3b"} <= set(rates)
    budget_ids = {c.id for c in validation_cases_once() if c.kind in (HELD, KIND_BUDGET.format(
        role="fitted: its census set the failure rate"))}
    assert not budget_ids & set(rates)
    end_to_end_ids = {c.id for c in validation_cases_once() if c.kind == KIND_END_TO_END.format(role="held out")}
    assert budget_ids - {"llama3.1-405b"} == end_to_end_ids - set(rates)


def test_held_out_budget_level():
    # 19 wall-clock totals, held out (Llama 3.1 405B is the fitted census row): 9.4% mean |error|, bias -0.4% at session
    # 24. The bound is the article's 10% ('resource waste within 10%'): a budget that drifts past it on the nineteen it
    # was written for fails here. Session 25's eighth set adds GLM-130B (-24.3%; Skywork-13B is a rate total), then
    # SEA-LION 7B and 3B (-23.1%, -44.6%): the twenty-two are 12.3% (bias -4.5%), over the 10%, as README and
    # docs/budget.md say.
    held = [c for c in validation_cases_once() if c.kind == HELD]
    assert len(held) == 22 and {c.id for c in held} & set(EIGHTH_SET) == {"glm-130b", "sea-lion-7b", "sea-lion-3b"}
    nineteen = [c for c in held if c.id not in EIGHTH_SET]
    assert sum(abs(c.error) for c in nineteen) / len(nineteen) < 0.10
    # and the twenty-two as published (README, docs/budget.md): 12.3%, over the bar, not hidden by the subset above
    assert sum(abs(c.error) for c in held) / len(held) == pytest.approx(0.123, abs=0.005)
    # the worst is SEA-LION 3B, whose card's 14 days on 240 A100 40GB hold 3.03 s a step where the step model times
    # 1.46 s; the worst before it, BloombergGPT, states a 32.5 s step (arXiv:2303.17564 Sec. 4) where the model times
    # ~17 s: budgets below the runs' totals, their steps and not their downtime (the end-to-end basis names both)
    worst, second = sorted(held, key=lambda c: -abs(c.error))[:2]
    assert (worst.id, second.id) == ("sea-lion-3b", "bloomberggpt-50b") and worst.error < 0 and second.error < 0


def test_budget_case_equals_what_the_budget_command_prints():
    # the user's door: `gpuplan budget` with the row's inputs prints the same budget the validation compares
    run = _runs()["pythia-1b"]
    (_, _), (budget, _) = end_to_end_and_budget(run)
    layout = run["layout"]
    args = [sys.executable, "-m", "gpuplan", "budget", "--model", run.get("model") or "", "--tokens", str(run["tokens"]),
            "--gpu", run["gpu"], "--gpus", str(run["gpus"]), "--mfu", "predicted", "--json"]
    if not run.get("model"):
        args[args.index("--model"):args.index("--model") + 2] = ["--params", str(run["params"])]
    args += ["--seq-len", str(run.get("seq_len", 2048)), "--global-batch", str(run["global_batch"])]
    for key in ("tp", "pp", "zero", "micro_batch"):
        if key in layout:
            args += [f"--{key.replace('_', '-')}", str(layout[key])]
    for key in ("recompute", "attention_kernel", "nic_gbit_per_gpu", "framework", "dp_overlap", "tp_overlap",
                "grad_dtype", "eval_interval", "eval_iters"):
        if key in run:
            args += [f"--{key.replace('_', '-')}", str(run[key])]
    if run.get("sequence_parallel") is False:
        args += ["--no-sequence-parallel"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    lines = {line["key"]: line["value"] for section in printed["sections"] for line in section["lines"]}
    assert lines["budget_gpu_hours"] == pytest.approx(budget, rel=1e-6)


def test_readme_and_docs_quote_the_budget_reading_as_computed():
    # README's accuracy paragraph and docs/budget.md 5a quote the kind's mean, max and bias
    from pathlib import Path

    held = [c for c in validation_cases_once() if c.kind == HELD]
    mean_abs = 100 * sum(abs(c.error) for c in held) / len(held)
    worst = 100 * max(abs(c.error) for c in held)
    bias = 100 * sum(c.error for c in held) / len(held)
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    assert len(held) == 22
    assert f"is {mean_abs:.1f}% off the 22 wall-clock totals, max {worst:.1f}%, bias {bias:+.1f}%".replace("bias -",
                                                                                                   "bias −") in readme
    budget_doc = (root / "docs" / "budget.md").read_text()
    assert f"| 22 | {mean_abs:.1f}% | {worst:.1f}% (SEA-LION 3B) | {bias:+.1f}% |".replace("| -", "| −") in budget_doc
