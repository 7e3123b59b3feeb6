"""A calibration whose factors make the answered layout impossible is refused, naming ``calibration`` (wave 19).

A calibration document's ratio factors are bounded at load to 0.1-10 (calibrate.model.FACTOR_RANGE: over 3x past any
measured / predicted of the project's data and published runs; a CPU stand-in's time factors 0.001-1000) and its fixed
memory overhead to +-1 TiB (MAX_OVERHEAD_BYTES). Applied to a layout, two results are impossible whatever the setup:

- a step that computes the model's FLOPs faster than the GPUs' dense peak of the compute dtype: MFU above 100%
  (time factors of 0.001 timed llama-3-8b on 8 H200s at 32,849% MFU, `train --mfu predicted`, exit 0; `plan` was
  refused naming --step-time, which nobody gave: jobs.budget.model._check_step_time's rule for a typed step);
- memory needed below the model states the GPU holds (weights, gradients, master weights and optimizer states, an
  exact count of the recipe's bytes: core.memory.training.MemoryBreakdown): a memory_overhead of -1e12 bytes
  answered `memory` with -858.09 GiB needed and 991 GiB of headroom on a 140 GiB part, 'fits: yes'.

The overhead is what a trial measured above the predicted allocated peak that does not scale with activations
(calibrate.fit._fit_memory); a negative one takes back bytes the model over-counted, never the states themselves.
Every door reaches these checks through the same jobs (train / budget: jobs.training.layout; plan: jobs.plan.
estimate; memory: jobs.memory.estimate), so the CLI, plan files, the web API and Python refuse alike.
"""

from __future__ import annotations

from gpuplan.core.units import format_bytes, format_percent_past
from gpuplan.errors import InputError

TIME_FACTORS = ("compute_time", "attention_time", "memory_time", "host_time", "comm_time")
"""The calibration's factors that scale a step's time (calibrate.apply.apply_to_step_settings, apply_to_cluster)."""

REFIT = "it was fitted on another setup: refit it from trials of this one (gpuplan calibrate), or leave --calibration out"


def _time_factors(cal) -> dict[str, float]:
    """The time factors of ``cal`` not at 1, as the refusal quotes them where the calibration was not typed as a path
    (a document in a plan file's mapping, a web body or a Python object: errors.as_typed quotes a typed path)."""
    return {name: float(f"{getattr(cal, name).value:.4g}") for name in TIME_FACTORS
            if getattr(cal, name).value != 1.0}


def check_calibrated_mfu(cal, mfu: float, layout: str, gpus: int, gpu, dtype: str) -> None:
    """InputError naming ``calibration`` where ``cal`` (a Calibration, or None: nothing to check) times ``layout``
    (its text) on ``gpus`` x ``gpu`` at an MFU (model FLOPs over the ``dtype`` dense peak, planner.search.
    Evaluator.rates) above 100%."""
    if cal is None or not mfu > 1.0:
        return
    raise InputError("calibration", _time_factors(cal), f"its time factors put {layout} on {gpus:,} x {gpu.name} at "
                     f"{format_percent_past(mfu)} MFU, faster than the {dtype} dense peak ({gpu.peak(dtype) / 1e12:,.0f} TFLOP/s a "
                     "GPU) computes the model's FLOPs; " + REFIT)


def model_states_bytes(memory) -> float:
    """Weights, gradients, master weights and optimizer states a GPU holds at its peak (a core.memory.training.
    MemoryBreakdown, bytes): the floor no measured or calibrated allocated peak of that layout can go below (also
    calibrate.fit's bound on a measured peak)."""
    return memory.weights + memory.grads + memory.master + memory.optimizer


def check_calibrated_memory(cal, memory, layout: str, gpu) -> None:
    """InputError naming ``calibration`` where ``cal``'s memory_overhead takes ``memory``'s allocated peak (a
    core.memory.training.MemoryBreakdown, calibrated) below the model states it holds on ``layout`` (its text) on
    ``gpu``; not on a part that runs XLA, whose fixed bytes count the overhead at 0 or more (core.memory.
    device_memory.Overheads.fixed_bytes)."""
    if cal is None or gpu.runs_xla:
        return
    states = model_states_bytes(memory)
    overhead = cal.memory_overhead.value
    if memory.allocated + overhead >= states:
        return
    raise InputError("calibration", {"memory_overhead": overhead},
                     f"its memory_overhead ({format_bytes(overhead)}) takes the allocated peak of {layout} to "
                     f"{format_bytes(memory.allocated + overhead)}, below the {format_bytes(states)} of model states "
                     f"(weights, gradients, master weights, optimizer states) a GPU holds at its peak ({memory.peak_phase}); "
                     + REFIT)


def check_calibrated_plan(cal, plan, dtype: str, gpu) -> None:
    """check_calibrated_mfu and check_calibrated_memory of a planner.plan.Plan."""
    if cal is None:
        return
    layout = plan.text()  # one text for both refusals
    check_calibrated_memory(cal, plan.memory, layout, gpu)
    check_calibrated_mfu(cal, plan.mfu, layout, plan.gpus, gpu, dtype)
