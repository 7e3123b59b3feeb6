"""Money: GPU-hours to dollars, on-demand vs spot, and the contingency budget as named lines.

    billed GPU-hours = GPUs x expected wall-clock (failures included: a stopped job still holds
                       its GPUs while it restarts and redoes lost work)
    cost             = billed GPU-hours x USD per GPU-hour
    spot price       = on-demand x (1 - spot discount)
    spot interruptions/hour = nodes x preemptions per node-month / 730 h per month

The article's contingency ("add a 20% contingency budget for restarts, tuning and hardware
failures") is split into named shares of the compute GPU-hours; the failures share is, by
default, replaced by the failure model's own estimate (see gpuplan.core.economics.reliability).
Units: GPU-hours, USD, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0
HOURS_PER_MONTH = 8760.0 / 12.0

# The article: "add a 20% contingency budget for restarts, tuning and hardware failures". It gives
# no split; gpuplan splits it evenly over four named lines (evaluation added by issue #5).
ARTICLE_CONTINGENCY = 0.20
DEFAULT_CONTINGENCY_SHARES = (("restarts", 0.05), ("tuning", 0.05), ("failures", 0.05), ("evaluation", 0.05))
# AWS Spot Instance Advisor 'frequency of interruption' (share of instances interrupted over the
# trailing month): p5 (H100) 10-20% (2025-05-01), 15-20% (2026-02-24); p4d (A100) 5-10%
# (thundercompute.com blog, both dates). Read as preemptions per node-month.
DEFAULT_SPOT_PREEMPTIONS_PER_NODE_MONTH = 0.15
# The article: spot capacity "can cost 60%+ less"; used only when the price catalog has no
# published spot/on-demand pair at all.
ARTICLE_SPOT_DISCOUNT = 0.60

MAX_SPOT_DISCOUNT = 0.999
"""The most a spot discount may be (--spot-discount's bound; a --spot-price below (1 - this) x on-demand is refused
alike, wave 11: '--spot-price 1e-300' printed a $0 spot budget and a 100.0% saving). A bound on input, not a fit."""


MIN_USD_PER_GPU_HOUR = 1e-4
"""The least --price or --spot-price taken, USD per GPU-hour: --spot-price's rule (at least 0.1% of on-demand, a
discount of at most MAX_SPOT_DISCOUNT) applied to the cheapest on-demand row in the price catalog, Akash's RTX 3090
at $0.16 (catalog/prices/akash.toml) -> $0.00016, rounded down to one digit. Wave 12: '--price 1e-300' priced a
$0 budget. A bound on input, not a fit; tests/test_hostile_w12.py fails when a cheaper row would cross it."""


def billed_gpu_hours(gpus: float, wall_seconds: float) -> float:
    """GPU-hours paid for: every GPU for the whole (failure-inclusive) wall-clock."""
    return gpus * wall_seconds / SECONDS_PER_HOUR


def cost_usd(gpu_hours: float, usd_per_gpu_hour: float) -> float:
    return gpu_hours * usd_per_gpu_hour


def spot_price(on_demand_usd: float, discount: float) -> float:
    """USD per GPU-hour on spot: on-demand x (1 - discount)."""
    return on_demand_usd * (1.0 - discount)


def spot_interruptions_per_hour(nodes: float, preemptions_per_node_month: float) -> float:
    """Job interruptions per hour from spot reclaims: any reclaimed node stops a synchronous job."""
    return nodes * preemptions_per_node_month / HOURS_PER_MONTH


@dataclass(frozen=True)
class ContingencyLine:
    name: str
    gpu_hours: float
    share: float
    """Fraction of the compute GPU-hours."""
    modelled: bool = False
    """True when the value comes from the failure model, not a flat share."""


def contingency_lines(compute_gpu_hours: float, shares: tuple[tuple[str, float | None], ...],
                      modelled_failure_gpu_hours: float) -> tuple[ContingencyLine, ...]:
    """One line per named share; a share of None is taken from the failure model instead."""
    lines = []
    for name, share in shares:
        if share is None:
            lines.append(ContingencyLine(name, modelled_failure_gpu_hours,
                                         modelled_failure_gpu_hours / compute_gpu_hours, modelled=True))
        else:
            lines.append(ContingencyLine(name, compute_gpu_hours * share, share))
    return tuple(lines)


def contingency_total(lines: tuple[ContingencyLine, ...]) -> float:
    return sum(line.gpu_hours for line in lines)


EXPECTED_FLOOR = "expected_floor"
"""The name of the line that lifts a contingency below the failure model's expected GPU-hours up to them."""


def with_expected_floor(lines: tuple[ContingencyLine, ...], compute_gpu_hours: float,
                        modelled_failure_gpu_hours: float) -> tuple[ContingencyLine, ...]:
    """``lines`` and, where their total is below the failure model's expected overrun (expected - failure-free
    GPU-hours: a bare --contingency 0, or named shares with --contingency-failures a share below it), a line of the
    shortfall: a budget is never below the expected cost of the run it budgets (session 25: `budget --contingency 0`
    priced the failure-free hours, $161,920 against an expected $162,486)."""
    short = modelled_failure_gpu_hours - contingency_total(lines)
    if short <= 0:
        return lines
    return (*lines, ContingencyLine(EXPECTED_FLOOR, short, short / compute_gpu_hours, modelled=True))
