"""More GPUs asked never answer slower (session 25; review R2 N4 of s24, issue 37's trustworthy answers): a common
size weighs the counts an exact batch (--global-batch) or a step of at most FEW_SEQUENCES sequences allows below it,
as an irregular count does (planner.plan.counts_with_alternatives skipped them: a common size a layout used whole
was planned whole). A sweep of 57 families x 28 asked counts (deepseek-v2-lite, llama-3.1-8b, qwen3-30b-a3b,
mixtral-8x7b, llama-3.1-70b, gemma-2-9b on L40S, H100, A100 40GB at the default sequence, 32,768 and 131,072, and
three --global-batch families; 100B tokens, 21,546 pairs) found 70 pairs where the larger ask ranked more than the
1% plateau slower, the worst (up to 2.75x) this one. The figures in the docstrings are the answers before the change;
the asserts are relations between two answers of the same code."""

from __future__ import annotations

import pytest

from gpuplan.planner.plan import PLATEAU_SHARE


def _answer(**ask):
    from gpuplan.jobs.plan.estimate import plan_report

    report = plan_report({"tokens": "100B", **ask})
    return report.value("best_gpus"), report.value("best_days"), report.value("idle_gpus")


@pytest.mark.parametrize("fewer, more", [(1000, 1024), (2000, 2048), (8191, 8192)])
def test_an_exact_batch_weighs_its_counts_below_a_common_size_too(fewer, more):
    """--global-batch 1000 (llama-3.1-8b, H100): dp must divide 1,000, so 1,000 and 2,000 GPUs run dp1000 (x 1, x 2)
    while 1,024 and 2,048 cannot. Before, 1,000 asked answered 0.123 days and 1,024 asked (a common size, planned
    whole) 0.231; 2,000 asked 0.074 and 2,048 asked 0.151; 8,191 asked 0.029 on 8,000 and 8,192 asked 0.070."""
    ask = {"model": "llama-3.1-8b", "gpu": "h100", "global_batch": 1000}
    _, days_m, _ = _answer(**ask, gpus=fewer)
    gpus_n, days_n, _ = _answer(**ask, gpus=more)
    assert days_n <= days_m * (1 + PLATEAU_SHARE), (fewer, days_m, more, days_n)
    assert gpus_n < more  # no layout uses the common size as well as a count below it
