"""torchtitan's async TP: what PyTorch's micro-pipeline TP leaves on the critical path (seconds per GPU).

torchtitan turns it on with ``torch._inductor.config._micro_pipeline_tp = True`` and symmetric memory on the
TP group (torchtitan 820504e ``models/llama3/parallelize_llama.py`` L206-209; b5bcd76
``distributed/compile.py`` L80-95); Inductor's post-grad pass then rewrites each sequence-parallel
exchange it can match into a decomposed collective + GEMM (torch 2.13
``torch/_inductor/fx_passes/micro_pipeline_tp.py``; the same rules in the Aug-2024 ``cuda_p2p`` version,
pytorch/pytorch@00122fb ``fuse_matmul_reduce_scatter``):

- **all-gather -> matmul** (``fuse_all_gather_matmul``): every consumer matmul of the gathered input is
  fused (one ``fused_all_gather_matmul`` with all their weights, ``Bs``), so each exchange's all-gather is
  chunked with its GEMMs — forward (the attention and MLP inputs), backward (the gradients of ``wo`` /
  ``w2``'s outputs) and a recomputed forward alike.
- **matmul -> reduce-scatter** only where the reduce-scatter's input *is* one ``mm`` (or
  reshape-mm-reshape) with no other user (``_find_producer_matmul`` L957-985, the single-user check
  L1089-1100). The backward reduce-scatter of a sequence-parallel block input that feeds several
  column-parallel linears is the *sum* of their input-gradient mms (autograd adds them): attention's
  ``wq``, ``wk``, ``wv`` (separate linears before torchtitan 3396a4b37 fused them into ``wqkv``:
  ``TitanOps.fused_qkv``) and the MLP's ``w1``, ``w3`` (separate at 820504e ``model.py`` L297-302 and
  b5bcd76 ``models/common/feed_forward.py`` L49-54), all on the one input each block's
  ``PrepareModuleInput`` gathers (820504e ``parallelize_llama.py`` L180-196). Those reduce-scatters are not
  fused: plain NCCL, exposed as without async TP.

What a fused op still exposes, from ``torch/distributed/_symmetric_memory/__init__.py`` (torch 2.13):
``_pipelined_multi_all_gather_and_consume`` copies the local shard into its symmetric buffer and
barriers before the first GEMM chunk, on the compute stream ("we are giving up the chance to overlap
'mv' and 'b' with the first shard_consumer", L222-264): 2 B moved per shard byte; the fused
reduce-scatter (``_fused_matmul_reduce_scatter_impl`` L1254-1336) gathers the tp partial products of
its rows (``stacked_partials``, the whole [tokens, h] buffer) and sums them in one kernel after the
pipeline: the buffer read and its 1/tp written. Beyond those, one chunk in tp of the collective's time
stays exposed, the assumption ``StepSettings.tp_comm_overlap`` makes for Transformer Engine's
userbuffers too.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.time.memory_kernels import memory_bound_seconds

BACKWARD_REDUCE_SCATTERS_UNFUSED_SEPARATE_QKV = 2
"""Per layer and micro-batch: attention's (wq + wk + wv input gradients) and the MLP's (w1 + w3)."""
BACKWARD_REDUCE_SCATTERS_UNFUSED_FUSED_QKV = 1
"""With one wqkv linear (torchtitan 3396a4b37 on) only the MLP's w1 + w3 sum stays unfused."""
SHARD_COPY_BYTES_PER_BYTE = 2.0
"""The local shard's copy into its symmetric buffer: read + write."""


def exposed_seconds(*, reduce_scatter, all_gather, exchanges_per_layer, tp, calls_per_exchange_layer,
                    act_bytes, hbm_bytes_per_s: float, fused_qkv: bool):
    """Exposed seconds of a step's TP exchanges under torchtitan's async TP, per GPU.

    ``reduce_scatter`` / ``all_gather``: one NCCL collective's seconds on the TP group (the [tokens, h]
    buffer of ``act_bytes`` bytes, gathered size); ``exchanges_per_layer``: reduce-scatter + all-gather
    pairs a layer runs per micro-batch (core.time.sequence_parallel.tp_exchanges_per_layer, 2 of them in
    the backward); ``calls_per_exchange_layer``: micro-batches x layers on the stage (0 where tp is 1).
    Every all-gather is fused, every reduce-scatter but the backward's unfused ones (module docstring).
    Scalars or arrays."""
    tp = np.maximum(np.asarray(tp, dtype=float), 1.0)
    unfused = (BACKWARD_REDUCE_SCATTERS_UNFUSED_FUSED_QKV if fused_qkv
               else BACKWARD_REDUCE_SCATTERS_UNFUSED_SEPARATE_QKV)
    fused_rs = exchanges_per_layer - unfused
    chunk = (exchanges_per_layer * all_gather + fused_rs * reduce_scatter) / tp
    copies = exchanges_per_layer * SHARD_COPY_BYTES_PER_BYTE * act_bytes / tp + fused_rs * act_bytes * (1 + 1 / tp)
    kernels = memory_bound_seconds(copies, exchanges_per_layer + fused_rs, hbm_bytes_per_s)
    return calls_per_exchange_layer * (unfused * reduce_scatter + chunk + kernels)
