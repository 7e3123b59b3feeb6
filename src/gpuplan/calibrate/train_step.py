"""The step a training log is timed with: the settings `gpuplan train|plan` build for the same flags.

A calibration factor is measured / predicted seconds, and ``train --calibration`` multiplies the step train
predicts, so the prediction calibrate divides by must be train's own for the log's layout, or a calibration does
not reproduce the run it was fitted on (session 25: a 1.0 s Megatron-default log of llama-3-8b on 8 H100s, ZeRO-3,
was timed with the generic fused settings at 0.955 s and train answered 0.865 s). A log's measurement is turned into
the training inputs train would parse for those flags (jobs.plan.schema.PlanInputs: the framework, --recipe where
given, the step options of calibrate.step_options.LOG_STEP_OPTIONS) and its settings come from
jobs.plan.step_settings.step_settings_for, the builder evaluator_for uses: one builder, not a copy. Since session 26 the layout (--cp, --vpp, --etp, sequence
parallelism) and the memory settings are train's too (train_case: jobs.memory.settings.training_memory_settings, the
builder train and memory share), so the peak calibrate fits against is the one train and memory print for the flags.
Trials (an eager transformers step, --framework hf from the trial loop) keep their own settings
(calibrate.predict.eager_fields). Units: none (settings objects).
"""

from __future__ import annotations

PLACEHOLDER_TOKENS = 1e12
"""Training tokens the inputs need to parse; the step does not read them."""


def train_inputs(m, spec=None):
    """The training inputs (PlanInputs) train parses for a log's flags; '' framework (a Measurement built in Python
    before session 25) is gpuplan's generic model, as such a calibration file's reference means. Given the model
    (``spec``), an option a dense model cannot take is refused in train's words (_as_train_refuses)."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.plan.schema import PlanInputs

    fields = dict(model=m.model, tokens=PLACEHOLDER_TOKENS, gpu=m.gpu, gpus=m.world_size, tp=m.tp, pp=m.pp, ep=m.ep,
                  zero=m.zero, micro_batch=m.micro_batch, global_batch=m.global_batch, seq_len=m.seq_len,
                  dtype=m.dtype, recompute=m.recompute, framework=m.framework or "generic")
    try:
        return PlanInputs(**fields, **dict(m.options))
    except InputError:
        if spec is not None and spec.moe is None and m.ep == 1:
            _as_train_refuses(PlanInputs, fields, m, spec)
        raise


def _as_train_refuses(schema, fields: dict, m, spec) -> None:
    """Raise train's refusal of the log's flags where train, given them without --ep, refuses them for the model
    (SetupFields.adjust_spec): a log's expert parallelism is 1 unless stated, and the schema's --ep 1 rule answered
    `--ep-dispatcher flex` or `--ep-a2a-overlap` on a dense model with 'needs expert parallelism (--ep > 1)', where
    train says the model is dense, which no --ep mends (hostile wave 30b). Returns where train parses them too."""
    from gpuplan.errors import InputError

    try:
        unstated = schema(**(fields | {"ep": None}), **dict(m.options))
    except InputError:
        return  # train refuses them too, and without the model: the first refusal stands
    unstated.adjust_spec(spec)


def train_case(m, spec, gpu):
    """(the model as train reads it, core.parallel.ParallelLayout, core.memory.training.MemorySettings,
    core.time.step.StepSettings, (--gpus-per-node, --nic-gbit-per-gpu): its cluster's) train predicts the log's layout with, before calibration: the model with the MTP
    modules the framework trains (SetupFields.adjust_spec, whose refusals of options the model cannot take are
    train's), the layout's virtual stages, context parallelism, expert TP and sequence parallelism as the Evaluator
    lays them out (planner.search.Evaluator.layout / with_expert_layout), the memory settings of train's and memory's
    one builder (jobs.memory.settings.training_memory_settings, in the log's recompute mode as Evaluator.memory_of)."""
    from dataclasses import replace

    from gpuplan.core.expert_layout import EXPERTS_REPLICATED_OVER_TP
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.core.precision import check_recipe_runs_on
    from gpuplan.core.time.attention_core import execution_kernel
    from gpuplan.jobs.memory.settings import training_memory_settings
    from gpuplan.jobs.plan.step_settings import step_settings_for
    from gpuplan.schema.precision_rules import check_dtype_runs_on

    inputs = train_inputs(m, spec)
    check_dtype_runs_on(inputs, gpu)  # the dtype and --fp8-recipe mxfp8 on the part, as train checks them
    check_recipe_runs_on(inputs.recipe_name, gpu)  # the recipe train reads (jobs.plan.search._checked_gpu)
    spec = inputs.adjust_spec(spec)
    step = step_settings_for(inputs, spec, gpu, m.recompute)
    kernel = execution_kernel(inputs.attention_kernel, spec.model_type, inputs.framework, inputs.implementation_name)
    memory = replace(training_memory_settings(inputs, spec, gpu, kernel), recompute=m.recompute)
    layout = ParallelLayout(dp=m.dp, tp=m.tp, pp=m.pp, vpp=inputs.vpp or 1, cp=inputs.cp or 1, ep=m.ep,
                            zero=m.zero, micro_batch=m.micro_batch, global_batch=m.global_batch or m.micro_batch * m.dp,
                            sequence_parallel=step.sequence_parallel, etp=step.expert_tp,
                            experts_replicated_over_tp=inputs.framework in EXPERTS_REPLICATED_OVER_TP)
    return spec, layout, memory, step, (inputs.gpus_per_node, inputs.nic_gbit_per_gpu)


def check_recorded(options: dict) -> dict:
    """Each value of a calibration's reference.options as calibrate's own field for it takes it (train's declaration,
    calibrate.schema), refused naming it ('calibration: reference.options: attention_kernel: got 'flash9'; must be one
    of ...'); run where a plan reads them (jobs.calibration_notice.options_warning, jobs.memory.estimate): the loader
    (calibrate.model) checks their keys and kinds without the schema, which imports it. Returns them as the fields read
    them (null kept), so a plan compares values, not spellings: a file's "sequence_parallel": "yes" or "lora_rank": "16"
    (text a plan file may hold) was compared as written, and train warned 'timed with --lora-rank 16, planned with
    --lora-rank 16' and quoted '--sequence-parallel yes' (hostile wave 30b)."""
    from typing import Annotated

    from pydantic import TypeAdapter

    from gpuplan.calibrate.schema import CalibrateInputs
    from gpuplan.calibrate.step_options import GIVEN_ONLY
    from gpuplan.errors import InputError

    fields = CalibrateInputs.model_fields
    null = next((k for k, v in options.items() if v is None and k not in GIVEN_ONLY and fields[k].default is not None),
                None)  # calibrate records train's default there ("optimizer": null advised 'give --optimizer (not given)')
    if null is not None:
        raise InputError(f"calibration: reference.options: {null}", "null", f"calibrate records a value for it (given, "
                         f"else train's default {fields[null].default!r}); null is for an option with no default")
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in options.items() if v is not None}
    CalibrateInputs.check_values(given, "calibration: reference.options")
    kinds = {k: Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation
             for k, f in fields.items() if k in given}
    read = {k: TypeAdapter(kinds[k]).validate_python(v) for k, v in given.items()}
    return {k: read.get(k) for k in options}
