"""The parameters one GPU trains: what its gradients, optimizer states, accumulation pass and data-parallel
traffic follow (core.time.step.step_time, and `plan --explain` / `plan --full`, which must say the same)."""

from __future__ import annotations

from gpuplan.core.comm.per_gpu_params import params_per_gpu
from gpuplan.core.model.spec import ModelSpec


def trained_params_per_gpu(spec: ModelSpec, settings, tp, pp, ep=1):
    """Parameters (a count, not bytes) one GPU of a stage trains: under full training all its local ones
    (core.comm.dp_costs.params_per_gpu); under LoRA / QLoRA only the adapters (core.model.finetune.lora_params,
    peft's count of MoE experts where the eager ops are transformers': peft_counts_experts), an even 1/pp share
    of them. Degrees may be numpy arrays."""
    if settings.finetune == "full":
        return params_per_gpu(spec, tp, pp, ep, settings.expert_tp)
    from gpuplan.core.model.finetune import lora_params, peft_counts_experts  # hf (eager ops): peft's MoE count

    return lora_params(spec, settings.lora_rank, tp=tp, peft_experts=peft_counts_experts(settings)) / pp
