"""How much data-parallel communication each framework leaves on the critical path, from the order
in which it issues the collectives (``StepSettings.dp_schedule``):

- ``megatron``: Megatron-Core's DDP with the distributed optimizer, overlap_grad_reduce and
  overlap_param_gather on (the Megatron-Bridge recipes' setting). Gradients are bucketed,
  max(40M, 1M x dp) parameters a bucket (NeMo 2 / Megatron-Bridge: 128 Mi, NEMO_BUCKET_PARAMS; distributed_data_parallel.py
  L134), and reduced (reduce-scatter; all-reduce without the distributed optimizer) only in the
  last micro-batch's backward, each bucket as soon as its gradients are final
  (param_and_grad_buffer.py register_grad_ready); parameters are all-gathered bucket by bucket
  ahead of the next step's first forward (distrib_optimizer.py, overlap_param_gather). What the
  last micro-batch's backward (first micro-batch's forward) cannot hide is exposed, and never less
  than the last (first) bucket.
- ``fsdp2``: PyTorch FSDP2 as torchtitan runs it, one FSDP unit per transformer block: every
  micro-batch all-gathers each block before its forward and again before its backward, prefetching
  the next block's while the current one computes, and reduce-scatters each block's gradients
  after its backward (torch/distributed/fsdp/_fully_shard/_fsdp_state.py; torchtitan's trainer
  keeps gradient sync on for every gradient-accumulation micro-batch, trainer.py). A block's
  collective is exposed by what its neighbour's compute cannot cover, plus the first gather and
  the last reduce-scatter of each pass. Under pipeline parallelism torchtitan keeps the stage
  unsharded across micro-batches (set_reshard_after_backward(False)): one gather a step, scheduled
  like ``megatron``'s buckets with a block as the bucket, and one reduce-scatter a step issued after
  the stage's last backward (pipeline_reduce_exposed).
- ``ddp``: bucketed all-reduce in the last backward (PyTorch DDP no_sync for the others),
  ``megatron``'s rule without the parameter gather.
- ``deepspeed``: at ZeRO-3 the fitted share (core.frameworks DEEPSPEED_ZERO3_OVERLAP) hidden behind the
  whole compute; at ZeRO 0-2 none, with or without its PipelineEngine (deepspeed_exposed): ZeRO-0's engine
  all-reduces after the backward, ZeRO-1/2 reduce on the compute stream at DeepSpeed's default overlap_comm
  (false below stage 3), ZeRO-2 every micro-batch (deepspeed_reduces_each_micro_batch).

Values may be numbers or numpy arrays. Units: seconds, parameters.
"""

from __future__ import annotations

import numpy as np

SCHEDULES = ("megatron", "fsdp2", "ddp", "deepspeed")
SCHEDULE_OF_FRAMEWORK = {"torchtitan": "fsdp2", "megatron": "megatron", "generic": "megatron",
                         "deepspeed": "deepspeed", "hf": "ddp"}


def schedule_for(framework: str) -> str:
    """The data-parallel schedule a --framework runs (the 'megatron' one for unknown names)."""
    return SCHEDULE_OF_FRAMEWORK.get(framework, "megatron")
DEEPSPEED_ZERO3_BANDWIDTH_SHARE = 0.18
"""Share of NCCL's modelled collective bandwidth DeepSpeed ZeRO-3's fetches and reductions reached,
fitted on the three GPT-3 174B ZeRO-3 rows of Narayanan et al. 2021 Table 2 (grid 0.08-1.0, minimum
3.9% mean |error| at 0.17-0.18), held out on the three 529B rows (4.2%). Those 2021 runs moved a
full-model gather per micro-batch at ~30 GB/s per GPU where NCCL's ring over a DGX A100's eight
200 Gb/s NICs gives ~180: their fetches were per-submodule, hook-driven and partly synchronous
(deepspeed/runtime/zero/parameter_offload.py), which no NCCL constant describes. docs/step.md.
Applied at ZeRO-3 only (core.comm.dp_costs): no ZeRO-0-2 row was in the fit, and their gradients go out in
the engine's buckets after the backward (DeepSpeed's PipelineEngine _exec_reduce_grads; the BF16_Optimizer /
stage-1 paths), not through the per-submodule hooks the share describes."""
MEGATRON_BUCKET_PARAMS = 40e6
MEGATRON_BUCKET_PARAMS_PER_DP_RANK = 1e6
NEMO_BUCKET_PARAMS = 128 * 2**20
"""Parameters a gradient bucket holds under NeMo 2 / Megatron-Bridge where dp > 1 with the distributed optimizer:
their comm-overlap setup sets DistributedDataParallelConfig.bucket_size = 128 * 1024 * 1024
(nemo/lightning/pytorch/callbacks/megatron_comm_overlap.py@v2.2.0 L185-186, @v2.3.0 L186;
src/megatron/bridge/training/comm_overlap.py@v0.1.0rc4 L542-543, @v0.6.0 L576-577, applied to the DDP config
only under use_distributed_optimizer, @v0.6.0 L636-643), in place of Megatron-Core's default
max(40M, 1M x dp) (distributed_data_parallel.py@core_v0.14.0 L62-65)."""


def megatron_buckets(params, dp, bucket_params=None):
    """Gradient buckets of one rank's ``params`` (parameters) under Megatron-Core's default bucket size, or
    ``bucket_params`` parameters a bucket where the framework sets it (StepSettings.dp_bucket_params)."""
    size = bucket_params or np.maximum(MEGATRON_BUCKET_PARAMS,
                                       MEGATRON_BUCKET_PARAMS_PER_DP_RANK * np.asarray(dp, dtype=float))
    return np.maximum(np.ceil(np.asarray(params, dtype=float) / size), 1.0)


def bucketed_exposed(total, buckets, window, sm_share=0.0):
    """Seconds of ``buckets`` equal collectives (``total`` in all) issued as the compute of
    ``window`` seconds produces (or before it consumes) them: one bucket is always exposed (the
    last gradients' / first parameters'), the others run beside the window, which advances at
    1 - ``sm_share`` of its speed while they hold their SMs: max(rest - window, sm_share x rest)."""
    total = np.asarray(total, dtype=float)
    rest = total - total / buckets
    return total / buckets + np.maximum(rest - window, sm_share * rest)


def interleaved_exposed(total, buckets, window, sm_share=0.0, chunks=1, pp=1, after_last=False):
    """Megatron's gradient reduce-scatter (or parameter all-gather) of ``total`` seconds in ``buckets`` under the
    interleaved 1F1B schedule, ``chunks`` (vpp) model chunks a rank, ``window``: one micro-batch's backward
    (forward) over all the rank's layers. Each chunk syncs on its own (megatron/core/pipeline_parallel/
    schedules.py@core_v0.14.0): the chunks' backwards run last chunk first (get_model_chunk_id L1064-1069) in
    groups of microbatch_group_size_per_vp_stage = pp micro-batches (get_schedule_table L758-762); chunk c's grad
    sync starts after its last micro-batch's backward (backward_step_helper_postprocess L1259-1275 through the
    grad_sync_func that align_grad_reduce sets: Megatron-LM's default, training/arguments.py@core_v0.14.0
    L2368-2371, Megatron-Bridge's, training/config.py@v0.1.0rc4 L122, setup.py L279-282; without it the chunk's
    buckets go out during that backward, L1242-1247, as NeMo 2's core_r0.11 DDP config, which has no
    align_grad_reduce, runs them: nemo/lightning/megatron_parallel.py@v2.2.0 L120). With align_param_gather
    (NeMo 2 and Megatron-Bridge set it where pp > 1 and vpp > 1: megatron_comm_overlap.py@v2.2.0 L185-192,
    comm_overlap.py@v0.1.0rc4 L542-549) chunks 0 and 1 gather before the first forward (L1038-1041), chunk c + 1
    from chunk c's first micro-batch (forward_step_helper_preprocess L1155-1173), each bucket waited for by the
    forward pre-hook (distributed_data_parallel.py@core_v0.14.0 L467-500).

    Chunk 0 has no compute after (before) its traffic, total / chunks: its gather follows bucketed_exposed over
    its own forward (window / chunks); its reductions are exposed whole (``after_last``: issued after its last
    backward) or, without grad_sync_func, bucketed_exposed over that backward. Every other chunk's traffic has
    at least pp of that chunk's passes, pp x window / chunks, to run beside: max(traffic - that, sm_share x
    traffic) each. chunks = 1: bucketed_exposed whatever ``after_last``."""
    chunks = np.maximum(np.asarray(chunks, dtype=float), 1.0)
    per = np.asarray(total, dtype=float) / chunks
    first = bucketed_exposed(per, np.maximum(np.asarray(buckets, dtype=float) / chunks, 1.0), window / chunks,
                             sm_share)
    first = np.where(after_last & (chunks > 1), per, first)
    return first + (chunks - 1) * np.maximum(per - pp * window / chunks, sm_share * per)


def fsdp_pass_exposed(collective, compute, blocks, sm_share=0.0):
    """One forward (or backward) pass over ``blocks`` FSDP units, each needing ``collective``
    seconds of communication beside ``compute`` seconds of work: the first unit's (or last's)
    collective cannot overlap, each of the others shows what its neighbour's compute leaves
    (max(c, w + s c) - w: the compute runs at 1 - s of its speed while the collective holds its SMs)."""
    collective = np.asarray(collective, dtype=float)
    return collective + np.maximum(blocks - 1, 0) * np.maximum(collective - compute, sm_share * collective)


def fsdp2_exposed(gather, scatter, forward, backward, blocks, micro_batches, per_micro_batch, sm_share=0.0,
                  chunks=None):
    """FSDP2 per step: ``gather`` / ``scatter`` seconds per block and call, ``forward`` /
    ``backward`` seconds per block and micro-batch. ``per_micro_batch`` (no pipeline): gathers
    forward and backward and a reduce-scatter for every micro-batch; otherwise one gather before
    the first forward (each block's behind the previous one's compute) and the stage's reduce-scatters
    after its last backward (pipeline_reduce_exposed; ``chunks``: model chunks per rank, vpp, for
    torch.distributed.pipelining's FSDP2; None: each block's reduction as its gradients are final, the
    other ZeRO-3 schedules' rule)."""
    step = (fsdp_pass_exposed(gather, forward, blocks, sm_share)
            + fsdp_pass_exposed(gather + scatter, backward, blocks, sm_share))
    once = (bucketed_exposed(gather * blocks, blocks, forward * blocks, sm_share)
            + pipeline_reduce_exposed(scatter * blocks, blocks if chunks is None else chunks, backward * blocks,
                                      sm_share))
    return np.where(per_micro_batch, micro_batches * step, once)


def pipeline_reduce_exposed(total, chunks, window, sm_share=0.0):
    """FSDP2 under torch.distributed.pipelining: gradient sync is off for every micro-batch's backward
    and each stage's post_backward, which issues all its groups' reduce-scatters, runs once after that
    stage's last backward (torch 2.13 stage.py backward_maybe_with_nosync L844-848, perform_reduce_grad
    L1164-1191 with _root_post_backward_final_callback waiting for them; schedules.py _add_reduce_grad
    L1252-1282 places it right after the stage's last backward; earlier releases' stage.py ran the same
    post_backward in its last_backward branch). No backward is left beside the last chunk's reductions,
    so they are exposed; an earlier chunk's (vpp > 1) run beside the later chunks' backwards, taken as
    one micro-batch's backward over the rank's layers (``window``; a lower bound: an interleaved
    cool-down runs about pp chunk-backwards after an earlier chunk's last one). On the first stage, which ends a
    1F1B step last, that is the step's end. ``total``: the rank's reduce-scatter seconds."""
    return bucketed_exposed(total, np.maximum(np.asarray(chunks, dtype=float), 1.0), window, sm_share)


def deepspeed_overlaps(zero, pp):
    """Where DeepSpeed@edaa722 runs a data-parallel collective beside compute at its defaults (per layout, for
    arrays): ZeRO-3 without a pipeline only. ``zero_optimization.overlap_comm`` defaults to true at stage 3 and false
    below (runtime/zero/config.py L138, validator L383-386); without it ZeRO-1/2 reduce on the current (compute)
    stream (zero/stage_1_and_2.py average_tensor L1351-1365: the current stream at L1364-1365; reduce_ipg_grads
    L1719-1724), ZeRO-1 only once the
    backward is over (process_gradients reduces in the hooks only with partition_gradients or overlap_comm,
    L1759-1765; engine.allreduce_gradients calls reduce_gradients at the boundary, runtime/engine.py L2906-2910,
    which buckets every gradient then, stage_1_and_2.py L874-881), ZeRO-2 in its backward hooks as buckets of
    reduce_bucket_size (5e8 elements, config.py L113) fill, serialised with the backward kernels. ZeRO-0 has no
    ZeRO optimizer: the engine all-reduces (buffered_allreduce_fallback, engine.py L2911-2913) from
    _backward_epilogue, after the backward (L2970-2982), on the current stream. Under the PipelineEngine (pp > 1)
    every reduction waits for the schedule's ReduceGrads (deepspeed_exposed)."""
    return (np.asarray(zero) >= 3) & (np.asarray(pp) == 1)


def deepspeed_reduces_each_micro_batch(zero):
    """Where DeepSpeed reduces the gradients after every micro-batch's backward, not once a step: ZeRO-2
    (partition_gradients; engine.allreduce_gradients "ZeRO stage >= 2 communicates during non gradient accumulation
    boundaries as well", runtime/engine.py@edaa722 L2902-2904; zero/stage_1_and_2.py reduce_ready_partitions_and_
    remove_grads L1767-1768 reduces whenever partition_gradients). ZeRO-3's reductions are the fitted schedule's
    (core.comm.dp_costs); ZeRO-0/1 reduce at the gradient-accumulation boundary only (L2906-2913)."""
    return np.asarray(zero) == 2


def deepspeed_exposed(total, window, hidden_share, overlaps):
    """DeepSpeed: at most ``hidden_share`` of the traffic hides behind ``window`` (seconds) where it ``overlaps``
    (deepspeed_overlaps: ZeRO-3 without a pipeline), none elsewhere. At ZeRO 0-2 no collective runs beside compute
    at DeepSpeed's defaults (deepspeed_overlaps); and its PipelineEngine turns the engine's backward all-reduce off
    (pipe/engine.py@edaa722 L79-80) and reduces only in the ReduceGrads its TrainSchedule issues after the
    stage's last backward, before the OptimizerStep (pipe/schedule.py@edaa722 L237-241; _exec_reduce_grads
    engine.py L296-304, buffered all-reduce or ZeRO-1's reduce_gradients); during the backward passes the
    gradient-accumulation boundary is False (engine.py L682-691, passed to ZeRO's optimizer by
    runtime/engine.py L2965-2966), so ZeRO-1's gradient hooks reduce nothing (zero/stage_1_and_2.py L1767-1769;
    ZeRO-2/3 are refused under a pipeline, pipe/engine.py L76-77), and the BF16_Optimizer's weight all-gather
    runs inside the step (bf16_optimizer.py L454-464). On the first stage, which ends a 1F1B step last,
    no compute is left beside them: all exposed (torchtitan's pipeline reductions' rule,
    pipeline_reduce_exposed, with one chunk). A ZeRO-1/2 run that sets overlap_comm true would hide some
    (gpuplan has no input for it). Units: seconds."""
    total = np.asarray(total, dtype=float)
    hidden = np.minimum(hidden_share * total, window)
    return total - np.where(overlaps, hidden, 0.0)
