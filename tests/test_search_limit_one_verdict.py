"""One layout-search limit for every face (issue of 2026-12-05, follow-up to the hostile-input sweep).

The web API counted a plan's layouts itself, before the micro-batch prune (web/bounds.search_exceeds,
600,000 enumerated), while the CLI and the Python API count the layouts the search evaluates after it
(planner.search.MAX_EVALUATED, then 600,000): llama-2-7b with a 1e12-token batch on the 29 counts the
deadline search uses enumerates 938,378 layouts and evaluates 346,033, so the CLI answered and the API
refused. Now planner.search.layouts_to_evaluate is the one limit, reached by the three the same way.
Also: the refusal names the counts asked apart from those the planner weighs below irregular ones,
--gpus-per-node is bounded by the catalog's largest scale-up domain, and profile --steps by 100."""

import json

import pytest
from helpers import DEADLINE_COUNTS, SEARCHED_1E12

from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.planner.search import MAX_EVALUATED, counts_label

IRREGULAR = ",".join(str(1000 + 7 * i) for i in range(256))  # 1000, 1007, ... 2785: none a common size


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    return TestClient(create_app(), raise_server_exceptions=False)


def three_verdicts(run_cli, client, fields: dict, cli_args: list[str]):
    """(CLI, API, Python API) of one plan: ('ok', layouts searched) or ('refused', field, message)."""
    from gpuplan import InputError, plan_report

    code, out, err = run_cli("plan", *cli_args, "--json")
    cli = ("ok", json.loads(out)["results"]["searched"]) if code == 0 else ("refused", err)
    assert code in (0, 2) and (code == 0 or err.count("\n") == 1), (code, err)
    response = client.post("/api/plan", json=fields)
    assert response.status_code in (200, 422), response.text[:300]
    data = response.json()
    api = ("ok", data["results"]["searched"]) if response.status_code == 200 else ("refused", f"error: {data['message']}\n")
    try:
        python = ("ok", plan_report(PlanInputs(**fields)).value("searched"))
    except InputError as exc:
        python = ("refused", f"error: {exc}\n")
    return cli, api, python


def test_the_1e12_token_batch_is_answered_by_the_cli_the_api_and_python_alike(run_cli, client):
    """The API refused it ('over the API a search may consider at most 600,000 layouts, and these 29
    GPU count(s) give more'); 938,378 layouts before the prune, 346,033 evaluated (the CLI's count,
    test_hostile_inputs_2026_12_05)."""
    counts = ",".join(map(str, DEADLINE_COUNTS))
    fields = {"model": "llama-2-7b", "global_batch_tokens": "1e12", "gpus": counts}
    cli, api, python = three_verdicts(run_cli, client, fields,
                                      ["llama-2-7b", "--global-batch-tokens", "1e12", "--gpus", counts])
    assert cli == api == python
    # 73,020 rows of short runs + 9,666 long runs x (fitting + 1), 263,347 fitting: tests/test_search_count_1e12.py
    assert cli[0] == "ok" and cli[1] == SEARCHED_1E12 <= MAX_EVALUATED


@pytest.mark.parametrize("fields, args, fragment", [
    ({"global_batch_tokens": "1e12", "exhaustive": True}, ["--global-batch-tokens", "1e12", "--exhaustive"],
     f"layouts x recompute modes, more than {MAX_EVALUATED:,}"),  # the API said 'exhaustive: ... at most 100,000 layouts'
    ({"global_batch": 735134400, "seq_len": 1, "sequence_parallel": False},  # SP off: hostile w15 (e)
     ["--global-batch", "735134400", "--seq-len", "1", "--no-sequence-parallel"],
     "error: gpus: got 'the default range, 29 GPU count(s)'; the search would evaluate "),
])
def test_a_search_too_large_is_refused_in_the_same_line_by_all_three(run_cli, client, fields, args, fragment):
    cli, api, python = three_verdicts(run_cli, client, {"model": "llama-2-7b"} | fields, ["llama-2-7b", *args])
    assert cli == api == python
    assert cli[0] == "refused" and fragment in cli[1]


def test_the_refusal_names_the_counts_asked_and_those_the_planner_added(run_cli):
    """256 irregular counts asked; the planner weighs 194 more below them (the largest multiple of the
    node, of 64 and of 256, and the largest common size: planner.plan.alternative_counts). The line
    said '450 GPU count(s)', as if all were asked."""
    from gpuplan.planner.plan import counts_with_alternatives

    searched, _ = counts_with_alternatives(tuple(int(c) for c in IRREGULAR.split(",")), 8)
    assert len(searched) == 450
    code, _, err = run_cli("plan", "llama-2-7b", "--gpus", IRREGULAR, "--global-batch-tokens", "1e10", "--exhaustive")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("error: gpus: got '256 GPU count(s) asked + 194 the planner weighs below irregular ones'; "
                          "the search would evaluate "), err


def test_counts_label_says_nothing_added_when_nothing_was():
    assert counts_label(29, 29) == counts_label(29) == "29 GPU count(s)"
    assert counts_label(5, 3) == "3 GPU count(s) asked + 2 the planner weighs below irregular ones"


def test_gpus_per_node_is_bounded_by_the_largest_scale_up_domain_in_the_catalog(run_cli, client):
    """2^20 was taken (and planned); the catalog's largest domain is a TPU v5p pod's 8,960 chips."""
    import tomllib
    from pathlib import Path

    from gpuplan.schema.vocabulary import MAX_GPUS_PER_NODE

    hardware = Path(__file__).parents[1] / "src" / "gpuplan" / "catalog" / "hardware"
    domains = [tomllib.loads(p.read_text()).get("scale_up", {}).get("domain_size", 0) for p in hardware.glob("*.toml")]
    assert MAX_GPUS_PER_NODE == max(domains) == 8960
    expected = ("give a whole number of GPUs from 1 to 8,960, the largest scale-up domain in the catalog "
                "(a TPU v5p pod; NVL72 racks are 72)")
    for value in ("8961", "1048576", "0", "2.5"):
        for command in ("plan", "train", "budget"):
            code, _, err = run_cli(command, "llama-2-7b", "--gpus", "64", "--gpus-per-node", value)
            assert (code, err) == (2, f"error: gpus_per_node: got '{value}'; {expected}\n")
    response = client.post("/api/plan", json={"model": "llama-2-7b", "gpus": 64, "gpus_per_node": 1048576})
    assert response.status_code == 422 and response.json()["field"] == "gpus_per_node"
    assert response.json()["message"] == f"gpus_per_node: got 1048576; {expected}"
    code, _, err = run_cli("plan", "llama-2-7b", "--gpu", "gb200", "--gpus", "144", "--gpus-per-node", "72")
    assert code == 0, err  # an NVL72 rack as one node is taken


@pytest.mark.parametrize("option, value, expected", [
    ("--steps", "101", "error: steps: got '101'; must be > 0 and <= 100\n"),
    ("--steps", "1000000", "error: steps: got '1000000'; must be > 0 and <= 100\n"),
    ("--warmup", "101", "error: warmup: got '101'; must be >= 0 and <= 100\n"),
])
def test_profile_runs_a_trial_of_at_most_100_steps(run_cli, tmp_path, option, value, expected):
    """1,000,000 steps were taken: ~16 days of a CPU trial with no output (0.83 s a step median
    measured for pythia-70m at seq 512 on a busy 2-core machine). Refused before torch is used."""
    out = tmp_path / "trial.json"
    code, _, err = run_cli("profile", "pythia-70m", "--device", "cpu", option, value, "--out", str(out))
    assert (code, err) == (2, expected)
    assert not out.exists()


def test_a_given_layouts_free_search_past_the_limit_says_so(run_cli):
    """Every degree given, exhaustive: the layout's own search is small, the free search it is compared
    with is not. It said '... or fix some degrees (--tp, --pp, --micro-batch)', all of them fixed."""
    code, _, err = run_cli("plan", "llama-2-7b", "--global-batch-tokens", "1e12", "--exhaustive", "--tp", "1", "--pp",
                           "1", "--cp", "1", "--micro-batch", "1", "--zero", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: gpus: got 'the default range, 29 GPU count(s)'; the planner's free search (to compare your layout "
                          "with) would evaluate "), err
    assert err.endswith(f"more than {MAX_EVALUATED:,}; give fewer GPU counts (--gpus) or a smaller global batch or "
                        "leave --exhaustive off\n"), err


# gpt-oss-120b: 703,607 since memory splits the experts by expert TP (etp = tp, core.expert_layout): 15 more ZeRO-0
# layouts a count at 6,144-98,304 GPUs (dp 4 x tp 8 x pp 6 x cp 32) pass the search's memory bound (703,532 before)
@pytest.mark.parametrize("model, gpu, layouts", [("gpt-oss-120b", "mi355x", 703_607), ("qwen3-30b-a3b", "h100", 691_522)])
def test_every_catalog_models_default_plan_is_under_the_limit(model, gpu, layouts):
    """The bare `plan gpt-oss-120b --gpu mi355x` / `plan qwen3-30b-a3b --gpu h100` (the deadline search
    over 29 counts) were refused at 600,000 ('the search would evaluate 703,532 layouts'); these are
    the largest default searches of the catalog (every model x GPU, --framework megatron, scanned)."""
    from gpuplan.jobs.plan.search import (
        deadline_counts,
        evaluator_for,
        max_tp,
        space_limits,
    )
    from gpuplan.planner.plan import counts_with_alternatives
    from gpuplan.planner.search import layouts_to_evaluate

    inputs = PlanInputs(model=model, gpu=gpu)
    ev = evaluator_for(inputs)
    searched, _ = counts_with_alternatives(deadline_counts(inputs, ev.cluster.gpus_per_node), ev.cluster.gpus_per_node)
    grid = layouts_to_evaluate(ev, searched, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))
    assert len(grid["gpus"]) == layouts < MAX_EVALUATED
