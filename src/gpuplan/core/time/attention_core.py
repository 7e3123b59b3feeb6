"""Seconds per token of one layer's attention core (scores, softmax, context), forward and
backward, on one GPU of a tp group, for the two kinds of kernel a framework runs.

``flash`` (FlashAttention 2/3, cuDNN fused attention, SDPA's flash path): the causal FLOPs at the
attention efficiency of the part (core.time.step.ATTENTION_EFFICIENCY); the scores never reach HBM. The
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

A second roof on the flash forward: every score needs one exponential, computed by the SFUs
(MUFU.EX2), while its two matmuls cost 2·(d_qk + d_v) FLOPs on the tensor cores. Where the tensor
cores do more FLOPs per clock than that per exponential, the forward waits on the exponentials
(Zadouri, Hoehnerbach, Shah, Liu, Thakkar and Dao 2026, "FlashAttention-4: Algorithm and Kernel
Pipelining Co-Design for Asymmetric Hardware Scaling", together.ai/blog/flashattention-4: from H100
to B200 BF16 tensor throughput grows from 1 to 2.25 PFLOP/s while the SFU count stays, making the
softmax exponential the forward's bottleneck; per SM and clock that is 989.4e12 / (132 x 1.83e9) =
4,096 FLOPs on H100 and 2.25e15 / (148 x ~1.86e9) = 8,192 on B200 against 16 exponentials (the
CUDA programming guide's MUFU rate); NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell
Ultra": B300 / GB300 double the exponentials). The forward is stretched by
max(1, ratio / (2·(d_qk + d_v))): at head dim 64 a B200 / GB200 forward takes 2x its FLOPs' time,
at 128 (Llama) nothing changes; the backward (shared-memory bound on B200 per FA4) is left as is.
Units: seconds per token per layer.
"""

from __future__ import annotations

from gpuplan.core.model import flops as F

FLASH_BACKWARD_RATIO = 2.5
TENSOR_FLOPS_PER_EXP = {"h100-sxm": 256.0, "h100-pcie": 256.0, "h100-nvl": 256.0, "h200-sxm": 256.0,
                        "h800-sxm": 256.0, "b200": 512.0, "gb200": 512.0, "b300": 256.0}
"""Dense BF16 tensor FLOPs per SFU exponential, per SM and clock (above: H100 4,096 / 16, B200
8,192 / 16, Blackwell Ultra 8,192 / 32). Parts absent (Ampere: 2,048 / 16 = 128,
never binding at head dim >= 32) have no exponential roof; parts sharing a die look up their twin
(catalog kernels_like: GB300 -> B300). Cross-check: Verda's per-GPU table gives 5 TeraExponentials/s
for B200 / GB200 and 10.7 for B300 / GB300, i.e. 148 x 16 x 2.11 GHz and 160 x 32 x 2.09 GHz; the
spec tensor peaks are quoted at lower clocks (B200: 2.25e15 / (148 x 8,192) = 1.86 GHz), so the
per-SM-and-clock ratios above are kept rather than spec peak / spec exponential rate (450, 234)."""
EAGER_FORWARD_BYTES = 8.0
EAGER_BACKWARD_BYTES = 14.0
EAGER_DROPOUT_BYTES = 5.0
ATTENTION_KERNELS = ("flash", "eager")


def execution_kernel(option: str | None) -> str:
    """The kernel an --attention-kernel option runs: 'eager' stays eager, 'flash' and 'sdpa' (its
    flash path) are 'flash'."""
    return "eager" if option == "eager" else "flash"


def exp_bound_stretch(spec, tensor_flops_per_exp: float) -> float:
    """How much longer than its FLOPs the flash forward takes when exponentials bind (>= 1)."""
    a = spec.attention
    return max(1.0, tensor_flops_per_exp / (2.0 * (a.qk_head_dim + a.value_head_dim)))


def attention_seconds_per_token(spec, seq_len, tp, *, kernel: str, peak: float, efficiency: float,
                                mamf: float, hbm_bytes_per_s: float, dropout: float = 0.0,
                                tensor_flops_per_exp: float = 0.0) -> tuple[object, object]:
    """(forward, backward) seconds per token for one layer's attention core on one GPU.
    ``peak``: the attention's dense FLOP/s (bf16); ``efficiency``: the flash kernel's fraction
    of it; ``mamf``: the batched matmuls' fraction (eager); ``hbm_bytes_per_s``: achievable HBM
    bandwidth (eager scores); ``tensor_flops_per_exp``: the part's TENSOR_FLOPS_PER_EXP (0: none)."""
    if kernel == "flash":
        forward = F.attention_core_flops_per_token(spec, seq_len, "causal") / spec.num_layers / tp / (peak * efficiency)
        return forward * exp_bound_stretch(spec, tensor_flops_per_exp), FLASH_BACKWARD_RATIO * forward
    if kernel != "eager":
        raise ValueError(f"attention kernel {kernel!r}: one of {', '.join(ATTENTION_KERNELS)}")
    matmuls = F.attention_core_flops_per_token(spec, seq_len, "full") / spec.num_layers / tp / (peak * mamf)
    scores = spec.attention.num_heads / tp * seq_len  # score elements per token (16-bit)
    drop = EAGER_DROPOUT_BYTES * (dropout > 0)
    forward = matmuls + scores * (EAGER_FORWARD_BYTES + drop) / hbm_bytes_per_s
    backward = 2 * matmuls + scores * (EAGER_BACKWARD_BYTES + drop) / hbm_bytes_per_s
    return forward, backward
