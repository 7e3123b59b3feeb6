"""The expected wall-clock with failures carries the step model's band (jobs/budget/compute.failure_ranges): the
review's `plan llama-3.1-70b --gpu h100 --gpus 256 --framework torchtitan` printed wall-clock 86.64 d (82.51-90.76)
but with failures 87.51 d (87.30-87.82), the failure rate's range alone.

Daly's expected wall-clock, M e^(R/M) (e^((tau+delta)/M) - 1) T_s / tau, is T_s times a factor that depends on the
failure rate, the stall and the restart, not on T_s (the interval tau is sqrt(2 delta M) and up, unless the one-step
floor binds): so the low end, the low rate on the low failure-free wall-clock, lies at or below low x (with failures /
failure-free) at the central rate, and the high end at or above high x that ratio."""

import json
import math

import pytest
from helpers import report_lines


def _check(free: dict, failed: dict, days: float) -> None:
    ratio = failed["value"] / (free["value"] * days)
    assert ratio > 1.0
    assert failed["low"] <= free["low"] * days * ratio * (1 + 1e-9)
    assert failed["high"] >= free["high"] * days * ratio * (1 - 1e-9)
    assert free["low"] * days < failed["low"] < failed["value"] < failed["high"]


def test_plan_failure_range_carries_the_wall_clock_band(run_cli):
    code, out, err = run_cli("plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "256", "--framework", "torchtitan",
                             "--json")
    assert code == 0, err
    got = report_lines(json.loads(out))
    _check(got["best_days"], got["fail_wall_seconds"], 86400.0)
    # the band is ±4.8% here (82.51-90.76 d): the failure range is at least that wide now, 0.6% before
    width = (got["fail_wall_seconds"]["high"] - got["fail_wall_seconds"]["low"]) / got["fail_wall_seconds"]["value"]
    band = (got["best_days"]["high"] - got["best_days"]["low"]) / got["best_days"]["value"]
    assert width >= band


def test_budget_failure_range_carries_the_mfu_range(run_cli):
    code, out, err = run_cli("budget", "--params", "13B", "--gpus", "64", "--tokens", "1T", "--json")
    assert code == 0, err
    got = report_lines(json.loads(out))
    days = 86400.0 * got["gpus"]["value"] / math.ceil(got["gpus"]["value"] - 1e-9)  # the GPUs rented, whole
    _check(got["wall_days_with_comm"], got["fail_wall_seconds"], days)


def test_without_a_range_only_the_failure_rate_moves():
    """wall_range None: both ends at the point wall-clock, as before (the failure rate's range alone)."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.economics import reliability as R
    from gpuplan.jobs.budget.compute import failure_ranges
    from gpuplan.jobs.budget.model import BudgetSettings, run_facts, scenario

    run = run_facts(load_model("llama-2-7b"), load_accelerator("h100"), gpus=64, wall_seconds=30 * 86400.0,
                    gpu_hours=64 * 30 * 24.0, tokens=1e12)
    s = BudgetSettings()
    point = failure_ranges(run, s)
    for key, rate in zip(("low", "high"), R.FAILURE_RATE_RANGE):
        assert point[key].on_demand.wall_seconds == scenario(run, s, 64, rate=rate).on_demand.wall_seconds
    ranged = failure_ranges(run, s, (27 * 86400.0, 33 * 86400.0))
    assert ranged["low"].on_demand.wall_seconds == pytest.approx(point["low"].on_demand.wall_seconds * 0.9, rel=2e-3)
    assert ranged["high"].on_demand.wall_seconds == pytest.approx(point["high"].on_demand.wall_seconds * 1.1, rel=2e-3)
