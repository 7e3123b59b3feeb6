"""`gpuplan campaign`: each stage's `gpuplan budget` answer, and the campaign's totals as their sums.

No time model of its own: every number of a stage is a line of that stage's budget report (jobs/budget/estimate.py
estimate_budget, headed as `gpuplan budget` heads it), and every total is a plain sum over the stages. The stages
run one after another, each on its own cluster (docs/campaign.md): the calendar time is the sum of their wall-clocks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from gpuplan.errors import InputError
from gpuplan.jobs.campaign.document import Campaign, CampaignStage, Prepare, in_stage, read_campaign
from gpuplan.report.model import Report

STAGE_KEYS = {
    "gpus": "gpus_rented",
    "mfu": "mfu",
    "wall_seconds_with_failures": "fail_wall_seconds",
    "interruptions": "fail_interruptions",
    "checkpoints": "ckpt_count",
    "gpu_hours": "cost_gpu_hours_on_demand",
    "cost_on_demand_usd": "cost_on_demand_usd",
    "spot_wall_seconds": "cost_spot_wall_seconds",
    "spot_gpu_hours": "cost_spot_gpu_hours",
    "cost_spot_usd": "cost_spot_usd",
    "budget_gpu_hours": "budget_gpu_hours",
    "budget_usd_on_demand": "budget_usd_on_demand",
    "budget_usd_spot": "budget_usd_spot",
}
"""A stage's figures (name here -> the key of its budget report's line, docs/budget.md): GPU-hours and costs are the
on-demand run's with failures and checkpoints (the Cost section), spot the spot run's, budgets with the contingency."""


@dataclass(frozen=True)
class StageAnswer:
    """One stage's budget: ``report`` is what `gpuplan budget` prints for the stage's fields."""

    stage: CampaignStage
    report: Report

    def figure(self, name: str) -> float:
        """The stage's figure ``name`` (a STAGE_KEYS name), in its budget line's unit (GPUs, fraction, s, GPU-hours,
        USD, interruptions, checkpoints)."""
        return self.report.value(STAGE_KEYS[name])

    def text(self, key: str) -> str:
        """The display text of the budget report's line ``key`` ('' where the report has none)."""
        try:
            return self.report.line(key).display
        except KeyError:
            return ""

    @property
    def model(self) -> str:
        """The model as the stage's report names it (a catalog id, a config's name, or the parameter count)."""
        line = next((ln for ln in self.report.inputs if ln.key in ("model", "params")), None)
        if line is None:
            return ""
        return line.value if isinstance(line.value, str) else line.display  # the id, not the entry's source text

    def to_dict(self) -> dict[str, Any]:
        """The stage in plain data: its name, position, fields as written (defaults included), each figure in its
        unit, and the whole budget report (`gpuplan budget --json`)."""
        inputs = self.stage.inputs
        return {"name": self.stage.name, "index": self.stage.index, "fields": dict(self.stage.raw),
                "model": self.model, "gpu": inputs.gpu, "tokens": inputs.tokens, "seq_len": inputs.seq_len,
                "layout": self.text("mem_layout")} | {name: self.figure(name) for name in STAGE_KEYS} \
            | {"budget": self.report.to_dict()}


@dataclass(frozen=True)
class CampaignTotals:
    """Sums over the stages, each of the stages' own figures (StageAnswer.figure)."""

    gpu_hours: float
    """GPU-hours of the on-demand runs with failures and checkpoints (GPU-hours)."""
    cost_on_demand_usd: float | None
    """On-demand cost (USD); None where a stage has no price (UNPRICED)."""
    spot_gpu_hours: float
    """GPU-hours of the spot runs, with their reclaims (GPU-hours)."""
    cost_spot_usd: float | None
    """Spot cost (USD); None where a stage has no price (UNPRICED)."""
    budget_gpu_hours: float
    """GPU-hours with each stage's named contingency (GPU-hours)."""
    budget_usd_on_demand: float | None
    """Budget on-demand, contingency included (USD); None where a stage has no price (UNPRICED)."""
    budget_usd_spot: float | None
    """Budget on spot, contingency included (USD); None where a stage has no price (UNPRICED)."""
    calendar_seconds: float
    """Calendar time, the stages one after another: the sum of their wall-clocks with failures (s)."""
    spot_calendar_seconds: float
    """The same on spot capacity (s)."""
    interruptions: float
    """Expected interruptions, all stages (count)."""
    checkpoints: float
    """Checkpoints written, all stages (count)."""

    @classmethod
    def of(cls, stages: tuple[StageAnswer, ...]) -> CampaignTotals:
        """The sums of ``stages``' figures."""
        names = {"calendar_seconds": "wall_seconds_with_failures", "spot_calendar_seconds": "spot_wall_seconds"}
        return cls(**{f.name: _sum([s.figure(names.get(f.name, f.name)) for s in stages]) for f in fields(cls)})

    def to_dict(self) -> dict[str, float | None]:  # money totals None where a stage has no price
        return asdict(self)


UNPRICED = "a stage's GPU has no published price (its budget says 'give --price'): no money total"
"""Why a money total is None: a stage's budget prints its costs as n/a where the price catalog has no price for its GPU
(jobs.budget: cost_on_demand_usd None); a sum of the priced stages alone would understate the campaign's cost."""


def _sum(figures: list[float | None]) -> float | None:
    """The total of the stages' ``figures``; None where one is None (a cost with no price: UNPRICED)."""
    return None if any(f is None for f in figures) else float(sum(figures))


@dataclass(frozen=True)
class CampaignAnswer:
    """A campaign's answer: each stage's budget, in order, and the totals."""

    title: str
    stages: tuple[StageAnswer, ...]
    totals: CampaignTotals
    where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Everything in plain data (`gpuplan campaign --json`): each stage with its whole budget report, the totals."""
        return {"kind": "campaign", "title": self.title, "sequential": True,
                "stages": [s.to_dict() for s in self.stages], "totals": self.totals.to_dict()}


def estimate_campaign(campaign: Campaign | Mapping[str, Any], where: str | None = None,
                      prepare: Prepare | None = None,
                      before_stage: Callable[[CampaignStage], None] | None = None) -> CampaignAnswer:
    """The campaign's answer: every stage checked first (read_campaign; ``where``, ``prepare`` as there), then each
    stage's `gpuplan budget` report, then the totals. A stage's refusal while it runs names the stage
    (``stages[1].gpus: ...``); nothing is answered unless every stage is. ``before_stage``: called before each stage
    runs (the web API stops there once its request has been answered for time)."""
    if not isinstance(campaign, Campaign):
        campaign = read_campaign(campaign, where, prepare)
    head = f"{campaign.where}: " if campaign.where else ""
    answers = []
    for stage in campaign.stages:
        if before_stage is not None:
            before_stage(stage)
        answers.append(StageAnswer(stage, stage_report(stage, head)))
    return CampaignAnswer(campaign.title, tuple(answers), CampaignTotals.of(tuple(answers)), campaign.where)


def stage_report(stage: CampaignStage, head: str = "") -> Report:
    """The stage's `gpuplan budget` report (estimate_budget headed by the cost lines); a refusal names the stage, and
    quotes the text written for its field (errors.as_typed), as `gpuplan budget` quotes a plan file's."""
    from gpuplan.errors import as_typed, printable
    from gpuplan.jobs.budget.estimate import estimate_budget, with_cost_headline

    label = f"{printable(head)}{stage.label}" if head else stage.label
    try:
        return with_cost_headline(estimate_budget(stage.inputs))
    except InputError as exc:
        raise in_stage(as_typed(exc, stage.raw), label, printable(head)) from None
    except ArithmeticError as exc:  # a value no check refused yet (web/service.run's rule): bad input, not a crash
        raise InputError(label, {k: v for k, v in stage.raw.items()}, f"no result for these values "
                         f"({type(exc).__name__}: {exc}); check for a zero degree or an extreme count") from None
