"""`gpuplan plan`'s global-batch line prints the change against the asked or default batch with
core.units.signed_percent, as `train` and `budget` do (wave 7 invariant sweep, issue 39): qwen2.5-72b on
2,730 A100 at --seq-len 1024 takes 4,095 sequences (a multiple of its dp) against the default 4,096
(4M tokens / 1,024), a change of -1 / 4,096 = -0.0244%, which '{:+.1%}' printed as '-0.0%'."""

from gpuplan.jobs.plan.estimate import plan_report


def test_a_batch_change_that_rounds_to_zero_keeps_two_figures():
    line = plan_report({"model": "qwen2.5-72b", "gpu": "a100", "seq_len": 1024, "gpus": 2730}).line("global_batch")
    assert line.value == 4095
    assert line.text == "4,095 x 1,024 tokens (-0.024% vs 4,096 by default)", line.text
