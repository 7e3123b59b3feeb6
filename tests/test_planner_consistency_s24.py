"""s24 (helper PL2): three contradictions the metamorphic sweep (helper MT) found between the planner's answers.

1. More GPUs asked answered slower: `train deepseek-v2-lite --gpu l40s --seq-len 131072 --framework torchtitan
   --mfu predicted` on 4,096 asked ran on 2,304 (15.38 days), on 8,192 asked on 768 (16.19 days). No layout uses
   4,096 or 8,192 (dp <= 32: the default 4M-token batch is 32 sequences of 131,072), so both fall back
   (planner.fallback.fallback_groups): 4,096's window (multiples of 8, 64, 256 from 4,095 down to 2,048) holds
   2,304 = 9 x 256 (dp32 tp8 pp9), 8,192's window (down to 4,096) holds no count with a layout, and the common sizes
   below came next (768 first). Now each lower window's stepped counts are weighed too (windows_below), and a step
   of at most 64 sequences weighs every smaller count a layout can use, as an exact batch does (FEW_SEQUENCES):
   the family was not monotone either (1,536 asked: 12.93 days on 1,512 = dp21 tp8 pp9, its batch rounded to 42;
   2,048: 16.96 on 1,152; 2,304: 15.38); every ask from 1,536 up now answers 1,512, 12.93 days.
2. `train --days 26.2` solved 368 B200 for qwen2.5-7b under deepspeed on dp368 (25.5 days with failures: the
   cheapest row meeting it on the fewest GPUs), while `train --gpus 368` answered dp184 tp2 (28.4): plan's table of
   368 ranks dp184 tp2 first at its slow end (0.66 s step ±9% against dp368's 0.59 s ±22%). One rule now
   (planner.plan.deadline_order): the deadline answers the fewest GPUs N whose layout ranked first on N (the one
   `--gpus N` answers) meets it, and that layout: 368's first misses 26.2, 384's dp384 (24.49 days) meets it.
3. `train llama-3.1-8b --gpus 8 --tp 8 --zero 1` was refused 'no layout can use these GPU counts' while `memory`
   with the same degrees answered: the search took ZeRO 1-3 only where dp x cp > 1. A --zero given is now taken at
   dp x cp = 1 (one rank: no memory saved, no collective; a note says so), as `memory` takes it."""

import json

import pytest

pytestmark = pytest.mark.usefixtures("time_box")

DEEPSEEK = ("--model", "deepseek-v2-lite", "--gpu", "l40s", "--tokens", "396B", "--seq-len", "131072",
            "--framework", "torchtitan", "--mfu", "predicted")
QWEN = ("--model", "qwen2.5-7b", "--gpu", "b200", "--tokens", "16.7T", "--framework", "deepspeed",
        "--mfu", "predicted")


def _results(run_cli, *args):
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)["results"]


def test_lower_windows_hold_2304_below_8192():
    """By hand: the multiples of 256 from 3,840 down to 2,048 (8,192's second window, 4,096's first) hold 2,304;
    counts_below(8,192) stops at 4,096 and the common sizes (2^k, 3 x 2^k) skip it."""
    from gpuplan.planner.fallback import counts_below, windows_below

    assert 2304 not in counts_below(8192, 8192, 8) and 2304 in counts_below(4096, 4096, 8)
    assert 2304 in windows_below(8192, 8192, 8)
    assert set(counts_below(8192, 8192, 8)) <= set(windows_below(8192, 8192, 8))


def test_few_sequences_weigh_every_smaller_count_a_layout_uses():
    """32 sequences a step (4M tokens / 131,072): dp <= 32; 1,512 = 21 x 8 x 9 and 2,304 = 32 x 8 x 9 are among the
    counts weighed below 8,192 (tp 8 divides the 16 heads, pp 9 <= 27 layers)."""
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
    from gpuplan.planner.fallback import exact_batch_counts

    inputs = BudgetInputs(model="deepseek-v2-lite", gpu="l40s", tokens="396B", seq_len=131072,
                          framework="torchtitan", mfu="predicted", gpus=8192)
    ev, limits = evaluator_for(inputs), space_limits(inputs)
    assert inputs.target_batch(131072) == pytest.approx(4 * 2**20 / 131072) == 32
    assert ev.spec.num_layers == 27 and ev.spec.attention.num_heads % 8 == 0
    counts = exact_batch_counts(ev, 8191, 32.0, max_tp(ev), limits)
    assert {21 * 8 * 9, 32 * 8 * 9} <= set(counts) and max(counts) <= 8191


@pytest.mark.parametrize("gpus", [1536, 2048, 2304, 4096, 8192])
def test_more_gpus_asked_not_slower_when_no_window_holds_a_layout(run_cli, gpus):
    """Every ask runs dp21 tp8 pp9 (21 x 8 x 9 = 1,512 GPUs; 32 sequences rounded up to 42 = 2 x 21), 12.93 days
    (before: 1,536 -> 12.93, 2,048 -> 16.96 on 1,152, 2,304 and 4,096 -> 15.38 on 2,304, 8,192 -> 16.19 on 768)."""
    r = _results(run_cli, "train", *DEEPSEEK, "--gpus", str(gpus))
    lay = r["mem_layout"]
    assert (r["gpus"], lay["dp"], lay["tp"], lay["pp"], lay["global_batch"]) == (1512, 21, 8, 9, 42)
    assert r["wall_days"] == pytest.approx(12.93, abs=0.005)


def test_deadline_and_gpus_agree_on_layout_and_days(run_cli):
    """plan --gpus 368's own table: dp184 tp2 first (28.4 days with failures > 26.2), dp368 second (25.5 <= 26.2).
    --days 26.2 now solves 384 (dp384, 24.49 days with failures), and --gpus 384 answers the same layout and days."""
    code, out, err = run_cli("plan", "qwen2.5-7b", "--gpu", "b200", "--tokens", "16.7T", "--framework", "deepspeed",
                             "--gpus", "368", "--json")
    assert code == 0, err
    planned = json.loads(out)["results"]
    assert planned["best_layout"].startswith("dp184 tp2 pp1 ZeRO-2 mb6")
    assert planned["fail_wall_seconds"] / 86400 == pytest.approx(28.42, abs=0.005)  # misses 26.2
    by_days = _results(run_cli, "train", *QWEN, "--days", "26.2")
    assert by_days["gpus"] == 384 and by_days["mem_layout"]["dp"] == 384
    assert by_days["fail_wall_seconds"] / 86400 == pytest.approx(24.49, abs=0.005)
    by_gpus = _results(run_cli, "train", *QWEN, "--gpus", str(by_days["gpus"]))
    assert by_gpus["mem_layout"] == by_days["mem_layout"]
    assert by_gpus["fail_wall_seconds"] == pytest.approx(by_days["fail_wall_seconds"], rel=1e-9)
    code, out, err = run_cli("plan", "qwen2.5-7b", "--gpu", "b200", "--tokens", "16.7T", "--framework", "deepspeed",
                             "--days", "26.2", "--json")
    assert code == 0, err
    plan_days = json.loads(out)["results"]
    assert (plan_days["best_gpus"], plan_days["best_layout"]) == (384, planned_layout_of(by_gpus))


def planned_layout_of(r) -> str:
    """plan's layout text of a train answer's mem_layout (dp384 tp1 pp1 ZeRO-2 mb3, no recompute)."""
    lay = r["mem_layout"]
    return f"dp{lay['dp']} tp{lay['tp']} pp{lay['pp']} ZeRO-{lay['zero']} mb{lay['micro_batch']}, no recompute"


@pytest.mark.parametrize("zero", [1, 3])
def test_zero_at_dp_one_taken_by_train_as_by_memory(run_cli, zero):
    """dp 1 x tp 8 on 8 H100: memory answers it fits; train takes it too, with a note: no collective is charged, so
    ZeRO-1's step is ZeRO-0's (85.839 s); ZeRO-3 under megatron is Megatron-FSDP, whose own gradient passes make its
    matmul-and-element-wise term 60.14 s against 60.16 (85.821 s a step, -0.02%), no communication added."""
    mem = _results(run_cli, "memory", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--tp", "8",
                   "--zero", str(zero))
    assert mem["fits"] is True  # before: train refused 'no layout can use these GPU counts'
    base = ("train", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--tp", "8", "--mfu", "predicted",
            "--tokens", "10B")
    with_zero = _results(run_cli, *base, "--zero", str(zero))
    without = _results(run_cli, *base, "--zero", "0")
    assert (with_zero["mem_layout"]["dp"], with_zero["mem_layout"]["zero"]) == (1, zero)
    assert with_zero["wall_days"] == pytest.approx(without["wall_days"], rel=1e-9 if zero == 1 else 1e-3)
    assert with_zero["wall_days"] <= without["wall_days"] * (1 + 1e-9)  # nothing added over ZeRO-0
    code, out, err = run_cli(*base, "--zero", str(zero))
    assert code == 0 and f"ZeRO-{zero} on dp x cp = 1 shards over one rank" in out
