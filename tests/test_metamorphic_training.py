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
    assert "n/a (a stage has no price: give --price)" in out
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
