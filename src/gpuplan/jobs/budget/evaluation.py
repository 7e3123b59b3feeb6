"""The budget's in-loop evaluation (--eval-interval / --eval-iters): how many evaluations, what each costs,
its report section and its assumption row. The formulas are core.economics.evaluation's; the evaluations'
wall-clock joins the failure-free work the failure model runs (jobs.budget.model.scenario), so the expected
wall-clock, the GPU-hours billed and the budget carry it as they carry the checkpoint stalls."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.core.economics import evaluation as E
from gpuplan.core.units import format_duration, format_gpu_time
from gpuplan.report.model import Assumption, Line, Section

STEP_FLOPS_SOURCE = ("forward / (forward + backward + recompute) FLOPs of the step (core.model.flops); the step "
                     "model exposes no forward/backward split (core.time.step.StepBreakdown)")
MODEL_FLOPS_SOURCE = "1/3: forward 2 of 6 FLOPs per weight per token, no recompute (no FLOPs count given)"


def step_forward_share(spec, inputs, recompute: str) -> float:
    """The forward share of a training step's FLOPs for ``inputs`` (train / plan inputs: seq_len, finetune,
    lora_rank, attention_flops where they have them) with ``recompute`` ('none', 'selective', 'full')."""
    from gpuplan.core.model import flops as F

    per_token = F.training_flops_per_token(spec, inputs.seq_len, getattr(inputs, "attention_flops", "full"),
                                           recompute, getattr(inputs, "finetune", "full"),
                                           getattr(inputs, "lora_rank", 16))
    return E.forward_share(per_token.forward, per_token.hardware)


def work_factors(inputs, spec, table, settings):
    """(failure-free work + evaluations) / failure-free work of each row of a layout table (its recompute, an index
    of planner.space.RECOMPUTE_MODES, and its global batch): 1 + evaluations x eval_iters x forward share / steps,
    the step time cancelling (each evaluation iteration is a step's forward share); 1.0 without --eval-interval.
    The layout search's failure shares (jobs.plan.completes.completing_rows) take it, so `plan --days` and
    `train --days` weigh the evaluations as the chosen layout's budget prints them."""
    if settings.eval_interval is None:
        return 1.0
    import numpy as np

    from gpuplan.planner.space import RECOMPUTE_MODES

    share = np.array([step_forward_share(spec, inputs, mode) for mode in RECOMPUTE_MODES])[table["recompute"]]
    batch_tokens = table["global_batch"].astype(float) * inputs.seq_len
    steps = E.ramp_run_steps(inputs.tokens, batch_tokens)  # the steady batch's steps: the training work's unit
    counted = E.ramp_run_steps(inputs.tokens, batch_tokens, settings.eval_ramp)  # the steps evaluations fall among
    count = E.evaluations(counted, settings.eval_interval)  # its // runs element-wise on the rows' steps
    # the work they add over the steady-batch steps' (the ramp's own slowdown is the ramp factor's, not counted here)
    return 1.0 + count * (settings.eval_iters or E.DEFAULT_EVAL_ITERS) * share / steps


def in_loop_evaluation(run, settings, forward_share: float | None,
                       step_seconds: float | None = None) -> E.InLoopEvaluation | None:
    """The run's evaluations (None without --eval-interval). ``forward_share``: the step's, from its FLOPs count
    (step_forward_share); None: MODEL_FORWARD_SHARE. ``step_seconds``: the steady batch's step, which each
    evaluation's iterations run at (the full global batch); None: the run's step (``run.step_seconds``: the
    wall-clock over the steps, which under a batch ramp is the ramp's average, not the steady one)."""
    if settings.eval_interval is None:
        return None
    return E.InLoopEvaluation(E.ramp_run_steps(run.tokens, run.global_batch_tokens, settings.eval_ramp),
                              int(settings.eval_interval), int(settings.eval_iters or E.DEFAULT_EVAL_ITERS),
                              E.MODEL_FORWARD_SHARE if forward_share is None else forward_share,
                              step_seconds or run.step_seconds, settings.eval_ramp)


def beyond_training(inputs) -> str:
    """What a deadline's wall-clock adds to the failure-free training: failures and checkpoints, and the in-loop
    evaluations where --eval-interval is given (the budget's failure model runs them). One text for `plan`'s and
    `train`'s deadlines (review s20 S8, s20b S3)."""
    evaluated = getattr(inputs, "eval_interval", None) is not None
    return "failures, checkpoints and in-loop evaluation" if evaluated else "failures and checkpoints"


def with_evaluation(run, evaluation: E.InLoopEvaluation | None):
    """``run`` (jobs.budget.model.RunFacts) carrying the evaluations' failure-free wall-clock."""
    return run if evaluation is None else replace(run, eval_seconds=evaluation.seconds)


def evaluation_section(run, ev: E.InLoopEvaluation, share_given: bool) -> Section:
    """The 'In-loop evaluation' section: steps, evaluations, seconds each, wall-clock and GPU-hours."""
    hours = run.gpus * ev.seconds / 3600.0
    return Section("In-loop evaluation", (
        Line("eval_steps", "optimizer steps", ev.steps, "steps", f"{ev.steps:,}",
             _steps_formula(run, ev.ramp)),
        Line("eval_count", "evaluations", ev.count, "evaluations", f"{ev.count:,}",
             f"floor({ev.steps:,} / {ev.interval:,} --eval-interval) + 1 at the end (Megatron-LM training.py "
             "get_train_valid_test_num_samples: train_iters // eval_interval + 1)"),
        Line("eval_forward_share", "forward share of a step", ev.forward_share, "fraction",
             f"{ev.forward_share:.1%}", STEP_FLOPS_SOURCE if share_given else MODEL_FLOPS_SOURCE),
        Line("eval_seconds_each", "one evaluation", ev.seconds_each, "s", format_duration(ev.seconds_each),
             f"{ev.iters:,} forward-only iterations x {run.step_seconds:.3g} s step x {ev.forward_share:.3f} "
             "(Megatron evaluate(): eval_iters x the global batch, forward_only=True)"),
        Line("eval_wall_seconds", "evaluation wall-clock", ev.seconds, "s", format_duration(ev.seconds),
             f"{ev.count:,} evaluations x {format_duration(ev.seconds_each)}; joins the failure-free time the "
             "failure model runs"),
        Line("eval_gpu_hours", "GPU-hours of evaluation", hours, "GPU-hours", format_gpu_time(hours),
             f"{run.gpus:,.0f} GPUs x evaluation wall-clock (before failures)"),
    ))


def _steps_formula(run, ramp: tuple[tuple[float, float], ...]) -> str:
    """How the optimizer steps were counted: the tokens over the batch, or under a ramp each phase's at its batch."""
    steady = f"ceil({run.tokens:.4g} / {run.global_batch_tokens:,.0f})"
    if not ramp:
        return f"ceil(tokens / global batch) = {steady}"
    ramp_tokens = sum(t for t, _ in ramp)
    ramp_steps = E.ramp_run_steps(ramp_tokens, 1.0, ramp)  # the ramp's own steps: the rest is 0 tokens
    rest = run.tokens - ramp_tokens
    return (f"the ramp's {ramp_tokens:.4g} tokens at their own batches, ceil(sum of tokens / batch tokens) = "
            f"{ramp_steps:,} steps, then the rest at the steady batch, ceil({max(rest, 0.0):.4g} / "
            f"{run.global_batch_tokens:,.0f}) (Megatron update_train_iters)")


def evaluation_assumption(settings) -> Assumption:
    """The assumptions-list row: none by default, and how to set it."""
    if settings.eval_interval is None:  # --eval-iters alone is refused (jobs.budget.model.validate_settings)
        value, user = "none (no in-loop evaluation)", settings.eval_iters is not None
    else:
        iters = settings.eval_iters or E.DEFAULT_EVAL_ITERS
        value, user = f"every {settings.eval_interval:,} steps, {iters:,} forward-only iterations", True
    if settings.eval_ramp:  # the steps they fall among (ramp_run_steps); set only beside an interval (fields.py)
        value, user = f"{value}, counted over every step (the batch ramp's at their own batches)", True
    return Assumption("budget_eval", "in-loop evaluation", value,
                      "off as in Megatron-LM's current default (eval_interval None; eval_iters 100), torchtitan "
                      "(validation off) and HF Trainer (eval_strategy 'no'); Megatron <= core_r0.8 and GPT-NeoX "
                      f"default to every {E.FRAMEWORK_EVAL_INTERVAL:,} steps x {E.DEFAULT_EVAL_ITERS} iterations",
                      "--eval-interval / --eval-iters", user)
