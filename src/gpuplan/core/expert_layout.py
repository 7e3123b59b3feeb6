"""Expert tensor parallelism as each framework lays it out: how many ways a routed expert's matrices are split
(etp) and which ranks share an expert's gradients. Memory (core.parallel.ParallelLayout.etp) and time
(core.time.step_settings.StepSettings.expert_tp) read the one value expert_tp_for gives.

* megatron, generic: etp = tp unless --etp is given — Megatron-Core sets expert_tensor_parallel_size to
  tensor_model_parallel_size when it is not given (megatron/training/arguments.py@d98e8a6 L587-588). Megatron-Bridge's
  MoE recipes set it to 1 (src/megatron/bridge/recipes/qwen/qwen3_moe.py, perf_recipes), as the published rows
  state (jobs.validation.published_throughput).
* torchtitan: etp 1 — its expert region is the mesh [pp, dp_replicate, efsdp, ep] with ep dividing
  dp_shard x cp x tp and no TP dimension (torchtitan/distributed/parallel_dims.py@b5bcd76 L187-192, L242, L282):
  experts stay whole and FSDP shards them over efsdp = dp_shard x cp x tp / ep (L282).
* deepspeed: etp 1 with the experts replicated over the tensor-parallel ranks — DeepSpeed-MoE's
  enable_expert_tensor_parallelism defaults to False (deepspeed/moe/layer.py MoE.__init__) and its expert and
  expert-data groups are carved from the data-parallel ranks of each model-parallel rank
  (deepspeed/utils/groups.py _create_expert_and_data_parallel).
* hf, llmc: no tensor parallelism (etp 1).
"""

from __future__ import annotations

EXPERT_TP_FOLLOWS_TP = ("megatron", "generic")
"""Frameworks whose expert TP is tp where not given (Megatron-Core's default)."""
EXPERTS_REPLICATED_OVER_TP = ("deepspeed",)
"""Frameworks that keep whole experts on every tensor-parallel rank (DeepSpeed-MoE)."""


def expert_tp_for(framework: str, given: int | None = None) -> int | None:
    """The expert tensor-parallel degree ``framework`` runs: ``given`` (--etp) where given, else None (= tp)
    under Megatron-Core, 1 elsewhere."""
    if given is not None:
        return given
    return None if framework in EXPERT_TP_FOLLOWS_TP else 1


def expert_layout_fields(framework: str, given: int | None = None) -> dict:
    """core.parallel.ParallelLayout's expert fields for ``framework`` (etp, experts_replicated_over_tp)."""
    return {"etp": expert_tp_for(framework, given),
            "experts_replicated_over_tp": framework in EXPERTS_REPLICATED_OVER_TP}
