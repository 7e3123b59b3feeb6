"""plan's answer lines read as a user reads them (session 24, from the README walk-through): the best layout's
duration in the unit the wall-clock line uses, and the GPU-hours line saying which GPUs it counts when some are idle."""

import pytest

from gpuplan.jobs.plan.estimate import plan_report
from gpuplan.jobs.plan.schema import PlanInputs


def test_best_layout_line_gives_hours_under_a_day():
    # Pythia 1B on 64 H100: 16.93 h failure-free; the line said '0.7 days' beside 'wall-clock 16.93 h'
    report = plan_report(PlanInputs(model="pythia-1b", tokens=300e9, gpu="h100", gpus=64))
    wall = report.line("best_days")
    assert wall.text.endswith(" h") and wall.value < 1
    assert f": {wall.text}, MFU " in report.line("best_layout").text


def test_idle_gpus_line_says_the_cost_counts_the_gpus_used():
    # the article's 1,113 GPUs: the layout uses 1,112 (dp556 tp2); one idle; renting all 1,113 bills 1,113 / 1,112 - 1
    # = +0.09%, printed to 0.1% (units.signed_percent)
    report = plan_report(PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=1113))
    used = int(report.value("best_gpus"))
    assert used == 1112 and report.value("idle_gpus") == 1
    assert report.line("best_gpu_hours").formula == ("GPUs used x wall-clock (the 1,112 used; renting all 1,113 bills "
                                                      "+0.1%)")
    assert report.line("best_cost").formula.startswith("GPU-hours x price; ")
    # the GPU-hours are the used GPUs' x the wall-clock (failure-free)
    assert report.value("best_gpu_hours") == pytest.approx(used * report.value("best_days") * 24, rel=1e-9)
