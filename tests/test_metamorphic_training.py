"""Metamorphic checks of the training answers (helper MT, session 24): relations between `train` / `budget`, `plan`,
`memory` and `campaign` answers to neighbouring asks. A seeded sweep of ~600 asks (/tmp/MT_sweep.py in the session's
report: catalog models x a100 / h100 / h200 / b200 / l40s / mi300x x 8-16,384 GPUs x 1e9-2e13 tokens x seq 2,048-131,072
x bf16 / fp8 x --mfu 0.4 / predicted x four frameworks) checked each relation below; one test per defect it found,
each failing on the commit before its fix, and the relations that held, on one ask each, with numbers worked by hand."""

from __future__ import annotations

import pytest

from gpuplan import estimate_budget, estimate_campaign

pytestmark = pytest.mark.usefixtures("time_box")

MI300X_PEAK = 1307e12
"""AMD Instinct MI300X dense BF16 peak, FLOP/s (catalog hardware mi300x; AMD's MI300X data sheet: 1,307.4 TFLOPS)."""
LLAMA_31_8B = 8_030_261_248
"""Llama 3.1 8B parameters (catalog llama-3.1-8b: HF safetensors.total)."""

UNPRICED = {"model": "llama-3.1-8b", "gpu": "mi300x", "mfu": 0.4,
            "stages": [{"name": "pretrain", "tokens": "10B", "gpus": 64}, {"name": "anneal", "tokens": "1B", "gpus": 16}]}
"""A campaign on a GPU the price catalog has no price for (`gpuplan budget --gpu mi300x` prints its costs as 'n/a (no
price: give --price)')."""


def test_a_campaign_on_a_gpu_with_no_price_answers_its_hours_and_no_money_total():
    """`gpuplan campaign` on MI300X (no published price) exited 70, 'internal error: TypeError: unsupported operand
    type(s) for +: 'int' and 'NoneType'' (jobs/campaign/estimate.py CampaignTotals.of summed each stage's
    cost_on_demand_usd, None there), while `gpuplan budget` answers each stage alone. Now the GPU-hours and calendar
    totals are answered and each money total is None (n/a), with a note naming the stages: a sum of the priced stages
    alone would understate the cost.

    By hand: 6 N D / (peak x MFU) x (1 + 20% comm allowance) = 6 x 8.03026e9 x 10e9 / (1.307e15 x 0.4) / 3,600
    x 1.2 = 307.20 GPU-hours for 10B tokens, 30.72 for 1B: 337.92 failure-free; failures and checkpoints add a little
    (0.3% here: the budget's own Failures section), so the total lies within 1% above."""
    answer = estimate_campaign(UNPRICED)
    t = answer.totals
    hand = 6 * LLAMA_31_8B * 11e9 / (MI300X_PEAK * 0.4) / 3600 * 1.2
    assert hand == pytest.approx(337.92, abs=0.01)
    assert hand <= t.gpu_hours <= hand * 1.01
    assert t.cost_on_demand_usd is None and t.cost_spot_usd is None
    assert t.budget_usd_on_demand is None and t.budget_usd_spot is None
    alone = [estimate_budget({"model": "llama-3.1-8b", "gpu": "mi300x", "mfu": 0.4, "tokens": s["tokens"],
                              "gpus": s["gpus"]}) for s in UNPRICED["stages"]]
    assert t.gpu_hours == pytest.approx(sum(r.value("cost_gpu_hours_on_demand") for r in alone), rel=1e-9)
    assert t.calendar_seconds == pytest.approx(sum(r.value("fail_wall_seconds") for r in alone), rel=1e-9)
    assert t.budget_gpu_hours == pytest.approx(sum(r.value("budget_gpu_hours") for r in alone), rel=1e-9)


def test_an_unpriced_campaign_prints_n_a_and_says_why(run_cli, tmp_path):
    """The CLI's text and --json of the same campaign: exit 0, money totals n/a / null, the note naming both stages."""
    plan = tmp_path / "unpriced.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: mi300x\nmfu: 0.4\nstages:\n  - {name: pretrain, tokens: 10B, gpus: 64}\n"
                    "  - {name: anneal, tokens: 1B, gpus: 16}\n")
    code, out, err = run_cli("campaign", str(plan))
    assert code == 0, err
    assert "n/a (a stage has no price: see the note)" in out and "--price" not in out  # campaign has no --price
    assert "no published price for the GPU of pretrain, anneal" in out
    code, out, err = run_cli("campaign", str(plan), "--json")
    assert code == 0, err
    import json

    totals = json.loads(out)["totals"]
    assert totals["cost_on_demand_usd"] is None and totals["gpu_hours"] > 337.9


def test_a_priced_and_an_unpriced_stage_give_no_partial_money_total():
    """One stage on H100 (priced), one on MI300X: the money totals stay None (a partial sum would read as the
    campaign's cost); the GPU-hours are still the sum of both stages."""
    mixed = {"model": "llama-3.1-8b", "mfu": 0.4, "stages": [{"tokens": "10B", "gpus": 64, "gpu": "h100"},
                                                             {"tokens": "1B", "gpus": 16, "gpu": "mi300x"}]}
    t = estimate_campaign(mixed).totals
    assert t.cost_on_demand_usd is None
    h100 = estimate_budget({"model": "llama-3.1-8b", "mfu": 0.4, "tokens": "10B", "gpus": 64, "gpu": "h100"})
    assert h100.value("cost_on_demand_usd") > 0  # that stage alone is priced
    assert t.gpu_hours > h100.value("cost_gpu_hours_on_demand")


# ---- relations the sweep found holding, on one ask each ----------------------------------------------------------------

H100_PEAK = 989.4e12
"""NVIDIA H100 SXM5 dense BF16 peak, FLOP/s (catalog hardware h100-sxm; NVIDIA H100 data sheet 989.4 TFLOPS)."""
ASK = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64, "tokens": "1T"}


def _pinned(report, **extra):
    """The ask again on the layout ``report`` chose (its degrees and batch given), at the article's MFU 0.4."""
    layout = report.value("mem_layout")
    degrees = {k: layout[k] for k in ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute",
                                      "global_batch")}
    return estimate_budget({**ASK, **degrees, "mfu": 0.4, **extra})


def test_gpu_hours_scale_exactly_with_the_tokens_on_one_layout():
    """6 N D / (GPUs x peak x MFU) at a fixed layout: twice the tokens, exactly twice the failure-free GPU-hours; with
    failures and checkpoints (interruptions grow with the run) never fewer. By hand: 6 x 8,030,261,248 x 1e12 /
    (989.4e12 x 0.4) / 3,600 x 1.2 (the 20% comm allowance) = 40,581.5 GPU-hours for 1T, 81,162.9 for 2T."""
    first = estimate_budget({**ASK, "mfu": 0.4})
    one, two = _pinned(first), _pinned(first, tokens="2T")
    hand = 6 * LLAMA_31_8B * 1e12 / (H100_PEAK * 0.4) / 3600 * 1.2
    assert hand == pytest.approx(40_581.5, abs=0.1)
    assert one.value("gpu_hours_with_comm") == pytest.approx(hand, rel=1e-9)
    assert two.value("gpu_hours_with_comm") == pytest.approx(2 * hand, rel=1e-9)
    assert two.value("cost_gpu_hours_on_demand") >= 2 * one.value("cost_gpu_hours_on_demand")
    assert one.value("mem_layout") == first.value("mem_layout")


def test_hours_price_and_budget_agree_in_one_answer():
    """GPU-hours = GPUs x wall-clock hours; cost = GPU-hours (with failures) x the price given; the budget = the
    failure-free hours + restarts, tuning and evaluation (5% each of those hours) + the hours failures lose.
    By hand at --price 2.50: 40,581.5 x 1.15 = 46,668.7 GPU-hours before the failures' own share."""
    r = estimate_budget({**ASK, "mfu": 0.4, "price": 2.5})
    hours = r.value("gpu_hours_with_comm")
    assert hours == pytest.approx(64 * r.value("wall_days_with_comm") * 24, rel=1e-12)
    assert r.value("cost_on_demand_usd") == pytest.approx(2.5 * r.value("cost_gpu_hours_on_demand"), rel=1e-12)
    lost = r.value("cost_gpu_hours_on_demand") - hours
    assert 0 < lost < 0.01 * hours
    assert r.value("budget_gpu_hours") == pytest.approx(hours * 1.15 + lost, rel=1e-9)
    assert hours * 1.15 == pytest.approx(46_668.7, abs=0.1)
    assert r.value("budget_gpu_hours") >= r.value("cost_gpu_hours_on_demand")


def test_plans_top_row_is_trains_predicted_answer():
    """`plan` and `train --mfu predicted` of one ask stand on one evaluated layout: the same layout, step time, MFU,
    GPU-hours and days (DESIGN.md: 'A plan is one evaluated layout')."""
    from gpuplan import plan_report

    train = estimate_budget({**ASK, "mfu": "predicted"})
    plan = plan_report(ASK)
    assert plan.value("best_step_seconds") == pytest.approx(train.value("io_step_seconds"), rel=1e-12)
    assert plan.value("best_mfu") == pytest.approx(train.value("mfu"), rel=1e-12)
    assert plan.value("best_gpu_hours") == pytest.approx(train.value("gpu_hours_with_comm"), rel=1e-12)
    assert plan.value("best_days") == pytest.approx(train.value("wall_days_with_comm"), rel=1e-12)
    assert plan.value("best_layout") in train.line("mem_layout").display


def test_memory_of_trains_layout_is_trains_figure_and_falls_with_tp():
    """`memory` of the layout train chose prints train's per-GPU figure and says it fits; doubling tp at the same
    dp (twice the GPUs) never needs more per GPU."""
    from gpuplan import estimate_memory

    train = estimate_budget({**ASK, "mfu": 0.4})
    layout = train.value("mem_layout")
    ask = {"model": "llama-3.1-8b", "gpu": "h100", **{k: layout[k] for k in (
        "gpus", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute", "global_batch")}}
    same = estimate_memory(ask)
    assert same.value("fits") is True
    assert same.value("peak_total") == pytest.approx(train.value("mem_peak_total"), rel=1e-12)
    wider = estimate_memory({**ask, "tp": 2 * layout["tp"], "gpus": 2 * layout["gpus"]})
    assert wider.value("peak_total") < same.value("peak_total")


# ---- plan's search and the single layout time the MoE copies alike ------------------------------------------------------

MIXTRAL_FP8 = {"model": "mixtral-8x7b", "gpu": "mi300x", "gpus": 200, "tokens": "1.44T", "seq_len": 32768,
               "framework": "megatron", "recompute": "selective", "dtype": "fp8"}
"""The sweep's ask: its best layout dp50 cp4 ep2 ZeRO-3 mb3 holds 8 / 2 = 4 experts a rank, so Megatron-Core's
alltoall dispatcher sorts the routed tokens, and FP8 pads them (Fp8Padding): two sets of copies (core.time.moe_layer)."""


def test_plans_search_charges_the_moe_sorts_and_the_fp8_padding_as_the_single_layout_does():
    """`plan` printed 17.04 days and 81,784 GPU-hours (the search table's step, 5.025 s) beside a step time of
    5.048 s, while `train --mfu predicted` of the same ask printed 17.12 days and 82,156 GPU-hours: the one
    formula (core.time.moe_layer.stage_expert_kernel_seconds) ran on arrays in the search, where
    ``sorts = ... and local > 1`` is a numpy bool and ``sorts + pads`` a logical or (True + True = True): one set of
    copies charged instead of two. Now both paths count 2.

    By hand, one set of copies a layer and micro-batch: (2 forward + 2 backward) kernels, each moving
    2 x tokens x top-k x hidden x 2 B = 2 x 24,576 (3 x 32,768 / cp 4) x 2 x 4,096 x 2 = 805,306,368 B at
    5.3 TB/s x 0.89 (memory_kernels.HBM_STREAM_EFFICIENCY) plus 7.84 us launch: 4 x 178.57 us = 714.27 us; x 32
    MoE layers = 0.022857 s a step, the gap the search left out."""
    from dataclasses import replace

    import numpy as np

    from gpuplan.core.time.moe_layer import stage_expert_kernel_seconds
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    one = 7.84e-6 + 2 * 24_576 * 2 * 4096 * 2 / (5.3e12 * 0.89)
    assert 32 * 4 * one == pytest.approx(0.022857, abs=1e-6)
    ev = evaluator_for(PlanInputs(**{k: v for k, v in MIXTRAL_FP8.items() if k != "tokens"}))
    settings = ev.step_settings("selective")
    args = (ev.spec, settings)
    tail = ("tensorwise", 24_576.0, 5.3e12)
    scalar = stage_expert_kernel_seconds(*args, 2.0, 32, *tail)
    array = stage_expert_kernel_seconds(*args, np.array([2.0, 8.0]), 32, *tail)  # 4 experts a rank, then 1
    flex = stage_expert_kernel_seconds(ev.spec, replace(settings, ep_dispatcher="flex"), 2.0, 32, *tail)  # DeepEP: no sorts, the padding only
    assert float(array[0]) == pytest.approx(scalar, rel=1e-12)
    assert scalar - flex == pytest.approx(32 * 4 * one, rel=1e-9)  # the sorts' set of copies
    assert float(array[1]) < float(array[0])  # one expert a rank: no sorts


def test_plans_top_row_days_are_trains_for_an_fp8_moe_ask():
    """The user-visible relation: plan's best layout, step, days and GPU-hours are train --mfu predicted's."""
    from gpuplan import plan_report

    train = estimate_budget({**MIXTRAL_FP8, "mfu": "predicted"})
    plan = plan_report(MIXTRAL_FP8)
    assert plan.value("best_layout") in train.line("mem_layout").display
    assert plan.value("best_step_seconds") == pytest.approx(train.value("io_step_seconds"), rel=1e-12)
    assert plan.value("best_days") == pytest.approx(train.value("wall_days_with_comm"), rel=1e-9)
    assert plan.value("best_gpu_hours") == pytest.approx(train.value("gpu_hours_with_comm"), rel=1e-9)
    # 1.44e12 / (150 x 32,768) = 292,968.75 steps of the layout's step
    assert train.value("wall_days_with_comm") * 86400 == pytest.approx(
        1.44e12 / (150 * 32768) * train.value("io_step_seconds"), rel=1e-9)
