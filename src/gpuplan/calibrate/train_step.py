"""The step a training log is timed with: the settings `gpuplan train|plan` build for the same flags.

A calibration factor is measured / predicted seconds, and ``train --calibration`` multiplies the step train
predicts, so the prediction calibrate divides by must be train's own for the log's layout, or a calibration does
not reproduce the run it was fitted on (session 25: a 1.0 s Megatron-default log of llama-3-8b on 8 H100s, ZeRO-3,
was timed with the generic fused settings at 0.955 s and train answered 0.865 s). A log's measurement is turned into
the training inputs train would parse for those flags (jobs.plan.schema.PlanInputs: the framework, --recipe where
given, the step options of LOG_STEP_OPTIONS) and its settings come from jobs.plan.step_settings.step_settings_for,
the builder evaluator_for uses: one builder, not a copy. Trials (an eager transformers step, --framework hf from the
trial loop) keep their own settings (calibrate.predict.eager_fields). Units: none (settings objects).
"""

from __future__ import annotations

LOG_STEP_OPTIONS = ("recipe", "fp8_recipe")
"""calibrate options besides the layout, precision and --framework that change train's step and that a log does not
state, passed to train's schema as given (not given: train's defaults, the framework's recipe among them)."""

PLACEHOLDER_TOKENS = 1e12
"""Training tokens the inputs need to parse; the step does not read them."""


def train_inputs(m):
    """The training inputs (PlanInputs) train parses for a log's flags; '' framework (a Measurement built in Python
    before session 25) is gpuplan's generic model, as such a calibration file's reference means."""
    from gpuplan.jobs.plan.schema import PlanInputs

    fields = dict(model=m.model, tokens=PLACEHOLDER_TOKENS, gpu=m.gpu, gpus=m.world_size, tp=m.tp, pp=m.pp, ep=m.ep,
                  zero=m.zero, micro_batch=m.micro_batch, global_batch=m.global_batch, seq_len=m.seq_len,
                  dtype=m.dtype, recompute=m.recompute, framework=m.framework or "generic")
    return PlanInputs(**fields, **dict(m.options))


def train_step_settings(m, spec, gpu):
    """core.time.step.StepSettings train times the log's layout with, before calibration."""
    from gpuplan.jobs.plan.step_settings import step_settings_for
    from gpuplan.schema.precision_rules import check_dtype_runs_on

    inputs = train_inputs(m)
    check_dtype_runs_on(inputs, gpu)  # the dtype and --fp8-recipe mxfp8 on the part, as train checks them
    return step_settings_for(inputs, spec, gpu, m.recompute)
