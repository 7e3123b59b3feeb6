"""The step settings of an eager stack (``--framework hf``): the op profile of the run's model
family and the options that change what it executes (catalog.op_profiles, core.time)."""

from __future__ import annotations

FP32_PARAM_RECIPES = ("amp", "mixed", "fp32", "article", "megatron", "fsdp2")
"""Recipes whose trained parameters and optimizer states are fp32 (4 B per element)."""


def eager_step_settings(inputs, spec) -> dict:
    """StepSettings fields for a training job's inputs: the eager model under --framework hf,
    nothing (core.time.step's fused model) under the other frameworks."""
    if inputs.framework != "hf":
        return {}
    from gpuplan.catalog.op_profiles import eager_ops_for
    from gpuplan.core.frameworks import framework

    recipe = inputs.recipe_name
    ops = eager_ops_for(spec.model_type, recipe, inputs.finetune, inputs.attention_kernel)
    impl = inputs.optimizer_impl or framework("hf").optimizer_impl
    return {"eager_ops": ops, "optimizer_impl": impl, "param_bytes": 4.0 if recipe in FP32_PARAM_RECIPES else 2.0}
