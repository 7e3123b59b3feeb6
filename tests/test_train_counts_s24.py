"""s24 (helper PL): `train` at a given MFU chose its GPU count by another rule than `plan` and `train --mfu predicted`.

`train llama-3.1-70b --gpus 1000 --global-batch 1536 --framework torchtitan` (default MFU 0.4) ran on 960 GPUs, while
`--mfu predicted` and `plan` ran on 984. No layout runs 1,536 sequences on 1,000 GPUs: dp must divide the batch
(Megatron asserts global_batch % (micro_batch x dp) == 0; docs/training.md 'The global batch'), 1,536 = 2^9 x 3,
and 1,000 = 2^3 x 5^3, so tp x cp x pp would hold 125 = 5^3; tp divides the 64 heads (a power of two up to the 8-GPU
node), cp is a power of two (4,096 % 2cp == 0), so pp would be a multiple of 125 > 80 layers. The given-MFU path
(planner.plan.best_plan, timed_by_steps=False) weighed only 1,000's alternatives (the largest multiple of 64, 960,
and of 256 / the common size below, 768), ranked by the step model, and never 992 or 984; plan also weighs every
smaller count the batch runs on exactly (planner.fallback.exact_batch_counts) and ranks 984 = dp6 tp4 pp41 first.

The documented rule (docs/training.md 'Any GPU count') has no given-MFU exception, and the exception's own reason
("at a given MFU fewer GPUs are slower") was broken by it: asking 984 ran on 984 GPUs, asking 992 or 1,000 on 960,
so more GPUs asked answered slower at the same MFU. Now best_plan weighs plan's counts whatever times the answer.

The counts by hand, largest first below 1,000 (count = dp x tp x cp x pp, dp | 1,536, tp and cp powers of two,
pp <= 80): 999 = 3^3 x 37 (dp holds one 3 at most: pp would hold 9 x 37), 998 = 2 x 499, 997 prime, 996 = 2^2 x 3 x
83 (83 > 80 layers), 995 = 5 x 199, 994 = 2 x 7 x 71 (pp 497), 993 = 3 x 331: none; 992 = 2^5 x 31 (pp 31), ...,
984 = 2^3 x 3 x 41 (dp 6 x tp 4 x pp 41, or dp 24 x pp 41, ...). The step model times 984's best layout faster
than 992's (which needs pp 31 with dp x tp x cp = 32)."""

import json

import pytest

pytestmark = pytest.mark.usefixtures("time_box")

ASK = ("--model", "llama-3.1-70b", "--global-batch", "1536", "--framework", "torchtitan")
DIVISORS_1536 = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1536)  # 2^a x 3^b


def _exact_by_hand(most: int) -> set[int]:
    """dp x tp x cp x pp <= most with dp | 1,536, tp | 64 heads up to the 8-GPU node, cp a power of two to 32 with
    4,096 % 2cp == 0, pp 1..80 layers (planner.fallback.exact_batch_counts's stated rule)."""
    return {d * t * c * p for d in DIVISORS_1536 for t in (1, 2, 4, 8) for c in (1, 2, 4, 8, 16, 32)
            for p in range(1, 81) if d * t * c * p <= most}


def test_the_counts_the_batch_runs_on_exactly_below_1000():
    """The rule's counts by hand: none from 993 to 1,000; 992 and 984 are; exact_batch_counts gives the same set."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
    from gpuplan.planner.fallback import exact_batch_counts

    assert sorted(d for d in range(1, 1537) if 1536 % d == 0) == list(DIVISORS_1536)
    hand = _exact_by_hand(1000)
    assert not hand & set(range(993, 1001))
    assert {992, 984, 960} <= hand and 992 == 32 * 31 and 984 == 6 * 4 * 41 and 960 == 48 * 4 * 5
    inputs = PlanInputs(model="llama-3.1-70b", gpus=1000, global_batch=1536, framework="torchtitan")
    ev = evaluator_for(inputs)
    assert ev.spec.num_layers == 80 and ev.spec.attention.num_heads == 64 and ev.memory.seq_len == 4096
    found = exact_batch_counts(ev, 1000, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))
    assert set(found) == hand


@pytest.mark.parametrize("mfu", [(), ("--mfu", "predicted")], ids=["default-mfu", "predicted"])
def test_train_and_plan_run_1000_asked_on_984(run_cli, mfu):
    """All three answer 984 GPUs, dp6 tp4 pp41 (1,536 / 6 = 256 sequences a replica), 16 idle; at the default MFU 0.4
    the wall-clock is the MFU's on 984 GPUs: 6 x 70,553,706,496 x 2e12 tokens / (984 x 312e12 x 0.4) s."""
    code, out, err = run_cli("train", *ASK, "--gpus", "1000", *mfu, "--json")
    assert code == 0, err
    r = json.loads(out)["results"]
    assert r["gpus"] == 984
    if not mfu:
        six_nd = 6 * 70_553_706_496 * 2e12  # the default 2T tokens; A100 80GB's 312 TFLOP/s dense BF16
        assert r["wall_days"] == pytest.approx(six_nd / (984 * 312e12 * 0.4) / 86_400, rel=1e-6)
    code, out, err = run_cli("plan", "llama-3.1-70b", "--gpus", "1000", "--global-batch", "1536", "--framework",
                             "torchtitan", "--json")
    assert code == 0, err
    planned = json.loads(out)["results"]
    assert (planned["best_gpus"], planned["idle_gpus"]) == (984, 16)
    assert planned["best_layout"].startswith("dp6 tp4 pp41 ")


def test_more_gpus_asked_never_fewer_used_at_a_given_mfu(run_cli):
    """Asks of 984, 992 and 1,000 at the default MFU: GPUs used 984, 984, 984 (before: 984, 960, 960, so 1,000
    asked finished 984 / 960 - 1 = 2.5% later than 984 asked at the same MFU)."""
    used = []
    for gpus in (984, 992, 1000):
        code, out, err = run_cli("train", *ASK, "--gpus", str(gpus), "--json")
        assert code == 0, err
        used.append(json.loads(out)["results"]["gpus"])
    assert used == [984, 984, 984]
