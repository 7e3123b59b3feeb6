"""Reserved memory of FSDP2's side-stream pools: what the caching allocator holds beyond the
allocated peak because FSDP2 allocates some buffers on streams other than the compute stream.

PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) keeps freed blocks in the pool
of the stream that allocated them and hands them only to later requests on that same stream. FSDP2
(torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, torch 2.13; the same structure since
FSDP2 appeared as torch.distributed._composable.fsdp):

* foreach_reduce allocates ``reduce_output`` (the reduce-scatter output, ``reduce_dtype``) inside
  ``with device_handle.stream(reduce_scatter_stream)`` and views the sharded gradients out of it
  (``sharded_param.grad`` = as_strided(reduce_output)); they live until optimizer.zero_grad().
  So every sharded gradient is a reduce-scatter-stream block: the activations the compute stream
  frees in backward are never reused for them, and they are never reused for the activations of
  the next step. The compute pool peaks without them (at the start of backward there are none),
  the reduce-scatter pool holds all of them.
* foreach_all_gather allocates the all-gather input and output inside
  ``with device_handle.stream(all_gather_copy_in_stream)``; the copy-out writes the unsharded
  parameters on the compute stream. The all-gather pool therefore holds at least the largest
  unit's buffer (compute dtype, unsharded), of which the allocated peak already counts the
  prefetched layer's (core.memory.step_transients.fsdp_working_set_bytes).

The reduce-scatter input (fp32, one unit unsharded) is allocated on the compute stream before the
stream switch, so it stays in the compute pool. Units: bytes; inputs may be numpy arrays.
"""

from __future__ import annotations

import numpy as np


def compute_pool_peak(backward_start, optimizer_step, grads_backward, grads_step):
    """The compute stream's own peak, bytes: the larger of the two candidate peaks
    (core.memory.training.StageMemory) less the sharded gradients live at each (they sit in the
    reduce-scatter pool)."""
    return np.maximum(np.asarray(backward_start) - grads_backward, np.asarray(optimizer_step) - grads_step)


def all_gather_pool_extra(largest_unit_elements, largest_layer_elements, compute_bytes: float):
    """Bytes the all-gather pool holds beyond what the allocated peak counts: the largest FSDP unit's
    all-gather buffer (``largest_unit_elements`` on this rank before sharding, in the compute dtype)
    less the prefetched layer's buffer that the allocated peak already holds."""
    return compute_bytes * np.maximum(np.asarray(largest_unit_elements) - largest_layer_elements, 0.0)


def eager_loss_hole_bytes(vocab_size, tp, tokens, compute_bytes: float):
    """Bytes the compute stream's pool holds free at the start of backward under torchtitan's eager loss
    ``cross_entropy(pred.flatten(0, 1).float(), labels)`` followed by ``del pred`` (train.py @9dec370 L131-134,
    L303-308; components/loss.py L19-23 + train.py L488-492 @6bccdb6, Oct 2025): the bf16 logits (``compute_bytes`` x
    ``tokens`` x ``vocab_size`` / ``tp``, 2V a token) and their fp32 copy (4V) are freed next to each other below the
    saved fp32 log-softmax (4V), a 6V hole. In backward nll_loss's gradient (4V) takes the hole's start (the
    caching allocator's best fit: the smallest free block of the stream that holds the request, a block at the end
    of an expandable segment counted at the size it can grow to; c10/cuda/CUDACachingAllocator.cpp get_free_block),
    leaving 2V free, and log_softmax's gradient (4V) does not fit there: it goes above the log-softmax. So the
    pool's extent at that moment is the allocated 12V (core.memory.training: 4V saved + 8V loss gradient) + 2V,
    the bf16 logits' size. The same with default segments (the 4V gradient reuses the fp32 copy's block, the
    bf16 block stays free). Not with a compiled loss (it keeps the bf16 logits; no fp32 copy) or the chunked loss.
    Hand-simulated from the allocator's code, not measured on a GPU. At tp > 1 (the 70B rows: torchtitan's loss_parallel,
    DTensor's _log_softmax handler) the 1 / tp split assumes the parallel loss saves and frees as aten's does; its code
    (torch/distributed/tensor/parallel/loss.py) was not read (review s19b N3). Units: bytes; inputs may be arrays."""
    return compute_bytes * np.asarray(tokens) * vocab_size / np.asarray(tp)


def eager_loss_hole_of(spec, layout, settings, compute_bytes: float):
    """eager_loss_hole_bytes of a run (core.memory.training.MemorySettings ``settings``) whose loss is the eager
    fp32 cross-entropy ('fp32-ce', core.frameworks.loss_of) on one pipeline stage (under a pipeline the schedule
    calls the loss, an order not read), with micro-batch x sequence / cp tokens a rank; else 0. The one rule of the
    published rows (jobs/validation/published_memory); the fit rule (training.peak_and_framework_gap) charges it
    only where no published reserve share applies, since those shares were taken with the hole inside them."""
    from gpuplan.core.frameworks import loss_of

    if loss_of(settings) != "fp32-ce":
        return 0.0
    tokens = np.asarray(layout.micro_batch) * settings.seq_len / np.asarray(layout.cp)
    return np.where(np.asarray(layout.pp) == 1, eager_loss_hole_bytes(spec.vocab_size, layout.tp, tokens,
                                                                      compute_bytes), 0.0)


def stage_pool_bytes(spec, layout, m, stage, compute_bytes: float, embedding_in_root: bool = False,
                     mtp: int = 0, embedding_loss_slots: bool = False, loss_hole: float = 0.0):
    """The three pools of one pipeline stage before fragmentation, bytes: compute pool peak + all sharded
    gradients + all-gather pool beyond the allocated peak's share (``m``: core.memory.training.StageMemory;
    degrees and ``stage`` may be arrays). The units are torchtitan's today (the embedding, norm + LM head,
    each layer: its own units) or, ``embedding_in_root``, its earlier ones (embedding + norm + LM head as
    the root, kept unsharded into backward: its bf16 embedding joins the start-of-backward working set).
    ``loss_hole``: bytes the last stage's compute pool holds free at the start of backward around the loss
    (eager_loss_hole_bytes; 0: none). Only the sharded gradients (at most grads_step) leave the compute pool: under a pipeline torchtitan
    accumulates the stage's unsharded fp32 gradients on the compute stream (grads_backward holds them
    as well; _fsdp_param.py accumulate_unsharded_grad_if_needed), reduce-scattered once. Never below
    the stage's allocated peak."""
    from gpuplan.core.memory.model_states import stage_params

    params = stage_params(spec, layout, stage, mtp, embedding_loss_slots)
    embedding = (np.asarray(stage) == 0) * spec.vocab_size * spec.hidden_size / layout.tp
    unit = params.root if embedding_in_root else np.maximum(embedding, params.root - embedding)
    extra = all_gather_pool_extra(np.maximum(unit, params.largest_layer), params.largest_layer, compute_bytes)
    backward_start = m.backward_start + embedding_in_root * compute_bytes * embedding \
        + (np.asarray(stage) == layout.pp - 1) * loss_hole
    sharded_backward = np.minimum(m.grads_backward, m.grads_step)
    return fsdp2_reserved_peak(backward_start, m.optimizer_step, sharded_backward, m.grads_step, extra, 0.0)


def fsdp2_reserved_peak(backward_start, optimizer_step, grads_backward, grads_step, all_gather_extra,
                        fragmentation: float):
    """Reserved peak of an FSDP2 step, bytes: (compute pool peak + reduce-scatter pool (all sharded
    gradients) + all-gather pool beyond the allocated peak's share) x (1 + fragmentation). Not below
    the allocated peak x (1 + fragmentation), as grads_backward is 0 or grads_step."""
    pools = compute_pool_peak(backward_start, optimizer_step, grads_backward, grads_step) + grads_step \
        + all_gather_extra
    return pools * (1 + fragmentation)
