"""The context-parallel K/V ring as Transformer Engine runs it, step by step: how many K/V-sized
transfers a layer makes, how much of each is left on the critical path, and its own memory-bound
kernels where the step's elementwise work is the fitted factor's.

Megatron-Core's default ``cp_comm_type`` is 'p2p' (extensions/transformer_engine.py@core_v0.14.0
L885-886; none of Megatron-Bridge's llama perf configs or recipes sets another, v0.1.0rc4 .. v0.3.1),
so attention runs TE's ``AttnFuncWithCPAndKVP2P``
(transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py@v2.7, sbhd, BF16):

* The sequence is cut into 2 x cp chunks, rank r holding chunks r and 2cp - 1 - r. Step 0 runs the
  local block causally (2 chunk-squares of work: two causal halves and one full block), each later
  step a half-size block (the full local queries on the first half of the received K/V, or the
  second half of the queries on all of it: 2 chunk-squares again; L726, L868 with
  ``max_seqlen_kv // 2`` at L960, L1118 ``max_seqlen_q // 2``): each of the cp steps does 1/cp of
  the layer's attention.
* Forward (L694-720): at step i the K/V block for step i + 1 is posted (``isend`` / ``irecv``) before
  step i's kernel and waited at step i + 1's start: cp - 1 transfers of one K/V block, each hidden
  behind one step's forward kernel.
* Backward (L1728-1765, L2372-2380): at step i the transfer is posted before step i's kernel and
  waited after it, before the dK/dV accumulation: step 0 sends K/V, steps 1 .. cp - 2 K/V and the
  running dK/dV in one buffer of twice the size (``torch.empty((2, *kv.shape))``, L1655-1658), step
  cp - 1 dK/dV: 2 (cp - 1) K/V-sized transfers, each hidden behind one step's backward kernel.
* A recompute that re-runs the attention core (full recompute, Megatron's selective 'core_attn')
  re-runs this forward, ring included: cp - 1 more transfers, hidden as in the forward.

The ring's own kernels (the K/V concatenation, output / LSE corrections, dQ / dK / dV copies and
accumulation) are core.time.megatron_ops' ``cp_attention`` class, charged by the op list when it is on
and by ring_kernels beside the fitted elementwise factor otherwise (that factor was
fitted on context-parallel-free rows, docs/step.md, so it holds none of them); in sbhd ([2, s/2, b, ...] blocks) the half-block
``.contiguous()`` calls of the later steps (forward L927, L1080; backward L1947, L2090) act on
contiguous views and copy nothing. Units: seconds.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.time.attention_core import FLASH_BACKWARD_RATIO


def attention_reruns(settings, stage_layers, vpp=1):
    """Share of the stage's layers whose attention forward (and so its CP ring) runs again in
    backward: full recompute (the block method's share with ``recompute_layers``), or selective
    recompute of Megatron's 'core_attn' module; torchtitan's op-level SAC saves SDPA's outputs
    (core.memory.recompute.op_sac_recomputed_share) and re-runs none."""
    from gpuplan.core.memory.recompute import effective_modules, full_recompute_share

    if settings.recompute == "full":
        return full_recompute_share(settings, stage_layers, vpp)
    if settings.recompute == "selective" and settings.selective != "op-sac":
        return float("core_attn" in effective_modules(settings.recompute_modules))
    return 0.0


def ring_transfers_per_layer(cp, reruns=0.0):
    """K/V-sized transfers one layer makes per micro-batch: cp - 1 forward, 2 (cp - 1) backward,
    cp - 1 per re-run forward (module docstring)."""
    return (3.0 + reruns) * np.maximum(np.asarray(cp, dtype=float) - 1.0, 0.0)


FLASH_FORWARD_SHARE = 1.0 / (1.0 + FLASH_BACKWARD_RATIO)
"""The flash kernels' forward share of the attention core (backward = FLASH_BACKWARD_RATIO x forward): the split
ring_exposed_per_layer takes where its caller gives none."""


def ring_exposed_per_layer(transfer, attention, cp, reruns=0.0, forward_share=FLASH_FORWARD_SHARE):
    """Seconds of one layer's ring left exposed per micro-batch, step by step: ``transfer`` the
    seconds of one K/V-block send, ``attention`` the layer's attention core forward + backward
    seconds per micro-batch, ``forward_share`` of it the forward's (core.time.step gives the model's own:
    attention_core.layer_attention_seconds, which FP8 attention, FlashAttention-1 and dropout move off the flash
    kernels' FLASH_FORWARD_SHARE), each divided over the cp equal steps. Forward (and each re-run)
    (cp - 1) x max(0, t - a_f / cp); backward 2 x max(0, t - a_b / cp) + (cp - 2) x max(0, 2t - a_b / cp)."""
    cp = np.asarray(cp, dtype=float)
    steps = np.maximum(cp, 1.0)
    forward_step = attention * forward_share / steps
    backward_step = attention * (1.0 - np.asarray(forward_share)) / steps
    later = np.maximum(cp - 1.0, 0.0)
    forward = (1.0 + reruns) * later * np.maximum(transfer - forward_step, 0.0)
    backward = (2.0 * np.maximum(transfer - backward_step, 0.0) * (cp > 1)
                + np.maximum(cp - 2.0, 0.0) * np.maximum(2.0 * transfer - backward_step, 0.0))
    return forward + backward


def ring_kernels(spec, cp, tokens, hbm_bytes_per_s: float, tp=1):
    """Forward + backward seconds per local token of one layer's ring kernels (megatron_ops.cp_class's
    bytes / tp at memory_kernels' line, its kernels' fixed time spread over the micro-batch's
    ``tokens``); 0 at cp 1."""
    from gpuplan.core.time.megatron_ops import cp_class
    from gpuplan.core.time.memory_kernels import memory_bound_seconds

    ring = cp_class(spec, cp)
    return memory_bound_seconds(ring.bytes / tp, ring.kernels / tokens, hbm_bytes_per_s)
