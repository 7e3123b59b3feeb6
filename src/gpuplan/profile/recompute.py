"""Selective activation recompute on a Hugging Face model: torchtitan's op-level policy.

transformers itself only checkpoints whole decoder layers (``gradient_checkpointing_enable``:
gpuplan's ``--recompute full``). ``--recompute selective`` on the ``hf`` framework is what
torchtitan's ``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "op"`` runs
(torchtitan/distributed/activation_checkpoint.py, _apply_op_sac): every decoder layer wrapped in
non-reentrant ``torch.utils.checkpoint`` with a ``create_selective_checkpoint_contexts`` policy
that saves the outputs of ``aten.mm`` (all but every second one, counted separately in the
forward and in the recompute), of the SDPA / flash-attention kernels and of ``aten.max``, and
recomputes everything else (norms, RoPE, SiLU, products). gpuplan's memory and time models
follow the same policy (core.frameworks.op_sac_bytes_per_token, core.memory.recompute 'op-sac').

torch is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict

ATTENTION_KERNELS = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                     "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
                     "_flash_attention_forward", "_efficient_attention_forward")
POLICY = ("op-level selective activation checkpointing as torchtitan's 'op' mode: every decoder layer in "
          "non-reentrant torch.utils.checkpoint with a create_selective_checkpoint_contexts policy that saves "
          "the outputs of aten.mm (except every second mm), of the SDPA / flash-attn kernels and of aten.max, "
          "and recomputes everything else (norms, RoPE, SiLU, products)")


def selective_context_fn():
    """A fresh (forward context, recompute context) pair with torchtitan's op-level policy."""
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    save = {aten.mm.default, aten.max.default}
    for name in ATTENTION_KERNELS:
        op = getattr(aten, name, None)
        if op is not None:
            save.add(op.default)
    with contextlib.suppress(Exception):  # flash-attn 2.7+ registers a torch custom op
        save.add(torch.ops.flash_attn._flash_attn_forward.default)
    counts: dict = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func is aten.mm.default:
            counts[mode] += 1
        keep = func in save and not (func is aten.mm.default and counts[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def decoder_layer_list(model, n_layers: int):
    """The ModuleList holding the decoder layers (HF: model.model.layers, also under peft)."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
            return module
    raise RuntimeError(f"no ModuleList of {n_layers} decoder layers found")


def apply_selective_recompute(model, n_layers: int) -> None:
    """Wrap every decoder layer in op-level selective checkpointing (in place)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper

    layers = decoder_layer_list(model, n_layers)
    for i, layer in enumerate(layers):
        layers[i] = checkpoint_wrapper(layer, checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                       context_fn=selective_context_fn, preserve_rng_state=False)
