"""Hostile inputs, wave 25, the lead's part (2026-12-07, session 23): a refusal quoting a count the user never typed.

`budget --model deepseek-v3 --gpu h100 --gpus 10000000` was refused as "gpus: got '9,999,872'": the given count's
door (jobs.plan.completes.check_plan_completes -> check_run_completes) quoted the GPUs the chosen layout runs on,
a multiple of its model-parallel size below the 10,000,000 typed (128 fewer). The refusal now quotes the count as typed and
names the layout's count beside it (no_completion's ``used``), at every door; a count the layout uses whole keeps
the words it had."""

import pytest
from helpers import four_door_refusal


def test_the_refusal_quotes_the_gpus_typed_and_names_the_ones_the_layout_uses(run_cli, client, tmp_path):
    ask = {"model": "deepseek-v3", "gpu": "h100", "gpus": 10_000_000}
    web = four_door_refusal(run_cli, client, tmp_path, "budget", "budget", ask, "gpus",
                            "failures come faster than a checkpoint period plus a restart")
    assert web.startswith("gpus: got '10,000,000'; ")
    assert "on the 9,999,872 GPUs the layout uses of the 10,000,000 asked" in web


def test_the_same_ask_on_a_count_the_layout_fills_is_worded_as_before(run_cli):
    code, out, err = run_cli("budget", "--model", "deepseek-v3", "--gpu", "h100", "--gpus", "9999872")
    assert code == 2 and out == ""
    assert err.startswith("error: gpus: got '9,999,872'; ") and "on 9,999,872 GPUs failures come faster" in err
    assert "the layout uses" not in err


@pytest.mark.parametrize("job", ["train", "budget"])
def test_a_count_that_completes_is_answered(run_json, job):
    """The same model on 2,048 GPUs (DeepSeek-V3's own count, a multiple of the layout) completes: no refusal."""
    args = (job, "--model", "deepseek-v3", "--gpu", "h100", "--gpus", "2048")
    report = run_json(*args, *(["--tokens", "1T"] if job == "train" else []))
    assert report["results"]["gpus"] == 2048
