"""How many optimizer steps a Hugging Face Trainer's train_runtime timed (stdlib only; adapters.training_logs reads
the entries). docs/calibration.md section 2 says what each case answers.

train_runtime covers one train() call, from its start to the end of its last step, evaluation included
(trainer_utils.speed_metrics; start_time is taken before a checkpoint is loaded). What train_steps_per_second divides
by it depends on the writer (read in the wheels):

- transformers 4.x to 5.18: state.max_steps (4.57.1 trainer.py L2819-2824, 5.18.0 alike), even for a run resumed
  from a checkpoint, where the call ran only global_step - (the checkpoint's step) steps, or one stopped early
  (EarlyStoppingCallback), where global_step < max_steps;
- transformers 5.19 on: global_step - _initial_global_step, the steps this call ran (5.19.0 trainer.py L1982-1990,
  5.25.0 L2044-2052; 5.18.0 has no _initial_global_step).

So runtime x train_steps_per_second (within its 3-digit rounding, 0.0005 x runtime) is max_steps or at most
global_step; a value between them, or above both, is no Trainer's. Before 5.19 a resumed run cannot be told from its
rates; its train_loss can: _total_loss_scalar restarts at 0 in every train() call and 4.x divides it by global_step
(4.57.1 L2815-2817), so a resumed run's train_loss is the share of the steps it ran, times their mean loss, where
the log_history (restored from the checkpoint) logs every step's loss from step 1.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.errors import InputError, whole_or

RESUMED_SHARE = 0.9
"""train_loss below this share of the logged mean loss: a resumed pre-5.19 run (a fresh run's train_loss is that
mean, within the unlogged tail after the last logging step; a resume after 10 % of the steps gives <= 0.9 where the
loss falls)."""
COVERED = 0.9
"""The loss entries must log at least this share of global_step for train_loss to be compared with them."""


def hf_steps_run(steps: int, global_step: int | None, max_steps: Any, runtime: float, steps_per_s: float | None,
                 train_loss: float | None, losses: list[tuple[int, float]], source: str) -> tuple[float, str]:
    """(steps the timed train() call ran, a note or ''): ``steps`` is the final entry's step, ``losses`` the logged
    (step, loss) pairs. Refuses, naming the field, what no Trainer writes; see the module docstring."""
    if global_step is not None and global_step != steps:
        raise InputError("global_step", global_step, f"in {source}: the final entry logs step {steps:,}; "
                         "trainer_state.json saves the two equal at the end of training: give one run's file")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int | float) or not max_steps > 0:
        max_steps = None
    if steps_per_s:
        implied = runtime * steps_per_s
        slack = 0.0005 * runtime + 1  # steps/s is rounded to 3 digits
        fresh = abs(implied - steps) <= slack
        at_max = max_steps is not None and abs(implied - max_steps) <= slack
        if fresh and not at_max and max_steps is not None:  # G != max_steps: only 5.19+ writes G / runtime
            return steps, ""
        if not fresh and not at_max:
            if implied < steps:  # 5.19+: the steps since the resume
                run = max(1, round(implied))
                return run, (f"{source}: timed over the {run:,} steps after step {steps - run:,} (a run resumed from "
                             "a checkpoint: train_runtime x train_steps_per_second)")
            if max_steps is not None:
                where = "above both" if implied > max_steps else "between"
                raise InputError("train_steps_per_second", whole_or(steps_per_s), (
                    f"in {source}: x train_runtime {runtime:g} s = {implied:,.0f} steps, {where} global_step "
                    f"{steps:,} and max_steps {max_steps:,}; the Trainer divides max_steps (transformers before 5.19) "
                    "or the steps its train() call ran (5.19 on: at most global_step) by train_runtime: give one "
                    "run's file"))
    # max_steps / runtime (any version before 5.19, or 5.19+ ending at max_steps): resumed or not?
    share = _loss_share(train_loss, losses, steps)
    if share is None:
        return steps, _note(steps, source)
    if share[0] < RESUMED_SHARE:
        raise InputError("train_loss", whole_or(train_loss), (
            f"in {source}: {share[0]:.0%} of the mean loss logged over steps 1-{share[1]:,}; transformers before 5.19 "
            "divides the loss of the steps one train() call ran by global_step, so this run resumed from a "
            "checkpoint, and its train_runtime covers only the steps since, which train_steps_per_second "
            "(max_steps / train_runtime) does not count: calibrate from a run not resumed, or give its step times "
            "as a table (docs/calibration.md)"))
    return steps, ""


def _note(steps: int, source: str) -> str:
    return (f"{source}: timed as {steps:,} steps from step 0; transformers before 5.19 writes the same rates for a run "
            "resumed from a checkpoint, whose train_runtime covers only the steps since (the step time would be "
            "train_runtime / those steps), and its logged losses do not show whether it was")


def _loss_share(train_loss: float | None, losses: list[tuple[int, float]], steps: int) -> tuple[float, int] | None:
    """(train_loss / the step-weighted mean of the logged losses, the last logged step), or None where the losses
    cannot say (absent, not positive, or logging under COVERED of the steps)."""
    if not (train_loss and math.isfinite(train_loss) and train_loss > 0) or not losses:
        return None
    total, previous = 0.0, 0
    for step, loss in sorted(losses):
        if not (loss > 0 and math.isfinite(loss)) or step <= previous:
            return None
        total, previous = total + loss * (step - previous), step
    if previous < COVERED * steps:
        return None
    return train_loss / (total / previous), previous
