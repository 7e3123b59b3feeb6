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
    # a linear ramp 192 -> 2,048 over 20B tokens: 256 steps of 78.125M at 192 + 1,856 x (i + 0.5) / 256 (BLOOM's)
    bloom = BudgetInputs(**{**ask, "global_batch_tokens": None, "global_batch": 2048, "seq_len": 2048},
                         batch_ramp=[{"tokens": 2e10, "from": 192, "to": 2048}])
    assert bloom.ramp_phases()[:2] == [(78.125e6, 195.625), (78.125e6, 202.875)] and len(bloom.ramp_phases()) == 256
    assert bloom.ramp_phases()[-1] == (78.125e6, 2044.375)
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
    from gpuplan.planner.batch_ramp import ramp_timing

    ask = dict(model="llama-3.1-70b", gpu="h100", gpus=256, mfu="predicted", tokens="2T", global_batch=512,
               framework="generic")
    steady_inputs, ramped_inputs = BudgetInputs(**ask), BudgetInputs(**ask, batch_ramp="1T:64")
    steady, ramped = layout_for_gpus(steady_inputs, 256), layout_for_gpus(ramped_inputs, 256)
    assert steady.layout.pp > 1 and 64 // (steady.layout.dp * steady.layout.micro_batch) == 1
    assert ramped.text() != steady.text()
    ev, phases = evaluator_for(steady_inputs), ramped_inputs.ramp_phases()

    def run_seconds_per_token(plan):
        return plan.step_seconds / (plan.global_batch * plan.seq_len) * ramp_timing(ev, plan, 2e12, phases).factor

    assert run_seconds_per_token(ramped) < run_seconds_per_token(steady)
    assert ramp_timing(ev, ramped, 2e12, phases).factor < ramp_timing(ev, steady, 2e12, phases).factor


TRAIN = {"model": "llama-3-8b", "gpu": "h100", "gpus": 64, "mfu": "predicted", "tokens": "1T", "global_batch": 512}


@pytest.mark.parametrize("job, route", [("train", "training"), ("budget", "budget"), ("plan", "plan")])
@pytest.mark.parametrize("ramp, fragment", [
    ("100B:512", "each phase's batch must be below the steady batch (512 sequences"),
    ("600B:128,500B:256", "the phases' tokens (1.1e+12) must be fewer than --tokens"),
    ("100B", "TOKENS:BATCH phases separated by commas"),
    ("100B:256-128", "a linear phase does not shrink its batch")])
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


def test_a_phase_the_pipeline_schedule_refuses_is_not_ranked(run_cli):
    """Megatron-Core's interleaved schedule raises ValueError below pp micro-batches a step (schedules.py@core_v0.18.0
    L1068-1076; review w16 R6 S1): tp4 pp8 vpp10 cp1 mb1 on 256 H100 is dp8, so a 16-sequence phase runs 2 < 8:
    that layout is refused; with cp free the search answers one whose phase runs (dp2 cp4: 8 micro-batches)."""
    import gpuplan
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.schema import BudgetInputs

    ask = dict(model="llama-3.1-70b", gpu="h100", gpus=256, mfu="predicted", tokens="2T", global_batch=512,
               framework="megatron", tp=4, pp=8, vpp=10)
    # a 4-sequence phase runs at most 4 micro-batches on any dp: below pp 8 everywhere, refused
    with pytest.raises(InputError, match="no layout searched runs every phase"):
        gpuplan.estimate_budget(BudgetInputs(**ask, cp=1, micro_batch=1, batch_ramp="1T:4"))
    # a 16-sequence phase runs 8 micro-batches at dp 2 (16 / (2 x 1)), 2 at dp 8: with the degrees fixed, the
    # counts below 256 are weighed since session 25 (208a97ae: more GPUs asked never answer slower than fewer, and
    # 256 runs nothing), so 64 of them answer, 192 left idle (the answer says so), where it was refused
    fixed = gpuplan.estimate_budget(BudgetInputs(**ask, cp=1, micro_batch=1, batch_ramp="1T:16")).value("mem_layout")
    assert (fixed["dp"], fixed["tp"] * fixed["pp"] * fixed["dp"]) == (2, 64), fixed
    free = gpuplan.estimate_budget(BudgetInputs(**ask, batch_ramp="1T:16"))
    layout = free.value("mem_layout")
    assert layout["vpp"] == 10 and 16 // (layout["dp"] * layout["micro_batch"]) >= 8, layout


@pytest.mark.parametrize("job", ["budget", "plan"])
def test_the_schedule_refusal_quotes_the_ramp_as_typed(run_cli, job):
    """planner.batch_ramp.settle_ramp's refusal quoted the steps it timed: a linear 1T:16-64 is 256 steps of
    3.906e+09 tokens (batch_ramp_field.LINEAR_STEPS), a 4,626-character value cut to '...'. It quotes what was typed
    (batch_ramp_field.typed_text), on one line. tp4 pp8 vpp10 mb1 on 256 H100 is dp8: 16-64 sequences run 2-8
    micro-batches a step, below pp 8 for all but the last (as the test above)."""
    flags = ("llama-3.1-70b", "--gpu", "h100", "--gpus", "256", "--tokens", "2T", "--global-batch", "512",
             "--framework", "megatron", "--tp", "4", "--pp", "8", "--vpp", "10", "--cp", "1", "--micro-batch", "1",
             "--batch-ramp", "1T:4-64") + (("--mfu", "predicted") if job == "budget" else ())
    code, out, err = run_cli(job, *flags)  # 4-64: its first steps run 4 micro-batches on any dp (1T:16-64 runs on 64
    assert code == 2, out                  # of the 256 since session 25: the test above)
    assert err.strip() == err.strip().splitlines()[0]
    assert "batch_ramp: got '1T:4-64'; no layout searched runs every phase" in err, err


@pytest.mark.parametrize("count", [("--gpus", "64"), ("--days", "60")])
def test_train_times_its_ramp_on_the_evaluator_its_search_used(run_cli, monkeypatch, count):
    """jobs.training.timing.estimate_time built a second evaluator for the ramp's phases (batch_ramp.ramp_on's
    evaluator_for) after layout_for_gpus / layout_for_deadline had built one from the same inputs (w17 D item 6):
    the ramp is timed on the search's own, on both doors (a count given; a deadline searched)."""
    from gpuplan.jobs.plan import search as PS
    from gpuplan.jobs.training import batch_ramp as TB
    from gpuplan.jobs.training import layout as TL

    built, timed_on = [], []

    def counted(*args, **kwargs):
        built.append(original(*args, **kwargs))
        return built[-1]

    def ramp_seen(inputs, plan, evaluator=None, factor=None):
        timed_on.append(evaluator)
        return ramp_on(inputs, plan, evaluator, factor)

    original, ramp_on = PS.evaluator_for, TB.ramp_on
    monkeypatch.setattr(PS, "evaluator_for", counted)
    monkeypatch.setattr(TL, "evaluator_for", counted)
    monkeypatch.setattr(TB, "ramp_on", ramp_seen)
    code, out, err = run_cli("train", "llama-3-8b", "--gpu", "h100", *count, "--mfu", "predicted", "--tokens", "1T",
                             "--global-batch", "512", "--batch-ramp", "100B:128")
    assert code == 0, err
    assert "batch ramp" in out and len(timed_on) == 1 and timed_on[0] is built[0], (timed_on, built)


def test_plan_counts_the_ramp_once_in_its_ranked_days():
    """ranked_days = days x the ranking's time / the step's (jobs.plan.ranked_columns.with_ranked_columns): both carry the
    ramp factor, so it is divided out once; with a ramp, ranked / days is what it is without (± model, failures)."""
    import gpuplan

    # dp2 pp4 mb1: the 2-sequence phase runs one micro-batch a pipeline, x2.5 (counted twice, ranked / days was x2.5)
    ask = {**{k: v for k, v in FIXED.items() if k != "mfu"}, "pp": 4, "vpp": 1}  # vpp > 1 refuses 1 micro-batch
    plain = gpuplan.plan_report(gpuplan.PlanInputs(**ask))
    ramped = gpuplan.plan_report(gpuplan.PlanInputs(**ask, batch_ramp="500B:2"))
    assert ramped.line("batch_ramp").value > 2

    def first_row(report):  # days to 0.1: the ratios hold to ~0.4%
        table = next(t for t in report.tables if t.title.startswith("top "))
        row = dict(zip(table.columns, table.rows[0]))
        return float(row["days"]), float(row["ranked days"])

    (days, ranked), (ramp_days, ramp_ranked) = first_row(plain), first_row(ramped)
    assert ramp_days > days and ramp_ranked / ramp_days == pytest.approx(ranked / days, rel=0.01)


# review w16 R6 (mender MF): the 16-row cap (M1), the linear integration (S2), MFU (S3), N2-N5, N10

R6_ASK = dict(model="llama-3.1-70b", gpu="h100", gpus=1024, tokens="2T", batch_ramp="200B:128,200B:256")
"""The reviewer's ask: over 16 near-tied vpp variants of dp32 tp4 pp8 lead by steady time, all with a real factor."""


def _steady_days(report) -> float:
    """plan's steady days of its chosen layout: tokens / its steady throughput."""
    return 2e12 / report.value("best_tokens_per_second") / 86400


def test_no_untimed_row_wins_past_the_ranking_cap():
    """Before the fix row 17 kept factor 1 and won: plan printed dp32 tp4 pp8 vpp10 at its steady 21.66 days beside
    'x1.132', and train answered it at 24.51 days; dp32 tp4 pp4 vpp20 cp2 runs the ramp at x1.027, 21.35 days."""
    import gpuplan
    from gpuplan.jobs.budget.schema import BudgetInputs

    plan = gpuplan.plan_report(gpuplan.PlanInputs(**R6_ASK))
    train = gpuplan.estimate_budget(BudgetInputs(**R6_ASK, mfu="predicted"))
    factor = plan.value("batch_ramp")
    assert plan.value("best_days") == pytest.approx(_steady_days(plan) * factor, rel=1e-9)  # the days hold the ramp
    assert plan.value("best_days") == pytest.approx(train.value("wall_days"), rel=1e-9)
    assert plan.value("best_days") < 21.66 * (1 - 0.01) and factor < 1.1
    # S3: one MFU, the run's average, labelled so at both doors
    assert plan.value("best_mfu") == pytest.approx(train.value("mfu"), rel=1e-9)
    assert "with the ramp" in plan.line("best_mfu").label and "with the ramp" in train.line("mfu").label


def test_a_deadline_is_met_with_the_ramp_not_before_it():
    """`plan --days 30 --tokens 2T --batch-ramp 1T:128` answered 736 GPUs at 29.17 days (steady) beside x1.112:
    32.4 days with the ramp, past the deadline. A row meets it on its ramp-inclusive days with failures."""
    import gpuplan

    plan = gpuplan.plan_report(gpuplan.PlanInputs(model="llama-3.1-70b", gpu="h100", days=30, tokens="2T",
                                                  batch_ramp="1T:128", top=1))  # top 1: the leader timed only
    assert plan.value("best_days") == pytest.approx(_steady_days(plan) * plan.value("batch_ramp"), rel=1e-9)
    assert plan.value("fail_wall_seconds") / 86400 <= 30


def test_a_linear_phase_is_integrated_within_half_a_percent():
    """1T:64-1024 on llama-3.1-70b's steady dp64 tp4 pp4 vpp20 (1,024 H100): the exact factor gives each runnable
    batch (multiples of 64) the continuous ramp's token share; LINEAR_STEPS midpoints read it within 0.5% (4 read
    x1.066 against x1.119). Past EXACT_BATCHES distinct batches, interpolating in 1/b is within 0.5% of timing all."""
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.layout import layout_for_gpus
    from gpuplan.planner import batch_ramp as R
    from gpuplan.schema.batch_ramp_field import RampPhase

    inputs = BudgetInputs(model="llama-3.1-70b", gpu="h100", gpus=1024, mfu="predicted", tokens="2T")
    ev, plan = evaluator_for(inputs), layout_for_gpus(inputs, 1024)
    assert plan.layout.dp * plan.layout.micro_batch == 64 and plan.global_batch == 1024
    steady = plan.step_seconds / (plan.global_batch * plan.seq_len)
    edges = [64.0] + [(k + 0.5) * 64 for k in range(1, 16)] + [1024.0]  # b -> 64 round(b / 64): [96, 160) -> 128
    ramp = sum(1e12 * (hi - lo) / 960 * R.phase_seconds_per_token(ev, plan, (lo + hi) / 2)
               for lo, hi in zip(edges, edges[1:]))
    exact = (ramp + 1e12 * steady) / (2e12 * steady)
    read = R.ramp_timing(ev, plan, 2e12, RampPhase(1e12, 64, 1024).sequences(plan.seq_len)).factor
    assert read == pytest.approx(exact, rel=0.005) and exact > 1.1
    # 8 to 512 sequences on the 8-GPU dp8 fixed layout: 64 distinct batches, EXACT_BATCHES timed and the rest interpolated
    from gpuplan.jobs.budget.schema import BudgetInputs as B
    from gpuplan.jobs.training.layout import layout_for_gpus as pick

    small_inputs = B(**{**FIXED, "global_batch": 1024})
    small, small_ev = pick(small_inputs, 8), evaluator_for(small_inputs)
    steps = RampPhase(5e11, 8, 512).sequences(2048)
    every = {b: R.phase_seconds_per_token(small_ev, small, b) for b in range(8, 513, 8)}
    share = {}
    for tokens, b in steps:
        share[R.runnable_batch(small, b)] = share.get(R.runnable_batch(small, b), 0.0) + tokens
    s_steady = small.step_seconds / (small.global_batch * small.seq_len)
    timed_all = (sum(t * every[b] for b, t in share.items()) + 5e11 * s_steady) / (1e12 * s_steady)
    assert len(share) > R.EXACT_BATCHES
    assert R.ramp_timing(small_ev, small, 1e12, steps).factor == pytest.approx(timed_all, rel=0.005)


def test_refusals_echo_the_text_typed_and_short_phases_are_refused():
    """N2: '1e308:512' was echoed as '1e+296T:512'; N3: '1:1' and '0.5:512' (shorter than one step of their batch)
    were answered x1.000; N4: 32 phases fit in the text form (256 characters held ~19)."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.schema import BudgetInputs

    with pytest.raises(InputError, match="got '1e308:256'"):
        BudgetInputs(**TRAIN, batch_ramp="1e308:256")
    for short in ("1:1", "0.5:512"):
        with pytest.raises(InputError, match="at least one step of its batch"):
            BudgetInputs(**TRAIN, batch_ramp=short)
    text = ",".join(["2.618B:1Mtok"] * 32)  # 415 characters: 32 x 13 less a comma
    assert len(text) > 256 and len(BudgetInputs(**TRAIN, batch_ramp=text).batch_ramp) == 32
    with pytest.raises(InputError, match="longer than 1024 characters"):
        BudgetInputs(**TRAIN, batch_ramp=",".join(["2.618B:1Mtok"] * 80))


def test_the_inputs_echo_the_ramp_and_the_models_step_is_the_steady_one():
    """N10: train's inputs carry batch_ramp as typed; N5: the validation's 'the model's step' is the steady step
    (io_step_seconds is the run's average, the steady step x the ramp's factor)."""
    import gpuplan
    from gpuplan.jobs.budget.schema import BudgetInputs
    from gpuplan.jobs.validation.gpu_hours import _step_text

    report = gpuplan.estimate_budget(BudgetInputs(**FIXED, batch_ramp="500B:32"))
    assert [line.value for line in report.inputs if line.key == "batch_ramp"] == ["500B:32"]
    factor, step = report.value("batch_ramp"), report.value("io_step_seconds")
    run = {"global_batch": 64, "seq_len": 2048, "tokens": 1e12, "measured_gpu_hours": 1e4, "gpus": 8}
    assert f"the model's step {step / factor:.3g} s" in _step_text(run, report) and factor > 1.01


@pytest.mark.parametrize("rank_by", ["gpus", "cost"])
def test_other_rankings_answer_a_timed_row(rank_by):
    """`--gpus 256-2048 --rank-by gpus|cost --batch-ramp 500B:64` printed 79.10 days beside x1.037 (steady days of a
    row the time-ordered loop never reached; train 82.01): the answer's own ranking now settles the leader."""
    import gpuplan

    plan = gpuplan.plan_report(gpuplan.PlanInputs(model="llama-3.1-70b", gpu="h100", gpus="256-2048", tokens="2T",
                                                  batch_ramp="500B:64", rank_by=rank_by, top=1))
    assert plan.value("best_days") == pytest.approx(_steady_days(plan) * plan.value("batch_ramp"), rel=1e-9)


def test_the_tables_mark_rows_whose_ramp_was_not_timed():
    """The top-N rows are all timed (plan's --top leads settle_ramp); a Pareto-front row the ranking never reached
    holds the steady days, a lower bound, shown '>=' with a note (review w16 R6 M1: the table mixed the two)."""
    import gpuplan

    plan = gpuplan.plan_report(gpuplan.PlanInputs(model="llama-3.1-70b", gpu="h100", gpus="256-2048", tokens="2T",
                                                  batch_ramp="500B:64", top=3))
    top, front = plan.tables[0], plan.tables[1]
    assert top.title.startswith("top ") and not any(">=" in str(cell) for row in top.rows for cell in row)
    marked = [row for row in front.rows if str(row[5]).startswith(">=")]
    assert marked and any("rows marked '>='" in n and "lower bound" in n for n in plan.notes)
