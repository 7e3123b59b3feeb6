"""The memory model's settings of a training job's inputs: one builder `plan` / `train` / `budget`
(jobs.plan.search.evaluator_for) and `memory` (jobs.memory.schema.MemoryInputs.settings) both call, so the
allocated peak `train` prints is the one `gpuplan memory` of its layout answers, at every --dtype."""

from __future__ import annotations

from typing import Any


def training_memory_settings(inputs: Any, spec: Any, gpu: Any, attention_kernel: str, **more: Any):
    """core.memory.training.MemorySettings of ``inputs`` (PlanInputs, TrainingInputs or MemoryInputs: the setup,
    layout and precision fields) for ``spec`` (the model as trained: its MTP modules) on ``gpu`` (an Accelerator),
    ``attention_kernel`` the kernel that executes (core.time.attention_core.execution_kernel); ``more``: the fields a
    door sets on its own (plan: the calibration's activation_scale; memory: recompute, dropout, capacity factor,
    optimizer offload). The precision fields, by --dtype and --fp8-recipe:

    - linear_input_bytes: the bytes per element Transformer Engine's linears keep their inputs in for the weight
      gradient (megatron implementation): 1 for tensorwise FP8, 1 + 1/32 for MXFP8, 0.5 + 1/16 for NVFP4, None
      (the compute dtype's 2) for 16-bit and wider dtypes (core.memory.activations.saved_linear_input_bytes);
    - fp8_any_layout_gemm: one quantised weight copy instead of two for tensorwise FP8 on sm_100 parts (TE's rule
      by compute capability: core.memory.recipe_facts.weight_copies, with --low-precision-weights);
    - grad_bytes (through recipe_memory_settings): the gradient buffer's width by dtype (fp16 under Megatron-Core:
      core.memory.recipe_facts.default_grad_bytes);
    - deepspeed_bf16: DeepSpeed's BF16_Optimizer engine runs at --dtype bf16 only (core.frameworks)."""
    from gpuplan.core.frameworks import deepspeed_bf16_engine
    from gpuplan.core.memory.activations import saved_linear_input_bytes
    from gpuplan.core.memory.training import MemorySettings
    from gpuplan.core.time.low_precision import low_precision_recipe

    dtype = inputs.dtype  # memory, plan and train all state it (and fp8_recipe); not every job --ep-a2a-overlap
    return MemorySettings(seq_len=inputs.seq_len, recipe=inputs.recipe_name, optimizer=inputs.optimizer,
                          implementation=inputs.implementation_name, finetune=inputs.finetune,
                          framework=inputs.framework, loss=inputs.loss_for(spec), lora_rank=inputs.lora_rank,
                          optimizer_impl=inputs.optimizer_impl, mtp_layers=spec.mtp_layers,
                          attention_kernel=attention_kernel, **inputs.recompute_settings(),
                          **inputs.recipe_memory_settings(),
                          # Transformer Engine keeps the linears' inputs quantised (megatron implementation)
                          linear_input_bytes=saved_linear_input_bytes(low_precision_recipe(
                              dtype, inputs.fp8_recipe)),
                          fp8_any_layout_gemm=gpu.fp8_any_layout_gemm,  # TE's rule by compute capability
                          ep_a2a_overlap=bool(getattr(inputs, "ep_a2a_overlap", False)),
                          deepspeed_bf16=deepspeed_bf16_engine(inputs.framework, dtype, inputs.recipe_name), **more)
