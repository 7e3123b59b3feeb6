"""Low-precision linears: what FP8 (per-tensor or MXFP8) and NVFP4 GEMMs cost beside their FLOPs,
in the fused step model (core.time.step, which re-exports these names; moved here unchanged).
Megatron-Core + TE runs its own quantiser list instead (core.time.megatron_ops).

Units: bytes per element or weight, a time ratio.
"""

from __future__ import annotations

# FP8 training (Transformer Engine / torchao, current or delayed tensorwise scaling) casts every
# GEMM operand: forward X (read bf16 2 B + write fp8 1 B + amax read 2 B), backward dY the same,
# and the fp8 transposes of X and dY for the weight gradient (read 1 + write 1): 7 B per element of
# each GEMM's input and output width per token; weights 5 B per parameter per micro-batch. All
# memory-bound (TE's cast_transpose kernels; Micikevicius et al. 2022, "FP8 formats for deep
# learning", Sec. 4). The LM head, embeddings and attention stay in BF16 (TE and torchao keep
# the output layer in high precision by default).
FP8_CAST_BYTES_PER_ELEMENT = 7.0
FP8_WEIGHT_CAST_BYTES = 5.0
# NVFP4 (dtype "fp4", Blackwell): Megatron-Bridge's bf16_with_nvfp4_mixed recipe runs every
# Transformer Engine linear layer in NVFP4 (training/mixed_precision.py: fp4 = "e2m1", fp4_recipe
# "nvfp4"; Llama recipes keep no layers in BF16) at the FP4 dense peak; attention and the LM head
# stay BF16. No FP4 MAMF measurement is published: the FP8 fraction (MAMF_FP8_FRACTION /
# FP8_MAMF_RATIO) is used, and the operand casts are costed like FP8's (NVFP4 writes 0.5 B +
# one e4m3 scale per 16 elements instead of 1 B, but re-quantises the transposed operands and
# applies a random Hadamard transform to the weight-gradient inputs: NVIDIA, "Pretraining Large
# Language Models with NVFP4", arXiv:2509.25149, Sec. 4). Checked on three published GB200 NVFP4
# runs (docs/step.md).
# MXFP8 (fp8_recipe "mxfp8": OCP MX block scaling, one E8M0 scale per 32 elements; Blackwell's
# block-scaled tensor cores; Megatron-Bridge "bf16_with_mxfp8_mixed", Transformer Engine
# MXFP8BlockScaling). A block's scale comes from the block itself (no tensor-wide amax pass), and
# because the scaling blocks run along the GEMM's reduction dimension, a transposed operand cannot
# reuse the rowwise copy: TE's MXFP8 quantiser writes the rowwise and the columnwise copy in one
# pass over the bf16 tensor (transformer_engine/common/util/cast_kernels.cuh, rowwise + colwise
# scaling). Per element: read 2 B, write 2 x (1 B + 1/32 B of scales); the same per weight.
MXFP8_CAST_BYTES_PER_ELEMENT = 2.0 + 2 * (1.0 + 1.0 / 32)
# Block-scaled GEMMs (MXFP8, and NVFP4, whose tensor-core path is block-scaled too: 16-element
# blocks) run slower than per-tensor FP8 ones at the same layout: every published dense pair
# with both labels (8/8 NeMo / Megatron-Bridge configurations) has MXFP8 2-8% fewer tokens/s. No
# kernel-level figure is published, so GEMM time x BLOCK_SCALED_GEMM_TIME_FACTOR is fitted on
# the FP8-CS / MXFP8 ratio of the three 25.09 dense pairs with one layout (Llama 3 8B on 8 B200
# and 8 GB200, Llama 3.1 405B on 128 B200; jobs/validation/fp8_recipes.py): 1.149 (1.164 before the
# FP8-CS rows gathered their primary FP8 weights at 1 B, core.comm.dp_costs.gather_bytes,
# 2026-12-06). Held out: the other pairs' ratios, and the NVFP4 family (docs/step.md, docs/accuracy.md).
BLOCK_SCALED_GEMM_TIME_FACTOR = 1.15
LOW_PRECISION = ("fp8", "fp4")
BLOCK_SCALED = ("mxfp8", "nvfp4")
FULL_PRECISION = ("fp32", "tf32")
"""Compute dtypes trained without autocast: every matmul, attention and the LM head included, runs in fp32
(TF32 where allowed), so the step times them all at that dtype's peak (wave 7 invariant sweep, issue 39: at
bf16's peak `plan pythia-160m --dtype fp32` answered an MFU of 97.8% on the fp32 basis, 115.6% under LoRA)."""


def attention_head_peak(gpu, dtype: str) -> float:
    """FLOP/s attention and the LM head run at: bf16's where the part has it (FP8 / NVFP4 recipes keep them in
    BF16: Megatron-Core and TE quantise only the linear layers), the compute dtype's under FULL_PRECISION."""
    if dtype in FULL_PRECISION or not gpu.has_dtype("bf16"):
        return gpu.peak(dtype)
    return gpu.peak("bf16")


def low_precision_recipe(dtype: str, fp8_recipe: str = "tensorwise") -> str | None:
    """How the linears are quantised: the FP8 recipe ('tensorwise', 'mxfp8') for dtype 'fp8',
    'nvfp4' for 'fp4', None for 16-bit and wider dtypes. BLOCK_SCALED ones take the GEMM factor."""
    if dtype == "fp8":
        return fp8_recipe
    return "nvfp4" if dtype == "fp4" else None


def precision_class(dtype: str) -> str:
    """The key published-MFU ceilings and the prediction band use for a compute dtype: 'fp8' or
    'fp4' as themselves, every 16-bit or wider dtype as 'bf16'."""
    return dtype if dtype in LOW_PRECISION else "bf16"


# FP8 attention (Megatron-Bridge's fp8_dot_product_attention=True: TE's cuDNN fused attention with FP8
# Q, K, V, O and gradients). cuDNN's own training-attention benchmark times BF16 and FP8 at the same
# shape on GB200 and GB300 (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/{llama3.1,
# dsv3}/{gb200,gb300}/*.csv @3929da2, cuDNN 9.22; copied in tests/fixtures/cudnn/gb200_gb300_kernels.yaml):
# the FP8 / BF16 time ratio at the shortest length it ran (8,192, batch 2, causal, non-deterministic
# backward), per query/key head dim: 128 (Llama 3.1, 64 heads) and 192 (DeepSeek-V3's MLA, 192 / 128).
# (forward, backward). B200 / B300 carry their Grace parts' ratios (the same die, SM100 / SM103). Head
# dims the benchmark did not run (GPT-OSS's 64) keep the BF16 time. Nothing fitted.
# Two approximations, not corrected: (1) the ratio is measured at 8,192 tokens but applied at the rows'
# length, 4,096 for all 21 FP8-attention rows (Qwen3-30B-A3B 6, GPT-OSS 120B 6, Qwen3-235B-A22B 5,
# DeepSeek-V3 4; 13 GB300, 7 GB200, 1 B300; GPT-OSS's head dim 64 takes no ratio): the benchmark has no
# shorter length, so the ratio at 4,096 is not measured;
# (2) the FP8 quantisation of Q, K, V and O (and of dO in the backward) that TE runs around cuDNN's FP8
# kernel is not charged: the ratio times the attention kernels only, and the step model adds no cast bytes
# for them (FP8_CAST_BYTES_PER_ELEMENT covers the linears' operands). (2) makes those rows faster than run;
# (1) most likely does too (a kernel's fixed time weighs more at shorter lengths, shrinking FP8's gain).
FP8_ATTENTION_TIME_RATIO = {
    ("gb200", 128): (1.074 / 1.397, 3.781 / 4.127), ("gb300", 128): (0.759 / 1.185, 3.087 / 3.832),
    ("gb200", 192): (2.294 / 3.470, 7.296 / 11.984), ("gb300", 192): (1.758 / 3.013, 6.188 / 11.074),
}
FP8_ATTENTION_SAME_DIE = {"b200": "gb200", "b300": "gb300"}


def fp8_attention_time_ratio(gpu_id: str, qk_head_dim: int) -> tuple[float, float]:
    """(forward, backward) attention-core time under FP8 attention over BF16's on ``gpu_id``; (1, 1)
    where cuDNN's benchmark has no figure (other parts, other head dims)."""
    part = FP8_ATTENTION_SAME_DIE.get(gpu_id, gpu_id)
    return FP8_ATTENTION_TIME_RATIO.get((part, qk_head_dim), (1.0, 1.0))


def fp8_attention_seconds(fp8_attention: bool, gpu_id: str, spec, seconds: tuple):
    """The attention core's (forward, backward) ``seconds`` (per token, BF16) as run: times
    fp8_attention_time_ratio under FP8 attention (StepSettings.fp8_attention), unchanged otherwise."""
    if not fp8_attention:
        return seconds
    ratio = fp8_attention_time_ratio(gpu_id, spec.attention.qk_head_dim)
    return tuple(t * r for t, r in zip(seconds, ratio))
