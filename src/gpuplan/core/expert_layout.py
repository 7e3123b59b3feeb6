"""Expert tensor parallelism as each framework lays it out: how many ways a routed expert's matrices are split
(etp) and which ranks share an expert's gradients. Memory (core.parallel.ParallelLayout.etp) and time
(core.time.step_settings.StepSettings.expert_tp) read the one value expert_tp_for gives.

* megatron, generic: etp = tp unless --etp is given — Megatron-Core sets expert_tensor_parallel_size to
  tensor_model_parallel_size when it is not given (megatron/training/arguments.py@d98e8a6 L587-588). Megatron-Bridge's
  MoE recipes set it to 1 (src/megatron/bridge/recipes/qwen/qwen3_moe.py, perf_recipes), as the published rows
  state (jobs.validation.published_throughput).
* torchtitan: 1 with expert parallelism, tp without it (TP_WITHOUT_EP). With ep > 1 its expert region is the mesh
  [pp, dp_replicate, efsdp, ep] with ep dividing dp_shard x cp x tp and no TP dimension
  (torchtitan/distributed/parallel_dims.py@b5bcd76 L187-192, L242, L282): experts stay whole and FSDP shards them over
  efsdp = dp_shard x cp x tp / ep. With ep 1 and tp > 1 the experts are sharded on the dense TP axis and their input
  replicated over it (models/common/moe_sharding.py@b5bcd76 expert_param_placement_dense L50-67,
  _routed_experts_sharding_configs L201-225): etp = tp (review s18 M1).
* deepspeed: etp 1 with the experts replicated over the tensor-parallel ranks — DeepSpeed-MoE's
  enable_expert_tensor_parallelism defaults to False (deepspeed/moe/layer.py MoE.__init__) and its expert and
  expert-data groups are carved from the data-parallel ranks of each model-parallel rank
  (deepspeed/utils/groups.py _create_expert_and_data_parallel).
* hf, llmc: no tensor parallelism (etp 1).
"""

from __future__ import annotations

TP_WITHOUT_EP = "tp-without-ep"
"""torchtitan's expert TP: tp where ep is 1, 1 where ep > 1 (module docstring); resolved per layout by
resolved_expert_tp."""
EXPERT_TP_FOLLOWS_TP = ("megatron", "generic")
"""Frameworks whose expert TP is tp where not given (Megatron-Core's default)."""
EXPERTS_REPLICATED_OVER_TP = ("deepspeed",)
"""Frameworks that keep whole experts on every tensor-parallel rank (DeepSpeed-MoE)."""


def expert_tp_for(framework: str, given: int | None = None) -> int | str | None:
    """The expert tensor-parallel degree ``framework`` runs: ``given`` (--etp) where given, else None (= tp)
    under Megatron-Core, TP_WITHOUT_EP under torchtitan, 1 elsewhere."""
    if given is not None:
        return given
    if framework in EXPERT_TP_FOLLOWS_TP:
        return None
    return TP_WITHOUT_EP if framework == "torchtitan" else 1


def resolved_expert_tp(expert_tp, tp, ep):
    """The etp in force for ``expert_tp`` (expert_tp_for's value) at degrees ``tp`` and ``ep`` (numbers or arrays):
    tp where None, tp or 1 by ep under TP_WITHOUT_EP, else the value."""
    if expert_tp is None:
        return tp
    if expert_tp == TP_WITHOUT_EP:
        import numpy as np  # lazily: the schema imports this module, and its help loads no numpy (issue 39)

        etp = np.where(np.asarray(ep) > 1, 1, tp)
        return int(etp) if etp.ndim == 0 else etp
    return expert_tp


def experts_replicated_over_tp(frameworks: tuple[str, ...]) -> bool:
    """Whether ``frameworks`` keep whole experts on every tensor-parallel rank (EXPERTS_REPLICATED_OVER_TP): one
    framework (memory: expert_layout_fields), or those running one data-parallel schedule (time: core.comm.dp_costs,
    whose StepSettings carries the schedule, not the framework), which must agree."""
    replicated = {name in EXPERTS_REPLICATED_OVER_TP for name in frameworks}
    if len(replicated) > 1:
        raise ValueError(f"frameworks {', '.join(frameworks)} share a data-parallel schedule but not whether experts "
                         "are replicated over tp: give StepSettings the framework's own flag")
    return replicated == {True}


def expert_layout_fields(framework: str, given: int | None = None) -> dict:
    """core.parallel.ParallelLayout's expert fields for ``framework`` (etp, experts_replicated_over_tp)."""
    return {"etp": expert_tp_for(framework, given),
            "experts_replicated_over_tp": experts_replicated_over_tp((framework,))}
