"""`train --gpus N` and `plan --gpus N` answer the same count, layout and days with failures (wave 7, the
point commit 875dd94 left open in docs/training.md): for an irregular N (no layout uses it whole) both weigh
the counts just below it, and `plan` ranked them with each layout's failure share (jobs/plan/completes.py,
planner.plan.ranking) while `train` ranked them by failure-free time. At very large counts the two then
differed: 405B on 500,000 H100, 15T tokens, plan 393,216 GPUs / 20.03 days with failures, train 499,968 /
23.21 days; 70B on 250,000 H100, plan 196,608 / 2.66 days, train 249,984 / 3.06 days. `train` now ranks
through the same completing_rows. The expected figures are each job's own answer, not hard-coded numbers;
the two ordinary asks agreed before and must still agree."""

from __future__ import annotations

import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.jobs.budget.estimate import estimate_budget, failures_for_deadline
from gpuplan.jobs.budget.schema import BudgetInputs
from gpuplan.jobs.plan.estimate import plan_report
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.jobs.training.layout import layout_for_gpus, with_failure_shares
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.planner.plan import best_plan

LARGE = [
    {"model": "llama-3.1-405b", "gpu": "h100", "gpus": 500_000, "tokens": "15T"},
    {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 250_000, "tokens": "15T"},
]
ORDINARY = [
    {"model": "llama-2-7b", "gpu": "a100", "gpus": 1_113},
    {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 1_000},
]


@pytest.mark.parametrize("ask", LARGE + ORDINARY, ids=lambda a: f"{a['model']}-{a['gpus']}")
def test_train_and_plan_answer_the_same_count_layout_and_days_with_failures(ask):
    """Fails before this change on the two large asks (train 499,968 and 249,984 GPUs)."""
    train = estimate_budget(BudgetInputs(**ask, mfu="predicted"))
    plan = plan_report(ask)
    assert train.value("gpus") == plan.value("best_gpus")
    # the training job (a plain TrainingInputs: the Python / web API's estimate_training) weighs with the budget's
    # defaults too (jobs.training.layout.with_budget_fields); before wave 8 it ranked failure-free: 499,968 / 249,984
    assert layout_for_gpus(TrainingInputs(**ask, mfu="predicted"), ask["gpus"]).gpus == plan.value("best_gpus")
    # train's layout line reads '<layout> on <count> GPUs (...)'; plan's best_layout value is '<layout>'
    assert train.line("mem_layout").text.startswith(plan.value("best_layout") + " on ")
    assert train.value("fail_wall_seconds") == pytest.approx(plan.value("fail_wall_seconds"), rel=1e-9)


def test_the_large_ask_leaves_idle_the_gpus_that_finish_later_with_failures():
    """Ranked failure-free (best_plan with no weighing step: the ranking before this change), 500,000 H100
    give 499,968 GPUs; with failures (the budget's expected wall-clock at the point rate,
    jobs.budget.estimate.failures_for_deadline) that layout finishes later than the one train now
    answers on fewer GPUs."""
    ask = LARGE[0]
    inputs = BudgetInputs(**ask, mfu="predicted")
    train = estimate_budget(inputs)
    ev = evaluator_for(inputs)
    failure_free, _ = best_plan(ev, ask["gpus"], inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs),
                                "time")
    # 499,968 = 1,116 x 448: dp 1,116 of tp 8 x pp 14 x cp 4 (pp 14 x vpp 9 = the 126 layers), the most whole
    # replicas of 448 GPUs within 500,000 (500,000 / 448 = 1,116.07)
    assert failure_free.gpus == 499_968 and train.value("gpus") < failure_free.gpus
    after = failures_for_deadline(inputs, inputs.spec(), resolve_gpu(ask["gpu"]))
    wall = after(failure_free.gpus, failure_free, failure_free.days(inputs.tokens) * 86400)
    assert train.value("fail_wall_seconds") < wall


@pytest.mark.parametrize("ask", LARGE[:1] + ORDINARY[:1], ids=lambda a: f"{a['model']}-{a['gpus']}")
def test_weighing_only_the_rows_that_could_win_picks_what_weighing_all_picks(ask):
    """with_failure_shares(first_only=True) works out the failure share only for rows no slower before it
    than the fastest row is after it (a share is >= 1); the row ranked first is the one weighing every
    row ranks first."""
    inputs = BudgetInputs(**ask, mfu="predicted")
    ev = evaluator_for(inputs)
    picks = []
    for first_only in (True, False):
        plan, rows = best_plan(ev, ask["gpus"], inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs),
                               "time", with_failure_shares(inputs, ev, ask["gpus"], first_only))
        picks.append((plan.gpus, plan.text(), len(rows)))
    assert picks[0][:2] == picks[1][:2]
    assert picks[0][2] < picks[1][2]  # fewer rows weighed
