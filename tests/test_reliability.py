"""Failures: the Llama 3 census, Young/Daly intervals, Daly's expected wall-clock, monotonicity."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.core.economics import reliability as R


def test_llama3_census_gives_about_3_hours_between_interruptions_at_16k_gpus():
    # 419 unexpected interruptions / (16,384 GPUs x 54 days x 24 h) = 1.9733e-5 per GPU-hour;
    # at 16,384 GPUs: 54 x 24 / 419 = 3.093 h (arXiv:2407.21783 Sec. 3.3.4, Table 5)
    assert R.DEFAULT_FAILURE_RATE == pytest.approx(419 / (16_384 * 54 * 24))
    mtbi_h = R.mtbi_seconds(16_384, R.DEFAULT_FAILURE_RATE) / 3600
    assert mtbi_h == pytest.approx(54 * 24 / 419, rel=1e-9)
    assert 2.9 < mtbi_h < 3.2
    # counting the 47 planned interruptions too: 54 x 24 / 466 = 2.78 h
    all_rate = R.failure_rate_from_census(466, 16_384, 54 * 24)
    assert R.mtbi_seconds(16_384, all_rate) / 3600 == pytest.approx(2.781, rel=1e-3)


def test_rsc1_rate_reproduces_kokolis_projection_at_16k_gpus():
    # Kokolis et al. 2024: 6.50 failures per 1000 node-days -> projected MTTF 1.8 h at 16,384 GPUs
    high = R.FAILURE_RATE_RANGE[1]
    assert R.mtbi_seconds(16_384, high) / 3600 == pytest.approx(1.8, abs=0.05)
    assert R.FAILURE_RATE_RANGE[0] < R.DEFAULT_FAILURE_RATE < R.FAILURE_RATE_RANGE[1]


def test_young_interval_by_hand():
    # delta 60 s, M 4 h = 14,400 s: sqrt(2 x 60 x 14,400) = sqrt(1,728,000) = 1,314.5 s
    assert R.young_interval(60, 14_400) == pytest.approx(1314.53, rel=1e-5)


def test_daly_interval_by_hand():
    # x = 60 / 28,800 = 0.0020833; 1,314.53 x (1 + 0.045644/3 + 0.0020833/9) - 60
    #   = 1,314.53 x 1.015446 - 60 = 1,274.84 s
    assert R.daly_interval(60, 14_400) == pytest.approx(1274.84, rel=1e-5)
    assert R.daly_interval(30_000, 14_400) == 14_400  # delta >= 2M: checkpoint once per MTBF


def test_daly_expected_wall_clock_by_hand():
    # T_s 100 h, tau 1 h, delta 0.1 h, R 0.2 h, M 10 h:
    # 10 x e^0.02 x (e^0.11 - 1) x 100 / 1 = 10 x 1.020201 x 0.116278 x 100 = 118.63 h
    hours = R.expected_wall_seconds(100 * 3600, 3600, 360, 720, 36_000) / 3600
    assert hours == pytest.approx(118.627, rel=1e-4)


def test_no_failures_leaves_only_the_checkpoint_stall():
    # M -> infinity: T_w -> T_s (tau + delta) / tau = 1.01 T_s for delta = 1% of tau
    assert R.expected_wall_seconds(1e6, 3600, 36, 600, 1e15) == pytest.approx(1.01e6, rel=1e-6)


def test_plan_floors_the_interval_and_reports_lost_work():
    plan = R.plan_failures(86_400, 1024, R.DEFAULT_FAILURE_RATE, checkpoint_cost=1.0, restart=900, min_interval=3600)
    assert plan.interval == 3600 and plan.optimal
    assert plan.lost_work == pytest.approx((3600 + 1) / 2)
    assert plan.checkpoint_overhead == pytest.approx(1 / 3600)


gpus = st.integers(min_value=8, max_value=200_000)
rates = st.floats(min_value=1e-7, max_value=1e-3)


@given(gpus, gpus, rates)
def test_more_gpus_mean_more_interruptions_per_day(g1, g2, rate):
    if g1 == g2:
        return
    small, large = sorted((g1, g2))
    per_day = lambda g: 86_400 / R.mtbi_seconds(g, rate)  # noqa: E731
    assert per_day(large) > per_day(small)


@given(st.floats(min_value=60, max_value=86_400), st.floats(min_value=1.01, max_value=10),
       st.floats(min_value=0.01, max_value=600))
def test_longer_interval_means_less_stall_and_more_lost_work(tau, factor, delta):
    short = R.FailurePlan(1e7, 36_000, delta, 900, tau, optimal=False)
    long = R.FailurePlan(1e7, 36_000, delta, 900, tau * factor, optimal=False)
    assert long.checkpoint_overhead < short.checkpoint_overhead   # stall share delta / tau falls
    assert long.checkpoints < short.checkpoints                  # fewer saves, less total stall
    assert long.lost_work > short.lost_work                      # more work redone per failure


@given(st.integers(min_value=8, max_value=65_536), st.floats(min_value=0.1, max_value=60))
def test_goodput_falls_as_the_cluster_grows(g, delta):
    work = 1e9 / g  # the same GPU-seconds of work
    a = R.plan_failures(work, g, R.DEFAULT_FAILURE_RATE, delta, 900)
    b = R.plan_failures(work / 2, 2 * g, R.DEFAULT_FAILURE_RATE, delta, 900)
    assert b.goodput < a.goodput


@given(st.floats(min_value=0.5, max_value=120), st.floats(min_value=1800, max_value=1e6))
def test_daly_interval_is_near_the_minimum_of_the_expected_wall_clock(delta, mtbi):
    best = R.daly_interval(delta, mtbi)
    wall = lambda tau: R.expected_wall_seconds(1e7, tau, delta, 600, mtbi)  # noqa: E731
    assert wall(best) <= wall(best * 0.5) and wall(best) <= wall(best * 2)
    assert math.isfinite(wall(best))
