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


def _megatron_walk(tokens, steady, phases):
    """Megatron's update_train_iters walk (training.py@d98e8a6 L2161-2171): each step consumes the batch of the phase
    its first token falls in, until the tokens are consumed."""
    ends = np.cumsum([t for t, _ in phases])
    consumed, steps = 0.0, 0
    while consumed < tokens - 1e-6:
        k = int(np.searchsorted(ends, consumed, side="right"))
        consumed += phases[k][1] if k < len(phases) else steady
        steps += 1
    return steps


def test_a_linear_phase_counts_its_steps_once():
    # review s20 M2: 5B:64-256 arrives as 256 sub-steps; a ceil each counted 11,326 steps where the walk takes 11,200
    inputs = BudgetInputs(model="llama-3.1-8b", tokens="10B", gpus=64, seq_len=4096, global_batch=512,
                          batch_ramp="5B:64-256", mfu="predicted", eval_interval=100)
    ramp = inputs.budget_settings().eval_ramp
    assert len(ramp) == 256
    counted = E.ramp_run_steps(1e10, 512 * 4096.0, ramp)
    walk = _megatron_walk(1e10, 512 * 4096.0, ramp)
    assert 11_150 < walk < 11_250 and abs(counted - walk) <= 1
    # and the single-phase case by the walk as well (1,908 + 4,292 = 6,200 by hand, below)
    assert _megatron_walk(1e10, 2_097_152.0, ((1e9, 524_288.0),)) == E.ramp_run_steps(1e10, 2_097_152.0,
                                                                                      ((1e9, 524_288.0),)) == 6200


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
    assert "= 1,908 steps" in lines["eval_steps"]["formula"] and "ceil(9e+09 / 2,097,152)" in lines["eval_steps"]["formula"]
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


RAMP_ASK = ("llama-3.1-8b", "--tokens", "10B", "--gpus", "64", "--gpu", "a100", "--global-batch", "512",
            "--seq-len", "4096", "--batch-ramp", "5B:64", "--eval-interval", "100")


def _lines(out):
    return {line["key"]: line["value"] for sec in json.loads(out)["sections"] for line in sec["lines"]}


def test_budget_train_and_plan_charge_evaluations_at_the_steady_step(run_cli):
    # review s20 M1: under a ramp the budget's step (wall-clock / steps) is the ramp's average, 2% above the steady
    # one here; each evaluation runs the full batch, so all three answers charge the steady step (plan's own layout
    # step) and agree on the expected wall-clock (before: budget / train 277.80 s an evaluation and 99,816 s, plan
    # 271.86 s and 98,533 s)
    answers = {}
    for command, extra in (("budget", ("--mfu", "predicted")), ("train", ("--mfu", "predicted")), ("plan", ())):
        code, out, err = run_cli(command, *RAMP_ASK, *extra, "--json")
        assert code == 0, err
        answers[command] = _lines(out)
    plan = answers["plan"]
    for command in ("budget", "train"):
        for key in ("eval_steps", "eval_count", "eval_seconds_each", "fail_wall_seconds"):
            assert answers[command][key] == pytest.approx(plan[key], rel=1e-9), (command, key)
    # the steady step: plan's layout's own step x iters x forward share (100 iterations, 1/3 without recompute)
    assert plan["eval_seconds_each"] == pytest.approx(100 * plan["best_step_seconds"] / 3, rel=1e-6)


def test_the_deadline_search_adds_evaluations_beside_the_ramp(run_cli):
    # the search's row for the chosen layout holds the days with failures the chosen layout's budget prints: days x
    # share = steady days x (ramp + e) x the failures' share, not steady days x ramp x (1 + e) (jobs.plan.ramp_days)
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    code, out, err = run_cli("plan", *RAMP_ASK, "--json")
    assert code == 0, err
    plan = _lines(out)
    found = search(PlanInputs(model="llama-3.1-8b", tokens="10B", gpus=64, gpu="a100", global_batch=512,
                              seq_len=4096, batch_ramp="5B:64", eval_interval=100))
    t = found.table
    row = np.flatnonzero((t["dp"] == 64) & (t["tp"] == 1) & (t["pp"] == 1) & (t["cp"] == 1) & (t["zero"] == 1)
                         & (t["micro_batch"] == 1) & (t["recompute"] == 0))
    assert len(row) == 1
    # 98,525 s against 98,533 (the search's failure shares are made per GPU count and scaled by 1 + e; the budget
    # runs its failure model on the work with the evaluations in it); before the mend 99,808 s, 1.3% over
    assert t["days_with_failures"][row[0]] * 86400 == pytest.approx(plan["fail_wall_seconds"], rel=1e-3)


def test_the_slow_end_share_holds_the_evaluations_beside_the_ramp_too():
    # review s20b M1: the point share took the evaluations beside the ramp, the slow end's failure_share (the ranking,
    # 'ranked days') still under it, so a ramp-timed row's slow / point ratio was 1.01425 against 1.00185 beside it in
    # one count's failure plans. Within a count (zero >= 1: every GPU writes) the ratio is the failure plans' alone.
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    t = search(PlanInputs(model="llama-3.1-8b", tokens="10B", gpus="64-256", gpu="a100", global_batch=512,
                          seq_len=4096, batch_ramp="5B:64", eval_interval=100)).table
    ratio = t["failure_share"] / (t["days_with_failures"] / t["days"])
    ramped = (t["ramp_factor"] > 1.01) & (t["zero"] >= 1)
    assert ramped.any()  # a row the ramp slows is in the table (256 GPUs: x1.014)
    for gpus in np.unique(t["gpus"][ramped]):
        same = (t["gpus"] == gpus) & (t["zero"] >= 1)
        assert np.ptp(ratio[same]) < 1e-9 * ratio[same].max(), gpus
