"""How long a training run takes: the FLOPs, the MFU (given, a range, predicted from the layout,
or solved) and the compute budget with its low / high ends, and the layout it stands on."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core import flops as F
from gpuplan.core.gpu_time import ComputeBudget, solve_compute_budget
from gpuplan.core.model import params_for_6nd
from gpuplan.core.units import SECONDS_PER_DAY
from gpuplan.errors import InputError
from gpuplan.jobs.training.schema import DEFAULT_DAYS, DEFAULT_MFU, TrainingInputs
from gpuplan.planner.plan import Plan
from gpuplan.schema.vocabulary import MAX_GPUS


@dataclass(frozen=True)
class Flops:
    """The FLOP counts of one run (FLOPs), and which one sets the time."""

    n_6nd: float
    six_nd: float
    exact: float
    used: float
    hardware_ratio: float


@dataclass(frozen=True)
class TimeEstimate:
    """The expected compute budget and, when known, the low / high ones (MFU band)."""

    expected: ComputeBudget
    fast: ComputeBudget | None
    """At the high end of the MFU band: fewer GPU-days."""
    slow: ComputeBudget | None
    band_source: str = ""
    mode: str = "article"
    """'article' (MFU given or default), 'predicted' (from the layout), 'solved' (MFU solved)."""


def count_flops(spec, inputs: TrainingInputs, recompute: str) -> Flops:
    n_6nd = params_for_6nd(spec)
    per_token = F.training_flops_per_token(spec, inputs.seq_len, inputs.attention_flops,  # type: ignore[arg-type]
                                           recompute, inputs.finetune, inputs.lora_rank)
    six_nd, exact = F.flops_6nd(n_6nd, inputs.tokens), per_token.model * inputs.tokens
    used = six_nd if inputs.flops_method == "6nd" and inputs.finetune == "full" else exact
    return Flops(n_6nd, six_nd, exact, used, per_token.hardware / per_token.model)


def predicted_mode(inputs: TrainingInputs) -> bool:
    """Time from the layout's modelled step (not from an MFU)?"""
    if inputs.gpus is not None and inputs.days is not None:
        return False  # both given: the MFU is solved
    return inputs.predict_mfu or (inputs.mfu is None and (inputs.calibration is not None or inputs.layout_given))


def _budgets(flops: float, peak: float, gpus, seconds, mfu: float, band: tuple[float, float] | None,
             source: str, mode: str) -> TimeEstimate:
    expected = solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=mfu)
    if band is None:
        return TimeEstimate(expected, None, None, "", mode)
    low, high = band
    return TimeEstimate(expected, solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=high),
                        solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=low), source, mode)


def estimate_time(inputs: TrainingInputs, spec, peak: float) -> tuple[TimeEstimate, Plan, TrainingInputs, Flops]:
    """The compute budget and the layout it stands on (inputs adjusted in predicted mode)."""
    from gpuplan.catalog import prediction_band
    from gpuplan.jobs.training.layout import layout_for_deadline, layout_for_gpus

    gpus, days = inputs.gpus, inputs.days
    if gpus is None and days is None:
        days = DEFAULT_DAYS  # the article: "to finish in 7 days"
    seconds = None if days is None else days * SECONDS_PER_DAY
    if predicted_mode(inputs):
        plan = layout_for_gpus(inputs, gpus) if gpus is not None else layout_for_deadline(inputs, days)
        inputs = inputs.replace(comm_allowance=0.0, flops_method="exact", attention_flops="full")
        flops = count_flops(spec, inputs, plan.recompute)
        error, source = prediction_band(inputs.dtype, moe=spec.moe is not None)
        band = (plan.mfu / (1 + error), min(1.0, plan.mfu / max(1e-9, 1 - error)))
        return (_budgets(flops.used, peak, plan.gpus, None, plan.mfu, band, source, "predicted"), plan, inputs, flops)
    if gpus is not None and days is not None:
        flops = count_flops(spec, inputs, inputs.recompute_mode)
        estimate = TimeEstimate(solve_compute_budget(flops.used, peak, gpus=gpus, wall_seconds=seconds), None, None,
                                mode="solved")
        return estimate, layout_for_gpus(inputs, gpus), inputs, flops
    mfu = inputs.mfu_value or DEFAULT_MFU
    flops = count_flops(spec, inputs, inputs.recompute_mode)
    estimate = _budgets(flops.used, peak, gpus, None if gpus is not None else seconds, mfu, inputs.mfu_band,
                        "--mfu range", "article")
    needed = estimate.expected.gpus_whole
    if needed > MAX_GPUS:
        raise InputError("days", days, f"the budget needs {needed:,} GPUs at {mfu:.0%} MFU, more than the "
                         f"{MAX_GPUS:,} the planner lays out; give more days, fewer tokens or --gpus")
    return estimate, layout_for_gpus(inputs, needed), inputs, flops
