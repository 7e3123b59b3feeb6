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

``auto`` (V.SHARD_GROUP_SEARCH): the planner searches the groups itself (planner.shard_group_search) where it picks
the layout (plan, train, budget); `memory` takes a fixed layout and refuses it (jobs.memory.schema). The stage and
framework rules above hold for it as for a number (llmc, ZeRO 0, a stage the framework runs no group with).
"""

from __future__ import annotations

from pydantic import model_validator

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.errors import InputError
from gpuplan.planner.framework_rules import shard_group_refusal
from gpuplan.report.model import Assumption
from gpuplan.schema import vocabulary as V
from gpuplan.schema.partition_activations import PartitionActivationsFields


def fixed_shard_group(value) -> int | None:
    """The group a search holds every layout to: the number given, None for auto or not given."""
    return None if value is None or value == V.SHARD_GROUP_SEARCH else value


def searches_shard_groups(value) -> bool:
    """Whether --shard-group asks the planner to search the groups (auto)."""
    return value == V.SHARD_GROUP_SEARCH


def check_shard_group(framework: str, zero: int | None, shard_group: int | str | None, default: bool = False,
                      fixed_layout: bool = False) -> None:
    """InputError naming shard_group where ``framework`` does not run ZeRO ``zero`` (None: the planner's choice)
    with a shard group (planner.framework_rules.shard_group_refusal); ``fixed_layout``: the command takes the
    layout as given (`memory`), where auto (a search) is refused."""
    if shard_group is None:
        return
    if fixed_layout and searches_shard_groups(shard_group):
        raise InputError("shard_group", shard_group, "`memory` checks one fixed layout: give a group of 2 or more "
                         "data-parallel ranks dividing dp x cp (auto is for plan, train and budget, which search)")
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
    group = getattr(inputs, "shard_group", None)
    if group is None:
        return ()
    if searches_shard_groups(group):
        return _searched_assumption(layout, _node_of(inputs))
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


def _node_of(inputs) -> int | None:
    """GPUs a node, as the search counts them (Accelerator.link_node: cluster_for's node, --gpus-per-node where
    given); None where unknown."""
    try:
        return resolve_gpu(getattr(inputs, "gpu", None)).link_node(getattr(inputs, "gpus_per_node", None))
    except InputError:  # resolve_gpu's one refusal (no name, not the catalog's): the job refused it already
        return None


def _searched_assumption(layout, node: int | None = None) -> tuple:
    """The assumption line of --shard-group auto: the group the planner chose for ``layout`` (or plain sharding,
    or ZeRO 0, or no candidate group: planner.shard_group_search.node_groups of its dp x cp on ``node``-GPU nodes)."""
    from gpuplan.planner.shard_group_search import node_groups  # lazy, not for a cycle (import_cycles.py lists none
    # with it at the top): it loads numpy, which the schemas, train --help and a refusal never load (test_startup)

    group = getattr(layout, "shard_group", None)
    data = layout.dp * layout.cp if layout is not None else None
    if group and data and group < data:
        shown = (f"auto: HSDP chosen, model states sharded within {group:,} data-parallel ranks, {data // group:,} "
                 f"replicas of dp x cp = {data:,}")
    elif layout is not None and not layout.zero:
        shown = "auto: the answer runs ZeRO 0, nothing sharded (no shard group applies to it)"
    elif data and node and not node_groups(data, node):
        shown = (f"auto: plain sharding (every data-parallel rank shards); no candidate group: dp x cp = {data:,} "
                 f"has no group of whole {node}-GPU nodes below it")
    else:
        shown = "auto: plain sharding chosen (every data-parallel rank shards; no HSDP layout searched ranked ahead)"
    return (Assumption("shard_group", "hybrid sharding (HSDP)", shown, "planner.shard_group_search: groups of whole "
                       "nodes below dp x cp, ranked with plain sharding", "--shard-group", True),)
