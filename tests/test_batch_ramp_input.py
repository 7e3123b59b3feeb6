"""--batch-ramp as a user input (issue 37 point 4; w16 B1): one field (schema/batch_ramp_field.py) at every door,
timed on the chosen layout (planner/batch_ramp.py), shown in the answer, and ranking candidates with it."""

import pytest
from helpers import four_door_refusal

pytestmark = pytest.mark.usefixtures("time_box")

FIXED = {"model": "llama-3.2-1b", "gpu": "h100", "gpus": 8, "mfu": "predicted", "tokens": "1T", "seq_len": 2048,
         "global_batch": 64, "tp": 1, "pp": 1, "cp": 1, "zero": 1, "micro_batch": 1, "recompute": "none"}
"""dp 8 x micro-batch 1 on 8 H100: every batch a multiple of 8 runs as asked."""


@pytest.fixture(scope="module")
def fixed_plan():
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import layout_for_gpus

    inputs = BudgetInputs(**FIXED)
    return evaluator_for(inputs), layout_for_gpus(inputs, 8)


def test_phases_parse_in_sequences_tokens_and_linear_steps():
    from gpuplan.jobs.budget.schema import BudgetInputs

    ask = {"model": "llama-3.1-405b", "gpu": "h100", "gpus": 16384, "mfu": "predicted", "tokens": "15.6T",
           "seq_len": 8192, "global_batch_tokens": "16M"}
    # Llama 3 405B (arXiv:2407.21783 Sec. 3.4.1): 4M tokens for 252M, 8M to 2.87T; 4e6 / 8,192 = 488.28125 sequences
    llama = BudgetInputs(**ask, batch_ramp="252M:4Mtok,2.618T:8Mtok")
    assert llama.ramp_phases() == [(252e6, pytest.approx(488.28125)), (2.618e12, pytest.approx(976.5625))]
    # a linear ramp 192 -> 2,048 over 20B tokens: four 5B steps at 192 + 1,856 x (i + 0.5) / 4 (BLOOM's)
    bloom = BudgetInputs(**{**ask, "global_batch_tokens": None, "global_batch": 2048, "seq_len": 2048},
                         batch_ramp=[{"tokens": 2e10, "from": 192, "to": 2048}])
    assert bloom.ramp_phases() == [(5e9, 424.0), (5e9, 888.0), (5e9, 1352.0), (5e9, 1816.0)]
    assert bloom.model_dump()["batch_ramp"] == "20B:192-2048"  # dumped as the flag's text, read back the same
    assert BudgetInputs(**bloom.given_values()).ramp_phases() == bloom.ramp_phases()


def test_hand_worked_factor_on_a_fixed_layout(fixed_plan):
    """Half the 1T tokens at 32 sequences, half at the steady 64: factor = (0.5 s(32) + 0.5 s(64)) / s(64), s(b) the
    step model's seconds per token at batch b on dp8 mb1 (evaluate_layout; 32 = 4 micro-batches a rank)."""
    from dataclasses import replace

    from gpuplan.planner.batch_ramp import ramp_timing
    from gpuplan.planner.plan import evaluate_layout

    ev, plan = fixed_plan
    assert plan.text().startswith("dp8 tp1 pp1") and plan.global_batch == 64
    half = evaluate_layout(ev, replace(plan.layout, global_batch=32), "none", 32)
    s32, s64 = half.step_seconds / (32 * 2048), plan.step_seconds / (64 * 2048)
    assert s32 > s64  # the data-parallel sync per step is spread over half the tokens
    ramp = ramp_timing(ev, plan, 1e12, [(0.5e12, 32.0)])
    assert ramp.factor == pytest.approx(0.5 * s32 / s64 + 0.5, rel=1e-9)
    assert ramp.rounded == ()
    # 12 sequences are not a whole number of dp x micro-batch = 8: run as the nearest, 16 (Megatron asserts it)
    assert ramp_timing(ev, plan, 1e12, [(0.5e12, 12.0)]).run == (16,)


def test_the_answer_shows_the_ramp_and_its_time_follows(fixed_plan):
    """train's MFU is the steady one / the factor, so GPU-days and wall-clock grow by it; plan's days alike."""
    import gpuplan
    from gpuplan.jobs.budget.schema import BudgetInputs

    steady = gpuplan.estimate_budget(BudgetInputs(**FIXED))
    ramped = gpuplan.estimate_budget(BudgetInputs(**FIXED, batch_ramp="500B:32"))
    line = ramped.line("batch_ramp")
    assert line.text.startswith(f"x{line.value:.3f} (500B:32, then 64 sequences; steady MFU") and line.value > 1
    assert ramped.value("gpu_days") == pytest.approx(steady.value("gpu_days") * line.value, rel=1e-9)
    assert ramped.value("mfu") == pytest.approx(steady.value("mfu") / line.value, rel=1e-9)
    assert "batch_ramp" in [k.key for k in ramped.lines(ramped.headline)]
    rounded = gpuplan.estimate_budget(BudgetInputs(**FIXED, batch_ramp="500B:12"))
    assert any("12 -> 16 sequences" in n and "num_microbatches_calculator.py" in n for n in rounded.notes)
    plan = gpuplan.plan_report(gpuplan.PlanInputs(**{k: v for k, v in FIXED.items() if k != "mfu"},
                                                  batch_ramp="500B:32"))
    assert plan.line("batch_ramp").value == pytest.approx(line.value, rel=1e-9)
    assert plan.value("best_days") == pytest.approx(ramped.value("wall_days"), rel=1e-6)


def test_ranking_prefers_the_layout_without_the_early_bubble():
    """llama-3.1-70b on 256 H100, batch 512, half of 2T tokens at 64 sequences (generic): the steady choice dp64 pp2
    vpp20 mb1 runs that phase one micro-batch a pipeline (its bubble); ranked with the ramp, a layout with fewer
    data-parallel ranks wins, and its run with the ramp is faster than the steady choice's."""
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import layout_for_gpus
    from gpuplan.planner.batch_ramp import ramp_time_factor

    ask = dict(model="llama-3.1-70b", gpu="h100", gpus=256, mfu="predicted", tokens="2T", global_batch=512,
               framework="generic")
    steady_inputs, ramped_inputs = BudgetInputs(**ask), BudgetInputs(**ask, batch_ramp="1T:64")
    steady, ramped = layout_for_gpus(steady_inputs, 256), layout_for_gpus(ramped_inputs, 256)
    assert steady.layout.pp > 1 and 64 // (steady.layout.dp * steady.layout.micro_batch) == 1
    assert ramped.text() != steady.text()
    ev, phases = evaluator_for(steady_inputs), ramped_inputs.ramp_phases()

    def run_seconds_per_token(plan):
        return plan.step_seconds / (plan.global_batch * plan.seq_len) * ramp_time_factor(ev, plan, 2e12, phases)

    assert run_seconds_per_token(ramped) < run_seconds_per_token(steady)
    assert ramp_time_factor(ev, ramped, 2e12, phases) < ramp_time_factor(ev, steady, 2e12, phases)


TRAIN = {"model": "llama-3-8b", "gpu": "h100", "gpus": 64, "mfu": "predicted", "tokens": "1T", "global_batch": 512}


@pytest.mark.parametrize("job, route", [("train", "training"), ("budget", "budget"), ("plan", "plan")])
@pytest.mark.parametrize("ramp, fragment", [
    ("100B:512", "each phase's batch must be below the steady batch (512 sequences"),
    ("600B:128,500B:256", "the phases' tokens (1.1e+12) must be fewer than --tokens"),
    ("100B", "TOKENS:BATCH phases separated by commas"),
    ("100B:256-128", "a linear phase grows its batch")])
def test_bad_ramps_are_refused_in_one_line_at_every_door(run_cli, client, tmp_path, job, route, ramp, fragment):
    ask = {k: v for k, v in TRAIN.items() if not (job == "plan" and k == "mfu")}
    four_door_refusal(run_cli, client, tmp_path, job, route, {**ask, "batch_ramp": ramp}, "batch_ramp", fragment)


def test_a_ramp_without_a_predicted_time_is_refused(run_cli, client, tmp_path):
    four_door_refusal(run_cli, client, tmp_path, "train", "training", {**TRAIN, "mfu": 0.4, "batch_ramp": "100B:128"},
                      "batch_ramp", "give --mfu predicted")


def test_too_many_phases_are_refused():
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.schema import BudgetInputs

    with pytest.raises(InputError, match="1 to 32 phases"):
        BudgetInputs(**TRAIN, batch_ramp=",".join(["1B:128"] * 33))


def test_a_phase_the_pipeline_schedule_does_not_run_is_noted():
    """Megatron-Core's interleaved schedule needs at least pp micro-batches a step (schedules.py@core_v0.18.0
    L1068-1076): tp4 pp8 vpp10 on 256 H100 at 16 sequences leaves fewer; at 512 it runs (the search's own rule)."""
    import gpuplan
    from gpuplan.jobs.budget.schema import BudgetInputs

    ask = dict(model="llama-3.1-70b", gpu="h100", gpus=256, mfu="predicted", tokens="2T", global_batch=512,
               framework="megatron", tp=4, pp=8, vpp=10)
    noted = gpuplan.estimate_budget(BudgetInputs(**ask, batch_ramp="1T:16")).notes
    assert any("16-sequence phase runs" in n and "fewer than --framework megatron's" in n for n in noted)
    fine = gpuplan.estimate_budget(BudgetInputs(**{**ask, "cp": 1}, batch_ramp="1T:256")).notes
    assert not any("pipeline schedule runs" in n for n in fine)


def test_plan_counts_the_ramp_once_in_its_ranked_days():
    """ranked_days = days x the ranking's time / the step's (jobs.plan.estimate._with_ranked_columns): both carry the
    ramp factor, so it is divided out once; with a ramp, ranked / days is what it is without (± model, failures)."""
    import gpuplan

    # dp2 pp4 mb1: the 2-sequence phase runs one micro-batch a pipeline, x2.5 (counted twice, ranked / days was x2.5)
    ask = {**{k: v for k, v in FIXED.items() if k != "mfu"}, "pp": 4}
    plain = gpuplan.plan_report(gpuplan.PlanInputs(**ask))
    ramped = gpuplan.plan_report(gpuplan.PlanInputs(**ask, batch_ramp="500B:2"))
    assert ramped.line("batch_ramp").value > 2

    def first_row(report):  # days to 0.1: the ratios hold to ~0.4%
        table = next(t for t in report.tables if t.title.startswith("top "))
        row = dict(zip(table.columns, table.rows[0]))
        return float(row["days"]), float(row["ranked days"])

    (days, ranked), (ramp_days, ramp_ranked) = first_row(plain), first_row(ramped)
    assert ramp_days > days and ramp_ranked / ramp_days == pytest.approx(ranked / days, rel=0.01)
