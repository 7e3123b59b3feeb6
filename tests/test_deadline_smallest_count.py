"""Issue 39 item 2: a deadline answers the smallest GPU count that meets it with failures and checkpoints (each
layout's own 'w/ failures', the column printed), at the granularity planner.plan.DEADLINE_STEPS states, then
the cheapest layout there. The deadline search took the common cluster sizes only (steps of 1.33x or 1.5x), so
`plan --params 70B --tokens 2T --gpu h100 --days 30` answered 768 GPUs where 640 meet it. Each expectation
below is re-derived from the search itself: the answer meets the deadline, and every count below it at the
granularity, down to the common size below (which misses), does not."""

import pytest
from helpers import misses_below

from gpuplan.planner.plan import DEADLINE_STEPS, deadline_counts_between
from gpuplan.planner.space import range_counts


def test_the_granularity_is_an_eighth_of_the_gap_in_whole_nodes():
    """512 -> 768: (768 - 512) / 8 = 32 GPUs, 4 nodes of 8; 16,384 -> 24,576: 1,024 (128 nodes); 64 -> 96: 4 GPUs
    a step rounded down to whole nodes: 72, 80, 88; 8 -> 12 and 16 -> 24: no whole node between; the node of 4
    (GB200's compute tray) between 12 and 16: 12 + 0.5 i rounded down to 4s is 12 (the low end), none between."""
    common = range_counts(8, 131_072)
    assert DEADLINE_STEPS == 8
    assert deadline_counts_between(common, 768, 8) == (544, 576, 608, 640, 672, 704, 736)
    assert deadline_counts_between(common, 24576, 8) == tuple(range(17408, 24576, 1024))
    assert deadline_counts_between(common, 96, 8) == (72, 80, 88)
    assert deadline_counts_between(common, 12, 8) == () == deadline_counts_between(common, 24, 8)
    assert deadline_counts_between(range_counts(4, 64), 16, 4) == ()
    # 32 + 2i (i = 1..7) rounded down to 4s: 32 (the low end, not between), 36, 36, 40, 40, 44, 44
    assert deadline_counts_between(range_counts(4, 64), 48, 4) == (36, 40, 44)
    assert deadline_counts_between(common, 8, 8) == ()  # nothing searched below the smallest count


@pytest.mark.parametrize("asked, deadline, low, high", [
    # the README's example: was 768 GPUs (24.74 days with failures); 640 meet it (28.89), 608 do not (31.11)
    ({"params": "70B", "tokens": "2T", "gpu": "h100"}, 30, 512, 768),
    # docs/training.md's measured cases: was 768 (21.19 days), 2,048 (81.00) and 24,576 (48.74)
    ({"model": "llama-3.1-8b", "tokens": "15T", "gpu": "h100"}, 30, 512, 768),
    ({"model": "llama-3.1-70b", "tokens": "15T", "gpu": "h100"}, 90, 1536, 2048),
])
def test_a_deadline_answers_the_smallest_count_that_meets_it(run_json, asked, deadline, low, high):
    """The answer lies strictly between the two common sizes that bracket it (fails before: the common size
    ``high`` was answered), meets the deadline with failures, leaves no GPU idle, and every count of the grid
    below it misses; `train --mfu predicted` answers the same count (jobs.training.layout, the same search)."""
    flags = [f"--{k}={v}" if k != "model" else v for k, v in asked.items()]
    r = run_json("plan", *flags, "--days", str(deadline))["results"]
    gpus = r["best_gpus"]
    assert low < gpus < high and gpus in deadline_counts_between((low,), high, 8)
    assert r["fail_wall_seconds"] <= deadline * 86400 and r["idle_gpus"] == 0
    misses_below(gpus, deadline, low, high, **asked)
    train = run_json("train", *([f"--model={asked['model']}"] if "model" in asked else []),
                     *[f"--{k}={v}" for k, v in asked.items() if k != "model"],
                     "--days", str(deadline), "--mfu", "predicted")["results"]
    assert train["gpus"] == gpus and train["fail_wall_seconds"] <= deadline * 86400


def test_the_405b_deadline_takes_a_count_the_pipeline_divides():
    """Llama 3.1 405B on 15T tokens of H100 in 60 days: was 24,576 GPUs (48.74 days with failures, $99.3M
    failure-free); 18,432 = 64 x 8 x 9 x 4 meets it (pp 9 x vpp 14 = the 126 layers), 16,384 and 17,408 miss."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    found = search(PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", days=60))
    best = found.table["gpus"][0]
    assert 16384 < best < 24576 and found.table["days_with_failures"][0] <= 60
    assert set(found.counts) >= set(range(17408, 24576, 1024))  # the counts between were searched
    misses_below(int(best), 60, 16384, 24576, model="llama-3.1-405b", tokens="15T", gpu="h100")
    at_24576 = found.table["gpus"] == 24576
    cheapest_there = found.table["cost"][at_24576].min()
    assert found.table["cost"][0] < cheapest_there  # fewer GPUs fail less and scale better: cheaper too


def test_the_default_week_searches_between_and_keeps_768(run_json):
    """`gpuplan plan --grad-dtype bf16` (the article's 7B on 2T tokens of A100, the week, on a 2-byte gradient wire)
    answered 768 GPUs (6.96 days with failures, a cp 2 layout) until TE's context-parallel ring kernels were charged
    (core.time.context_parallel.ring_kernels): 768's fastest layout now takes 7.25 days, and both asks answer the
    first count the search walks between 768 and 1,024, 768 + (1,024 - 768) / 8 = 800 (dp400 cp2: 6.78 / 6.88
    days), searched between the common sizes. The bare ask had moved there first when megatron's default bf16
    gradient wire became the fp32 buffer (f96bd8d, Megatron-LM accumulate_allreduce_grads_in_fp32,
    arguments.py@core_v0.16.0 L711-724)."""
    r = run_json("plan", "--grad-dtype", "bf16")["results"]
    assert r["best_gpus"] == 800 and r["fail_wall_seconds"] <= 7 * 86400
    misses_below(800, 7, 768, 1024, grad_dtype="bf16")  # PlanInputs' defaults, as `gpuplan plan`
    # the bare ask: since s24 (helper PL2, planner.plan.deadline_order) a count meets the week only where the layout
    # `--gpus N` answers there (first by time at its slow end) does: 800's is dp400 tp2 ZeRO-1 (7.44 days with
    # failures; the cp 2 row that met it, 6.88 at ±22%, ranks below), so the next step, 768 + 2 x 32 = 832, answers
    bare = run_json("plan")["results"]
    assert bare["best_gpus"] == 768 + 2 * (1024 - 768) // 8 == 832 and bare["fail_wall_seconds"] <= 7 * 86400
    on_800 = run_json("plan", "--gpus", "800")["results"]
    assert on_800["best_layout"].startswith("dp400 tp2 ") and on_800["fail_wall_seconds"] > 7 * 86400
    misses_below(800, 7, 768, 1024)  # 768 itself misses at 4 B


def test_counts_given_are_kept_with_a_deadline(run_json):
    """--gpus with --days answers among the counts given (none searched between): 512 misses 30 days, 768."""
    r = run_json("plan", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--gpus", "512,768",
                 "--days", "30")["results"]
    assert r["best_gpus"] == 768
