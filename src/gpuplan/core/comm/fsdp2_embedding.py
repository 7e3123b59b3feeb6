"""FSDP2's embedding unit under torchtitan (core.comm.dp_costs): its parameter all-gather and gradient
reduce-scatter every micro-batch, and under HSDP its all-reduce across the replicas, outside the blocks' overlap.
Units: parameters, bytes, seconds."""

from __future__ import annotations

import numpy as np

from gpuplan.core.comm.collective_cost import CollectiveCost
from gpuplan.core.model.spec import ModelSpec, count_parameters


def embedding_unit(spec: ModelSpec, settings, tp) -> float:
    """Parameters per GPU of the FSDP unit torchtitan shards apart from the blocks, whose collectives
    open each micro-batch's forward and close its backward (0 for another schedule). torchtitan's
    apply_fsdp (torchtitan/distributed/fsdp.py @b5bcd76) wraps tok_embeddings alone, [norm, lm_head]
    with reshard_after_forward False, then each block, and gathers in module order with FSDP2's
    implicit prefetch: the embedding's gather is the step's first collective and its reduce-scatter the
    last (the head's gather and reduction run beside the last block's forward and backward)."""
    if settings.dp_schedule != "fsdp2":
        return 0.0
    counts = count_parameters(spec)
    return (counts.embedding + counts.position_embedding) / np.asarray(tp, dtype=float)


def embedding_cost(settings, embedding, grads_emb, micro_batches, ranks, group, seconds) -> CollectiveCost:
    """FSDP2's embedding unit (``embedding`` parameters a GPU, ``grads_emb`` gradient bytes; embedding_unit):
    gathered before the first block's forward and reduced after the last block's backward, every
    micro-batch, with no compute to hide behind (``seconds``: rows_seconds of the data group's links)."""
    emb_calls = 2 * micro_batches * (np.asarray(embedding) > 0)
    emb = emb_calls / 2 * ((seconds("all_gather", embedding * settings.param_gather.bytes)
                            + seconds("reduce_scatter", grads_emb) * (np.asarray(grads_emb) > 0))
                           if np.any(emb_calls) else 0.0)  # none: 0 calls x finite seconds
    return CollectiveCost("DP", "embedding unit all-gather + reduce-scatter (FSDP2)", emb_calls,
                          embedding * settings.param_gather.bytes, ranks, emb, emb, "all_gather", group)


def embedding_across(size, micro_batches, ranks, across, seconds) -> CollectiveCost:
    """FSDP2's embedding unit's HSDP all-reduce (``size``: its gradient shard, 0 without the unit or replicas;
    ``seconds``: dp_costs.rows_seconds of the ``across`` group):
    after its reduce-scatter, every micro-batch, the step's last collective, exposed whole. An upper bound: it is
    charged after the unit's reduce-scatter and block 0's all-reduce in turn, where torch may overlap the two
    (review s21 R2 N4)."""
    calls = micro_batches * (np.asarray(size) > 0)
    total = calls * (seconds("all_reduce", size) if np.any(calls) else 0.0)
    return CollectiveCost("DP", "embedding unit HSDP all-reduce (FSDP2)", calls, size, ranks, total, total,
                          "all_reduce", across)
