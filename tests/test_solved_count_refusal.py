"""A refusal where the GPU count was solved, not given (hostile wave 22, H's item 4): `train --days 36500` with no
--gpus was refused as "gpus: got '105,280'", a count the user never typed. It now names the days the count was
solved from, keeps the reason, and offers more days where it offered fewer GPUs (jobs.plan.completes
solved_count_refusal), at the CLI and the Python API alike; a count the user gave is still named as gpus."""

import pytest

import gpuplan

ASK = dict(model="gpt2", gpu="b200", mfu=0.4, tokens="1e15", eval_interval=1, eval_iters=1_000_000,
           failure_rate=1e-9, spot_preemption=100)


def test_a_solved_count_is_refused_naming_the_days(run_cli):
    code, out, err = run_cli("train", "--model", "gpt2", "--gpu", "b200", "--mfu", "0.4", "--days", "36000",
                             "--tokens", "1e15", "--eval-interval", "1", "--eval-iters", "1e6", "--failure-rate",
                             "1e-9", "--spot-preemption", "100")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("error: days: got 36000") and "GPUs (solved: no --gpus given)" in line
    assert "(more days, a lower --spot-preemption or a shorter --restart)" in line and "fewer GPUs" not in line
    with pytest.raises(gpuplan.InputError, match=r"^days: got 36000.*solved: no --gpus given"):
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, days=36000))


def test_a_given_count_is_still_named_as_gpus():
    with pytest.raises(gpuplan.InputError, match=r"^gpus: got '105,280'.*\(fewer GPUs, "):
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, gpus=105_280))


def test_at_the_days_cap_no_more_days_are_offered():
    # review s20b: 36,500 days is the most --days takes (schema.types.MAX_DAYS), so 'more days' offered nothing there
    with pytest.raises(gpuplan.InputError) as refused:
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, days=36_500))
    assert "more days" not in str(refused.value) and "(a lower --spot-preemption or a shorter --restart)" in str(
        refused.value)
