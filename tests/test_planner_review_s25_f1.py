"""Review R2 of session 25's planner commits (208a97ae: a common size weighs the counts an exact batch allows below
it; 4d1300a2: planner.idle_rule), helper F1. Each test's docstring gives the answer before the change."""

from __future__ import annotations

import pytest


def _report(**ask):
    from gpuplan.jobs.plan.estimate import plan_report

    return plan_report({"tokens": "100B", **ask})


@pytest.mark.parametrize("span", ["512-1024", "64-1024"])
def test_a_range_answers_as_well_as_a_count_inside_it(span):
    """S1-1: --global-batch 1000 (llama-3.1-8b, H100): dp must divide 1,000, so no layout of 1,024 GPUs runs dp 500
    or 1,000 and its best is dp8 tp4 pp8 vpp4 cp4 (0.818 s a step, 5.54 h); 1,000 GPUs run dp500 tp2 (0.435 s,
    2.95 h). A range searched its common sizes and its ends only: 512-1024 and 64-1024 answered 1,024 GPUs, 5.54 h,
    1.88x the 1,000 inside them (`--gpus 1000` asked alone, and the list 1000,1024, found it). A count inside a
    range is the user's ask: it answers on 1,000 with none idle, the same days as --gpus 1000."""
    ask = {"model": "llama-3.1-8b", "gpu": "h100", "global_batch": 1000}
    alone, ranged = _report(**ask, gpus=1000), _report(**ask, gpus=span)  # the web's "gpus": "512-1024" form
    assert ranged.value("best_gpus") == 1000
    assert ranged.value("idle_gpus") == 0
    assert ranged.value("best_days") == pytest.approx(alone.value("best_days"), rel=1e-9)
    assert ranged.value("best_days") * 24 == pytest.approx(2.95, abs=0.01)


QWEN = {"model": "qwen3-30b-a3b", "gpu": "h100", "global_batch": 120, "gpus": 128}


def _ranked(table, at):
    return [(int(r[at["GPUs"]]), float(r[at["ranked days"]])) for r in table.rows]


def test_the_answer_ends_the_front_where_the_idle_rule_holds_faster_rows():
    """S2-1: qwen3-30b-a3b, --global-batch 120 on 128 H100s answers 128 GPUs at 2.0 ranked days (dp4 pp4 vpp12 cp8
    ep8); 120 GPUs run dp5 pp3 vpp16 cp8 ep8 at 1.7 ranked days, 19.7% faster at the point, within the two layouts'
    ± model combined (sqrt(0.22^2 + 0.22^2) = 30.7%): planner.idle_rule holds it. The front ended at 120 GPUs / 1.7
    (96 at 1.8 before it), the answer off it, and report.plots.layout_series' best had no front point. The held rows
    it moved are off the front now: it ends at the answer, and every point before it is slower."""
    from gpuplan.report.plots import layout_series
    from helpers import titled_table

    answer = _report(**QWEN)
    front = _ranked(*titled_table(answer, "Pareto front"))
    assert answer.value("best_gpus") == 128
    assert front[-1] == (128, pytest.approx(2.0, abs=0.05))
    assert all(days >= front[-1][1] for _, days in front)  # to its 0.1 day
    series = layout_series(answer)
    assert series["best"]["gpus"] in {p["gpus"] for p in series["front"]}


def test_the_top_table_says_where_the_held_rows_stand_and_keeps_their_time_order():
    """S2-2: the same ask's top 10 listed five 80-GPU rows at ranked 2.0 before a 96-GPU row at 1.8 (the held rows'
    key raised to the 128-GPU answer's 2.0, then sorted by GPU count), the 120-GPU rows at 1.7 the note names
    missing. Now the answer, then the rows the idle rule moved, by their own ranked days (120 GPUs at 1.7 first),
    and the title says so."""
    from helpers import titled_table

    table, at = titled_table(_report(**QWEN), "top ")
    rows = _ranked(table, at)
    assert rows[0] == (128, pytest.approx(2.0, abs=0.05))
    assert rows[1] == (120, pytest.approx(1.7, abs=0.05))
    assert [d for _, d in rows[1:]] == sorted(d for _, d in rows[1:])
    assert "idle rule" in table.title and "right after their best" in table.title


def test_a_long_front_is_spread_along_it_with_the_answer():
    """llama-3.1-70b --global-batch 2000 --gpus 3072 (H100, 100B tokens): 3,072 GPUs answer (dp16 tp4 pp24 cp2,
    0.6 ranked days); the front has 88 points from 20 GPUs (73.6 ranked days) and the table printed its first 20,
    20 to 96 GPUs: the answer was in neither the table nor the chart. Now 19 points spread along it, both ends and
    the answer kept, the title saying so."""
    from gpuplan.jobs.plan.ranked_columns import shown_front
    from helpers import titled_table

    assert shown_front(__import__("numpy").arange(88), 50)[0].tolist() == [
        0, 5, 10, 14, 19, 24, 29, 34, 39, 44, 48, 50, 53, 58, 63, 68, 72, 77, 82, 87]  # round(87 i / 18), i = 0..18
    # (half to even: 14.5 -> 14, 43.5 -> 44, 72.5 -> 72), and the answer's 50
    answer = _report(model="llama-3.1-70b", gpu="h100", global_batch=2000, gpus=3072)
    table, at = titled_table(answer, "Pareto front")
    front = _ranked(table, at)
    assert answer.value("best_gpus") == 3072 and front[-1][0] == 3072 and front[0] == (20, pytest.approx(73.6, abs=0.05))
    assert len(front) <= 20 and "the answer among them" in table.title


def test_budget_says_the_gpus_given_it_leaves_idle():
    """S2-4: budget llama-3.1-70b on 256 H100s with --tp 4 --pp 8 --vpp 10 --cp 1 --micro-batch 1 and a 1T:16 ramp: a
    16-sequence phase needs pp 8 micro-batches a step, so dp = 16 / (8 x 1) = 2 at most, 2 x 4 x 8 = 64 GPUs, and
    192 of the 256 sit idle. Its answer-first view printed 'GPUs 64' and 360 days with nothing saying so (train's
    layout line did); the GPUs line says it now, in budget's view and train's."""
    import gpuplan
    from gpuplan.jobs.budget.estimate import BUDGET_HEADLINE
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.training.schema import TrainingInputs

    ask = dict(model="llama-3.1-70b", gpu="h100", gpus=256, mfu="predicted", tokens="2T", global_batch=512,
               framework="megatron", tp=4, pp=8, vpp=10, cp=1, micro_batch=1, batch_ramp="1T:16")
    budget = gpuplan.estimate_budget(BudgetInputs(**ask))
    assert "gpus" in BUDGET_HEADLINE  # `gpuplan budget`'s answer-first view (with_cost_headline)
    assert budget.value("gpus") == 64 and budget.line("gpus").text == "64 (192 of the 256 given left idle)"
    assert gpuplan.estimate_training(TrainingInputs(**ask)).line("gpus").text == budget.line("gpus").text
