"""--shard-group auto: the planner searches HSDP's shard group (planner.shard_group_search, issue 37 point 3).

The hand-worked case is README's HSDP example, llama-3.1-8b on 512 H100 (8-GPU nodes) under torchtitan: its
dp512 tp1 pp1 layouts have dp x cp = 512, so the groups searched are a node times a power of two below 512:
8, 16, 32, 64, 128, 256 (512 / 8 = 64 = 2^6: k = 0..5), each only at ZeRO 2 or 3 (torchtitan's HSDP stages)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import four_door_refusal

import gpuplan
from gpuplan.jobs.plan.search import search
from gpuplan.planner.plan import ranked_seconds_per_token
from gpuplan.planner.shard_group_search import node_groups

pytestmark = pytest.mark.usefixtures("time_box")

ROOT = Path(__file__).resolve().parents[1]
ASK = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 512, "framework": "torchtitan"}
KEYS = ("dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "global_batch", "recompute", "gpus")


@pytest.mark.parametrize("data,node,groups", [
    (512, 8, (8, 16, 32, 64, 128, 256)),  # 512 / 8 = 2^6: k = 0..5, the 2^6 x 8 = 512 itself is plain sharding
    (192, 8, (8, 16, 32, 64)),  # 192 / 8 = 24 = 2^3 x 3: 8 x 1, 2, 4, 8 (24, 48, 96 are not a node x a power of 2)
    (96, 4, (4, 8, 16, 32)),  # 96 / 4 = 24: the same on 4-GPU nodes
    (8, 8, ()),  # one node of ranks: the only multiple is dp x cp itself
    (12, 8, ()),  # not whole nodes
    (131_072, 8, tuple(8 * 2**k for k in range(14))),  # the deadline range's top: 14 groups, the stated bound
])
def test_node_groups_by_hand(data, node, groups):
    assert node_groups(data, node) == groups


def _search(**more):
    return search(gpuplan.PlanInputs(**ASK, **more))


def test_the_candidates_of_the_readme_example():
    """Exhaustive: every (layout, mode) row varied. The dp512 tp1 pp1 rows carry plain sharding (0) and exactly the
    six hand-worked groups; no variant runs ZeRO 0 or 1 (torchtitan's HSDP is FSDP2: ZeRO 2 or 3)."""
    table = _search(shard_group="auto", exhaustive=True).all
    groups = table["shard_group"]
    varied = groups > 0
    assert set(np.unique(table["zero"][varied]).tolist()) <= {2, 3}
    dp512 = (table["dp"] == 512) & (table["tp"] == 1) & (table["pp"] == 1) & (table["zero"] == 3) & table["fits"]
    assert set(np.unique(groups[dp512]).tolist()) == {0, 8, 16, 32, 64, 128, 256}
    data = table["dp"][varied] * table["cp"][varied]
    assert (data % groups[varied] == 0).all() and (groups[varied] < data).all() and (groups[varied] % 8 == 0).all()


def _row_key(table, i) -> tuple:
    return tuple(int(table[k][i]) for k in KEYS)


@pytest.mark.parametrize("ask", [ASK, {**ASK, "framework": "megatron", "model": "llama-3.1-70b", "gpus": 1024},
                                 {**ASK, "framework": "megatron", "model": "mixtral-8x7b", "gpus": 256}])
def test_the_pruning_bound_holds_on_every_variant(ask):
    """planner.shard_group_search.RankBound: a variant's step is at least its plain row's step less the plain row's
    exposed data-parallel comm (a group changes nothing else downward), checked on every variant of an exhaustive
    search (each variant in its plain row's own recompute mode there); and the pruned search picks the same best."""
    full = search(gpuplan.PlanInputs(**{**ask, "shard_group": "auto", "exhaustive": True})).all
    plain = {_row_key(full, i): i for i in np.flatnonzero(full["shard_group"] == 0)}
    varied = np.flatnonzero(full["shard_group"] > 0)
    assert len(varied)
    for i in varied:
        j = plain[_row_key(full, i)]
        floor = full["step_seconds"][j] - full["dp_comm_seconds"][j]
        assert full["step_seconds"][i] >= floor * (1 - 1e-12), (_row_key(full, i), int(full["shard_group"][i]))
    pruned = search(gpuplan.PlanInputs(**{**ask, "shard_group": "auto"})).table
    exhaustive = search(gpuplan.PlanInputs(**{**ask, "shard_group": "auto", "exhaustive": True})).table
    assert ranked_seconds_per_token(pruned).min() == pytest.approx(ranked_seconds_per_token(exhaustive).min(), rel=1e-9)


@pytest.mark.parametrize("ask", [ASK, {**ASK, "framework": "megatron", "model": "llama-3.1-70b", "gpus": 1024}])
def test_auto_is_never_slower_than_plain_sharding(ask):
    """The auto search holds every plain row (the same numbers: shard_group 0) and more, so its best ranked time is
    at most plain sharding's."""
    auto = search(gpuplan.PlanInputs(**ask, shard_group="auto")).table
    plain = search(gpuplan.PlanInputs(**ask)).table
    assert ranked_seconds_per_token(auto).min() <= ranked_seconds_per_token(plain).min()
    rows = auto.take(auto["shard_group"] == 0)
    assert sorted(rows["step_seconds"].tolist()) == pytest.approx(sorted(plain["step_seconds"].tolist()), rel=1e-12)


def _results(report) -> dict:
    return {line.key: line for section in report.sections for line in section.lines}


def test_the_chosen_group_times_as_the_fixed_group_does():
    """The answer's group N: `plan --shard-group N` with the answer's degrees fixed predicts the same step."""
    auto = gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group="auto"))
    lines = _results(auto)
    group = lines["shard_group_auto"].value
    assert group in node_groups(512, 8)  # the example's answer runs HSDP (its step 1.3% under plain sharding's)
    layout = re.match(r"dp(\d+) tp(\d+) pp(\d+) ZeRO-(\d) mb(\d+) \(HSDP: shard (\d+)\), (no|selective|full) recompute",
                      lines["best_layout"].text.split(", ", 1)[1])
    dp, tp, pp, zero, mb, shard, recompute = layout.groups()
    assert int(shard) == group
    fixed = gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group=group, tp=int(tp), pp=int(pp), zero=int(zero),
                                                   micro_batch=int(mb), recompute=recompute.replace("no", "none")))
    assert _results(fixed)["best_step_seconds"].value == pytest.approx(lines["best_step_seconds"].value, rel=1e-12)


def test_the_line_states_the_other_kinds_percent():
    """The line's percent is the best plain-sharding row's days over the answer's, less 1 (jobs.plan.shard_group_told)."""
    found = _search(shard_group="auto")
    report = gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group="auto"))
    text = _results(report)["shard_group_auto"].text
    days = re.search(r"(\d+\.\d+) days \(([+-]\d+\.\d)%\)", text)
    plain = found.table.take(found.table["shard_group"] == 0)
    best_plain = plain["days"][int(np.argmin(ranked_seconds_per_token(plain)))]
    assert float(days.group(1)) == pytest.approx(best_plain, abs=0.005)
    assert float(days.group(2)) == pytest.approx((best_plain / _results(report)["best_days"].value - 1) * 100, abs=0.05)


@pytest.mark.parametrize("framework,zero,fragment", [
    ("llmc", None, "has no hybrid sharding"),
    ("torchtitan", 1, "runs a shard group with ZeRO 2 or 3 only (not 1): give --zero 2 or 3"),
    ("deepspeed", 2, "runs a shard group with ZeRO 3 only (not 2): give --zero 3")])
def test_auto_keeps_the_frameworks_refusals_at_every_door(run_cli, client, tmp_path, framework, zero, fragment):
    ask = {"model": "gpt2", "gpu": "h100", "gpus": 8, "tokens": 1e9, "framework": framework, "shard_group": "auto",
           **({"zero": zero} if zero is not None else {})}
    line = four_door_refusal(run_cli, client, tmp_path, "plan", "plan", ask, "shard_group", fragment)
    assert line.startswith("shard_group: got 'auto';")


def test_memory_refuses_auto_at_every_door(run_cli, client, tmp_path):
    ask = {"model": "gpt2", "gpu": "h100", "gpus": 16, "zero": 3, "shard_group": "auto"}
    four_door_refusal(run_cli, client, tmp_path, "memory", "memory", ask, "shard_group", "`memory` checks one fixed "
                      "layout: give a group of 2 or more")


def test_a_word_that_is_not_auto_is_refused_naming_both_forms(run_cli):
    code, out, err = run_cli("plan", "--model", "gpt2", "--gpu", "h100", "--gpus", "8", "--tokens", "1e9",
                             "--shard-group", "automatic")
    assert code == 2 and err.startswith("error: shard_group: got 'automatic';") and "such as 8, or auto" in err


def test_auto_answers_alike_at_the_four_doors(run_json, client, tmp_path):
    cli = run_json("plan", "--model", ASK["model"], *[f"--{k.replace('_', '-')}={v}" for k, v in ASK.items()
                                                      if k != "model"], "--shard-group", "AUTO")["results"]
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in {**ASK, "shard_group": "auto"}.items()), encoding="utf-8")
    planned = run_json("plan", str(plan))["results"]
    web = client.post("/api/plan", json={**ASK, "shard_group": "auto"}).json()["results"]
    api = {k: line.value for k, line in _results(gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group="auto"))).items()}
    for key in ("best_layout", "shard_group_auto", "best_step_seconds", "best_gpus"):
        assert cli[key] == planned[key] == web[key] == pytest.approx(api[key], rel=1e-12) if isinstance(api[key], float) \
            else cli[key] == planned[key] == web[key] == api[key], key


def test_train_and_budget_search_it_as_plan_does():
    """`train --mfu predicted --gpus 512` takes plan's layout (jobs.training.layout: the same search): its group."""
    plan = _results(gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group="auto")))
    chosen = plan["shard_group_auto"].value
    train = gpuplan.estimate_training(gpuplan.TrainingInputs(**ASK, mfu="predicted", shard_group="auto"))
    assert f"(HSDP: shard {chosen})" in train.line("mem_layout").text
    assert any(a.key == "shard_group" and f"within {chosen} data-parallel ranks" in a.value for a in train.assumptions)
    budget = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, mfu="predicted", shard_group="auto"))
    assert f"(HSDP: shard {chosen})" in budget.line("mem_layout").text


def test_without_auto_no_column_and_no_line():
    """Not given, or a number: the table has no shard_group column and the answer no auto line (nothing moves)."""
    assert "shard_group" not in _search().table.columns
    assert "shard_group" not in _search(shard_group=8).table.columns
    assert "shard_group_auto" not in _results(gpuplan.plan_report(gpuplan.PlanInputs(**ASK)))


def test_the_web_page_sends_the_shard_group():
    """The page's Layout inputs carry it to plan, budget and memory (memory: the budget's chosen group, never auto)."""
    html = (ROOT / "src/gpuplan/web/static/index.html").read_text(encoding="utf-8")
    script = (ROOT / "src/gpuplan/web/static/app.js").read_text(encoding="utf-8")
    assert 'id="shard_group" name="shard_group"' in html and '<option value="auto">' in html
    assert '"shard_group", "micro_batch"' in script  # FORM_FIELDS
    endpoints = script[script.index("const ENDPOINTS"):script.index("// The result lines")]
    for name in ("budget", "memory", "plan"):
        block = endpoints[endpoints.index(f"  {name}: {{"):]
        assert 'shard_group: "shard_group"' in block[:block.index("}")], name
    assert 'toLowerCase() === "auto") delete out.shard_group' in script
    for lang in ("en", "zh"):
        words = json.loads((ROOT / f"src/gpuplan/web/static/i18n/{lang}.json").read_text(encoding="utf-8"))["ui"]
        assert words["shard_group"] and words["shard_group_hint"]


@pytest.mark.parametrize("more", [{"gpus": 512, "rank_by": "cost"}, {"days": 3}, {"gpus": "256-1024", "rank_by": "gpus"},
                                  {"gpus": 512, "framework": "megatron", "rank_by": "cost"}])
def test_the_pruned_search_answers_as_the_exhaustive_one_under_every_ranking(more):
    """RankBound prunes per GPU count; the cost, deadline (fewest GPUs meeting 3 days, then cheapest) and fewest-GPUs
    rankings order a count's rows by time too, so the answer and its group are the exhaustive search's."""
    answers = []
    for exhaustive in (False, True):
        lines = _results(gpuplan.plan_report(gpuplan.PlanInputs(**{**ASK, **more, "shard_group": "auto",
                                                                   "exhaustive": exhaustive})))
        answers.append((lines["best_layout"].text, lines["shard_group_auto"].value))
    assert answers[0] == answers[1]
