"""In-loop evaluation under a batch ramp (--batch-ramp with --eval-interval): the evaluations fall among every
optimizer step, the ramp's smaller ones included (Megatron-LM update_train_iters counts each step at the batch it
runs; evaluate() runs the full eval_global_batch_size, the final global batch by default). Counts worked by hand."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from gpuplan.adapters.resolve import resolve_model
from gpuplan.core.economics import evaluation as E
from gpuplan.jobs.budget.evaluation import step_forward_share, work_factors
from gpuplan.jobs.budget.model import BudgetSettings
from gpuplan.jobs.budget.schema import BudgetInputs
from gpuplan.planner.space import RECOMPUTE_MODES


def test_ramp_steps_by_hand():
    # 1e8 tokens at 2.5e5 a step = 400 steps, then 9e8 at 1e6 = 900: 1,300 steps (1,000 without the ramp)
    assert E.ramp_run_steps(1e9, 1e6, ((1e8, 2.5e5),)) == 1300
    assert E.ramp_run_steps(1e9, 1e6) == E.run_steps(1e9, 1e6) == 1000
    # a phase's last partial batch is a step: 1e8 / 3e5 = 333.3 -> 334; the rest 9e8 / 1e6 = 900
    assert E.ramp_run_steps(1e9, 1e6, ((1e8, 3e5),)) == 1234
    # rows of a search table: one count per steady batch (9e8 / 2e6 = 450)
    assert list(E.ramp_run_steps(1e9, np.array([1e6, 2e6]), ((1e8, 2.5e5),))) == [1300.0, 850.0]
    assert E.evaluations(1300, 100) == 14  # 1,300 // 100 + 1


def test_settings_carry_the_ramp_in_tokens():
    # --batch-ramp 1B:128 at 4,096 tokens a sequence: one phase of 1e9 tokens at 524,288 tokens a step
    inputs = BudgetInputs(model="llama-3.1-8b", tokens="10B", gpus=64, seq_len=4096, global_batch=512,
                          batch_ramp="1B:128", mfu="predicted", eval_interval=100, eval_iters=10)
    assert inputs.budget_settings().eval_ramp == ((1e9, 128 * 4096.0),)
    # without evaluation the ramp is not carried (nothing counts it)
    plain = BudgetInputs(model="llama-3.1-8b", tokens="10B", gpus=64, seq_len=4096, global_batch=512,
                         batch_ramp="1B:128", mfu="predicted")
    assert plain.budget_settings().eval_ramp == ()


def test_budget_counts_the_ramp_steps(run_cli):
    # 1e9 / 524,288 = 1,907.3 -> 1,908 ramp steps; 9e9 / 2,097,152 = 4,291.5 -> 4,292 steady: 6,200 steps,
    # 6,200 // 100 + 1 = 63 evaluations (without the ramp: 1e10 / 2,097,152 -> 4,769 steps, 48)
    args = ("budget", "llama-3.1-8b", "--tokens", "10B", "--gpu", "h100", "--gpus", "64", "--mfu", "predicted",
            "--seq-len", "4096", "--global-batch", "512", "--eval-interval", "100", "--eval-iters", "10", "--json")
    code, out, err = run_cli(*args, "--batch-ramp", "1B:128")
    assert code == 0, err
    lines = {line["key"]: line for sec in json.loads(out)["sections"] for line in sec["lines"]}
    assert lines["eval_steps"]["value"] == 6200 and lines["eval_count"]["value"] == 63
    assert "ceil(1e+09 / 524,288)" in lines["eval_steps"]["formula"]
    code, out, err = run_cli(*args)
    assert code == 0, err
    lines = {line["key"]: line for sec in json.loads(out)["sections"] for line in sec["lines"]}
    assert lines["eval_steps"]["value"] == 4769 and lines["eval_count"]["value"] == 48


def test_search_rows_count_the_ramp_steps():
    # the deadline's per-row factor: 1 + evaluations x iters x forward share / steady steps, the evaluations over the
    # ramp's steps (row 512: 6,200 -> 63; row 1,024: 1,908 + 2,146 = 4,054 -> 41), the work over the steady ones
    spec = resolve_model("llama-3.1-8b")
    inputs = SimpleNamespace(tokens=1e10, seq_len=4096)
    table = {"recompute": np.array([0, 0]), "global_batch": np.array([512, 1024])}
    settings = BudgetSettings(eval_interval=100, eval_iters=10, eval_ramp=((1e9, 524288.0),))
    share = step_forward_share(spec, inputs, RECOMPUTE_MODES[0])
    factors = work_factors(inputs, spec, table, settings)
    assert factors == pytest.approx([1 + 63 * 10 * share / 4769, 1 + 41 * 10 * share / 2385], rel=1e-12)
