"""The parallel layout of a training run and the checks that say whether it can exist.

Degrees follow Megatron-LM / torchtitan naming: world = dp x tp x pp x cp GPUs; experts are
split over ep ranks carved out of dp x cp (Megatron-Core MoE); ZeRO stage 0-3 (3 = FSDP full
shard) shards model states over the data-parallel group, or over ``shard_group`` ranks of it
(HSDP: shard within the group, replicate across groups).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.core.expert_layout import resolved_expert_tp
from gpuplan.core.model.spec import ModelSpec
from gpuplan.errors import InputError


@dataclass(frozen=True)
class ParallelLayout:
    """One training layout. Batch sizes are in sequences."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    vpp: int = 1
    """Virtual stages per pipeline rank (interleaved 1F1B when > 1)."""
    cp: int = 1
    ep: int = 1
    etp: int | None = None
    """Expert tensor-parallel degree: how many ways each routed expert's matrices are split (Megatron-Core's
    --expert-tensor-parallel-size); None = tp, Megatron-Core's default (megatron/training/arguments.py@d98e8a6
    L587-588). Experts are laid out over etp x ep ranks of each pipeline stage, the expert data-parallel
    group taking the rest: dp x cp x tp / (etp x ep) (parallel_state.py, expert rank order tp-ep-dp-pp)."""
    experts_replicated_over_tp: bool = False
    """DeepSpeed-MoE: each tensor-parallel rank keeps whole experts (deepspeed/moe/layer.py
    enable_expert_tensor_parallelism=False, with etp 1) and the expert groups are carved from the
    data-parallel ranks alone (deepspeed/utils/groups.py _create_expert_and_data_parallel): the expert
    data-parallel group is dp x cp / ep."""
    zero: int = 0
    """0 = replicated (DDP), 1 = optimizer states, 2 = + gradients, 3 = + parameters (FSDP)."""
    shard_group: int | None = None
    """Ranks that shard model states (HSDP); None = the whole data-parallel group."""
    micro_batch: int = 1
    global_batch: int | None = None
    """Sequences per optimizer step; None = micro_batch x dp (no gradient accumulation)."""
    sequence_parallel: bool = True
    """Megatron sequence parallelism (activations outside the TP regions split by tp)."""

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def batch(self) -> int:
        return self.global_batch if self.global_batch is not None else self.micro_batch * self.dp

    @property
    def micro_batches_per_step(self) -> int:
        """Micro-batches each data-parallel rank runs per optimizer step."""
        return self.batch // (self.micro_batch * self.dp)

    @property
    def state_shards(self) -> int:
        """Ranks over which ZeRO/FSDP shards model states (dense parameters)."""
        return self.shard_group or self.dp * self.cp

    @property
    def expert_tp(self):
        """The expert tensor-parallel degree in force (etp, or tp where None)."""
        return resolved_expert_tp(self.etp, self.tp, self.ep)

    @property
    def expert_state_shards(self):
        """Ranks over which expert states are sharded: the expert data-parallel group (state_shards x tp /
        (etp x ep); DeepSpeed-MoE: state_shards / ep), at least 1."""
        return expert_data_group(self.state_shards, self.tp, self.ep, self.expert_tp, self.experts_replicated_over_tp)


def expert_data_group(data, tp, ep, etp, replicated_over_tp: bool = False):
    """Ranks of the expert data-parallel group beside ``data`` (dp x cp, or an HSDP shard group) data-parallel
    ranks: data x tp / (etp x ep), at least 1 — Megatron-Core's expert_data_parallel_size = world // (etp x ep x
    pp) (parallel_state.py@core_v0.14.0 L697-717), torchtitan's efsdp = dp_shard x cp x tp / ep (etp 1,
    distributed/parallel_dims.py@b5bcd76 L187-192, L282); DeepSpeed-MoE (``replicated_over_tp``): data / ep. Degrees may be
    numpy arrays."""
    import numpy as np

    spanned = 1 if replicated_over_tp else np.asarray(tp) / etp
    return np.maximum(np.asarray(data) * spanned / np.maximum(ep, 1), 1)


def hsdp_expert_refusal(layout: ParallelLayout) -> str | None:
    """Why the experts cannot be laid out within ``layout``'s shard group (None: they can, or no group / ep 1).
    HSDP_EXPERT_RULE: the expert data-parallel group must split evenly over the replicas -- Megatron-Core asserts
    expert_data_parallel_size % num_distributed_optimizer_instances == 0 (parallel_state.py@core_v0.16.0
    L1263-1267), i.e. shard x tp / (etp x ep) whole; torchtitan raises unless ep divides dp_shard x cp x tp
    (parallel_dims.py@b5bcd76 L187-192; its etp is 1 under ep, efsdp = dp_shard x cp x tp / ep, L282), the same
    number. DeepSpeed refuses MiCS with MoE (engine.py@edaa722 L1904-1907 'AutoEP with ZeRO Stage 3 does not
    support MiCS yet'; its native MoE refuses ZeRO-3 at L1889-1891)."""
    group = layout.shard_group
    if group is None or layout.ep == 1:
        return None
    if layout.experts_replicated_over_tp:
        return MICS_NO_EXPERTS.format(ep=f" (ep {layout.ep})")
    etp = layout.expert_tp
    if not experts_split_within(group, layout.tp, etp, layout.ep):
        return (f"{EXPERTS_WITHIN_GROUP}: shard group x tp = {group * layout.tp} must be a multiple of "
                f"etp x ep = {etp * layout.ep} (the expert data-parallel group splits over the replicas)")
    return None


def experts_split_within(group, tp, etp, ep):
    """HSDP_EXPERT_RULE as a test (bool, or a numpy bool array where the degrees are arrays): ep 1, or shard group x tp
    a multiple of etp x ep (hsdp_expert_refusal's sources). The one predicate the planner's refusal and check_layout
    read; planner.space.expert_region_ranks states the same rule as the ranks ep must divide."""
    return (ep == 1) | ((group * tp) % (etp * ep) == 0)


MICS_NO_EXPERTS = "DeepSpeed runs no MiCS shard group with expert parallelism{ep}: give --ep 1, or leave the shard group out"
"""The one text for DeepSpeed's refusal of MiCS with MoE (engine.py@edaa722 L1904-1907); ``ep`` the degree's words."""
EXPERTS_WITHIN_GROUP = "the experts are sharded within it"
"""The opening both expert refusals share (a fixed layout here, a search in planner.shard_group_refusal)."""


HSDP_EXPERT_RULE = "shard_group x tp a multiple of etp x ep (hsdp_expert_refusal)"
"""The rule the planner's space (planner.space.expert_region_ranks) and check_layout share."""


def layers_per_stage(num_layers: int, pp: int) -> int:
    """Layers on the fullest pipeline stage (Megatron puts ceil(L/pp) on each but the last)."""
    return math.ceil(num_layers / pp)


def virtual_stages_fit(num_layers: int, pp: int, vpp: int) -> bool:
    """Whether pp x vpp (virtual) pipeline stages can hold ``num_layers``: at most one per layer,
    or up to layers + 2 when pp x vpp divides that — Megatron-Core's embedding/loss split
    (account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split) counts the
    embedding and the loss as a layer each, the first and last virtual stage building one layer
    fewer (megatron/core/transformer/transformer_block.py get_num_layers_to_build)."""
    split = vpp > 1 and (num_layers + 2) % (pp * vpp) == 0
    return pp * vpp <= num_layers + 2 * split


def kv_heads_below_tp(spec: ModelSpec, tp):
    """Whether tp exceeds the model's key/value heads (never for MLA, whose K/V come from one latent):
    the layouts only a framework that sub-shards the QKV activation runs (check_model_degrees).
    Array-friendly."""
    attn = spec.attention
    return (not attn.is_mla) & (attn.num_kv_heads < tp)


def check_kv_heads(spec: ModelSpec, tp: int, kv_subsharding: bool = False, framework: str = "") -> None:
    """Raise InputError when tp does not fit the key/value heads. Splitting them (Megatron-Core before 0.16,
    torchtitan's ColwiseParallel wk / wv) needs tp to divide them. ``kv_subsharding``: the framework also runs
    tp a multiple of them (Megatron-Core 0.16: transformer_config.py@core_v0.16.0 L939-946 'num_query_groups
    must be a multiple or divisor of tensor_model_parallel_size'; attention.py@core_v0.16.0 L289-300,
    L1264-1278, L1397-1416: linear_qkv's weight stays split evenly over the TP ranks, each rank all-gathers the
    mixed QKV activation and keeps its K/V head and its num_heads / tp query heads: core.comm.qkv_gather
    times it). torchtitan views each rank's wk / wv (or fused wqkv) shard as whole heads ('Use -1 ... as TP may
    have sharded them', torchtitan/models/common/attention.py@b5bcd76 L697-705, L766-771): tp must divide them."""
    attn = spec.attention
    kv = attn.num_kv_heads
    if attn.is_mla or kv % tp == 0:
        return
    if not kv_subsharding:
        under = f" under --framework {framework}" if framework else ""
        raise InputError("tp", tp, f"must divide the {kv} key/value heads{under} (only Megatron-Core 0.16's QKV "
                         "sub-sharding, --framework megatron or generic, runs tp a multiple of them)")
    if tp % kv:
        raise InputError("tp", tp, f"must divide or be a multiple of the {kv} key/value heads (Megatron-Core "
                         "transformer_config.py@core_v0.16.0 L939-946)")


def check_model_degrees(spec: ModelSpec, *, tp: int = 1, pp: int = 1, vpp: int = 1, ep: int = 1, cp: int = 1,
                        seq_len: int | None = None, kv_subsharding: bool = False, framework: str = "") -> None:
    """Raise InputError naming the first degree the model itself rules out, whatever the GPU
    count: tp not dividing the attention heads or not fitting the key/value heads (check_kv_heads:
    ``kv_subsharding``, the framework runs tp a multiple of them; ``framework`` names it in the
    refusal), pp·vpp beyond the layers, ep on a dense model or not dividing the experts, 2·cp not
    dividing the sequence. The planner checks the degrees a user fixed with it before any count is
    searched; check_layout applies it to a whole layout."""
    attn = spec.attention
    if attn.num_heads % tp:
        raise InputError("tp", tp, f"must divide the {attn.num_heads} attention heads")
    check_kv_heads(spec, tp, kv_subsharding, framework)
    if not virtual_stages_fit(spec.num_layers, pp, vpp):
        raise InputError("pp", pp if vpp == 1 else f"{pp} x vpp {vpp}",
                         f"pipeline stages cannot exceed the {spec.num_layers} layers")
    if ep > 1:
        experts = spec.moe.num_experts if spec.moe else 0
        if not experts:
            raise InputError("ep", ep, f"{spec.name} has no experts (dense); expert parallelism must be 1")
        if experts % ep:
            raise InputError("ep", ep, f"must divide the number of experts ({experts})")
    if seq_len is not None and cp > 1 and seq_len % (2 * cp):
        # Megatron-Core's load-balanced ring attention cuts each sequence into 2·cp chunks
        # (megatron/core/utils.py get_batch_on_this_cp_rank); torch's context_parallel load
        # balancer does the same (torch/distributed/tensor/experimental/_attention.py)
        raise InputError("cp", cp, f"2 x cp must divide the sequence length {seq_len:,} (each sequence is cut "
                         f"into 2·cp load-balanced chunks)")


def check_expert_layout(spec: ModelSpec, layout: ParallelLayout) -> None:
    """Raise InputError where the experts cannot be laid out: etp x ep must divide dp x cp x tp, the ranks of a
    pipeline stage (Megatron-Core's initialize_model_parallel asserts world % (etp x ep x pp) == 0,
    parallel_state.py; torchtitan asserts ep divides dp_shard x cp x tp, parallel_dims.py@b5bcd76 L187-192), or ep
    dp x cp where DeepSpeed-MoE carves it from the data-parallel ranks; etp must split each expert's width
    (Megatron-Core's TEGroupedMLP shards moe_ffn_hidden_size over the expert TP group)."""
    etp, data = layout.expert_tp, layout.dp * layout.cp
    if layout.etp is not None and not isinstance(layout.etp, str):  # a number (str: the framework's rule)
        if not isinstance(layout.etp, int) or layout.etp < 1:
            raise InputError("etp", layout.etp, "must be a positive integer")
        if spec.moe is None and layout.etp > 1:
            raise InputError("etp", layout.etp, f"{spec.name} has no experts (dense); expert tensor parallelism "
                             "must be 1 or left out")
        if layout.experts_replicated_over_tp and layout.etp != 1:
            raise InputError("etp", layout.etp, "DeepSpeed-MoE keeps whole experts on each tensor-parallel rank "
                             "(enable_expert_tensor_parallelism off): give --etp 1 or leave it out")
    given = isinstance(layout.etp, int)  # --etp (None: tp; a str: the framework's rule, core.expert_layout)
    if spec.moe is not None and spec.moe.expert_intermediate_size % etp:
        raise InputError("etp" if given else "tp", etp, f"must divide the expert width "
                         f"({spec.moe.expert_intermediate_size:,}; expert tensor parallelism splits it)")
    if layout.experts_replicated_over_tp:
        if layout.ep > 1 and data % layout.ep:
            raise InputError("ep", layout.ep, f"must divide dp x cp = {data} (DeepSpeed-MoE carves expert "
                             "parallelism out of the data-parallel ranks)")
        return
    ranks = data * layout.tp
    if ranks % (etp * layout.ep):  # at ep 1 too: an --etp beyond the stage's ranks (review s18 M2)
        field = "ep" if layout.ep > 1 else "etp"
        raise InputError(field, getattr(layout, field), f"etp {etp} x ep {layout.ep} must divide dp x cp x tp = "
                         f"{ranks} (the experts are laid out over etp x ep of a pipeline stage's ranks"
                         f"{'; etp = tp unless --etp is given' if layout.etp is None else ''})")


def check_layout(spec: ModelSpec, layout: ParallelLayout, gpus: int | None = None,
                 seq_len: int | None = None, kv_subsharding: bool = False, framework: str = "") -> None:
    """Raise InputError naming the first constraint the layout breaks (``kv_subsharding``, ``framework``:
    check_model_degrees')."""
    for name in ("dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch"):
        value = getattr(layout, name)
        if not isinstance(value, int) or value < 1:
            raise InputError(name, value, "must be a positive integer")
    if layout.zero not in (0, 1, 2, 3):
        raise InputError("zero", layout.zero, "must be 0, 1, 2 or 3")
    if gpus is not None and layout.world != gpus:
        raise InputError("layout", f"dp {layout.dp} x tp {layout.tp} x pp {layout.pp} x cp {layout.cp}",
                         f"= {layout.world} GPUs, but the plan has {gpus}; dp·tp·pp·cp must equal the GPU count")
    check_model_degrees(spec, tp=layout.tp, pp=layout.pp, vpp=layout.vpp, ep=layout.ep, cp=layout.cp,
                        seq_len=seq_len, kv_subsharding=kv_subsharding, framework=framework)
    check_expert_layout(spec, layout)
    if layout.shard_group is not None and (layout.dp * layout.cp) % layout.shard_group:
        raise InputError("shard_group", layout.shard_group, "must divide the data-parallel ranks that shard "
                         f"(dp x cp = {layout.dp * layout.cp}): give a divisor of it, or leave it out")
    why = hsdp_expert_refusal(layout)
    if why:
        raise InputError("shard_group", layout.shard_group, why)
    if layout.global_batch is not None and layout.global_batch % (layout.micro_batch * layout.dp):
        raise InputError("global_batch", layout.global_batch,
                         f"must be a multiple of micro_batch x dp = {layout.micro_batch * layout.dp}")
