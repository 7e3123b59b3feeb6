"""Metamorphic checks of the budget, campaign, report and web answers (helper MT2, session 24): relations between
`budget`, `train`, `campaign`, `report` and `/api/*` answers to one ask or to neighbouring ones. A seeded sweep
(/tmp/mt2/sweep*.py in the session's report: ~460 budget asks over 12 catalog models x a100 / a100-40gb / h100 / h200 /
b200 / l40s / mi300x x 8-4,096 GPUs x 1B-2T tokens x --mfu 0.3 / 0.4 / predicted x four frameworks, ~180 web asks of
the five estimators and campaigns, 23 report plan files) checked each relation below; one test for the defect it found
(the reserved price beside --price), failing on the commit before its fix, and the relations that held, on one ask
each, with numbers worked by hand. Relations tests/test_metamorphic_training.py already holds (hours x price, the 5%
lines, tokens scaling, plan vs train) are not repeated."""

from __future__ import annotations

import json

import pytest

from gpuplan import estimate_budget, estimate_campaign

pytestmark = pytest.mark.usefixtures("time_box")

ASK = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64, "tokens": "100B", "mfu": 0.4}
HYPERSTACK_H100 = (3.20, 2.72)
"""Hyperstack NVIDIA H100 SXM, on-demand and reserved USD per GPU-hour (catalog/prices/hyperstack.toml): the one H100
row that publishes both (AWS's p5 reserved row is a Capacity Block with no on-demand price beside it)."""
AWS_P4DE = (3.4309, 2.1752)
"""AWS p4de.24xlarge per GPU, on-demand and reserved (catalog/prices/aws.toml: $27.44705 and $17.401365 / 8)."""
HYPERSTACK_A100 = (1.60, 1.36)
"""Hyperstack NVIDIA A100 SXM, on-demand and reserved (catalog/prices/hyperstack.toml)."""


def test_reserved_cost_follows_the_price_given():
    """`budget --gpu h100 --price 1 --full` printed 'cost, reserved/committed $15,548' against 'cost, on-demand
    $4,072': the reserved line took the catalog's median reserved price ($3.82: Hyperstack 2.72, AWS 4.916) whatever
    --price said (jobs/budget/model.py resolve_prices), so a committed discount cost 3.8x the user's own on-demand
    price and did not move with it. Now --price less the published reserved discount, as spot takes its discount:
    1 - 2.72 / 3.20 = 15%, $1 x 0.85 = $0.85/GPU-h."""
    one = estimate_budget({**ASK, "price": 1})
    off = 1 - HYPERSTACK_H100[1] / HYPERSTACK_H100[0]
    assert off == pytest.approx(0.15, abs=1e-12)
    hours = one.value("cost_gpu_hours_on_demand")
    assert one.value("cost_reserved_usd") == pytest.approx(hours * 0.85, rel=1e-9)
    assert one.value("cost_reserved_usd") < one.value("cost_on_demand_usd")
    three = estimate_budget({**ASK, "price": 3})
    assert three.value("cost_reserved_usd") == pytest.approx(3 * one.value("cost_reserved_usd"), rel=1e-9)


def test_reserved_cost_is_never_above_on_demand_at_the_median_price():
    """a100 without --provider: on-demand is the median over 5 providers ($1.71), reserved was the median of the 2
    that publish one ($1.77 = (2.1752 + 1.36) / 2), so 'cost, reserved/committed' ($22,827) sat above 'cost,
    on-demand' ($22,083). Now $1.71 x (1 - median discount): AWS 1 - 2.1752 / 3.4309 = 36.60%, Hyperstack 15%,
    median 25.80%, $1.2688/GPU-h."""
    r = estimate_budget({**ASK, "gpu": "a100"})
    off = ((1 - AWS_P4DE[1] / AWS_P4DE[0]) + (1 - HYPERSTACK_A100[1] / HYPERSTACK_A100[0])) / 2
    assert off == pytest.approx(0.2580, abs=1e-4)
    assert r.value("cost_price_on_demand") == pytest.approx(1.71)
    assert r.value("cost_reserved_usd") == pytest.approx(r.value("cost_gpu_hours_on_demand") * 1.71 * (1 - off),
                                                         rel=1e-9)
    assert r.value("cost_reserved_usd") < r.value("cost_on_demand_usd")


def test_a_providers_own_reserved_price_stays_its_own():
    """With --provider and no --price the on-demand and reserved prices are the same provider's rows: AWS's $4.916
    H100 Capacity Block, unchanged by the fix."""
    r = estimate_budget({**ASK, "provider": "aws"})
    assert r.value("cost_reserved_usd") == pytest.approx(r.value("cost_gpu_hours_on_demand") * 4.916, rel=1e-9)


# ---- relations the sweep found holding, on one ask each ----------------------------------------------------------------

def test_a_provider_changes_the_prices_only():
    """--provider moves the money lines and nothing else: the same layout, wall-clock, billed and budget GPU-hours."""
    base, aws = estimate_budget(ASK), estimate_budget({**ASK, "provider": "aws"})
    for key in ("mem_layout", "fail_wall_seconds", "cost_gpu_hours_on_demand", "cost_spot_gpu_hours",
                "budget_gpu_hours", "contingency_total"):
        assert aws.value(key) == base.value(key), key
    assert aws.value("cost_on_demand_usd") == pytest.approx(
        aws.value("cost_price_on_demand") * base.value("cost_gpu_hours_on_demand"), rel=1e-12)
    assert aws.value("cost_price_on_demand") != base.value("cost_price_on_demand")


def test_named_shares_replace_the_defaults_and_the_budget_is_their_sum():
    """--contingency-restarts 10%, tuning 0, evaluation 2%, failures 5% (a share in place of the failure model): each
    line is its share of the failure-free GPU-hours and the budget is those hours x 1.17. By hand: 6 x 8,030,261,248
    x 100e9 / (989.4e12 x 0.4) / 3,600 x 1.2 = 4,058.15 GPU-hours; x 1.17 = 4,748.03."""
    r = estimate_budget({**ASK, "contingency_restarts": 0.1, "contingency_tuning": 0, "contingency_evaluation": 0.02,
                         "contingency_failures": 0.05})
    hours = 6 * 8_030_261_248 * 100e9 / (989.4e12 * 0.4) / 3600 * 1.2
    assert hours == pytest.approx(4058.15, abs=0.01)
    assert r.value("gpu_hours_with_comm") == pytest.approx(hours, rel=1e-9)
    for key, share in (("restarts", 0.1), ("tuning", 0.0), ("evaluation", 0.02), ("failures", 0.05)):
        assert r.value(f"contingency_{key}") == pytest.approx(share * hours, rel=1e-9, abs=1e-9), key
    assert r.value("budget_gpu_hours") == pytest.approx(hours * 1.17, rel=1e-9)
    assert r.value("budget_gpu_hours") == pytest.approx(4748.03, abs=0.01)


def test_the_spot_budget_carries_the_spot_runs_own_failures():
    """budget on spot = (budget GPU-hours - the on-demand failures line + the spot run's lost hours) x spot price: the
    same named shares, the failures line of the spot run (more reclaims)."""
    r = estimate_budget(ASK)
    hours = r.value("gpu_hours_with_comm")
    spot_hours = r.value("budget_gpu_hours") - r.value("contingency_failures") + (r.value("cost_spot_gpu_hours") - hours)
    assert r.value("budget_usd_spot") == pytest.approx(spot_hours * r.value("cost_price_spot"), rel=1e-9)
    assert r.value("cost_spot_gpu_hours") > r.value("cost_gpu_hours_on_demand")


def test_a_one_stage_campaign_is_that_stages_budget():
    """campaign totals of one stage = `budget` of it: GPU-hours, calendar, money and the contingency budgets."""
    b = estimate_budget(ASK)
    t = estimate_campaign({"model": "llama-3.1-8b", "gpu": "h100", "mfu": 0.4,
                           "stages": [{"tokens": "100B", "gpus": 64}]}).totals
    assert t.gpu_hours == pytest.approx(b.value("cost_gpu_hours_on_demand"), rel=1e-12)
    assert t.calendar_seconds == pytest.approx(b.value("fail_wall_seconds"), rel=1e-12)
    assert t.cost_on_demand_usd == pytest.approx(b.value("cost_on_demand_usd"), rel=1e-12)
    assert t.budget_usd_spot == pytest.approx(b.value("budget_usd_spot"), rel=1e-12)
    assert t.budget_gpu_hours == pytest.approx(b.value("budget_gpu_hours"), rel=1e-12)


def test_the_markdown_report_prints_the_budgets_lines(run_cli, tmp_path):
    """`gpuplan report PLAN --markdown` prints every line of `gpuplan budget PLAN --json` as its own table row
    (label | text), the same numbers."""
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ngpus: 64\ntokens: 100B\nprice: 2.5\n")
    code, out, err = run_cli("budget", str(plan), "--json")
    assert code == 0, err
    lines = [line for s in json.loads(out)["sections"] for line in s["lines"]]
    md = tmp_path / "r.md"
    code, _, err = run_cli("report", str(plan), "--out", str(tmp_path / "r.html"), "--markdown", str(md), "--no-plots")
    assert code == 0, err
    text = md.read_text()
    esc = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    missing = [line["label"] for line in lines if f"| {esc(line['label'])} | {esc(line['text'])} |" not in text]
    assert len(lines) > 80 and not missing
    assert "| cost, on-demand | $10,181 |" in text  # 4,072.33 billed GPU-hours x $2.50


def test_the_web_budget_is_the_python_answer(client):
    """POST /api/budget and estimate_budget: every number in `results` equal; ?lang=zh changes no number."""
    en = client.post("/api/budget", json=ASK).json()["results"]
    zh = client.post("/api/budget?lang=zh", json=ASK).json()["results"]
    py = estimate_budget(ASK).to_dict()["results"]
    assert en == zh == json.loads(json.dumps(py))
    assert en["cost_reserved_usd"] == pytest.approx(en["cost_gpu_hours_on_demand"] * 3.99 * 0.85, rel=1e-9)


def test_the_reports_memory_section_names_the_budgets_other_layout(run_cli, tmp_path):
    """One plan file (llama-3.1-8b, h100, 64 GPUs, 100B tokens, no degrees): the report's budget section runs the
    planner's dp32 tp1 pp2 vpp8 ZeRO-1 mb1 at 1,024 sequences a step (42.76 GiB allocated, fits yes) while its memory
    section checks `gpuplan memory`'s defaults for the file, dp64 tp1 pp1 (66.26 GiB, 'fits NO' by 5.42 MiB), with
    nothing saying the two are different layouts. The memory numbers stay `gpuplan memory`'s; a note now names both
    and the fields that state the budget's layout. Stated in the file, memory gives the budget's 42.76 GiB and no
    note."""
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ngpus: 64\ntokens: 100B\n")
    md = tmp_path / "r.md"
    args = ("--out", str(tmp_path / "r.html"), "--markdown", str(md), "--no-plots")
    code, _, err = run_cli("report", str(plan), *args)
    assert code == 0, err
    text = md.read_text()
    assert "| fits | NO |" in text and "| allocated peak (PyTorch tensors) | 66.26 GiB |" in text
    assert ("this section checks the layout the plan file states (dp 64 x tp 1 x pp 1 x cp 1, ep 1, ZeRO-1, "
            "micro-batch 1): 66.26 GiB allocated; the budget section runs dp32 tp1 pp2 vpp8 ZeRO-1 mb1, no recompute "
            "on 64 GPUs: 42.76 GiB allocated, fits yes") in text
    assert "(tp: 1, pp: 2, vpp: 8, cp: 1, ep: 1, zero: 1, micro_batch: 1, recompute: none, global_batch: 1024)" in text
    plan.write_text(plan.read_text() + "tp: 1\npp: 2\nvpp: 8\ncp: 1\nep: 1\nzero: 1\nmicro_batch: 1\nrecompute: none\n"
                    "global_batch: 1024\n")
    code, _, err = run_cli("report", str(plan), *args)
    assert code == 0, err
    text = md.read_text()
    assert "this section checks" not in text
    assert "| allocated peak (PyTorch tensors) | 42.76 GiB |" in text
