"""docs/*.md examples re-read as a new user (session 24, helper UX): the Python blocks a reader copies run, and the
figures the prose quotes for a command are what that command prints now. Each test failed before its doc was fixed:
docs/budget.md imported `budget_sections` from jobs/budget/model.py after it had moved to jobs/budget/compute.py
(ImportError); docs/memory.md called `mixed` the default recipe and `hf` the default implementation, where the default
`--framework megatron` sets `megatron` for both; docs/training.md's batch-ramp figures (x1.034, steady 40.6%,
74.45 days, 29,274,078 GPU-hours) and docs/budget.md's AWS spot saving (41.6%) were an earlier model's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def _flat(name: str) -> str:
    return " ".join(_doc(name).split())


@pytest.mark.parametrize("name", ["budget.md", "campaign.md", "inference.md"])
def test_a_docs_python_block_runs_as_written(name, monkeypatch):
    """The self-contained Python blocks (docs/calibration.md's needs the calibration.json its CLI steps write,
    docs/measure.md's torch and ~40 s: not here)."""
    monkeypatch.chdir(ROOT)
    blocks = [body for lang, body in re.findall(r"```(\w*)\n(.*?)```", _doc(name), flags=re.S) if lang == "python"]
    assert blocks
    for body in blocks:
        exec(compile(body, f"docs/{name}", "exec"), {})


def test_budget_md_python_block_answers_the_article_budget(monkeypatch):
    """Its comment says '~ $444K with the default price basis': the article's 260,184 GPU-hours budget (the 1,352-GPU
    week, 224,359 GPU-hours with the comm allowance plus 15.8% contingency) at A100's median $1.71."""
    block = next(body for lang, body in re.findall(r"```(\w*)\n(.*?)```", _doc("budget.md"), flags=re.S)
                 if lang == "python")
    scope: dict = {}
    exec(compile(block, "docs/budget.md", "exec"), scope)
    assert re.search(r"~ \$444K with the default price basis", block)
    report = scope["report"]
    assert report.value("budget_usd_on_demand") == pytest.approx(444e3, rel=0.005)
    assert report.value("budget_usd_on_demand") == pytest.approx(
        report.value("budget_gpu_hours") * report.value("cost_price_on_demand"), rel=1e-9)


@pytest.mark.parametrize("framework, recipe, implementation", [
    ("megatron", "megatron", "megatron"), ("torchtitan", "fsdp2", "torchtitan"), ("hf", "amp", "hf"),
    ("deepspeed", "mixed", "hf"), ("generic", "mixed", "megatron"),
])
def test_memory_md_names_each_frameworks_default_recipe_and_implementation(run_json, framework, recipe,
                                                                           implementation):
    """docs/memory.md: '--recipe; not given, the framework profile's: megatron under the default --framework megatron,
    fsdp2 under torchtitan, amp under hf, mixed under deepspeed and generic' and the same for --implementation."""
    flat = _flat("memory.md")
    assert re.search(r"`--recipe`; not given, the framework profile's: `megatron` under the default `--framework "
                     r"megatron`, `fsdp2` under torchtitan, `amp` under hf, `mixed` under deepspeed and generic", flat)
    assert re.search(r"`--implementation`; not given, the framework profile's: `megatron` under the default "
                     r"`--framework megatron` and generic, `hf` under hf and deepspeed, `torchtitan` under torchtitan",
                     flat)
    assert "(default)" not in flat[flat.index("## 1. Model states by recipe"):flat.index("## 2.")]
    args = ("memory", "llama-2-7b", "--gpu", "h100", "--gpus", "8") + (() if framework == "megatron" else
                                                                       ("--framework", framework))
    said = {a["label"]: a["value"] for a in run_json(*args)["assumptions"]}
    assert (said["precision recipe"], said["activation implementation"]) == (recipe, implementation)


def test_training_md_batch_ramp_figures_are_what_budget_and_plan_print(run_json):
    """docs/training.md, *A batch ramp*: the 405B ramp's line as printed, and 'Both answer the same: ... N days and M
    GPU-hours failure-free at dp16 tp8 pp32 cp4, xF, from train --mfu predicted and from plan'."""
    flat = _flat("training.md")
    line = re.search(r"the `batch ramp` line \(in the answer\) says `(x[^`]+)`", flat)[1]
    both = re.search(r"Llama 3.1 405B on 16,384 H100 with that ramp, ([\d.]+) days and ([\d,]+) GPU-hours failure-free "
                     r"at (dp16 tp8 pp32 cp4), (x[\d.]+),", flat)
    ask = ("llama-3.1-405b", "--tokens", "15.6T", "--gpu", "h100", "--gpus", "16384", "--seq-len", "8192",
           "--global-batch", "2048", "--batch-ramp", "252M:512,2.618T:1024")
    budget = run_json("budget", *ask, "--mfu", "predicted")
    lines = {ln["key"]: ln for s in budget["sections"] for ln in s["lines"]}
    assert lines["batch_ramp"]["text"] == line
    r = budget["results"]
    assert f"{r['wall_days_with_comm']:.2f}" == both[1] and f"{r['gpu_hours_with_comm']:,.0f}" == both[2]
    assert line.startswith(both[4] + " ") and r["mem_layout"]["dp"] == 16
    plan = run_json("plan", *ask)["results"]
    assert plan["best_layout"].startswith(both[3] + " ")
    assert plan["best_days"] == pytest.approx(r["wall_days_with_comm"], rel=1e-9)


def test_budget_md_aws_spot_saving_is_what_budget_prints(run_cli):
    """docs/budget.md: '`--spot-price 2` is refused naming the median ...; with `--provider aws` it answers (saving
    N%)': (1 - 2 / 3.43 on-demand) less the extra restarts and lost work of spot."""
    quoted = float(re.search(r"with `--provider aws` it answers \(saving ([\d.]+)%\)", _flat("budget.md"))[1])
    code, out, err = run_cli("budget", "--gpu", "a100", "--spot-price", "2", "--provider", "aws", "--json")
    assert code == 0, err
    r = json.loads(out)["results"]
    assert r["cost_price_on_demand"] == pytest.approx(3.43, abs=0.005) and r["cost_price_spot"] == 2  # printed $3.43
    assert round(100 * r["cost_spot_saving"], 1) == quoted
    # spot's reclaims cost restarts and lost work on top of the price's discount
    assert r["cost_spot_saving"] < 1 - 2 / r["cost_price_on_demand"]
    code, _, err = run_cli("budget", "--gpu", "a100", "--spot-price", "2")
    assert code == 2 and "AWS at $3.43" in err and "$1.71/GPU-h" in err
