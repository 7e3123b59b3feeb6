"""In-loop evaluation: the validation passes a trainer runs every ``eval_interval`` optimizer steps.

Megatron-LM and GPT-NeoX run ``eval_iters`` forward-only iterations of the global batch per evaluation
(Megatron-LM megatron/training/training.py@d98e8a6 L5096-5200 evaluate(): 'Evaluating on {eval_iters *
eval_batch_size} samples', forward_backward_func(..., forward_only=True) under torch.no_grad(); GPT-NeoX
megatron/training.py@ea7aefd L1568-1610: each iteration gradient_accumulation_steps micro-batches, i.e. the
global batch). Megatron evaluates at every iteration with ``iteration % eval_interval == 0`` (training.py
L4915) and once more after training (L2077 ``if args.do_valid``), and sizes its validation set for
``train_iters // eval_interval + 1`` evaluations (L5436): the count used here. Under a batch ramp (a step
batch-size schedule) ``train_iters`` counts every step at the batch it runs (update_train_iters L2155-2176: each
iteration consumes the current global batch until train_samples, a step that crosses into the next phase running
at the earlier batch), so steps ~= ceil(sum over the ramp of its tokens / its batch tokens) + ceil(the rest / the
steady batch tokens) (ramp_run_steps; within a step of Megatron's walk). Each evaluation is charged at the steady
batch: Megatron <= core_r0.8.0's --rampup-batch-size keeps --global-batch-size as the final batch, which
evaluate() runs (training.py@core_r0.8.0 L1276-1279); at d98e8a6 a step schedule forbids --global-batch-size
(arguments.py L698-703), so its evaluations take --eval-global-batch-size, or micro-batch x dp where that is not
given (L704-711): smaller than charged here (docs/budget.md 4a).

    evaluations          n_e = floor(steps / eval_interval) + 1
    forward share        f   = forward FLOPs / (forward + backward + recompute FLOPs) of a training step
                               (core.model.flops.FlopsPerToken.forward / .hardware)
    seconds per eval     t_e = eval_iters x step seconds x f
    evaluation wall-clock  T_e = n_e x t_e

The forward share scales the whole step (its exposed communication, pipeline bubble and optimizer with
it): a forward-only step runs no gradient reduction or optimizer step (so this is the upper side), and
Megatron's pipeline schedule with forward_only=True (core/pipeline_parallel/schedules.py@d98e8a6 L2147-2375
forward_backward_pipelining_without_interleaving: stages - rank - 1 warm-up forwards, L2277, then forwards
only) takes (m + p - 1) forward slots where 1F1B takes (m + p - 1) forward-and-backward ones: its bubble is
the training bubble's forward share. Units: seconds, steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Megatron-LM's --eval-iters default (training_config.py@d98e8a6 L115 ValidationConfig.eval_iters = 100;
# arguments.py@core_r0.8.0 L1472 default=100) and GPT-NeoX's (neox_arguments/neox_args.py@ea7aefd L1344)
DEFAULT_EVAL_ITERS = 100
# Megatron-LM's older --eval-interval default (arguments.py@core_r0.8.0 L1475, 1000), GPT-NeoX's
# (neox_args.py@ea7aefd L1354, 1000); Megatron's current one is None (training_config.py@d98e8a6 L119: no
# evaluation during training), torchtitan's validation is off by default, HF Trainer's eval_strategy 'no'
FRAMEWORK_EVAL_INTERVAL = 1000
MAX_EVAL_INTERVAL = 10**9  # steps: past any run's (Llama 3 405B: ~1M steps)
MAX_EVAL_ITERS = 10**6  # forward-only iterations per evaluation: 10,000x the default 100
# The forward share without a FLOPs count of the step: forward = 2 FLOPs, backward = 4 per weight per token
# (core.model.flops: model FLOPs = 3 x forward), no recompute
MODEL_FORWARD_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class InLoopEvaluation:
    """The evaluations of one run and their failure-free wall-clock on the run's GPUs."""

    steps: int
    """Optimizer steps of the run: ceil(tokens / global batch tokens), or under a batch ramp ramp_run_steps'."""
    interval: int
    """Optimizer steps between evaluations (--eval-interval)."""
    iters: int
    """Forward-only iterations of the global batch per evaluation (--eval-iters)."""
    forward_share: float
    """Forward FLOPs / training-step FLOPs (recompute included)."""
    step_seconds: float
    """Seconds of one training step."""
    ramp: tuple[tuple[float, float], ...] = ()
    """The batch ramp's phases (tokens, tokens a step) that ``steps`` counts (ramp_run_steps); () without one."""

    @property
    def count(self) -> int:
        """Evaluations over the run: floor(steps / interval) + 1 (Megatron's count, module docstring)."""
        return evaluations(self.steps, self.interval)

    @property
    def seconds_each(self) -> float:
        """Seconds of one evaluation: eval_iters x step seconds x forward share."""
        return self.iters * self.step_seconds * self.forward_share

    @property
    def seconds(self) -> float:
        """Failure-free wall-clock of all evaluations, s."""
        return self.count * self.seconds_each


def evaluations(steps: int, interval: int) -> int:
    """Evaluations over ``steps`` optimizer steps every ``interval`` steps, the end-of-training one included
    (``steps`` may be an array: the layout search's rows, jobs.budget.evaluation.work_factors)."""
    return steps // interval + 1


def run_steps(tokens: float, global_batch_tokens: float) -> int:
    """Optimizer steps of a run: the tokens over the global batch, the last partial batch a step."""
    return max(1, math.ceil(tokens / global_batch_tokens - 1e-9))


def ramp_run_steps(tokens: float, global_batch_tokens, phases: tuple[tuple[float, float], ...] = ()):
    """Optimizer steps of a run whose batch ramps: each phase's (tokens, tokens a step) taken at its own batch, the
    rest of ``tokens`` at ``global_batch_tokens`` (module docstring: Megatron's update_train_iters); run_steps
    without phases. ``global_batch_tokens`` may be an array (the layout search's rows: an array back). Phases past
    ``tokens`` are refused by the schema (schema.batch_ramp_field)."""
    import numpy as np  # on use: the budget schema reads this module's defaults and imports no numpy (test_startup)

    batch = np.asarray(global_batch_tokens, dtype=float)
    # one ceil over the whole ramp: a linear phase arrives as LINEAR_STEPS sub-steps (schema.batch_ramp_field), and
    # a ceil each would add up to one step per sub-step (review s20 M2: 5B:64-256 counted 11,326 steps, not 11,200)
    ramp = math.ceil(sum(t / b for t, b in phases) - 1e-9) if phases else 0
    rest = tokens - sum(t for t, _ in phases)
    steady = np.ceil(rest / batch - 1e-9) if rest > 0 else np.zeros_like(batch)
    steps = np.maximum(1.0, ramp + steady)
    return int(steps) if steps.ndim == 0 else steps


def forward_share(forward_flops: float, step_flops: float) -> float:
    """Forward FLOPs over the FLOPs a training step executes (forward + backward + recompute)."""
    return forward_flops / step_flops
