"""Training compute and time estimate: the Python API behind ``gpuplan train``.

``estimate_training(TrainingInputs(...))`` returns the Report the CLI renders. It stands on one
layout (jobs/training/layout.py): the planner's best for the GPUs, or the user's degrees.

* Article mode (an MFU given, or the default 0.40): time = FLOPs / (GPUs x peak x MFU); the
  layout supplies the memory verdict. ``--mfu 30-50%`` gives low / expected / high.
* Predicted mode (``--mfu predicted``, a calibration, or a layout given without an MFU): the
  layout's modelled step time sets MFU and time (communication included, exact FLOPs); the
  validation band of the step model gives low / high.
* GPUs and days both given: the MFU the plan needs is solved.
"""

from __future__ import annotations

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.units import format_count
from gpuplan.jobs.plan.shard_group_told import training_shard_group_line
from gpuplan.jobs.training import sections as S
from gpuplan.jobs.training.batch_ramp import ramp_input
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.jobs.training.timing import AfterAllowances, estimate_time
from gpuplan.report.model import Line, Report
from gpuplan.schema.base import job_inputs
from gpuplan.schema.precision_rules import dtype_text
from gpuplan.schema.tpu_rules import in_device_words


def estimate_training(inputs: TrainingInputs) -> Report:
    """Compute, GPU-time, allowance and memory lines for one training run."""
    return training_report(job_inputs(inputs, TrainingInputs))[0]


def training_report(inputs: TrainingInputs, after_allowances: AfterAllowances | None = None, spec=None):
    """(the Report, the Plan it stands on, the inputs as used) — the budget builds on all three.
    ``after_allowances``: the budget's failures and checkpoints, which a deadline must also absorb;
    ``spec``: the model, when the caller has resolved it already (``inputs.spec()``)."""
    spec = spec if spec is not None else inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    peak = gpu.peak(inputs.dtype)
    asked = inputs
    time, plan, inputs, flops = estimate_time(inputs, spec, peak, gpu, after_allowances, S.comm_range(inputs)[1])
    counts = count_parameters(spec)
    told = training_shard_group_line(inputs, plan, time.deadline_search)  # --shard-group auto: plan's line
    sections = (S.compute_section(counts, flops, inputs), S.time_section(gpu, peak, time, flops, inputs, plan),
                S.allowance_section(time, inputs), S.layout_section(plan, inputs, told))
    model_label = spec.name + (f" ({spec.source})" if spec.source and spec.declared_params is None else "")
    report_inputs = (
        Line("model", "model", spec.name, text=model_label),
        Line("tokens", "training tokens", inputs.tokens, "tokens", format_count(inputs.tokens)),
        Line("gpu", "accelerator", gpu.id, text=f"{gpu.name} ({gpu.id})"),
        Line("dtype", "compute dtype", inputs.dtype, text=dtype_text(inputs)),  # '(--recipe fp8's)' where it set it
        Line("finetune", "training", inputs.finetune if inputs.finetune == "full" else
             f"{inputs.finetune} (rank {inputs.lora_rank}, frozen base)"),
    ) + ramp_input(inputs)
    report = Report("train", f"Training estimate: {spec.name} on {format_count(inputs.tokens)} tokens, {gpu.name}",
                    report_inputs, S.assumptions(inputs, gpu, peak, time, spec.mtp_layers, asked,
                                                 getattr(plan, "layout", None)), sections,
                    ((time.deadline_note,) if time.deadline_note else ()) + S.notes(spec, counts, flops, inputs, plan, asked, time),
                    headline=TRAINING_HEADLINE,
                    key_assumptions=("mfu", "comm_allowance", "peak"))
    from gpuplan.jobs.calibration_notice import with_calibration_warning

    from gpuplan.jobs.step_classes import with_step_classes

    report = with_calibration_warning(report, inputs, gpu.id, getattr(plan, "layout", None))
    report = with_step_classes(report, inputs, plan) if plan is not None else report
    return in_device_words(report, gpu), plan, inputs  # a TPU's answer in chips (schema.tpu_rules.device_noun)


TRAINING_HEADLINE = ("flops_used", "gpu_days", "gpus", "gpus_compute_only", "deadline_met", "wall_days", "mfu", "batch_ramp",
                     "mem_layout", "shard_group_auto", "mem_peak_total", "mem_fits", "wall_days_with_comm",
                     "gpu_hours_with_comm", "gpu_hours_budget")
