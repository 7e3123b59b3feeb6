"""The refusal of a run that never completes with failures offers the largest global batch a step may hold
(jobs/plan/completes.largest_step_tokens). It was the bound at the asked batch's throughput, floored to three
digits: 9.9e11 tokens on 768 GPUs was told 8.88e11, whose 216,796,875 sequences dp 4 does not divide, and 8.88e11
was refused in turn (told 8.04e11). Now the bound is rounded down to a whole number of the layout's dp x
micro-batch sequences, written exactly in the fewest digits from three (_aligned), and the batch it names answers."""

import re

import pytest
from helpers import field_refusal

from gpuplan.jobs.plan.completes import _aligned

ASK = ("deepseek-v3", "--tp", "8", "--gpus", "768", "--failure-rate", "3e-5")  # 3e-5: test_hostile_wave9's note


def test_aligned_by_hand():
    """granule dp 4 x micro-batch 5 x 4,096 = 81,920 tokens, bound 8.887e11 (three-digit floor 8.88e11; the rule
    takes the fewest digits within one third-digit unit of it, >= 8.87e11): 3 digits, lcm(81,920, 10^9) = 3.2e10,
    27 x 3.2e10 = 8.64e11, too far; 4 digits, lcm(81,920, 10^8) = 6.4e9, 138 x = 8.832e11, too far; 5 digits,
    lcm(81,920, 10^7) = 1.28e9, 694 x = 8.8832e11 (10,843,750 granules). No granule under the bound: 0."""
    assert _aligned(8.887e11, 81_920) == 694 * 1.28e9 == 8.8832e11
    assert 8.8832e11 / 81_920 == 10_843_750
    assert _aligned(0.0, 81_920) == 0.0
    assert _aligned(1.0e4, 81_920) == 0.0
    assert _aligned(9.0e4, 81_920) == 81_920  # past every digit count: the granule multiple itself


def test_the_batch_offered_answers(run_cli, run_json):
    """9.9e11 tokens on 768 GPUs (deepseek-v3, tp 8): refused naming the batch; the batch offered answers. It was
    8.8832e11 (dp 4 x micro-batch 5 x 10,843,750 sequences; before that 8.88e11, refused), the completion
    cut-off's batch; review w10 r4 M1 holds it within twice the failure-free time: 6.6816e10 (815,625 granules of
    81,920 tokens), answered 204.66 days with failures on 102.53 failure-free (1.996x; 1.999x since wave 12's step-model
    commits lengthened the step a little: the same batch, still within 2x). 6.6304e10 (809,375 granules) since
    31278dd5 charged tp 8's embedding / output-layer exchanges a micro-batch: the step is longer, so the batch within
    twice the failure-free time is smaller; it answers 206.56 days with failures on 103.42 failure-free (1.997x).
    Since the experts are split by expert TP (etp = tp under Megatron-Core, core.expert_layout) the step is shorter and
    the default rate no longer refuses 9.9e11: at --failure-rate 3e-5 (the default's cited range) the offer is
    5.83168e10 (711,875 granules), answering 154.39 days with failures on 77.21 failure-free (1.9995x)."""
    line = field_refusal(run_cli("train", *ASK, "--global-batch-tokens", "9.9e11"), "global_batch_tokens",
                         "completes with failures")
    offered = re.search(r"at most ([\d.e+,]+) tokens a step", line).group(1)
    assert offered == "5.83168e+10", line
    assert 5.83168e10 / 81_920 == 711_875
    data = run_json("train", *ASK, "--global-batch-tokens", offered)
    assert data["results"]["gpus"] == 768
    ratio = data["results"]["fail_wall_seconds"] / 86400 / data["results"]["wall_days_with_comm"]
    assert 1 <= ratio <= 2 and ratio == pytest.approx(1.9995, abs=1e-3)
