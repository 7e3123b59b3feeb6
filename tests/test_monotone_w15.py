"""More GPUs asked never answer slower (A9 w14, from A8's sweep): `train gpt2-xl --gpu tpu-v4 --tokens 7.05e13
--global-batch 8300 --tp 1` answered 61.4 days on 22,754 GPUs asked (20,480 used) but 126.1 days on 24,576, 32,768
or 45,508 asked (6,144 used): the fallback over fewer GPUs never tried 20,480, and no count below the ask that an
exact batch allows was weighed (planner.fallback.exact_batch_counts, fallback_groups)."""

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.training.layout import layout_for_gpus
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.planner.plan import PLATEAU_SHARE
from gpuplan.planner.space import is_common_size

PLATEAU = PLATEAU_SHARE
"""The ranking prefers the fewest GPUs within 1% of the fastest (planner.plan.PLATEAU_SHARE): an answer may sit that
far above the fastest, so a larger ask may answer up to 1% slower than a smaller one."""


def _days(inputs: TrainingInputs, asks) -> list[tuple[int, int, float]]:
    """(asked, used, days) for each ask that has an answer (NoLayoutFits / InputError: none, skipped)."""
    out = []
    for ask in asks:
        try:
            plan = layout_for_gpus(inputs, ask)
        except InputError:
            continue
        out.append((ask, plan.gpus, plan.days(inputs.tokens)))
    return out


def _assert_monotone(rows) -> None:
    """Each ask answers no slower than every smaller ask (within PLATEAU), except a common cluster size that a
    layout uses whole: that is the cluster its user has, planned whole (planner.plan.counts_with_alternatives weighs
    smaller counts for an irregular ask only, as its alternatives; A9's first form weighed them for every ask and
    moved `train llama-3.1-405b --gpus 16384 --global-batch 2048` to 14,336 GPUs, the validated Llama 3 run +5.3 ->
    -16.0% GPU-hours). Where no layout uses a common size whole, the fallback weighs them (planner.fallback)."""
    for i, (ask_b, used_b, days_b) in enumerate(rows):
        assert used_b <= ask_b
        if is_common_size(ask_b) and used_b == ask_b:
            continue
        for ask_a, used_a, days_a in rows[:i]:
            assert days_b <= days_a * (1 + PLATEAU), (ask_a, used_a, days_a, ask_b, used_b, days_b)


def test_gpt2_xl_on_tpu_v4_more_chips_asked_never_slower():
    inputs = TrainingInputs(model="gpt2-xl", gpu="tpu-v4", tokens=7.05e13, global_batch=8300, tp=1, mfu="predicted")
    rows = _days(inputs, (6144, 16384, 22754, 24576, 45508))
    assert [r[0] for r in rows] == [6144, 16384, 22754, 24576, 45508]
    _assert_monotone(rows)
    by_ask = {ask: (used, days) for ask, used, days in rows}
    # before: 126.0 days on 6,144 of 24,576 asked, 61.4 on 20,480 of 22,754; every layout needs dp | 8,300
    assert by_ask[24576][1] < 61.36 and by_ask[24576][0] % 83 == 0  # a dp with the batch's factor 83 is weighed
    assert by_ask[24576][1] <= by_ask[22754][1]


@pytest.mark.parametrize("model, gpu, batch, asks", [
    ("gpt2-xl", "h100", 5 * 2**5, (40, 64, 80, 96, 128)),         # 160 = 5 x 32
    ("gpt2-xl", "a100", 7 * 2**4, (48, 56, 64, 100, 112, 128)),   # 112 = 7 x 16
    ("gpt2-xl", "tpu-v4", 13 * 2**3, (64, 100, 128, 200, 256)),   # 104 = 13 x 8
])
def test_awkward_exact_batches_more_gpus_asked_never_slower(model, gpu, batch, asks):
    """A prime times a power of two as the global batch: dp divides it, so many counts asked have no layout of
    their own or only slow ones; each ask's answer is at least as fast as every smaller ask's (within PLATEAU).
    Before: h100 80 asked 0.385 days, 96 asked 0.405; a100 56 -> 1.41, 64 -> 1.52; tpu-v4 64 -> 2.41, 100 -> 3.76."""
    rows = _days(TrainingInputs(model=model, gpu=gpu, tokens=1e11, global_batch=batch, mfu="predicted"), asks)
    assert len(rows) >= 3
    _assert_monotone(rows)


def test_a_deadline_with_its_own_gpus_per_node_is_met_after_the_failures_it_prints():
    """Issue 39's rule: a deadline picks the smallest count that meets it after every allowance the answer adds.
    `budget qwen3-14b --gpu b200 --tokens 6.12e12 --days 0.37558 --mfu 0.415 --framework megatron --dtype fp16
    --zero 0 --pp 4 --vpp 2 --gpus-per-node 72` was solved met at 0.3723 days on 25,216 GPUs while its Failures
    section printed 0.3765 (0.25% past): the solve counted checkpoint-writing nodes at the catalog's 8 B200s a
    node (3,152 nodes), the section at the 72 given (351). Both now count 72 a node: one number, within the days.
    Asked on GB200 since wave 16: 72 B200s a node is past an HGX board's 8-GPU NVLink domain and refused
    (schema.device_rules); a GB200 NVL72 rack is 72 (its catalog node, a compute tray, 4)."""
    from gpuplan.jobs.budget.estimate import estimate_budget
    from gpuplan.jobs.budget.schema import BudgetInputs

    days = 0.37558
    report = estimate_budget(BudgetInputs(model="qwen3-14b", gpu="gb200", tokens=6.12e12, days=days, mfu=0.415,
                                          framework="megatron", dtype="fp16", zero=0, pp=4, vpp=2,
                                          gpus_per_node=72))
    solved, printed = report.value("deadline_met"), report.value("fail_wall_seconds") / 86400
    assert solved == pytest.approx(printed, rel=1e-9)
    assert printed <= days
    # whole 16-tray (64-GPU) segments: since dd054a5a a job of 128+ GPUs on NVL72 is placed 64 a rack (Slurm
    # topology/block --segment 16), and the planner weighs a count against its multiples of the node, 64 and 256
    # (planner.plan.alternative_counts): the answer is 22,400 = 350 x 64 (dp700 tp4 pp4 vpp2 cp2, 0.3752 days);
    # it was 22,464 = 312 x 72 (dp702) before the straddle model (d8bc6048). Failures still count 72 a node.
    assert report.value("gpus") % 64 == 0


def test_plans_row_failures_count_nodes_at_the_gpus_per_node_given():
    """jobs.plan.completes (plan's failure shares) and its reference jobs.budget.compute.row_days_with_failures
    counted checkpoint-writing nodes at the catalog's 8 B200s a node under --gpus-per-node 72, as the budget's
    deadline solve did before A9's fix (the test above): a row's days with failures are now its budget's, 72 a node."""
    import numpy as np

    from gpuplan.jobs.budget.compute import row_days_with_failures, wall_with_failures
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    inputs = PlanInputs(model="qwen3-14b", gpu="gb200", tokens=6.12e12, gpus=25344, gpus_per_node=72)  # (b200: w16)
    ev = evaluator_for(inputs)
    gpu, spec = ev.cluster.gpu, ev.spec
    row = {"tp": [4], "pp": [4], "gpus": [25344], "global_batch": [7920], "tokens_per_second": [2.0e8],
           "step_seconds": [0.16], "zero": [0]}
    table = {k: np.array(v) for k, v in row.items()}
    days = row_days_with_failures(inputs, ev, table)(0)

    def wall(accelerator) -> float:
        return wall_with_failures(spec, accelerator, inputs.budget_settings(), gpus=25344.0, work_seconds=6.12e12 / 2e8,
                                  tokens=6.12e12, global_batch_tokens=7920.0 * inputs.seq_len, step_seconds=0.16,
                                  recipe=inputs.recipe_name, zero=0, model_parallel=16) / 86400

    assert days == pytest.approx(wall(inputs.node_accelerator(gpu)), rel=1e-12)
    assert wall(inputs.node_accelerator(gpu)) != pytest.approx(wall(gpu), rel=1e-6)  # the node size matters here


def test_a_deadline_answer_reports_no_idle_gpus_of_a_count_nobody_gave():
    """Review w14 R3 S1: under a deadline (no --gpus) the search's 12,288 had no layout for 8,300 sequences and fell
    back to 8,300 GPUs, and plan printed 'GPUs left idle 3,988 of 12,288' (train: '3,988 more of the 12,288 asked'),
    a count nobody gave; the run and its cost are on 8,300. Idle GPUs are now said only of a count given."""
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    report = plan_report(PlanInputs(model="gpt2-xl", gpu="h100", tokens=7.05e13, global_batch=8300, days=5))
    # 8,300 (dp2075 tp1 pp4 vpp6, 4.65 days) before issue 37's straddle model (d8bc6048): a dp-2075 group of
    # consecutive ranks on 8-GPU nodes holds as few as 1 member on a node (the third stage's rank 6,224 = 778 x 8)
    # and its all-reduce crosses the network, so the cheapest layout meeting 5 days is now dp1660 tp1 pp4 vpp6 cp2
    # on 13,280 (4.50 days; plan at f25d721c).
    # The rule tested is unchanged: a count nobody gave leaves no GPUs idle.
    assert report.value("best_gpus") == 13280 and report.value("idle_gpus") == 0
