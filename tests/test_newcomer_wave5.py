"""Issue 39, re-read as a new user on a fresh clone (wave 5): what the README's examples and the
commands a newcomer types next printed that was not true, each through the CLI as the user runs
it. Each test failed on 54c46f5."""

import pytest


def _assumptions(report: dict, label: str) -> list[dict]:
    return [a for a in report["assumptions"] if a["label"] == label]


# ---- '(set)' only on what the user set --------------------------------------------------------

def test_a_default_global_batch_is_not_called_given(run_cli, run_json):
    """`gpuplan train --full` printed "global batch 5,505,024 tokens (set) | given" though no batch
    was given: the budget took the layout's batch (1,344 sequences = dp 672 x 2, the default 1,024
    rounded to a multiple of dp) for a user's."""
    report = run_json("train")
    (batch,) = _assumptions(report, "global batch")
    assert batch["user_set"] is False
    assert batch["value"] == f"{1344 * 4096:,} tokens"  # the layout's batch, 1,344 x 4,096
    assert "given" not in batch["source"] and "by default" in batch["source"]
    code, out, err = run_cli("train", "--full")
    assert code == 0, err
    line = next(row for row in out.splitlines() if row.startswith("global batch") and "tokens" in row)
    assert "(set)" not in line


def test_a_global_batch_the_user_gives_is_marked_set(run_json):
    report = run_json("train", "--global-batch", "512")
    (batch,) = _assumptions(report, "global batch")
    assert batch["user_set"] is True and batch["value"] == f"{512 * 4096:,} tokens"


def test_plan_states_its_global_batch_once(run_json):
    """`plan --full` listed the global batch twice: its own (1,024 x 4,096 tokens, not set) and the
    budget's ("4,194,304 tokens (set)", "given")."""
    report = run_json("plan", "llama-2-7b", "--tokens", "2T", "--gpu", "a100", "--gpus", "64")
    (batch,) = _assumptions(report, "global batch")
    assert batch["user_set"] is False and batch["value"] == "1,024 x 4,096 tokens"
    line = next(s for sec in report["sections"] for s in sec["lines"] if s["key"] == "global_batch")
    assert line["formula"] == "the default batch, rounded to a multiple of dp"


# ---- JSON keys consistent with the text -------------------------------------------------------

@pytest.mark.parametrize("args", [("train", "--gpus", "256"), ("train",), ("plan", "llama-2-7b", "--gpus", "64"),
                                  ("infer",), ("memory", "llama-2-7b")])
def test_every_json_headline_key_is_a_result(run_json, args):
    """`train ... --gpus 256 --json` listed "gpus_compute_only" in its headline, a key its results
    do not have (the compute-only count exists only for a deadline)."""
    report = run_json(*args)
    assert report["headline"]
    missing = [k for k in report["headline"] if k not in report["results"] and k not in report["inputs"]]
    assert missing == []


def test_a_deadline_headline_keeps_the_compute_only_count(run_json):
    report = run_json("train")
    assert "gpus_compute_only" in report["headline"]
    assert report["results"]["gpus_compute_only"] == pytest.approx(1112.89, abs=0.01)  # 7,790 GPU-days / 7 days


# ---- nothing printed twice --------------------------------------------------------------------

def test_disaggregated_cost_names_its_price_once(run_cli):
    """README's `--disaggregate` example, --full: both pools are on B200, and the cost line's source
    read "median of 6 providers' ... ; median of 6 providers' ..." (the same price twice)."""
    code, out, err = run_cli("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms",
                             "--prompt", "2K", "--output-tokens", "512", "--disaggregate", "--full", "--json")
    assert code == 0, err
    import json

    report = json.loads(out)
    line = next(s for sec in report["sections"] for s in sec["lines"] if s["key"] == "disagg_cost_per_hour")
    prefill = next(s for sec in report["sections"] for s in sec["lines"] if s["key"] == "disagg_prefill")
    decode = next(s for sec in report["sections"] for s in sec["lines"] if s["key"] == "disagg_decode")
    assert prefill["value"]["gpu"] == decode["value"]["gpu"] == "b200"
    assert line["formula"].count("median of") == 1
