"""The step settings of an eager stack (``--framework hf``): the op profile of the run's model
family and the options that change what it executes (catalog.op_profiles, core.time)."""

from __future__ import annotations


def eager_stack_fields(model_type: str, recipe: str, finetune: str, attention_kernel: str,
                       optimizer_impl: str | None) -> dict:
    """StepSettings fields of an eager run: its composed op profile, optimizer implementation (the
    hf framework's default when None) and bytes per trained parameter (fp32 parameters and states
    under an autocast recipe, catalog.op_profiles.AMP_RECIPES)."""
    from gpuplan.catalog.op_profiles import AMP_RECIPES, eager_ops_for
    from gpuplan.core.frameworks import framework

    return {"eager_ops": eager_ops_for(model_type, recipe, finetune, attention_kernel),
            "optimizer_impl": optimizer_impl or framework("hf").optimizer_impl,
            "param_bytes": 4.0 if recipe in AMP_RECIPES else 2.0}


def eager_step_settings(inputs, spec) -> dict:
    """StepSettings fields for a training job's inputs: the eager model under --framework hf, the
    loss under megatron, nothing more (core.time.step's fused model) under the other frameworks."""
    if inputs.framework == "torchtitan":  # its own op list (core.time.titan_ops) where it covers the model
        from gpuplan.core.frameworks import op_sac_fused_qkv, torchtitan_repeats_kv
        from gpuplan.core.time.titan_ops import default_ops

        # the release's q/k/v, the fact StepSettings.op_sac_fused_qkv takes (jobs.plan.search), and its GQA
        fused_qkv = op_sac_fused_qkv(spec, inputs.framework)
        return {"titan_ops": default_ops(spec, compiled=inputs.compile, fused_qkv=fused_qkv,
                                         repeats_kv=torchtitan_repeats_kv())}
    if inputs.framework == "megatron":  # its loss on the last stage: the field memory reads too (SetupFields.loss_for;
        # te-ce = TE's fused cross-entropy, else Megatron's native vocab-parallel one: core.time.megatron_ops)
        from gpuplan.core.time.megatron_ops import cross_entropy_impl

        # --loss given: the one the memory takes too; else the provider's
        return {"megatron_loss": cross_entropy_impl(spec, getattr(inputs, "loss", None))}
    if inputs.framework == "llmc":  # llm.c's own kernels (core.time.llmc_ops)
        return {"implementation": "llmc"}
    if inputs.framework != "hf":
        return {}
    return eager_stack_fields(spec.model_type, inputs.recipe_name, inputs.finetune, inputs.attention_kernel,
                              inputs.optimizer_impl)
