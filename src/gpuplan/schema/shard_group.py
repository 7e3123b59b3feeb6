"""--shard-group: HSDP (hybrid sharding), one field for memory / plan / train / budget, plan files, the web API and
the Python API (schema.training_fields.LayoutFields inherits ShardGroupFields; vocabulary.ShardGroup defines it).

The model states are sharded within groups of ``shard_group`` data-parallel ranks and replicated across the
dp x cp / shard_group groups: each step reduce-scatters the gradients and all-gathers the parameters within a group
and all-reduces each gradient shard across the groups (core.parallel.ParallelLayout.shard_group,
core.memory.model_states.state_shards, core.comm.dp_costs 'HSDP all-reduce'). Checked here, one line naming the
field: ZeRO 1 or more (ZeRO 0 shards nothing), and the stages the framework runs it with
(planner.framework_rules.HSDP_ZERO_STAGES: torchtitan's HSDP, Megatron-Core's distributed-optimizer instances and
Megatron-FSDP, DeepSpeed's MiCS, the Trainer's HYBRID_SHARD). That it divides dp x cp is checked where dp is known:
`memory` (core.parallel.check_layout) and the planner, which keeps the layouts it divides (planner.space) and says
so when none is left (planner.shard_group_refusal). A group of 1 is refused (DDP in effect).
"""

from __future__ import annotations

from pydantic import model_validator

from gpuplan.errors import InputError
from gpuplan.schema import vocabulary as V
from gpuplan.schema.partition_activations import PartitionActivationsFields


def check_shard_group(framework: str, zero: int | None, shard_group: int | None, default: bool = False) -> None:
    """InputError naming shard_group where ``framework`` does not run ZeRO ``zero`` (None: the planner's choice)
    with a shard group (planner.framework_rules.shard_group_refusal)."""
    from gpuplan.planner.framework_rules import shard_group_refusal

    if shard_group is None:
        return
    why = shard_group_refusal(framework, zero, shard_group, default)  # default: ``zero`` is the framework's, not given
    if why is not None:
        raise InputError("shard_group", shard_group, why)


class ShardGroupFields(PartitionActivationsFields):
    """HSDP's shard group (core.comm.dp_costs, core.memory.model_states)."""

    shard_group: V.ShardGroup

    @model_validator(mode="after")
    def _shard_group_rules(self) -> "ShardGroupFields":
        check_shard_group(getattr(self, "framework", "generic"), getattr(self, "zero", None), self.shard_group)
        return self


def shard_group_assumption(inputs, layout=None) -> tuple:
    """The assumption line where a shard group is given (none otherwise: every data-parallel rank shards);
    ``layout``: the plan's (its dp x cp names the replicas)."""
    from gpuplan.report.model import Assumption

    group = getattr(inputs, "shard_group", None)
    if group is None:
        return ()
    data = layout.dp * layout.cp if layout is not None else None
    if data == group:  # the group is the whole dp x cp (review s21 R2 S2): no replicas to all-reduce across
        shown = (f"shard group {group:,} = dp x cp: one replica, plain sharding, no HSDP all-reduce")
    else:
        replicas = f"{data // group:,} replicas of dp x cp = {data:,}" if data else "dp x cp / shard group replicas"
        shown = (f"HSDP: model states sharded within {group:,} data-parallel ranks, {replicas}; gradient shards "
                 "all-reduced across them")
    return (Assumption("shard_group", "hybrid sharding (HSDP)", shown, "torchtitan@b5bcd76 parallel_dims.py; "
                       "Megatron-Core num_distributed_optimizer_instances; DeepSpeed MiCS; core/comm/dp_costs.py",
                       "--shard-group", True),)
