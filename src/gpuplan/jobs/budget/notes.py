"""The budget's notes: what its numbers assume that a user should know, and the runs they do not fit."""

from __future__ import annotations

from gpuplan.core.units import format_duration
from gpuplan.jobs.budget.model import BudgetSettings, Prices, RunFacts, Scenario


def budget_notes(run: RunFacts, s: BudgetSettings, sc: Scenario, p: Prices) -> tuple[str, ...]:
    """The notes under a budget (``sc``: the run's own GPU count's scenario, ``p``: its prices), most urgent first."""
    notes = []
    if sc.on_demand.goodput < LOW_GOODPUT:  # hostile wave 22, H's item 5: 0.0% and 2.6e9 days with no word said
        notes.append(f"goodput {sc.on_demand.goodput:.1%}: this run spends most of its wall-clock recovering from "
                     f"failures (one every {format_duration(sc.on_demand.mtbi)}); fewer GPUs, a lower --failure-rate, "
                     "a shorter --restart or a faster --storage-write (async checkpoints) would let it train")
    elif sc.spot.goodput < LOW_GOODPUT:  # review s20b S4: spot at 0.0% and $2.0 trillion with no word said
        notes.append(f"spot goodput {sc.spot.goodput:.1%}: on spot capacity this run spends most of its wall-clock "
                     f"recovering from reclaims and failures (one every {format_duration(sc.spot.mtbi)}); its spot "
                     "lines are not a plan: run on demand, or give a lower --spot-preemption")
    if (s.checkpoint_storage or s.storage) == "local_nvme":
        notes.append("checkpoints on node-local NVMe are lost with their node; copy them to shared storage")
    if s.async_checkpoint and sc.on_demand.interval <= sc.write_seconds * 1.001:
        notes.append("async checkpoints: the interval is held at the background write time (a save must finish "
                     "before the next starts)")
    given = s.checkpoint_interval
    if given is not None and sc.on_demand.interval > given * 1.001:
        notes.append(f"--checkpoint-interval {format_duration(given)} is shorter than a step (or an async save's "
                     f"write): held at {format_duration(sc.on_demand.interval)}")
    if p.on_demand is None:
        notes.append(f"no published price for {run.gpu.id}; give --price (USD per GPU-hour)")
    notes.append("spot: capacity for a large synchronous job is rarely available at once, and a reclaimed node "
                 "must be replaced before the job resumes; the spot lines assume it is")
    notes.append("failure model: Poisson interruptions, each restarting the whole job (Daly 2006); the Llama 3 "
                 "census counts every unexpected interruption, hardware and software")
    return tuple(notes)


LOW_GOODPUT = 0.5
"""Goodput below which the budget says the run mostly recovers from failures: Llama 3 405B kept > 90% effective
training time on 16,384 H100 (arXiv:2407.21783 Sec. 3.3.4); under half is far outside any published run."""

