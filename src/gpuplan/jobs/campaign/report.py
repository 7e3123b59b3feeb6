"""The campaign's Report: one row per stage (its budget report's own texts) and the totals as result lines."""

from __future__ import annotations

from typing import Any

from gpuplan.report.model import Line, Report, Section, Table

STAGE_COLUMNS = ("stage", "model", "GPUs", "tokens", "seq len", "layout", "MFU", "wall-clock with failures",
                 "interruptions", "checkpoints", "GPU-hours", "cost on-demand", "cost spot", "budget on-demand")
TOTALS_HEADLINE = ("campaign_stages", "campaign_calendar_seconds", "campaign_gpu_hours", "campaign_cost_on_demand_usd",
                   "campaign_cost_spot_usd", "campaign_budget_gpu_hours", "campaign_budget_usd_on_demand",
                   "campaign_budget_usd_spot")
NOTES = ("stages run one after another, each on its own cluster, with no overlap and no cost between them (no "
         "re-sharding, no queueing): the calendar time is the sum of the stages' wall-clocks (docs/campaign.md)",
         "every stage figure is that stage's `gpuplan budget` answer (`--full` prints each stage's report); GPU-hours "
         "and costs are the on-demand runs' with failures and checkpoints, budgets add each stage's contingency")


def stage_row(answer: Any) -> tuple[str, ...]:
    """A stage's row (``answer``: a jobs.campaign.estimate.StageAnswer): its name, then its budget report's texts."""
    inputs = answer.stage.inputs
    gpus = answer.figure("gpus")
    return (answer.stage.name, answer.model, f"{gpus:,} x {inputs.gpu}", answer.text("tokens"), f"{inputs.seq_len:,}",
            answer.text("mem_layout"), answer.text("mfu"), answer.text("fail_wall_seconds"),
            f"{answer.figure('interruptions'):.1f}", f"{answer.figure('checkpoints'):,.0f}",
            f"{answer.figure('gpu_hours'):,.0f}", *(NO_PRICE if answer.figure(key) is None else answer.text(key)
                                                   for key in ("cost_on_demand_usd", "cost_spot_usd",
                                                               "budget_usd_on_demand")))


NO_PRICE = "n/a (no price)"
"""A stage's cost cell where its GPU has no published price: its budget's own words say 'give --price', an option
`gpuplan campaign` does not have (refused: a stage's field goes in FILE); the note says where a price goes."""
PRICE_WHERE = "give that stage a price: (USD per GPU-hour), or one at the top level for every stage"


def campaign_report(answer: Any) -> Report:
    """The Report of ``answer`` (a jobs.campaign.estimate.CampaignAnswer): the stages' table, then the totals (sums of
    the stages' figures), for the table, Markdown and CSV views."""
    from gpuplan.core.units import format_duration

    t = answer.totals
    n = len(answer.stages)

    def money(key: str, label: str, value: float | None) -> Line:
        text = "n/a (a stage has no price: see the note)" if value is None else f"${value:,.0f}"
        return Line(key, label, value, "USD", text, "sum over the stages")

    def hours(key: str, label: str, value: float) -> Line:
        return Line(key, label, value, "GPU-hours", f"{value:,.0f}", "sum over the stages")

    lines = (
        Line("campaign_stages", "stages (run one after another)", n, "stages", f"{n}"),
        Line("campaign_calendar_seconds", "calendar time, sequential (with failures)", t.calendar_seconds, "s",
             format_duration(t.calendar_seconds), "sum of the stages' wall-clocks with failures"),
        Line("campaign_spot_calendar_seconds", "calendar time on spot, sequential", t.spot_calendar_seconds, "s",
             format_duration(t.spot_calendar_seconds), "sum of the stages' spot wall-clocks"),
        hours("campaign_gpu_hours", "GPU-hours (on-demand, with failures)", t.gpu_hours),
        money("campaign_cost_on_demand_usd", "cost, on-demand", t.cost_on_demand_usd),
        hours("campaign_spot_gpu_hours", "GPU-hours on spot", t.spot_gpu_hours),
        money("campaign_cost_spot_usd", "cost, spot", t.cost_spot_usd),
        hours("campaign_budget_gpu_hours", "GPU-hours budget (with contingency)", t.budget_gpu_hours),
        money("campaign_budget_usd_on_demand", "budget, on-demand", t.budget_usd_on_demand),
        money("campaign_budget_usd_spot", "budget, spot", t.budget_usd_spot),
        Line("campaign_interruptions", "expected interruptions", t.interruptions, "interruptions",
             f"{t.interruptions:.1f}", "sum over the stages"),
        Line("campaign_checkpoints", "checkpoints written", t.checkpoints, "checkpoints", f"{t.checkpoints:,.0f}",
             "sum over the stages"),
    )
    table = Table("Stages", STAGE_COLUMNS, tuple(stage_row(s) for s in answer.stages))
    stages = f"{n} stage{'s' if n != 1 else ''} one after another"
    title = f"Training campaign: {answer.title}, {stages}" if answer.title else f"Training campaign: {stages}"
    unpriced = [s.stage.name for s in answer.stages if s.figure("cost_on_demand_usd") is None]
    notes = NOTES + ((f"no published price for the GPU of {', '.join(unpriced)}: the money totals are n/a ("
                      f"{PRICE_WHERE})",) if unpriced else ())
    return Report("campaign", title, (), (), (Section("Campaign totals", lines),), notes, (table,),
                  headline=TOTALS_HEADLINE, summary_table="Stages")
