"""`train` and `budget` with --shard-group auto say what `plan` says of the group (jobs.plan.shard_group_told:
training_shard_group_line runs plan's search of the same ask and plan's shard_group_line over it), at every door.

The worked case is README's HSDP example (tests/test_shard_group_search.py works its groups out): llama-3.1-8b, 1T
tokens on 512 H100 under torchtitan. The answer is dp512 tp1 pp1 ZeRO-3 mb2 with a shard group of 128 (4 replicas of
dp x cp 512), the best plain sharding the same degrees without a group. Both run 1,024 sequences x 4,096 tokens a step
(the default batch: 4,194,304 tokens), so 1e12 tokens are 1e12 / 4,194,304 = 238,418.6 steps and the two layouts'
failure-free days differ by their steps alone: plain 0.869 s x 238,418.6 / 86,400 = 2.40 days, and
0.869 / 0.858 - 1 = +1.3% against the group's 0.858 s."""

import json

import pytest

import gpuplan
from gpuplan.jobs.plan.search import chosen_plan, search
from gpuplan.jobs.plan.shard_group_told import ARTICLE_DAYS, MFU_DAYS, searched_shard_group_line

pytestmark = pytest.mark.usefixtures("time_box")

ASK = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 512, "framework": "torchtitan"}
ARGS = ("llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--framework", "torchtitan")
STEPS = 1e12 / (1024 * 4096)  # 238,418.6 steps of the default 1,024 x 4,096-token batch


def _line(report):
    return report.line("shard_group_auto")


def _json_line(data: dict) -> dict:
    return next(line for s in data["sections"] for line in s["lines"] if line["key"] == "shard_group_auto")


@pytest.fixture(scope="module")
def plan_512():
    return gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group="auto"))


def test_the_worked_numbers_of_the_readme_example(plan_512):
    """The steps behind the line, from plan's own search: the plain row's step gives 2.40 days, and the ratio of the
    two steps (same batch, same tokens) is the percent the line prints."""
    line = _line(plan_512)
    result = search(gpuplan.PlanInputs(**ASK, shard_group="auto"))
    t = result.table
    plain = [i for i in range(len(t)) if t["shard_group"][i] == 0 and t["dp"][i] == 512 and t["zero"][i] == 3
             and t["micro_batch"][i] == 2 and t["recompute"][i] == 0]
    group = [i for i in range(len(t)) if t["shard_group"][i] == 128 and t["dp"][i] == 512 and t["zero"][i] == 3
             and t["micro_batch"][i] == 2 and t["recompute"][i] == 0]
    (p,), (g,) = plain, group
    assert int(t["global_batch"][p]) == int(t["global_batch"][g]) == 1024
    step_plain, step_group = float(t["step_seconds"][p]), float(t["step_seconds"][g])
    assert step_plain == pytest.approx(0.869, abs=5e-4) and step_group == pytest.approx(0.858, abs=5e-4)
    days = step_plain * STEPS / 86_400
    assert days == pytest.approx(2.40, abs=5e-3)
    assert step_plain / step_group - 1 == pytest.approx(0.013, abs=5e-4)
    assert line.value == 128
    assert line.text == (f"128 (HSDP, 4 replicas of dp x cp 512); best plain sharding: 512 GPUs dp512 tp1 pp1 ZeRO-3 "
                         f"mb2, no recompute, {step_plain:.3g} s a step, {days:.2f} days "
                         f"({step_plain / step_group - 1:+.1%} failure-free; ranked days (slow end, failures) +1.3%)")


@pytest.mark.parametrize("command,more", [("train", ("--mfu", "predicted")), ("budget", ("--mfu", "predicted")),
                                          ("train", ()), ("budget", ())])
def test_train_and_budget_print_plans_line(run_cli, plan_512, command, more):
    """The CLI line of train and budget, predicted or at the default MFU 0.4, is plan's (label and text), and the
    --json line carries the same key, label, value and text; a given MFU's line says its days are the step model's,
    in the default text view too (review R2 s23: 'wall-clock (solved) 2.75 days' stood above the plain row's 2.40
    days unexplained), and its formula."""
    code, out, err = run_cli(command, *ARGS, "--gpus", "512", "--shard-group", "auto", *more)
    assert code == 0, err
    plans = _line(plan_512)
    text = plans.text + ("" if more else MFU_DAYS)
    (row,) = [row for row in out.splitlines() if row.startswith(plans.label)]
    assert row.rstrip().endswith(f"  {text}")
    assert row.rstrip().endswith("2.40 days (+1.3% failure-free; ranked days (slow end, failures) +1.3%)" + (
        "" if more else "; days here are the step model's, not the MFU's wall-clock above"))
    code, out, err = run_cli(command, *ARGS, "--gpus", "512", "--shard-group", "auto", *more, "--json")
    assert code == 0, err
    data = json.loads(out)
    mine = _json_line(data)
    assert {k: mine[k] for k in ("key", "label", "value", "text")} == \
        {"key": "shard_group_auto", "label": plans.label, "value": 128, "text": text}
    assert mine["formula"] == ("" if more else ARTICLE_DAYS)
    assert "shard_group_auto" in data["headline"] and data["results"]["shard_group_auto"] == 128


@pytest.mark.parametrize("group", [None, 8])
def test_no_line_without_auto(run_cli, group):
    """No --shard-group, or a number: no line, no headline key (CLI text and --json)."""
    extra = ("--shard-group", str(group)) if group else ()
    for command in ("train", "budget"):
        code, out, err = run_cli(command, *ARGS, "--gpus", "512", "--mfu", "predicted", *extra, "--json")
        assert code == 0, err
        data = json.loads(out)
        assert "shard_group_auto" not in data["results"] and "shard_group_auto" not in data["headline"]
        code, out, err = run_cli(command, *ARGS, "--gpus", "512", "--mfu", "predicted", *extra)
        assert code == 0 and "shard group chosen" not in out


def test_the_python_api_answers_the_same_line(plan_512):
    """estimate_training / estimate_budget (predicted: the same Line object, formula and all) and the web API's
    budget body carry plan's line."""
    from gpuplan.web import service

    plans = _line(plan_512)
    train = gpuplan.estimate_training(gpuplan.TrainingInputs(**ASK, mfu="predicted", shard_group="auto"))
    budget = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, mfu="predicted", shard_group="auto"))
    assert _line(train) == _line(budget) == plans
    assert "shard_group_auto" not in {line.key for s in gpuplan.estimate_training(gpuplan.TrainingInputs(
        **ASK, mfu="predicted")).sections for line in s.lines}
    body = service.estimate("budget", {**ASK, "gpus": "512", "shard_group": "auto"})
    assert _json_line(body)["text"] == plans.text + MFU_DAYS  # the default MFU 0.4: its days are the step model's


def test_a_deadline_search_is_plans_own():
    """train --mfu predicted without --gpus answers from plan's deadline search (the article's week): the same line
    as `plan` with neither --gpus nor --days, ranked by the deadline rule (its words: the cost with failures)."""
    ask = {k: v for k, v in ASK.items() if k != "gpus"}
    plans = _line(gpuplan.plan_report(gpuplan.PlanInputs(**ask, shard_group="auto")))
    train = _line(gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask, mfu="predicted", shard_group="auto")))
    assert train == plans
    assert plans.value == 0 and "best HSDP: 176 GPUs" in plans.text and "ranked cost with failures" in plans.text


def test_a_solved_count_is_compared_on_that_count():
    """At the default MFU 0.4 without --gpus, train solves the count for the week (248 GPUs here) and its layout is
    plan's best on that count: the line is `plan --gpus 248`'s, its days the step model's (formula says so)."""
    ask = {k: v for k, v in ASK.items() if k != "gpus"}
    report = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask, shard_group="auto"))
    gpus = report.value("gpus")
    assert gpus == 248
    plans = _line(gpuplan.plan_report(gpuplan.PlanInputs(**ask, gpus=gpus, shard_group="auto")))
    mine = _line(report)
    assert (mine.value, mine.text) == (plans.value, plans.text + MFU_DAYS) and mine.formula == ARTICLE_DAYS


def test_the_answer_is_trains_layout_where_plan_ranks_another_first():
    """searched_shard_group_line with a Plan ranked below: its row becomes the answer. With the plain row as the
    answer, the line names plain sharding and the group of 128 as the best HSDP, at 0.858 / 0.869 - 1 = -1.3%."""
    result = search(gpuplan.PlanInputs(**ASK, shard_group="auto"))
    t = result.table
    (p,) = [i for i in range(len(t)) if t["shard_group"][i] == 0 and t["dp"][i] == 512 and t["zero"][i] == 3
            and t["micro_batch"][i] == 2 and t["recompute"][i] == 0]
    (line,) = searched_shard_group_line(result, "time", chosen_plan(result, p))
    assert line.value == 0
    assert line.text.startswith("none (plain sharding: every data-parallel rank shards); best HSDP: 512 GPUs dp512 "
                                "tp1 pp1 ZeRO-3 mb2 (HSDP: shard 128), no recompute, 0.858 s a step, 2.37 days (-1.3% "
                                "failure-free; ranked days (slow end, failures) -1.3%")


def test_node_of_narrowed_to_the_refusal():
    """The auto assumption's GPUs a node: --gpus-per-node, else the catalog's (H100 SXM: 8); resolve_gpu's refusal
    (an unknown name or none, which the job refuses itself) gives None."""
    from types import SimpleNamespace

    from gpuplan.schema.shard_group import _node_of

    assert _node_of(SimpleNamespace(gpus_per_node=4, gpu="h100")) == 4
    assert _node_of(SimpleNamespace(gpus_per_node=None, gpu="h100")) == 8
    assert _node_of(SimpleNamespace(gpus_per_node=None, gpu="no-such-gpu")) is None
    assert _node_of(SimpleNamespace()) is None
