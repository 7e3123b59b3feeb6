"""The refusal of GPUs and days that need an MFU no GPU delivers (jobs.training.timing's solved MFU): above the
dense peak or above the best published MFU of the GPU's class, naming the GPUs or days that would do. Moved out of
jobs.training.timing (its size limit, tests/test_architecture.py), which imports check_solved_mfu."""

from __future__ import annotations

import math
from collections.abc import Callable

from gpuplan.core.economics.gpu_time import ComputeBudget
from gpuplan.core.units import SECONDS_PER_DAY, duration_up, format_duration
from gpuplan.errors import InputError
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.schema.types import MAX_DAYS  # schema.types.days' bound
from gpuplan.schema.vocabulary import MAX_GPUS


def check_solved_mfu(solved: ComputeBudget, flops, inputs: TrainingInputs, spec, gpu,
                     deadline: float | None = None, gpus_within: Callable[[float], int] | None = None) -> None:
    """Refuse GPUs and days that need an MFU no GPU delivers: above 100% (faster than the dense
    peak), an HFU above 100% (the recompute's hardware FLOPs past the peak) or above the best MFU
    published for the GPU's class, model kind and precision
    (jobs/validation/mfu_ceiling.py; compared on gpuplan's MFU definition, exact model FLOPs).
    The message names the GPUs for those days (``gpus_within(ceiling)``, each count solved with its
    own layout and failures; else in proportion) and the days on those GPUs at that ceiling. ``flops``:
    jobs.training.timing.Flops (not imported: timing imports this module)."""
    exact_mfu = solved.mfu * flops.exact / flops.used  # the published ceilings count exact FLOPs
    limit, why = 1.0, lambda digits: "100%, the dense peak"
    if gpu is not None:
        from gpuplan.core.time.step import precision_class
        from gpuplan.jobs.validation.mfu_ceiling import ceiling, hardware_class

        dtype = precision_class(inputs.dtype)
        best = ceiling(gpu.id, spec.moe is not None, dtype)
        if best is not None and best.mfu < 1.0:
            kind = "MoE" if spec.moe is not None else "dense"
            limit, why = best.mfu, lambda digits: (f"{best.mfu:.{digits}%}, the best published {kind} {dtype} MFU on "
                                                   f"{hardware_class(gpu.id)} ({best.run}; {best.source.split(', http')[0]})")
    hfu_bound = flops.exact / flops.used / flops.hardware_ratio  # HFU = MFU x hardware / model FLOPs <= 1, the bound
    if hfu_bound < limit:  # timing._check_hfu puts on a given MFU (A8 w14: 5,672 V100s in 109.9 days, --recompute full,
        limit, why = hfu_bound, lambda digits: (f"{hfu_bound:.{digits}%}: with --recompute {inputs.recompute_mode} "
                                                f"the GPUs run {flops.hardware_ratio:.3g}x the model's FLOPs, an HFU "
                                                "above 100%, the dense peak")  # HFU 106%)
    if exact_mfu <= limit:
        return
    at = limit * flops.used / flops.exact  # the ceiling on the basis of the FLOPs used for time
    gpus_needed = gpus_within(limit) if gpus_within else math.ceil(solved.gpus * solved.mfu / at - 1e-9)
    deadline = deadline or solved.wall_seconds
    seconds_needed = deadline * solved.mfu / at  # rounded up where printed (needed_words): typed back, it answers
    given = inputs.gpus or solved.gpus  # the count given (the solve is on those its layout computes on)
    digits = _digits_apart(exact_mfu, limit)
    raise InputError("gpus/days", f"{given:,.0f} GPUs in {format_duration(deadline)}",
                     f"needs MFU {exact_mfu:.{digits}%}" + ("" if flops.used == flops.exact else
                                                     f" of the exact FLOPs ({solved.mfu:.1%} of {inputs.flops_method.upper()})")
                     + f", above {why(digits)}; at that MFU " + needed_words(gpus_needed, deadline, seconds_needed, given)
                     + "; or give --mfu and one of --gpus / --days")


def needed_words(gpus: int, deadline: float, seconds: float, given: float) -> str:
    """What the MFU refusal offers: the GPUs for the deadline and the time on the GPUs given, each as a value
    to type only where the schema takes it (--gpus up to MAX_GPUS, --days up to MAX_DAYS); past those, that no
    value does (a count past MAX_GPUS is not solved, gpus_within stops there). Wave 9: `train llama-3.1-8b
    --gpu h100 --gpus 8 --days 30min` suggested --gpus 477977354, which --gpus refuses."""
    when, on = format_duration(deadline), f"{given:,.0f} GPUs"
    count = (f"the run needs {gpus:,} GPUs for {when} (--gpus {gpus})" if gpus <= MAX_GPUS else
             f"no GPU count up to {MAX_GPUS:,} (the most --gpus takes) runs it in {when}")
    days = seconds / SECONDS_PER_DAY
    longer = (f"{format_duration(duration_up(seconds))} on {on}" if days <= MAX_DAYS else
              f"on {on} it would take {days:,.0f} days, more than the {MAX_DAYS:,} --days takes")
    return f"{count}, or {longer}"


def _digits_apart(needed: float, limit: float) -> int:
    """Decimals of a percent that tell the MFU needed from the limit it is above ('needs MFU 81.42% ... above
    81.40%', not '81.4% ... above 81.4%', review w14 R2 M3): 1, more while the two print alike (at most 4)."""
    digits = 1
    while digits < 4 and f"{needed:.{digits}%}" == f"{limit:.{digits}%}":
        digits += 1
    return digits

