"""Seconds per token of one layer's attention core (scores, softmax, context), forward and
backward, on one GPU of a tp group, for the two kinds of kernel a framework runs.

``flash`` (FlashAttention 2/3, cuDNN fused attention, SDPA's flash path): the causal FLOPs at the
attention efficiency of the part (core.step.ATTENTION_EFFICIENCY); the scores never reach HBM. The
backward recomputes S = QK^T and runs four more matmuls (dP, dV, dQ, dK) against the forward's
two (Dao 2023, FlashAttention-2, Algorithm 2): 2.5x the forward.

``eager`` (unfused): Megatron-LM's 2021 CoreAttention (megatron/model/transformer.py @fda81a2:
``torch.baddbmm`` for QK^T, ``FusedScaleMaskSoftmax``, ``attention_dropout`` (default 0.1,
megatron/arguments.py ``--attention-dropout``), ``torch.bmm`` for the context) and transformers'
eager attention. Both batched matmuls run over every key (no causal skipping: the mask is applied
to computed scores), at the part's MAMF; the s x s scores, probabilities and their gradients go
through HBM. Bytes per score element, each read or write of a 16-bit tensor 2 B:
  forward  8 = scores written (2) + softmax read and write (4) + probabilities read by AV (2);
  backward 14 = dP written (2) + softmax backward reads P and dP, writes dS (6) + dS read by the
           dQ and dK matmuls (4) + P read by the dV matmul (2);
  dropout p > 0 adds 5 each way: forward reads P, writes the dropped copy and a 1-byte mask;
           backward reads the gradient and the mask, writes the gradient.
The roofline is summed, not maxed (the matmuls and the elementwise kernels run one after another).
Units: seconds per token per layer.
"""

from __future__ import annotations

from gpuplan.core import flops as F

FLASH_BACKWARD_RATIO = 2.5
EAGER_FORWARD_BYTES = 8.0
EAGER_BACKWARD_BYTES = 14.0
EAGER_DROPOUT_BYTES = 5.0
ATTENTION_KERNELS = ("flash", "eager")


def execution_kernel(option: str | None) -> str:
    """The kernel an --attention-kernel option runs: 'eager' stays eager, 'flash' and 'sdpa' (its
    flash path) are 'flash'."""
    return "eager" if option == "eager" else "flash"


def attention_seconds_per_token(spec, seq_len, tp, *, kernel: str, peak: float, efficiency: float,
                                mamf: float, hbm_bytes_per_s: float, dropout: float = 0.0) -> tuple[object, object]:
    """(forward, backward) seconds per token for one layer's attention core on one GPU.
    ``peak``: the attention's dense FLOP/s (bf16); ``efficiency``: the flash kernel's fraction
    of it; ``mamf``: the batched matmuls' fraction (eager); ``hbm_bytes_per_s``: achievable HBM
    bandwidth (eager scores)."""
    if kernel == "flash":
        forward = F.attention_core_flops_per_token(spec, seq_len, "causal") / spec.num_layers / tp / (peak * efficiency)
        return forward, FLASH_BACKWARD_RATIO * forward
    if kernel != "eager":
        raise ValueError(f"attention kernel {kernel!r}: one of {', '.join(ATTENTION_KERNELS)}")
    matmuls = F.attention_core_flops_per_token(spec, seq_len, "full") / spec.num_layers / tp / (peak * mamf)
    scores = spec.attention.num_heads / tp * seq_len  # score elements per token (16-bit)
    drop = EAGER_DROPOUT_BYTES * (dropout > 0)
    forward = matmuls + scores * (EAGER_FORWARD_BYTES + drop) / hbm_bytes_per_s
    backward = 2 * matmuls + scores * (EAGER_BACKWARD_BYTES + drop) / hbm_bytes_per_s
    return forward, backward
