"""The step model's settings a training job's inputs describe, before calibration: the framework's schedules and
overlaps, the options given, the eager stack (jobs.eager_stack). One builder for train / plan / budget
(jobs.plan.search.evaluator_for) and for calibrate, which times a log with it (calibrate.train_step), so a
calibration reproduces the run it was fitted on. Units: StepSettings' (seconds, shares, bytes per element)."""

from __future__ import annotations

from gpuplan.core.comm.dp_costs import ParamGather
from gpuplan.core.comm.dp_overlap import NEMO_BUCKET_PARAMS, schedule_for
from gpuplan.core.expert_layout import expert_tp_for
from gpuplan.core.frameworks import deepspeed_bf16_engine, op_sac_fused_qkv
from gpuplan.core.memory.recipe_facts import reduced_grad_bytes
from gpuplan.core.precision import RECIPES
from gpuplan.core.time.attention_core import execution_kernel, step_kernel
from gpuplan.core.time.step import StepSettings, attention_efficiency
from gpuplan.jobs.eager_stack import eager_step_settings
from gpuplan.planner.search import settings_in_mode
from gpuplan.planner.space import RECOMPUTE_MODES


def _uncalibrated_step(inputs, spec, gpu, kernel: str) -> tuple[StepSettings, tuple[tuple[str, float], ...]]:
    """(the step settings without recompute, the TP overlap per recompute mode) of the inputs, before calibration."""
    tp_overlap = tp_overlap_by_recompute(inputs)
    return _step_settings(inputs, spec, gpu, step_kernel(inputs.attention_kernel, kernel), dict(tp_overlap)["none"]), tp_overlap


def step_settings_for(inputs, spec, gpu, recompute: str) -> StepSettings:
    """The settings train / plan time a layout of ``inputs`` in ``recompute`` mode with, before calibration (evaluator_for's,
    as Evaluator.step_settings gives them): calibrate times a log with them (calibrate.train_step), so a calibration
    reproduces its own run when train is asked the log's layout with the same flags."""
    kernel = execution_kernel(inputs.attention_kernel, spec.model_type, inputs.framework, inputs.implementation_name)
    return settings_in_mode(*_uncalibrated_step(inputs, spec, gpu, kernel), recompute)


def tp_overlap_by_recompute(inputs) -> tuple[tuple[str, float], ...]:
    """(recompute mode, StepSettings.tp_overlap) per mode, Evaluator.tp_overlap_by_recompute: --tp-overlap in
    every mode where given, else the framework's own TP overlap (TE's async backward reduce-scatters under
    megatron), whose share follows the layout's recompute mode (FrameworkProfile.tp_overlap_for)."""
    given = inputs.tp_overlap
    return tuple((mode, inputs.profile.tp_overlap_for(mode) if given is None else given) for mode in RECOMPUTE_MODES)


def grad_comm_bytes(inputs) -> float:
    """Bytes per gradient element the data-parallel reduction moves: the width memory holds the gradient buffer
    in (the inputs' recipe with --grad-dtype, as MemorySettings.grad_bytes reads it), by one rule
    (core.memory.recipe_facts.reduced_grad_bytes): under megatron 4 (fp32, Megatron-Core's grad_reduce_in_fp32)
    unless --grad-dtype bf16; torchtitan 4; others 2."""
    return reduced_grad_bytes(inputs.framework, RECIPES[inputs.recipe_name],
                              inputs.recipe_memory_settings()["grad_bytes"])


def _step_settings(inputs, spec, gpu, kernel: str, tp_overlap: float) -> StepSettings:
    """The step model's settings for the inputs (before calibration): the framework's schedules and overlaps,
    the options given, the eager stack or megatron loss (jobs.eager_stack); ``tp_overlap``: without recompute
    (tp_overlap_by_recompute's; Evaluator.step_settings sets each layout's mode's)."""
    zero3 = inputs.profile.zero3_step_settings()
    if "dp_overlap" in inputs.given:  # an explicit --dp-overlap covers ZeRO-3 traffic too
        zero3["zero3_overlap"] = None
    # the framework's data-parallel schedule sets what stays exposed; --dp-overlap, when given, caps it
    dp_overlap = inputs.dp_overlap if "dp_overlap" in inputs.given else 1.0
    return StepSettings(seq_len=inputs.seq_len, dtype=inputs.dtype, dp_overlap=dp_overlap,
                        dp_schedule=schedule_for(inputs.framework), expert_tp=expert_tp_for(inputs.framework, inputs.etp),
                        grad_comm_bytes=grad_comm_bytes(inputs),
                        # --low-precision-weights primary under per-tensor FP8: the matrices gather at 1 B (core.comm.dp_costs)
                        param_gather=ParamGather(fp8_matrices=(getattr(inputs, "low_precision_weights", None) == "primary"
                                                               or getattr(inputs, "fsdp_float8_all_gather", False))  # torchtitan
                                                 and inputs.dtype == "fp8" and inputs.fp8_recipe != "mxfp8"),
                        # DeepSpeed's BF16_Optimizer: the rule memory reads too (core.frameworks, core.time.optimizer)
                        deepspeed_bf16=deepspeed_bf16_engine(inputs.framework, inputs.dtype, inputs.recipe_name),
                        # Megatron-Core DDP's embedding-gradient add (core.time.megatron_grad_passes), TE's CP ring kernels
                        embedding_grad_add=inputs.framework == "megatron", te_cp_ring=inputs.framework == "megatron",
                        # its data-parallel schedule is Megatron-Bridge's comm-overlap setup, whose buckets go with it
                        dp_bucket_params=NEMO_BUCKET_PARAMS if inputs.framework == "megatron" else None,
                        tp_overlap=tp_overlap, tp_synchronous="tp_overlap" in inputs.given and inputs.tp_overlap == 0,
                        tp_comm_overlap=inputs.tp_comm_overlap, sequence_parallel=inputs.sequence_parallel,
                        grad_all_reduce=inputs.grad_all_reduce,
                        ep_overlap=inputs.ep_overlap, ep_dispatcher=inputs.ep_dispatcher,
                        ep_a2a_overlap=inputs.ep_a2a_overlap, offload_layers=inputs.offload_layers,
                        eager_fallbacks=inputs.profile.eager_fallbacks, **inputs.kernel_step_settings(),
                        fp8_recipe=inputs.fp8_recipe,
                        attention_kernel=kernel, attention_dropout=spec.dropout,
                        finetune=inputs.finetune, lora_rank=inputs.lora_rank,
                        **inputs.recompute_settings(),
                        **zero3,
                        selective="op-sac" if inputs.profile.selective == "op-sac" else "core-attn",
                        op_sac_fused_qkv=op_sac_fused_qkv(spec, inputs.framework),  # the release's (core.frameworks)
                        **eager_step_settings(inputs, spec),
                        attention_efficiency=inputs.attention_efficiency or (
                            attention_efficiency(gpu, hopper_tuned=True)
                            if inputs.profile.hopper_tuned_attention else None))
