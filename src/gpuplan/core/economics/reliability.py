"""Failures: how often a synchronous job is interrupted, how often to checkpoint, what it costs.

A synchronous data/tensor/pipeline-parallel job stops when any one of its GPUs (or their hosts,
links, switches) fails - "a single GPU failure may require a restart of the entire job"
(Llama 3 paper, arXiv:2407.21783, Sec. 3.3.4). With independent failures at ``rate`` per
GPU-hour, interruptions arrive as a Poisson process:

    mean time between interruptions  M = 1 / (GPUs x rate)
    optimal checkpoint interval      tau = sqrt(2 delta M)                    (Young 1974)
                                     tau = sqrt(2 delta M)[1 + (1/3)sqrt(delta/2M)
                                           + (1/9)(delta/2M)] - delta         (Daly 2006)
    expected wall-clock              T_w = M e^(R/M) (e^((tau+delta)/M) - 1) T_s / tau  (Daly 2006)
    goodput                          T_s / T_w

with delta the GPU stall per checkpoint, R the restart time, T_s the failure-free compute time.
Units: seconds; rates per GPU-hour. mtbi_seconds, young_interval and expected_interruptions also
accept numpy arrays (the planner's vectorised search); the rest take floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.errors import InputError

SECONDS_PER_HOUR = 3600.0

# Llama 3 405B pre-training census (arXiv:2407.21783 Sec. 3.3.4, Table 5): 419 unexpected
# interruptions (of 466; 47 planned) in a 54-day snapshot on up to 16,384 H100 GPUs.
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384


def failure_rate_from_census(interruptions: float, gpus: float, hours: float) -> float:
    """Interruptions per GPU-hour observed in a census: count / (GPUs x hours)."""
    return interruptions / (gpus * hours)


# 419 / (16,384 x 54 x 24) = 1.973e-5 per GPU-hour -> 3.09 h between interruptions at 16K GPUs.
DEFAULT_FAILURE_RATE = failure_rate_from_census(LLAMA3_UNEXPECTED_INTERRUPTIONS, LLAMA3_GPUS, LLAMA3_DAYS * 24)
# Range: Meta's research clusters (Kokolis et al. 2024, arXiv:2410.21680): RSC-2 2.34 and RSC-1
# 6.50 failures per 1000 node-days of 8 A100s -> 2.34e-3 / (8 x 24) .. 6.50e-3 / (8 x 24).
FAILURE_RATE_RANGE = (2.34e-3 / (8 * 24), 6.50e-3 / (8 * 24))
# The least --failure-rate taken (per GPU-hour): ~12,000x below RSC-2's 1.22e-5 above, the lowest census here. Below
# it no census is read, and the optimal interval sqrt(2 x cost x MTBI) ran to 1e146 days at 1e-300 (wave 22)
MIN_FAILURE_RATE = 1e-9
# Restart: detect, reschedule, reload the checkpoint, warm up. MegaScale (arXiv:2402.15627):
# training catches up to the pre-crash progress "within 15 minutes from the latest checkpoints".
DEFAULT_RESTART_SECONDS = 15 * 60.0


def failure_rate_range(rate: float = DEFAULT_FAILURE_RATE) -> tuple[float, float]:
    """Low and high failure rate around ``rate`` (per GPU-hour): FAILURE_RATE_RANGE scaled by
    rate / DEFAULT_FAILURE_RATE, i.e. the census range's relative spread (RSC-2 0.62x, RSC-1 1.72x the
    Llama 3 rate) carried to a stated rate; the default rate gives FAILURE_RATE_RANGE exactly. A stated
    rate is one fleet's count over one period, as each census is, and two clusters of one operator
    differ 2.8x (Kokolis et al. 2024, arXiv:2410.21680, RSC-1 vs RSC-2), so the range keeps that spread
    rather than collapsing to the rate; the point always lies inside it (0.62 < 1 < 1.72)."""
    scale = rate / DEFAULT_FAILURE_RATE
    return FAILURE_RATE_RANGE[0] * scale, FAILURE_RATE_RANGE[1] * scale


def mtbi_seconds(gpus: float, rate_per_gpu_hour: float, extra_per_hour: float = 0.0) -> float:
    """Mean time between job interruptions: 1 / (GPUs x rate + other interruptions per hour)."""
    return SECONDS_PER_HOUR / (gpus * rate_per_gpu_hour + extra_per_hour)


def expected_interruptions(wall_seconds: float, mtbi: float) -> float:
    """Interruptions expected during ``wall_seconds`` of running."""
    return wall_seconds / mtbi


def young_interval(checkpoint_cost: float, mtbi: float) -> float:
    """Young 1974 ('A first order approximation to the optimum checkpoint interval', CACM 17(9)):
    sqrt(2 x checkpoint cost x MTBF)."""
    return (2.0 * checkpoint_cost * mtbi) ** 0.5


def daly_interval(checkpoint_cost: float, mtbi: float) -> float:
    """Daly 2006 ('A higher order estimate of the optimum checkpoint interval for restart dumps',
    FGCS 22(3)) for delta < 2M; tau = M when the checkpoint costs more than twice the MTBF."""
    if checkpoint_cost >= 2.0 * mtbi:
        return mtbi
    x = checkpoint_cost / (2.0 * mtbi)
    return young_interval(checkpoint_cost, mtbi) * (1.0 + x ** 0.5 / 3.0 + x / 9.0) - checkpoint_cost


# exp(50) ~ 5e21: beyond this the expected wall-clock is astronomically long anyway
MAX_FAILURE_EXPONENT = 50.0


def expected_wall_seconds(work_seconds: float, interval: float, checkpoint_cost: float, restart: float,
                          mtbi: float) -> float:
    """Daly 2006's expected wall-clock for ``work_seconds`` of failure-free compute split into
    segments of ``interval`` each followed by a checkpoint costing ``checkpoint_cost``, with
    exponential failures (mean ``mtbi``) that may strike anywhere, each costing ``restart`` plus
    the work since the last checkpoint. Raises InputError when failures come so often that no
    progress is possible (the exponentials overflow: hundreds of restarts per checkpoint period)."""
    exponent = max(restart, interval + checkpoint_cost) / mtbi
    if exponent > MAX_FAILURE_EXPONENT:
        raise InputError("gpus/failure_rate", f"MTBI {mtbi:.3g} s",
                         "failures come faster than a checkpoint period plus a restart; no run completes "
                         "(fewer GPUs, a lower --failure-rate or a shorter restart)")
    return mtbi * math.exp(restart / mtbi) * math.expm1((interval + checkpoint_cost) / mtbi) * work_seconds / interval


def lost_work_per_failure(interval: float, checkpoint_cost: float) -> float:
    """Mean work redone after a failure: half a checkpoint period (first order)."""
    return (interval + checkpoint_cost) / 2.0


@dataclass(frozen=True)
class FailurePlan:
    """Failures, checkpointing and goodput for one run."""

    work_seconds: float
    """Failure-free wall-clock."""
    mtbi: float
    checkpoint_cost: float
    """GPU stall per checkpoint (s)."""
    restart: float
    """Per interruption: restart time plus any extra rework (e.g. an async write in flight)."""
    interval: float
    """Compute seconds between checkpoints."""
    optimal: bool

    @property
    def wall_seconds(self) -> float:
        return expected_wall_seconds(self.work_seconds, self.interval, self.checkpoint_cost, self.restart, self.mtbi)

    @property
    def goodput(self) -> float:
        """Useful training time / elapsed time (Llama 3's 'effective training time')."""
        return self.work_seconds / self.wall_seconds

    @property
    def interruptions(self) -> float:
        return expected_interruptions(self.wall_seconds, self.mtbi)

    @property
    def checkpoints(self) -> float:
        return self.work_seconds / self.interval

    @property
    def checkpoint_overhead(self) -> float:
        """Stall fraction of compute time: delta / tau."""
        return self.checkpoint_cost / self.interval

    @property
    def lost_work(self) -> float:
        return lost_work_per_failure(self.interval, self.checkpoint_cost)


def plan_failures(work_seconds: float, gpus: float, rate_per_gpu_hour: float, checkpoint_cost: float,
                  restart: float, interval: float | None = None, min_interval: float = 0.0,
                  extra_interruptions_per_hour: float = 0.0) -> FailurePlan:
    """The failure plan; ``interval`` None = Daly's optimum, never below ``min_interval`` (one
    step, or the background write time of an asynchronous save)."""
    mtbi = mtbi_seconds(gpus, rate_per_gpu_hour, extra_interruptions_per_hour)
    optimal = interval is None
    chosen = daly_interval(checkpoint_cost, mtbi) if interval is None else interval
    return FailurePlan(work_seconds=work_seconds, mtbi=mtbi, checkpoint_cost=checkpoint_cost, restart=restart,
                       interval=max(chosen, min_interval, 1e-9), optimal=optimal)
