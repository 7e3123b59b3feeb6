"""The data-parallel collectives of one step — gradient reduce-scatter (all-reduce without sharded
states), parameter all-gather, HSDP's all-reduce across replicas — each timed by core.comm.collectives on
its group's links and left on the critical path as the framework's schedule allows
(core.comm.dp_overlap). The data group is dp x cp ranks, tp apart in the rank order (Megatron
'tp-cp-ep-dp-pp'); HSDP shards within ``shard_group`` of them.

ZeRO stages: 0 all-reduces the gradients; 1 and 2 (Megatron's distributed optimizer) reduce-scatter
them and all-gather the updated parameters once a step (1 with ``grad_all_reduce``: all-reduce, then the
gather; ALL_REDUCE_THEN_GATHER; DeepSpeed's 1 and 2 all-reduce each of their 5e8-element buckets and gather
once, _unit_seconds / deepspeed_buckets); 3 (FSDP) gathers every layer before its
forward and its backward and reduce-scatters its gradients (core.comm.zero3_gathers for DeepSpeed's
extra gathers under recompute). torchtitan's ZeRO-2 is FSDP2 without reshard after forward (fsdp2_no_reshard):
ZeRO-3's collectives with one gather a micro-batch. Values may be numbers or numpy arrays. Units: seconds, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from gpuplan.core.comm import collectives as K
from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.comm.collective_cost import CollectiveCost
from gpuplan.core.comm.fsdp2_embedding import embedding_across, embedding_cost, embedding_unit
from gpuplan.core.comm.fsdp2_reshard import fsdp2_no_reshard
from gpuplan.core.frameworks import framework, runs_bf16_optimizer
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.expert_layout import experts_replicated_over_tp, resolved_expert_tp
from gpuplan.core.comm.per_gpu_params import (expert_data_ranks, expert_share, matrices_per_gpu,  # noqa: F401
                                              params_per_gpu, routed_per_gpu, routed_split)  # (re-exported)
from gpuplan.core.row_groups import group_rows
from gpuplan.core.comm.zero3_gathers import gathers_per_micro_batch, layer_submodule_params

# PyTorch DDP's default bucket: bucket_cap_mb = 25 (torch/nn/parallel/distributed.py)
DDP_BUCKET_BYTES = 25 * 2**20
ALL_REDUCE_THEN_GATHER = "DeeperSpeed@eb7f5cff runtime/pipe/engine.py L234-246, zero/stage1.py L761-772"
"""Where ZeRO-1 all-reduces every gradient and then all-gathers the updated shards (StepSettings.grad_all_reduce):
2S + S on a ring, where a reduce-scatter + all-gather moves S + S. GPT-NeoX v1.0 trains through DeepSpeed's
PipelineEngine even at pipe-parallel-size 1 (megatron/neox_arguments/arguments.py@v1.0 L826); its DeeperSpeed
(eb7f5cff, DeepSpeed 0.3.15) ``_exec_reduce_grads`` calls ``buffered_allreduce_fallback`` on every gradient
(500M-element buckets) after the last backward, bypassing ``allreduce_gradients``, whose stage-1 branch would
have reduce-scattered (engine.py L1023-1038: ``zero_reduce_scatter``, the Pythia configurations'
``reduce_scatter: true``), and its stage-1 optimizer then all-gathers the updated fp16 sub-partitions
(``dist.all_gather`` per communication interval), in fp16 (``fp32_allreduce`` not set). BLOOM's DeepSpeed
(olruwase/bf16-updates 5ea1c60f8) does the same under bf16: pipe/engine.py L250-267 ``_bf16_reduce_grads``
all-reduces the BF16_Optimizer's fp32 gradient copy cast to bf16 per bucket (engine.py L2063-2069, L712-719),
and bf16_optimizer.py L359 all-gathers the updated partitions."""


def _units(spec: ModelSpec, settings, trained_params, grads, data, layers, zero3, zero=1):
    """(gradient units, parameter-gather units): how many pieces the traffic goes out in. Under ZeRO-3 a layer
    each (an FSDP unit: one flat parameter per block) or, DeepSpeed, each linear submodule of a layer (its
    pre-forward hook gathers one module's parameters at a time, deepspeed/runtime/zero/parameter_offload.py);
    DeepSpeed's ZeRO 0-2 in its own buckets (deepspeed_buckets, DEEPSPEED_GATHERS); else Megatron's buckets, or
    DDP's 25 MiB ones, the gather in the gradients' buckets. settings.dp_bucket_params (NeMo 2 / Megatron-Bridge's
    comm-overlap setup) sizes Megatron's buckets only under the distributed optimizer (``zero`` >= 1) and over more than
    one data rank, as that setup applies it (core.comm.dp_overlap.NEMO_BUCKET_PARAMS)."""
    per_layer = 1
    if settings.dp_schedule == "ddp":
        buckets = gather = np.maximum(np.ceil(np.asarray(grads, dtype=float) / DDP_BUCKET_BYTES), 1.0)
    elif settings.dp_schedule == "deepspeed":
        buckets, gather = deepspeed_buckets(trained_params), DEEPSPEED_GATHERS
        per_layer = len(layer_submodule_params(spec))
    else:
        buckets = gather = O.megatron_buckets(trained_params, data)
        if settings.dp_bucket_params:
            recipe = (np.asarray(zero) >= 1) & (np.asarray(data) > 1)
            buckets = gather = np.where(recipe, O.megatron_buckets(trained_params, data, settings.dp_bucket_params),
                                        buckets)
    sharded = np.maximum(np.asarray(layers, dtype=float), 1.0) * per_layer
    return np.where(zero3, sharded, buckets), np.where(zero3, sharded, gather)


@dataclass(frozen=True)
class ParamGather:
    """The data-parallel parameter all-gather: its bytes (every ZeRO stage's gathers) and, for Megatron's
    distributed optimizer (ZeRO 1-2), whether it overlaps the next forward (ZeRO-3's gathers: their own schedule)."""

    bytes: float = 2.0
    """Bytes an element on the wire (bf16 2), the layer matrices' too unless fp8_matrices."""
    fp8_matrices: bool = False
    """Transformer Engine holds the layer matrices as primary per-tensor FP8 weights (fp8_param_gather): they
    gather at 1 B an element (gather_bytes); torchtitan's FSDP2 float8 all-gather too (core.time.titan_float8)."""
    overlapped: bool = True
    """Megatron's overlap_param_gather: the gather runs bucket by bucket under the next forward
    (core.comm.dp_overlap.bucketed_exposed); False: the optimizer step issues it synchronously and all of it
    is exposed (optimizer/distrib_optimizer.py@core_v0.15.0 step_with_ready_grads L2590-2596: start_param_sync
    per model chunk when not ddp_config.overlap_param_gather)."""


def gather_bytes(spec: ModelSpec, param_gather: ParamGather, tp, pp, ep, expert_tp=1):
    """Bytes of one rank's parameters on the gather's wire. With fp8_matrices (primary per-tensor FP8 weights:
    Megatron-Bridge's FP8-CS preset sets fp8_param_gather = True, training/mixed_precision.py@v0.1.0rc4 L268,
    @v0.2.2 L289, @v0.3.0 L289) Megatron-Core buffers a Float8Tensor's data as torch.uint8
    (distributed/distributed_data_parallel.py@core_v0.14.0 L225-233, @core_v0.16.0 L142-146; Megatron-FSDP's too,
    megatron_fsdp/param_and_grad_buffer.py@core_v0.14.0 L1806-1810) and gathers that
    buffer (param_and_grad_buffer.py start_param_sync: all_gather of bucket.param_data): 1 B a matrix element;
    the scale comes from an all-reduce of one amax a tensor (fp8_utils.py@core_v0.14.0 L264, L351: bytes
    negligible); the rest (embedding, LM head, norms) stays ``param_gather.bytes``. TE's GroupedLinear experts
    are primary FP8 too (module/grouped_linear.py@v1.13 L645, base.py L448). Not MXFP8: its primary weights
    gather in bf16 through the gradient buffer (reuse_grad_buf_for_mxfp8_param_ag; param_and_grad_buffer.py
    @core_v0.14.0 L681-695, @core_v0.16.0 L779-792: param_data is a bf16 view of the shared grad buffer;
    L304-322: each param quantises its gathered slice)."""
    held = params_per_gpu(spec, tp, pp, ep, expert_tp) * param_gather.bytes
    if not param_gather.fp8_matrices:
        return held
    return held - matrices_per_gpu(spec, tp, pp, ep, expert_tp) * (param_gather.bytes - 1.0)


def deepspeed_buckets(trained_params):
    """DeepSpeed's gradient buckets below ZeRO-3 for one rank's ``trained_params``: reduce_bucket_size elements
    each (zero/config.py@edaa722 L113, 5e8; the memory model's core.frameworks.bucket_bytes reads the same
    FrameworkProfile.bucket_elements). ZeRO-1/2 fill an IPG bucket and reduce it when the next gradient would
    overflow it (stage_1_and_2.py@edaa722 L1201-1203, reduce_ipg_grads L1691-1715); ZeRO-0 and the bf16 pipeline
    reduce through engine.buffered_allreduce_fallback in 5e8-element buffers (engine.py@edaa722 L160
    MEMORY_OPT_ALLREDUCE_SIZE, L2891, L2913, L3784), as DeeperSpeed's (ALL_REDUCE_THEN_GATHER: 500M elements)."""
    return np.maximum(np.ceil(np.asarray(trained_params, dtype=float) / framework("deepspeed").bucket_elements), 1.0)


DEEPSPEED_GATHERS = 1.0
"""DeepSpeed's updated-parameter all-gathers below ZeRO-3, a step: one dist.all_gather_into_tensor per optimizer
parameter group (runtime/utils.py@edaa722 all_gather_dp_groups L1016-1019 -> all_gather_into_tensor_dp_groups
L1005-1013, taken whenever torch.distributed has all_gather_into_tensor; allgather_bucket_size only sizes the older
per-shard path, L1021-1051), from stage_1_and_2.py@edaa722 L2396-2400 and bf16_optimizer.py@edaa722 update_lp_params
L454-464. Counted as one: a training script's second group (no weight decay: norms and biases) is under 0.01% of a
Llama's bytes, one call's latency."""


def _windows(compute, micro_batches, moe_phases, layers):
    """(forward, backward) seconds of one micro-batch on the stage: the per-layer split of
    core.comm.moe_overlap.MoeLayerPhases scaled to the micro-batch's whole time (recompute, head)."""
    t_mb = np.asarray(compute, dtype=float) / np.maximum(micro_batches, 1)
    if moe_phases is None:
        return t_mb / 3, 2 * t_mb / 3
    fwd = moe_phases.pre_dispatch_forward + moe_phases.mlp_forward
    bwd = moe_phases.pre_dispatch_backward + moe_phases.mlp_backward
    share = np.asarray(fwd, dtype=float) / np.where(np.asarray(fwd + bwd) > 0, fwd + bwd, 1.0)
    return t_mb * share, t_mb * (1 - share)


def experts_replicated(settings) -> bool:
    """Whether the step's routed experts are whole on every tensor-parallel rank (DeepSpeed-MoE), memory's fact
    (core.expert_layout.experts_replicated_over_tp, ParallelLayout.experts_replicated_over_tp) read for the
    frameworks that run ``settings.dp_schedule`` (as fsdp2_reshard.schedule_profile reads states_zero)."""
    return experts_replicated_over_tp(tuple(name for name, runs in O.SCHEDULE_OF_FRAMEWORK.items()
                                            if runs == settings.dp_schedule))


def optimizer_shards(spec: ModelSpec, settings, zero, *, data, tp, pp, ep):
    """How many ways one GPU's trained parameters are split among optimizer shards (its step updates trained /
    optimizer_shards): 1 without sharded states; with ZeRO >= 1 (or DeepSpeed's BF16_Optimizer) the dense ones over
    ``data`` (dp x cp) ranks, the routed experts over expert_data_ranks: Megatron-Core's DDP buffers the experts on
    the expert data-parallel group (distributed_data_parallel.py@core_v0.14.0 L86-88, L378-385), which gets a
    distributed optimizer of its own (optimizer/__init__.py@core_v0.14.0 L706-735) sharding by its size
    (distrib_optimizer.py@core_v0.14.0 L165-173); DeepSpeed's MoE groups too (core.memory.bf16_optimizer).
    1 / ((1 - s) / data + s / expert ranks), s = expert_share."""
    sharded = (np.asarray(zero) >= 1) | runs_bf16_optimizer(settings.deepspeed_bf16, zero, pp)
    share = expert_share(spec, settings, tp, pp, ep)
    experts = np.where(sharded, expert_data_ranks(data, tp, ep, settings.expert_tp, experts_replicated(settings)), 1)
    return 1 / ((1 - share) / np.where(sharded, data, 1) + share / experts)


def _populations(spec: ModelSpec, cluster, settings, *, tp, pp, ep, shard, trained_params):
    """(share of the traffic, group links) of the dense parameters, reduced over the data group
    (shard ranks, tp apart), and of the routed experts, reduced over the expert data-parallel group
    (expert_data_ranks of the shard, etp x ep apart: Megatron-Core's expert rank order tp-ep-dp-pp,
    parallel_state.py)."""
    share = expert_share(spec, settings, tp, pp, ep)
    etp = resolved_expert_tp(settings.expert_tp, tp, ep)
    expert_ranks = expert_data_ranks(shard, tp, ep, settings.expert_tp, experts_replicated(settings))
    return ((1 - share, cluster.group(shard, tp)), (share, cluster.group(expert_ranks, etp * ep)))


def gather_populations(spec: ModelSpec, settings, populations, weights, *, tp, pp, ep):
    """_populations with the shares of the all-gather's ``weights`` bytes (gather_bytes): under fp8_matrices the
    routed experts (all matrices) gather 1 B an element, the dense parameters mix 1 B matrices with the embedding,
    head and norms at param_gather.bytes (Mixtral 8x7B, ep 8: experts 75.1% of 7.505e9 B); else parameter shares."""
    (_, dense), (by_params, experts) = populations
    if not settings.param_gather.fp8_matrices or spec.moe is None:
        return populations
    weights, expert_bytes = np.asarray(weights, dtype=float), routed_per_gpu(spec, tp, pp, ep, settings.expert_tp)
    by_bytes = np.where(np.asarray(by_params) > 0, expert_bytes / np.where(weights > 0, weights, 1.0), 0.0)
    return ((1 - by_bytes, dense), (by_bytes, experts))


def _per_unit(kind: str, size, populations, timers):
    """Seconds of one unit's collective: each population's part on its own group, one after the
    other on the communication stream (``timers``: rows_seconds of each population's links, in order). A
    population with no share anywhere (a dense model's experts) is not costed: its finite seconds x False
    added 0."""
    return sum(seconds(kind, size * share) * (share > 0) for (share, _), seconds in zip(populations, timers)
               if np.ndim(share) or share > 0)


def seconds_by_rows(kind: str, size, links, groups=None):
    """core.comm.collectives.collective_seconds of every row; with ``groups`` (core.row_groups.group_rows)
    each group is costed once, at its first row, and its seconds broadcast back: the same numbers
    (elementwise arithmetic on the same inputs). The contract: the groups' key must determine ``size`` and
    every field of ``links`` row by row -- a new per-row input to a size or to a group's ranks or stride must
    join the key (data_parallel_costs, step_comm._tp_cost) -- and what is the same for every row (the
    StepSettings) must be a scalar. Checked here: each array is one value a row, and each link array one value a
    group (ValueError otherwise: a key that leaves out the job's size, Cluster.job_gpus, where a group straddles
    domains only in some rows' jobs, core.comm.group_geometry); that the key holds every input is checked by
    tests/test_search_dedup.py, searches grouped and not, and tests/test_group_straddle.py on 6-GPU nodes."""
    return rows_seconds(links, groups)(kind, size)


def rows_seconds(links, groups=None):
    """seconds(kind, size): seconds_by_rows on one group's ``links`` for every kind and size a caller costs on
    them. The links' checks (O(rows) an array, the same answer for every size) and their cut to the groups'
    first rows run once, at the first call (links never costed are never checked); each size is checked at
    its call."""
    cut = None

    def seconds(kind: str, size):
        nonlocal cut
        if groups is None:
            return K.collective_seconds(kind, size, links)
        first, inverse = groups
        arrays = {} if cut is not None else {
            f.name: value for f in fields(links) if np.ndim(value := getattr(links, f.name))}
        if any(np.shape(v) != inverse.shape for v in (*arrays.values(), size) if np.ndim(v)):
            raise ValueError(f"seconds_by_rows: a size or link array is not one value for each of {len(inverse)} rows")
        if cut is None:
            if any(not np.array_equal(value, value[first][inverse]) for value in arrays.values()):
                raise ValueError("seconds_by_rows: a link array varies inside a group: the key leaves out an input "
                                 "(the job's size, Cluster.job_gpus?)")
            cut = replace(links, **{name: value[first] for name, value in arrays.items()})
        size = np.asarray(size)[first] if np.ndim(size) else size
        found = K.collective_seconds(kind, size, cut)
        return found[inverse] if np.ndim(found) else found
    return seconds


def data_parallel_costs(spec: ModelSpec, cluster, settings, *, dp, tp, pp, cp, ep, zero, micro_batches,
                        shard_group, layers, trained_params, t_bwd_gemm_mb, compute, moe_phases=None, vpp=1
                        ) -> list[CollectiveCost]:
    """The gradient, parameter and cross-replica collectives of one step, with their exposed share
    (``vpp``: model chunks per pipeline rank, for FSDP2's end-of-step reductions). The collectives are
    costed once per distinct (tp, pp, ep, dp x cp, HSDP shard, ZeRO, layers), the trained parameters
    checked constant within each (core.row_groups): a new per-row input to a size or a group must join
    that key (seconds_by_rows' contract); ``settings`` is one StepSettings of scalars for every row."""
    data = dp * cp
    shard = data if shard_group is None else shard_group
    replicas = data / shard
    populations = _populations(spec, cluster, settings, tp=tp, pp=pp, ep=ep, shard=shard,
                               trained_params=trained_params)
    # what the collectives' sizes and groups depend on, row by row: each distinct combination costed once
    groups = group_rows(tp, pp, ep, data, 1 if shard_group is None else shard, zero, layers, floats=(trained_params,))
    group = populations[0][1]
    across = cluster.group(replicas, tp * shard)
    grads = trained_params * settings.grad_comm_bytes
    weights = gather_bytes(spec, settings.param_gather, tp, pp, ep, settings.expert_tp)
    # torchtitan's ZeRO-2 is FSDP2 without reshard after forward: its collectives are ZeRO-3's, one gather a
    # micro-batch (forward only) where a pipeline does not keep the stage gathered (fsdp2_no_reshard)
    no_reshard = fsdp2_no_reshard(settings, zero)
    zero = np.where(no_reshard, 3, zero)
    zero3 = zero >= 3
    many = np.asarray(shard) > 1
    units, gather_units = _units(spec, settings, trained_params, grads, data, layers, zero3, zero)
    # ZeRO-3 per micro-batch under FSDP2: the embedding is its own unit, outside the blocks' overlap
    per_mb = zero3 & (np.asarray(pp) == 1) & (settings.dp_schedule != "deepspeed")
    embedding = embedding_unit(spec, settings, tp) * (per_mb & many)
    weights = weights - embedding * settings.param_gather.bytes
    grads_emb = embedding * settings.grad_comm_bytes * (settings.finetune == "full")
    grads = grads - grads_emb
    gathers_by = gather_populations(spec, settings, populations, weights, tp=tp, pp=pp, ep=ep)  # the bytes' split
    timers = tuple(rows_seconds(links, groups) for _, links in populations)  # gathers_by's links: the same groups
    shared = _across_bytes(settings, populations, grads, shard, tp=tp, ep=ep)
    reduce_scatter, rs_one, ag_one, ar_across = _unit_seconds(settings, (populations, gathers_by), across, grads,
                                                              weights, (units, gather_units), shared, replicas, zero,
                                                              groups, timers)
    # ZeRO-3 gathers for every micro-batch (FSDP2 under a pipeline keeps the stage gathered); FSDP2 also
    # reduce-scatters every micro-batch, DeepSpeed once a step (ZeRO-2 every micro-batch: each_mb above)
    gather_each = zero3 & ((np.asarray(pp) == 1) | (settings.dp_schedule == "deepspeed"))
    # torchtitan's stage under a pipeline (reshard_after_forward False, resharded only by perform_reduce_grad):
    # one gather a step, not a forward and a backward one (core.comm.dp_overlap.fsdp2_exposed times one)
    regather = zero3 & (gather_each | (settings.dp_schedule != "fsdp2"))
    gathers = np.where(regather & ~no_reshard,
                       gathers_per_micro_batch(spec, settings.zero3_regathers, settings.recompute, tp), 1.0)
    # DeepSpeed's ZeRO-2 reduces after every micro-batch's backward (core.comm.dp_overlap)
    each_mb = per_mb | ((settings.dp_schedule == "deepspeed") & O.deepspeed_reduces_each_micro_batch(zero))
    rs_calls = many * units * np.where(each_mb, micro_batches, 1)
    # DeepSpeed's bf16 ZeRO-0 pipeline (BF16_Optimizer, core.memory.bf16_optimizer) shards its fp32 states and
    # all-gathers the bf16 weights after each step too (bf16_optimizer.py@edaa722 update_lp_params L454-464)
    gathered = (zero >= 1) | runs_bf16_optimizer(settings.deepspeed_bf16, zero, pp)  # core.frameworks' one rule
    ag_calls = many * gathered * gather_units * np.where(zero3, gathers * np.where(gather_each, micro_batches, 1), 1)
    # FSDP2 all-reduces across the replicas after every reduce-scatter (torch 2.13 _fsdp_collectives.py L634-660;
    # all_reduce_grads True by default, _fsdp_param_group.py L220; torchtitan@b5bcd76 never sets it off); the others
    # once a step (Megatron; MiCS, mics.py@edaa722 L411; OLMo-core's set_requires_all_reduce(is_last_mb),
    # train_module.py@fa6c5014c L575-578; the hf Trainer's FSDP2 model sharded at load time keeps each micro-batch's
    # reduce-scatter and defers only the all-reduce across replicas, transformers 5.25.0 trainer.py L1949-1950,
    # L2655-2668 _defer_fsdp_gradient_reduction: what is charged; accelerate's no_sync, the path for a model it wraps
    # itself, defers the reduce-scatter too, which is not modelled: review s21 R2 S1)
    ar_each = per_mb & (settings.dp_schedule == "fsdp2")
    ar_calls = (replicas > 1) * units * np.where(ar_each, micro_batches, 1)
    totals = {"grads": rs_calls * rs_one, "weights": ag_calls * ag_one, "across": ar_calls * ar_across / units}
    exposed = _exposed(settings, totals, rs_one, ag_one, units, zero, per_mb, micro_batches, compute,
                       moe_phases, layers, t_bwd_gemm_mb, many, cluster.gpu.collective_arch, vpp, pp, no_reshard)
    grads_kind = "reduce_scatter" if np.all(reduce_scatter) else "all_reduce"
    what = {"grads": ("grad reduce-scatter / all-reduce", rs_calls, grads / units, grads_kind, group),
            "weights": ("param all-gather", ag_calls, weights / gather_units, "all_gather", group),
            "across": ("HSDP all-reduce", ar_calls, shared / units, "all_reduce", across)}
    costs = [CollectiveCost("DP", label, calls, size, tp * shard if name != "across" else tp * data, totals[name],
                            exposed[name], nccl, links)
             for name, (label, calls, size, nccl, links) in what.items()]
    emb_across = embedding_across(grads_emb / shard * (replicas > 1), micro_batches, tp * data, across,
                                  rows_seconds(across, groups))  # its HSDP all-reduce; the gather + reduce last
    return costs + [emb_across, embedding_cost(settings, embedding, grads_emb, micro_batches, tp * shard, group,
                                               timers[0])]


def _across_bytes(settings, populations, grads, shard, *, tp, ep):
    """Gradient bytes a GPU all-reduces across the replicas in one sync (once a step, or under FSDP2 once a
    micro-batch: the caller's call count): each population's shard of ``grads`` -- the
    dense ones over the shard group, the routed experts over the expert data-parallel group within a replica
    (expert_data_ranks of the shard): Megatron-Core reduce-scatters the expert buffer on intra_expt_dp_group and
    all-reduces it on the same inter-instance group (distributed_data_parallel.py@core_v0.16.0 L290-301, L226-234);
    torchtitan shards the experts over efsdp, replicated over dp_replicate (fsdp.py@b5bcd76 L29, L82)."""
    share = populations[1][0]
    experts = expert_data_ranks(shard, tp, ep, settings.expert_tp, experts_replicated(settings))
    return grads * ((1 - share) / shard + share / experts)


def _unit_seconds(settings, populations, across, grads, weights, units, shared, replicas, zero, groups, timers):
    """(where the gradients are reduce-scattered, seconds of one unit's gradient reduce-scatter or all-reduce,
    of its parameter all-gather, of its units' HSDP all-reduce across the replicas: ``units`` x one);
    ``units``: (gradient units, gather units), _units; ``populations``: (the gradients', the gather's:
    gather_populations); ``shared``: the bytes all-reduced across (_across_bytes); ``timers``: rows_seconds of their
    links (both lists': the same groups)."""
    units, gather_units = units
    populations, gathers_by = populations
    zero3 = zero >= 3
    reduce_scatter = (zero >= 1) & ~(settings.grad_all_reduce & (zero == 1))  # ALL_REDUCE_THEN_GATHER
    if settings.dp_schedule == "deepspeed":
        # DeepSpeed's ZeRO-1/2 all-reduce each bucket whole: use_multi_rank_bucket_allreduce defaults true
        # (zero/config.py@edaa722 L119, since #4695 / 2afa1c7f2, 2023-11), average_tensor then keys every slice
        # ("allreduce", group) (stage_1_and_2.py@edaa722 L1443-1446) and allreduce_and_scatter ->
        # allreduce_and_copy_with_multiple_ranks -> allreduce_bucket all-reduces the bucket over the data group and
        # keeps its own partition (L1454-1460, L1314-1348, L1290-1302): 2(n-1)/n x bucket a rank, not a
        # reduce-scatter's (n-1)/n (dist.reduce to the owner only with the option off, L1447-1448, L1462-1468)
        reduce_scatter = reduce_scatter & zero3
    # each kind costed only where some row runs it (np.where takes the other's 0.0 nowhere)
    size = grads / units
    rs_one = np.where(reduce_scatter,
                      _per_unit("reduce_scatter", size, populations, timers) if np.any(reduce_scatter) else 0.0,
                      0.0 if np.all(reduce_scatter) else _per_unit("all_reduce", size, populations, timers))
    ag_one = _per_unit("all_gather", weights / gather_units, gathers_by, timers)
    if settings.dp_schedule == "deepspeed":  # ZeRO-3's hook-driven fetches reach a fitted share of NCCL's rate,
        # fitted on ZeRO-3 rows only (core.comm.dp_overlap): ZeRO-0-2's bucketed reductions keep NCCL's own rate
        share = np.where(zero3, O.DEEPSPEED_ZERO3_BANDWIDTH_SHARE, 1.0)
        rs_one, ag_one = rs_one / share, ag_one / share
    # one replica (no HSDP): collective_seconds gives a group of one 0 seconds
    ar_across = (seconds_by_rows("all_reduce", shared / units, across, groups)
                 if np.any(np.asarray(replicas) > 1) else 0.0) * units
    return reduce_scatter, rs_one, ag_one, ar_across


def _exposed(settings, totals, rs_one, ag_one, units, zero, per_mb, micro_batches, compute, moe_phases, layers,
             t_bwd_gemm_mb, many, arch=None, vpp=1, pp=1, no_reshard=False) -> dict:
    """Exposed seconds of each part under the framework's schedule (``zero``: the ZeRO stage), capped by
    --dp-overlap. The collectives hidden behind compute slow it by the SMs NCCL holds
    (core.comm.collectives.nccl_sm_share of ``arch``; not for DeepSpeed, whose fitted share already carries what
    its fetches cost). ``no_reshard`` (fsdp2_no_reshard): FSDP2 rows whose backward gathers nothing."""
    fwd, bwd = _windows(compute, micro_batches, moe_phases, layers)
    zero3 = np.asarray(zero) >= 3
    if settings.dp_schedule == "deepspeed":
        total = sum(totals.values())
        share = settings.dp_overlap if settings.zero3_overlap is None else np.where(
            zero3, settings.zero3_overlap, settings.dp_overlap)
        # ZeRO-3 hides its fitted share behind the compute; ZeRO 0-2 (overlap_comm off at DeepSpeed's default) and
        # its PipelineEngine hide nothing (dp_overlap.deepspeed_overlaps / deepspeed_exposed)
        hidden = O.deepspeed_exposed(total, t_bwd_gemm_mb + zero3 * compute, share, O.deepspeed_overlaps(zero, pp))
        return {k: np.where(total > 0, hidden * v / np.where(total > 0, total, 1.0), 0.0) for k, v in totals.items()}
    blocks = np.maximum(np.asarray(layers, dtype=float), 1.0)
    s = settings.nccl_sm_share if settings.nccl_sm_share is not None else K.nccl_sm_share(arch)
    chunks = vpp if settings.dp_schedule == "fsdp2" else None  # torchtitan's stages: torch.distributed.pipelining
    fsdp = O.fsdp2_exposed(ag_one, rs_one, fwd / blocks, bwd / blocks, blocks, micro_batches, per_mb, s, chunks)
    if np.any(no_reshard & per_mb):  # each micro-batch: the forward's gathers, the backward's reduce-scatters only
        kept = micro_batches * (O.fsdp_pass_exposed(ag_one, fwd / blocks, blocks, s)
                                + O.fsdp_pass_exposed(rs_one, bwd / blocks, blocks, s))
        fsdp = np.where(no_reshard & per_mb, kept, fsdp)
    grads = np.where(zero3, 0.0, O.interleaved_exposed(totals["grads"], units, bwd, s, vpp, pp, True))
    gather = O.interleaved_exposed(totals["weights"], units, fwd, s, vpp, pp) if settings.param_gather.overlapped \
        else totals["weights"]
    weights = np.where(zero3, fsdp, gather)
    ar_mbs = np.where(per_mb & (settings.dp_schedule == "fsdp2"), micro_batches, 1)  # FSDP2: each micro-batch's own
    across = ar_mbs * O.bucketed_exposed(totals["across"] / ar_mbs, units, bwd, s)  # backward hides its all-reduces
    if settings.dp_schedule == "megatron":  # the reduce-scatter, then the all-reduce, on one NCCL stream (
        # param_and_grad_buffer.py@core_v0.16.0 L399-404, L410-418): hidden together; FSDP's all-reduce has its own
        both = O.interleaved_exposed(totals["grads"] + totals["across"], units, bwd, s, vpp, pp, True)
        across = np.where(zero3, across, np.maximum(both - grads, 0.0))
    exposed = {"grads": many * grads, "weights": many * weights, "across": across}
    floor = 1 - settings.dp_overlap
    return {k: np.maximum(exposed[k], floor * totals[k]) for k in exposed}
