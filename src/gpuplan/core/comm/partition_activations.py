"""DeepSpeed's ``partition_activations``: each checkpointed layer input split over the model-parallel (TP) group in the
forward and all-gathered again before its recompute in the backward (StepSettings.partition_activations; the
GPT-NeoX runs' configurations set it with checkpoint_activations: Llemma 7B / 34B, math-lm llemma_7b.yml @e4f8ee6
L54-56, llemma_34b.yml L56-58).

Read at EleutherAI/DeeperSpeed@0ae3578a deepspeed/runtime/activation_checkpointing/checkpointing.py (the engine GPT-NeoX
@e59c873 runs; megatron/initialize.py L108-116 hands it ``partition_activations`` and one checkpoint a layer,
checkpoint_num_layers 1):

* forward, ``CheckpointFunction.forward`` L539-540 -> ``partition_activations`` L366-418: every floating-point input
  of the checkpointed layer with at least tp elements (``is_activation_to_checkpoint`` L358-363: the [s, b, h] hidden
  states; GPT-NeoX's boolean attention mask stays whole) is kept as its 1 / tp slice, a ``.clone()`` of the narrowed
  view (L381): one copy kernel, n / tp elements read and written.
* backward, ``CheckpointFunction.backward`` L622-628 -> ``gather_partitioned_activations`` L255-291: a zero-filled
  buffer of the whole tensor (``torch.zeros``, L277-280: n elements written), the rank's slice copied in (L283-285),
  and ``dist.all_gather`` over the model-parallel group (L287), on the compute stream (the transport stream is
  commented out, L625), before the layer's forward is re-run: nothing overlaps it.
* that ``dist.all_gather`` is the list form (deepspeed/comm/comm.py L220-228 -> comm/torch.py L120-121:
  ``torch.distributed.all_gather(tensor_list=partitions, ...)``), and PyTorch's ``ProcessGroupNCCL::allgather``
  (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) gathers a list of equal parts into a new flat buffer
  (``newLikeFlat(outputTensors_)``; ``flatten_for_scatter_gather`` in the 1.13 / 2.0 releases of Llemma's time) and,
  after the NCCL kernel, copies each of the tp parts back into the caller's tensors on the NCCL stream
  (``outputTensors_[j].copy_(outputFlattened[j], true)``), which the synchronous call waits for: another n elements
  read and written, in tp more copy kernels, exposed. Read at the stored pytorch@cf1380df (its ``check_same_size`` /
  ``newLikeFlat`` branch); the 1.13 / 2.0 text was not read line by line here (the same flatten-and-copy-back shape
  by its name, ``flatten_for_scatter_gather``; the commit that made it ``newLikeFlat`` not looked up).

So a step pays, per checkpointed layer and micro-batch, one all-gather of the layer input (tokens x h x 2 B in bf16 /
fp16: the activations' dtype; GPT-NeoX's fp32_allreduce does not reach DeepSpeed's gather) on the TP group, exposed,
plus the copies' HBM traffic, 2 B x (3 n + 4 n / tp) in 3 + tp kernels (core.time.memory_kernels): DeepSpeed's
three and PyTorch's tp copies back from its flat buffer.
Memory: the checkpoints are 1 / tp as large (core.memory.training), and the layer being recomputed holds its input
whole again (``item.data = input_tensor.data``, L289); the flat n-element buffer PyTorch allocates for the gather
lives only through the call (held by its Work, released when the synchronous call returns) and is not charged. With
tp 1 it does nothing (L270-273): refused there (schema.partition_activations). Units: bytes, seconds.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.comm.collective_cost import CollectiveCost
from gpuplan.core.time.memory_kernels import memory_bound_seconds

DEEPSPEED_COPY_KERNELS = 3
"""The forward's ``.clone()`` of the slice (L381), the backward's ``torch.zeros`` (L277-280) and the slice's
``copy_`` into it (L285)."""


def copy_kernels(tp):
    """Kernels of one layer input's copies: DeepSpeed's three and ProcessGroupNCCL::allgather's tp copies back from
    its flat buffer, one a part (module docstring)."""
    return DEEPSPEED_COPY_KERNELS + np.asarray(tp)


def copy_bytes(act_bytes, tp):
    """HBM bytes of one layer input's copies: the forward clone reads and writes n / tp, the zero fill writes n, the
    slice's copy reads and writes n / tp, and PyTorch's copy back from its flat gather buffer reads and writes n
    (``act_bytes``: the whole input, n elements): n (3 + 4 / tp)."""
    return act_bytes * (3.0 + 4.0 / np.asarray(tp, dtype=float))


def checkpoint_gather_cost(settings, *, tp, micro_batches, layers, act_bytes, seconds, group,
                           hbm_bytes_per_s: float) -> CollectiveCost:
    """The all-gathers of one step on a stage of ``layers`` checkpointed layers (0 calls without
    StepSettings.partition_activations or at tp 1); ``seconds(kind)``: one NCCL call's seconds on ``act_bytes`` on the
    TP group (core.comm.step_comm); each call's copies added, all exposed (module docstring)."""
    calls = micro_batches * layers * (np.asarray(tp) > 1) * bool(settings.partition_activations)
    if not settings.partition_activations:
        return CollectiveCost("TP", "checkpoint all-gather (partition_activations)", calls, act_bytes, tp, 0.0, 0.0,
                              "all_gather", group)
    one = seconds("all_gather") + memory_bound_seconds(copy_bytes(act_bytes, tp), copy_kernels(tp), hbm_bytes_per_s)
    return CollectiveCost("TP", "checkpoint all-gather (DeepSpeed partition_activations) + its copies", calls,
                          act_bytes, tp, calls * one, calls * one, "all_gather", group)
