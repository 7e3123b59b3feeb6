"""`plan --zero 1 --grad-all-reduce` (final8 MUST 1): the option is documented for plan (docs/cli.md) and valid with
the stated --zero 1, but plan's comparison with the planner's free search cleared --zero and kept grad_all_reduce,
so schema.layout_rules refused every such ask with 'give --zero 1 (not the planner's choice)'. The free search now
keeps the stated ZeRO-1 (jobs.plan.estimate._check_my_layout), and the three doors answer train's step."""

import pytest

ASK = dict(model="llama-2-7b", gpu="a100", gpus=64, zero=1, grad_all_reduce=True)
ARGS = ("llama-2-7b", "--gpu", "a100", "--gpus", "64", "--zero", "1", "--grad-all-reduce")
# train of the layout plan picks (dp32 pp2 vpp8 ZeRO-1 mb1, no recompute), --mfu predicted, measured at this commit:
# 14.902158 s with the all-reduce, 14.895047 s without (its DP term 0.021711 s vs 0.014600 s: the all-reduce moves
# 2S where the reduce-scatter moves S, over the share of the step not hidden)
TRAIN_STEP_S = 14.902158433753623


def test_cli_plan_answers_with_the_stated_zero_1(run_json):
    with_it = run_json("plan", *ARGS)["results"]
    without = run_json("plan", *ARGS[:-1])["results"]
    assert with_it["best_layout"] == "dp32 tp1 pp2 vpp8 ZeRO-1 mb1, no recompute"
    assert with_it["best_step_seconds"] == pytest.approx(TRAIN_STEP_S, rel=1e-9)
    assert with_it["mine_step_dp_comm"] > without["mine_step_dp_comm"]  # the option is applied, not dropped


def test_train_of_the_same_layout_gives_the_same_step(run_json):
    train = run_json("train", *ARGS, "--tp", "1", "--pp", "2", "--vpp", "8", "--micro-batch", "1", "--recompute",
                     "none", "--mfu", "predicted")["results"]
    assert train["io_step_seconds"] == pytest.approx(TRAIN_STEP_S, rel=1e-9)


def test_python_api_and_web_answer_the_same():
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    report = plan_report(PlanInputs(**ASK))
    assert report.value("best_step_seconds") == pytest.approx(TRAIN_STEP_S, rel=1e-9)
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    response = TestClient(create_app()).post("/api/plan", json=ASK)
    assert response.status_code == 200, response.text
    assert response.json()["results"]["best_step_seconds"] == pytest.approx(TRAIN_STEP_S, rel=1e-9)


@pytest.mark.parametrize("pp", ["1", "2"])
def test_under_deepspeed_it_changes_no_figure(run_json, pp):
    """Its help and docs/cli.md say so (final8 SHOULD 1): DeepSpeed's ZeRO-1 all-reduces each bucket anyway
    (core.comm.dp_costs, use_multi_rank_bucket_allreduce), so the step and memory are the same with or without it.
    Accepted, not refused: BLOOM's validation row states it under deepspeed (training_runs.yaml). Measured at this
    commit: 15.999868 s at pp 1 and 16.640102 s at pp 2 both ways."""
    args = ("train", "llama-2-7b", "--gpu", "a100", "--gpus", "64", "--framework", "deepspeed", "--zero", "1",
            "--tp", "1", "--pp", pp, "--micro-batch", "1", "--mfu", "predicted")
    plain, flagged = run_json(*args)["results"], run_json(*args, "--grad-all-reduce")["results"]
    assert flagged == plain


def test_help_says_what_it_does_under_deepspeed():
    from gpuplan.commands.reference import options_by_name

    uses = options_by_name()["--grad-all-reduce"]
    assert {u.command for u in uses} == {"budget", "plan", "train"}
    assert all("Under --framework deepspeed it changes no figure" in u.help for u in uses)
