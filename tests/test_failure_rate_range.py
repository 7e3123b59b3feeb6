"""--failure-rate moves the ends of the "expected wall-clock with failures" range, not only its point
(wave 7): `plan llama-3.1-405b --gpus 1-10000000 --failure-rate 1e-7` printed 2.90 days expected with failures
but a range of 4.17-9.44 days (jobs/budget/compute.failure_ranges took the census rates 1.22e-5 / 3.39e-5
whatever was given), and the ranking and completion check (jobs/plan/completes.py) read those census ends too.
Now the range is the stated rate scaled by the census range's relative spread
(core.economics.reliability.failure_rate_range: RSC-2 2.34 / RSC-1 6.50 failures per 1000 node-days,
arXiv:2410.21680, over the Llama 3 census's 419 in 54 days on 16,384 GPUs, arXiv:2407.21783 Table 5), and
the budget, train, plan and the ranking all read those ends."""

from __future__ import annotations

import json

import pytest
from helpers import report_lines
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpuplan.core.economics import reliability as R
from gpuplan.errors import InputError
from gpuplan.jobs.budget.estimate import estimate_budget

# the census spread by hand: RSC-2 2.34e-3 / 192 = 1.2188e-5, RSC-1 6.50e-3 / 192 = 3.3854e-5 per GPU-hour,
# Llama 3 419 / (16,384 x 1,296 h) = 1.9733e-5: 0.6176x and 1.7156x
LOW_SHARE, HIGH_SHARE = 1.2188e-5 / 1.9733e-5, 3.3854e-5 / 1.9733e-5
RANGE_1E7 = ["plan", "llama-3.1-405b", "--gpus", "1-10000000", "--failure-rate", "1e-7"]


def test_the_default_rate_keeps_the_census_range_and_a_stated_rate_scales_it():
    assert R.failure_rate_range() == R.FAILURE_RATE_RANGE  # exactly: validate's budget rows do not move
    low, high = R.failure_rate_range(1e-7)
    assert low == pytest.approx(1e-7 * LOW_SHARE, rel=1e-4) and high == pytest.approx(1e-7 * HIGH_SHARE, rel=1e-4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rate=st.floats(1e-9, 2e-4), gpus=st.integers(8, 4096))
def test_the_point_lies_within_its_range_at_any_rate(rate, gpus):
    """Budget job (the Python API train and budget share): at any stated rate the expected wall-clock with
    failures, the MTBI and the goodput lie inside their printed ranges, and the MTBI's ends are the hand
    formula 1 / (GPUs x rate x 1.7156) .. 1 / (GPUs x rate x 0.6176)."""
    try:
        answer = estimate_budget({"params": "13B", "gpus": gpus, "tokens": "1T", "failure_rate": rate})
    except InputError:  # failures faster than a checkpoint period at this count: no run to range
        assume(False)
    wall, mtbi, goodput = (answer.line(k) for k in ("fail_wall_seconds", "fail_mtbi_seconds", "fail_goodput"))
    assert wall.low <= wall.value <= wall.high
    assert goodput.low <= goodput.value <= goodput.high
    used = answer.value("gpus_rented")
    assert mtbi.value == pytest.approx(3600 / (used * rate), rel=1e-9)
    assert mtbi.low == pytest.approx(3600 / (used * rate * HIGH_SHARE), rel=1e-4)
    assert mtbi.high == pytest.approx(3600 / (used * rate * LOW_SHARE), rel=1e-4)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rate=st.floats(1e-8, 1e-4))
def test_the_plan_answer_lies_within_its_range_at_any_rate(rate):
    """plan over a range of counts (the step band and the rate's range together, compute.failure_ranges):
    the answer's expected wall-clock with failures lies inside its printed range."""
    from gpuplan.jobs.plan.estimate import plan_report

    wall = plan_report({"model": "llama-3.1-8b", "gpus": "64-4096", "failure_rate": rate}).line("fail_wall_seconds")
    assert wall.low <= wall.value <= wall.high


def test_the_cli_range_contains_its_point_at_a_stated_rate(run_cli):
    """Fails before: 2.90 days expected with failures, range 4.17-9.44 days. The answer's count moves too
    (the ranking reads the stated rate's high end, not the census's 3.39e-5): at 1e-7 per GPU-hour the MTBI
    of 131,072 GPUs is 76 h, so the largest counts win."""
    code, out, err = run_cli(*RANGE_1E7, "--json")
    assert code == 0, err
    lines = report_lines(json.loads(out))
    wall, mtbi = lines["fail_wall_seconds"], lines["fail_mtbi_seconds"]
    assert wall["low"] <= wall["value"] <= wall["high"]
    gpus = json.loads(out)["results"]["best_gpus"]
    assert gpus > 131_072
    assert mtbi["low"] == pytest.approx(3600 / (gpus * 1e-7 * HIGH_SHARE), rel=1e-4)
    assert mtbi["high"] == pytest.approx(3600 / (gpus * 1e-7 * LOW_SHARE), rel=1e-4)
    code, text, err = run_cli(*RANGE_1E7)
    assert code == 0, err
    row = next(r for r in text.splitlines() if r.startswith("expected wall-clock with failures"))
    from gpuplan.core.units import format_duration

    for seconds in (wall["value"], wall["low"], wall["high"]):
        assert format_duration(seconds) in row


def test_every_door_shows_the_same_range(run_cli):
    """CLI --json, the web API and the Python API give one answer for plan and train at a stated rate."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.web import create_app

    client = TestClient(create_app())
    for job, route, asked, flags in (  # train's web route is /api/budget (its report is the budget's)
            ("plan", "plan", {"model": "llama-3.1-8b", "gpus": "64-1024", "failure_rate": 1e-6},
             ["llama-3.1-8b", "--gpus", "64-1024", "--failure-rate", "1e-6"]),
            ("train", "budget", {"model": "llama-3.1-8b", "gpus": 64, "tokens": "1T", "failure_rate": 1e-6},
             ["llama-3.1-8b", "--gpus", "64", "--tokens", "1T", "--failure-rate", "1e-6"])):
        code, out, err = run_cli(job, *flags, "--json")
        assert code == 0, err
        cli = json.loads(out)
        api = client.post(f"/api/{route}", json=asked).json()
        python = (plan_report(asked) if job == "plan" else estimate_budget(asked)).to_dict()
        ends = [report_lines(r)["fail_wall_seconds"] for r in (cli, api, python)]
        assert ends[0] == ends[1] == ends[2]
        assert ends[0]["low"] <= ends[0]["value"] <= ends[0]["high"]
        mtbi = report_lines(cli)["fail_mtbi_seconds"]
        assert mtbi["high"] / mtbi["value"] == pytest.approx(1 / LOW_SHARE, rel=1e-4)


def test_the_ranking_reads_the_ends_the_answer_prints(monkeypatch):
    """jobs/plan/completes.py judges each count at the point rate and both printed ends: the rates it passes
    to the budget's scenario are the stated rate and the ends compute.failure_ranges prints (before: the
    census's 1.22e-5 / 3.39e-5 at any --failure-rate)."""
    from gpuplan.jobs.budget import compute, model
    from gpuplan.jobs.plan.estimate import plan_report

    seen: dict[str, set] = {"ranking": set(), "answer": set()}
    original, original_many = model.scenario, model.scenarios

    def recording(where):
        def scenario(run, s, gpus, rate=None):
            seen[where].add(s.failure_rate if rate is None else rate)
            return original(run, s, gpus, rate=rate)
        return scenario

    def recording_many(run, s, gpus, rates):  # completes reads its three rates through model.scenarios
        seen["ranking"].update(s.failure_rate if rate is None else rate for rate in rates)
        return original_many(run, s, gpus, rates)

    monkeypatch.setattr(model, "scenarios", recording_many)  # completes imports it at call time
    monkeypatch.setattr(compute, "scenario", recording("answer"))
    plan_report({"model": "llama-3.1-8b", "gpus": "64-1024", "failure_rate": 1e-6})
    low, high = 1e-6 * LOW_SHARE, 1e-6 * HIGH_SHARE
    assert sorted(seen["ranking"]) == pytest.approx([low, 1e-6, high], rel=1e-4)
    assert {round(r / 1e-6, 4) for r in seen["answer"]} == {round(r / 1e-6, 4) for r in (low, 1e-6, high)}
