"""GPU count x wall-clock time x MFU: given any two, solve the third.

    GPU-seconds = total FLOPs / (dense peak FLOP/s x MFU)
    wall-clock  = GPU-seconds / GPUs
(the article's formula: GPUs = total compute / (peak x utilisation x time)). Allowances for
communication and contingency are separate, named multipliers on top (the article: add 10-30%
for communication at scale, then a 20% contingency budget). Units: FLOPs, FLOP/s, seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.core.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from gpuplan.errors import InputError


@dataclass(frozen=True)
class ComputeBudget:
    """A consistent (GPUs, wall-clock, MFU) triple for ``total_flops`` of work."""

    total_flops: float
    peak_flops: float
    """Dense peak FLOP/s of one GPU."""
    mfu: float
    gpus: float
    """GPU count; fractional when solved from a deadline (see ``gpus_whole``)."""
    wall_seconds: float
    solved_for: str

    @property
    def flops_per_gpu_day(self) -> float:
        return self.peak_flops * self.mfu * SECONDS_PER_DAY

    @property
    def gpu_seconds(self) -> float:
        return self.total_flops / (self.peak_flops * self.mfu)

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / SECONDS_PER_HOUR

    @property
    def gpu_days(self) -> float:
        return self.gpu_seconds / SECONDS_PER_DAY

    @property
    def gpus_whole(self) -> int:
        """GPUs to rent: the solved count rounded up (tolerating float noise)."""
        return max(1, math.ceil(self.gpus - 1e-9))


def solve_compute_budget(total_flops: float, peak_flops: float, *, gpus: float | None = None,
                         wall_seconds: float | None = None, mfu: float | None = None) -> ComputeBudget:
    """Solve the missing one of (gpus, wall_seconds, mfu); exactly two must be given."""
    given = {k for k, v in (("gpus", gpus), ("days", wall_seconds), ("mfu", mfu)) if v is not None}
    if len(given) != 2:
        raise InputError("gpus/days/mfu", ", ".join(sorted(given)) or "none",
                         "give exactly two of --gpus, --days and --mfu; the third is solved")
    if mfu is None:
        assert gpus is not None and wall_seconds is not None
        needed = total_flops / (peak_flops * gpus * wall_seconds)
        return ComputeBudget(total_flops, peak_flops, needed, gpus, wall_seconds, "mfu")
    if gpus is None:
        assert wall_seconds is not None
        solved = total_flops / (peak_flops * mfu * wall_seconds)
        return ComputeBudget(total_flops, peak_flops, mfu, solved, wall_seconds, "gpus")
    assert wall_seconds is None
    seconds = total_flops / (peak_flops * mfu * gpus)
    return ComputeBudget(total_flops, peak_flops, mfu, gpus, seconds, "days")


def with_allowance(value: float, fraction: float) -> float:
    """``value`` grown by an allowance: value x (1 + fraction)."""
    return value * (1.0 + fraction)


def comm_share_of_time(allowance: float) -> float:
    """The article's ratio comm / (compute + comm) for a comm allowance of ``allowance`` x compute."""
    return allowance / (1.0 + allowance)
