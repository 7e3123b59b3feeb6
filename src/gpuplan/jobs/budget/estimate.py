"""`gpuplan budget` / `gpuplan train`: the training estimate's compute and time, then the budget
sections on the GPUs it rents."""

from __future__ import annotations

import math

from gpuplan.errors import InputError
from gpuplan.jobs.budget.compute import compute_budget
from gpuplan.jobs.budget.evaluation import step_forward_share
from gpuplan.jobs.budget.schema import BudgetInputs
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.report.model import Line, Report, Section
from gpuplan.schema.base import job_inputs
from gpuplan.schema.tpu_rules import in_device_words


def estimate_budget(inputs: TrainingInputs) -> Report:
    """`gpuplan train` / `gpuplan budget`: the training estimate's compute and time lines, then
    the five budget sections on the GPUs it rents and its wall-clock with the communication
    allowance. ``inputs``: BudgetInputs (a plain TrainingInputs takes the budget defaults)."""
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.jobs.training.estimate import training_report

    if isinstance(inputs, TrainingInputs) and not isinstance(inputs, BudgetInputs):
        inputs = BudgetInputs(**inputs.given_values())
    inputs = job_inputs(inputs, BudgetInputs)  # a mapping checked; anything else refused
    spec, gpu = inputs.spec(), resolve_gpu(inputs.gpu)
    train, plan, used = training_report(inputs, failures_for_deadline(inputs, spec, gpu), spec)
    gpus = max(1, math.ceil(train.value("gpus") - 1e-9))
    days = train.line("wall_days_with_comm")
    wall = days.value * 86400 * train.value("gpus") / gpus
    ends = None if days.low is None or days.high is None else (days.low * wall / days.value, days.high * wall / days.value)
    try:
        result = _budget(spec, gpu, inputs, train, plan, used, gpus, wall, ends)
    except InputError as refusal:  # a count the user never gave is not what the refusal names (hostile wave 22)
        from gpuplan.jobs.plan.completes import solved_count_refusal

        raise solved_count_refusal(refusal, inputs, gpus) from None
    keep = {"Compute", "GPU time"}
    time_sections = tuple(sec for sec in train.sections if sec.title in keep)
    memory = tuple(sec for sec in train.sections if sec.title.startswith(("Layout and memory", "One step by op class",
                                                                           "Calibration warning")))
    comm = next((sec for sec in train.sections if sec.title.startswith("Allowances")), None)
    if comm is not None:  # the bare contingency multiplier is replaced by the named contingency lines
        time_sections += (Section("Communication allowance", tuple(
            line for line in comm.lines if line.key != "gpu_hours_budget")),)
    inputs_lines = train.inputs + (Line("gpus_rented", "GPUs rented", gpus, "GPUs", f"{gpus:,}"),)
    assumptions = tuple(a for a in train.assumptions if a.key != "contingency") + result.assumptions
    title = f"Training budget: {spec.name} on {train.line('tokens').text} tokens, {gpus:,} x {gpu.name}"
    from gpuplan.jobs.calibration_notice import calibration_first

    return in_device_words(calibration_first(Report(
        "budget", title, inputs_lines, assumptions, time_sections + memory + result.sections, train.notes + result.notes,
        result.tables, headline=TRAIN_HEADLINE, key_assumptions=("mfu", "comm_allowance", "budget_price"))), gpu)


def _budget(spec, gpu, inputs, train, plan, used, gpus: int, wall: float, ends):
    """compute_budget for the training estimate's run (``train``, ``plan``, ``used``: training_report's) on ``gpus``
    at the failure-free ``wall`` (s) and its band ``ends``."""
    return compute_budget(spec, inputs.node_accelerator(gpu), gpus=gpus, wall_seconds=wall, wall_range=ends,
                          gpu_hours=train.value("gpu_hours_with_comm"),
                          tokens=inputs.tokens, global_batch_tokens=float(plan.global_batch * inputs.seq_len),
                          step_seconds=inputs.step_time, recipe=inputs.recipe_name, zero=plan.layout.zero,
                          model_parallel=plan.layout.tp * plan.layout.pp,
                          settings=used.budget_settings(plan.layout),  # its group: MiCS writers under auto
                          batch_asked=inputs.global_batch is not None or inputs.global_batch_tokens is not None,
                          granule=plan.layout.dp * plan.layout.micro_batch * inputs.seq_len,
                          forward_share=step_forward_share(spec, inputs, _recompute(plan, inputs)),
                          eval_step_seconds=_steady_step(plan, inputs))


def failures_for_deadline(inputs: BudgetInputs, spec, gpu):
    """The budget's further allowances for a deadline (jobs/training/timing.py AfterAllowances):
    (GPUs, layout, failure-free wall-clock) -> the expected wall-clock with failures and checkpoints
    that the Failures section prints for that run."""
    from gpuplan.jobs.budget.compute import wall_with_failures

    settings = inputs.budget_settings()
    node = inputs.node_accelerator(gpu)  # --gpus-per-node: the nodes the Failures section counts (compute_budget's
    # gpu): with the catalog's 8 a node, 25,216 B200s at 72 a node wrote checkpoints over 3,152 nodes, not 351, and
    # the deadline was solved met at 8.93 h while the section printed 9.03 h past the 9.01 h asked (A9 w14)

    def after(gpus: int, plan, work_seconds: float) -> float:
        used = inputs.budget_settings(plan.layout) if getattr(plan.layout, "shard_group", None) else settings  # MiCS
        return wall_with_failures(spec, node, used, gpus=gpus, work_seconds=work_seconds, tokens=inputs.tokens,
                                  global_batch_tokens=float(plan.global_batch * inputs.seq_len),
                                  step_seconds=inputs.step_time, recipe=inputs.recipe_name, zero=plan.layout.zero,
                                  model_parallel=plan.layout.tp * plan.layout.pp,
                                  forward_share=step_forward_share(spec, inputs, _recompute(plan, inputs)),
                                  eval_step_seconds=_steady_step(plan, inputs))

    return after


def _steady_step(plan, inputs) -> float | None:
    """The steady batch's step (s) the in-loop evaluations run at, under a batch ramp (which needs a predicted step:
    the layout's own, plan.step_seconds); None otherwise: the run's step, wall-clock over steps, is the steady one.
    `plan`'s budget passes its layout's step the same way (jobs.plan.estimate._budget_for), and its deadline search
    adds the evaluations beside the ramp, not under it (jobs.plan.search._with_days)."""
    return getattr(plan, "step_seconds", None) if getattr(inputs, "batch_ramp", None) else None


def _recompute(plan, inputs) -> str:
    """The layout's recompute; an article-mode guess (no searched layout) has none: the one asked."""
    return getattr(plan, "recompute", None) or inputs.recompute_mode


# The answer-first view of `gpuplan train`: the article's numbers first (FLOPs, GPU-days, GPUs or
# days, MFU), then the layout and memory verdict, the time with allowances, and the money.
TRAIN_HEADLINE = ("flops_used", "gpu_days", "gpus", "gpus_compute_only", "wall_days", "mfu", "batch_ramp",
                  "mem_layout", "shard_group_auto", "mem_peak_total", "mem_fits", "wall_days_with_comm",
                  "gpu_hours_with_comm", "eval_wall_seconds", "fail_wall_seconds", "cost_on_demand_usd",
                  "cost_spot_usd", "budget_gpu_hours", "budget_usd_on_demand", "budget_usd_spot")
BUDGET_HEADLINE = ("cost_price_on_demand", "cost_price_spot", "cost_on_demand_usd", "cost_spot_usd",
                   "cost_spot_saving", "contingency_total", "budget_gpu_hours", "budget_usd_on_demand",
                   "budget_usd_spot", "fail_goodput", "fail_wall_seconds", "gpus", "shard_group_auto", "batch_ramp",
                   "wall_days_with_comm", "ckpt_interval_seconds", "io_bound")


def with_cost_headline(report: Report) -> Report:
    """`gpuplan budget`: the same report, its answer-first view headed by the cost lines."""
    from dataclasses import replace

    from gpuplan.jobs.calibration_notice import calibration_first

    return calibration_first(replace(report, headline=BUDGET_HEADLINE,
                                     key_assumptions=("budget_price", "budget_spot", "mfu")))
