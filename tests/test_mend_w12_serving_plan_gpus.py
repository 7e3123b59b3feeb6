"""Mender MB (wave 12, review R3 S2): the plan door's memory refusal says '1 GPU', not '1 GPUs' (jobs/plan/search.py;
d3e3f44 fixed planner/plan.best_plan only). Llama-3-70B needs 1,333 GiB at best on one 80 GB H100."""

from helpers import field_refusal


def test_plan_on_one_gpu_says_1_gpu(run_cli):
    # since review s21 H2 the refusal names the input (gpus), not 'memory', and gives the best GiB after the count
    line = field_refusal(run_cli("plan", "--model", "llama-3-70b", "--gpu", "h100", "--gpus", "1"), "gpus",
                         "margin on 1 GPU (at best 1,333.1 GiB a GPU)")
    assert "1 GPUs" not in line
