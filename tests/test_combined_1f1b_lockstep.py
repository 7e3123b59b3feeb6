"""scripts/combined_lockstep_jitter.py (issue 37 diagnostic; docs/step.md 'Why combined 1F1B was slow at 25.11 /
26.02', item 3): Megatron-Core's combined 1F1B schedule against the plain interleaved one, replayed in the order of
pipeline_parallel/schedules.py@cba6b0ed0f, with and without step-to-step jitter.

Hand numbers: with equal steps (forward 1, backward 2, a paired step 3) both schedules take m x vpp x 3 plus the
interleaved bubble, (pp - 1) / vpp micro-batch times of vpp x 3 each (Narayanan et al. 2021, Sec. 2.2.2; the
package's pipeline_bubble_fraction): pp 2 vpp 2 m 4: 24 + 3 = 27; pp 4 vpp 2 m 8: 48 + 9 = 57; pp 8 vpp 4 m 32:
384 + 21 = 405. The + 1 warm-up of the combined schedule (get_pp_rank_microbatches L699-745) leaves it no wait."""

from __future__ import annotations

import pytest

from gpuplan.core.time.pipeline_schedule import pipeline_bubble_fraction


@pytest.fixture(scope="module")
def jitter(load_script):
    return load_script("combined_lockstep_jitter")


@pytest.mark.parametrize(("pp", "vpp", "m", "hand"), [(2, 2, 4, 27.0), (4, 2, 8, 57.0), (8, 4, 32, 405.0)])
def test_equal_steps_take_the_same_time_in_both_schedules(jitter, pp, vpp, m, hand):
    per_micro_batch = vpp * 3.0  # one micro-batch's forward + backward on a stage, in forward units
    assert m * vpp * 3.0 + pipeline_bubble_fraction(pp, vpp, m) * per_micro_batch == pytest.approx(hand, rel=1e-12)
    for combined in (False, True):
        assert jitter.makespan(pp, vpp, m, combined, cv=0.0, seed=0) == pytest.approx(hand, rel=1e-12)


def test_jitter_costs_the_combined_schedule_more(jitter):
    """pp 4 vpp 2 m 16, coefficient of variation 20%, mean of seeds 0-4 (deterministic draws): plain 109.57 (ideal 96
    + bubble 9 + 4.57 lost to jitter), combined 119.92: 10.34 more (10.8% of the ideal), what the combined
    schedule's neighbours lose waiting for each other's whole paired step. Worked by hand: the ideal 16 x 2 x 3 = 96
    and the bubble (4 - 1) / 2 x 6 = 9 forward units (as the cv 0 test above); the jitter's 4.57 and 14.92 are the
    script's own seeded output (scripts/combined_lockstep_jitter.py), not derived."""
    plain = sum(jitter.makespan(4, 2, 16, False, 0.2, s) for s in range(5)) / 5
    combined = sum(jitter.makespan(4, 2, 16, True, 0.2, s) for s in range(5)) / 5
    assert plain == pytest.approx(109.57, abs=0.01) and combined == pytest.approx(119.92, abs=0.01)
    assert combined - plain == pytest.approx(10.34, abs=0.02)
