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
CUDA programming guide's MUFU rate). NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell
Ultra", gives B300 / GB300 SFUs twice the exponentials per clock (ratio 256), but the model keeps
the B200's 512 for them (TENSOR_FLOPS_PER_EXP, below): cuDNN's own head-dim-64 kernel ran no faster
on the GB300 than on the GB200. The roof applies to any cuDNN / FlashAttention kernel, torch SDPA's
under transformers too (core.time.attention). The forward is stretched by max(1, ratio / (2·(d_qk + d_v))): at
head dim 64 a B200 / GB200 / B300 / GB300 forward takes 2x its FLOPs' time, at 128 (Llama) nothing
changes. The backward takes the same stretch: FA4 calls the B200 backward
shared-memory bound rather than exponential bound, but cuDNN's own measurement of the GPT-OSS shape
(cudnn-frontend benchmark/sdpa_benchmark_training/results/gpt_oss/{gb200,gb300}/*.csv @3929da2,
cuDNN 9.22, head dim 64, BF16, s 4,096, window 128) has the backward at 2.21x (GB200) and 2.19x
(GB300) the forward's time, where an unstretched backward would be 2.5 / 2 = 1.25x; so the backward
is 2.5x the stretched forward (2.2x measured, 12% off; 43% off without the stretch).

Sliding-window layers (``spec.sliding_window``, the config's ``layer_types``): a flash kernel works
in tiles of 128 queries x 128 keys (cuDNN's SM100 d64 / d128 forward kernels 128x128x{64,128},
cudnn-frontend include/cudnn_frontend/experimental/sm100_sdpa_prefill_engine.h L57-76 @3929da2;
SM90 64x128 with two query tiles per CTA, sm90_sdpa_prefill_engine.h L69, L265) and skips only key
tiles wholly outside the band, so a query tile computes ceil((w - 1) / 128) + 1 key tiles once the
window is full (2 for GPT-OSS's 128: 256 keys per query against the 126 the window-capped count
gives). The executed keys are the causal-window mean in tile units (KEY_TILE). Against the same
cuDNN measurement: GB200 forward 0.210 ms and backward 0.465 ms for 2 x 128 heads x 4,096 tokens
(161 / 182 TFLOP/s on the window-capped count); the band and the stretch at the Blackwell flash
efficiency 0.30 of the GB200's 2.5 PFLOP/s give 0.180 and 0.451 ms (-14%, -3%). The GB300 ran the
shape barely faster than the GB200 (0.202 / 0.442 ms, 1.04 / 1.05x) although its SFUs do twice the
exponentials: at 256 FLOPs per exponential the model would have it 2x faster (0.090 / 0.225 ms,
-55% / -49%), so the B300 / GB300 keep 512 and the model gives 0.180 / 0.451 ms (-11% / +2%). These
two rows SET two choices (the backward's stretch: GB200 and GB300; the B300's 512: GB300), so they
are not held out; the one independent check is cuDNN's H200 run of the shape (window 1,024, cuDNN
9.19, no stretch at 256 FLOPs per exponential: +9% / -6%), which tests the tile band and the 2.5x
backward but neither choice (tests/test_attention_time.py, docs/step.md). Both readings come from
the window shape and are applied to full-attention layers too: no head-dim-64 full-causal Blackwell figure is
published (docs/step.md says what that leaves open). The nearest is the same frontend's cuDNN 9.19 run
of the GPT-OSS shape with window 1,024 (64 / 8 heads, batch 2; results/gb200_919_only_cudnn/
gpt_oss_20260226_175022.csv and gb300_919_only_cudnn/gpt_oss_20260226_185932.csv @fb682ce, removed at
9c2f20e; no sink token): GB200 0.209 / 0.487 ms at s 4,096, GB300 0.178 / 0.472 ms, where this model
(1,008 executed keys, 0.30 x 2.5 PF, stretch 2) gives 0.361 / 0.902 ms: 1.7-2.0x slower on long bands.
Not adopted (docs/step.md: it would move every Blackwell GPT-OSS row further too fast, and no
sink-enabled figure exists). Full-attention layers keep the counted
(s + 1) / 2 keys. Learnable softmax sinks (GPT-OSS; Megatron-Core softmax_type 'learnable') add one
logit per query and head: TE >= 2.8 runs them in cuDNN's fused kernel (FusedAttention, cuDNN >=
9.13.1; transformer_engine/common/fused_attn/fused_attn.cpp@v2.9 L370-375, FlashAttention disabled
for them, pytorch/attention/dot_product_attention/utils.py@v2.9 L685-696), no term of their own.
Units: seconds per token per layer.
"""

from __future__ import annotations

from gpuplan.core.model import flops as F
from gpuplan.core.time.efficiency import (  # the backward's measured 1.141, once; the part lookup
    GB300_OVER_GB200_TENSOR_RATE, _lookup)

FLASH_BACKWARD_RATIO = 2.5
TENSOR_FLOPS_PER_EXP = {"h100-sxm": 256.0, "h100-pcie": 256.0, "h100-nvl": 256.0, "h200-sxm": 256.0,
                        "h800-sxm": 256.0, "b200": 512.0, "gb200": 512.0, "b300": 512.0}
"""Dense BF16 tensor FLOPs per SFU exponential, per SM and clock, as the fused attention kernel
frameworks run (cuDNN) sees them (above: H100 4,096 / 16, B200 8,192 / 16). Blackwell Ultra's SFUs
do double (8,192 / 32 = 256), but cuDNN's kernel did not run faster for it: on the GB300 the head
dim 64 shape measured 0.202 / 0.442 ms forward / backward against the GB200's 0.210 / 0.465 ms
(cudnn-frontend gpt_oss results @3929da2, above; 160 vs 148 SMs), where 256 would make it 2x
faster; so the B300 keeps the B200's 512. Only head dims below 128 see the difference (at 128
both give no stretch). Parts absent (Ampere: 2,048 / 16 = 128,
never binding at head dim >= 32) have no exponential roof; parts sharing a die look up their twin
(catalog kernels_like: GB300 -> B300). Cross-check: Verda's per-GPU table gives 5 TeraExponentials/s
for B200 / GB200 and 10.7 for B300 / GB300, i.e. 148 x 16 x 2.11 GHz and 160 x 32 x 2.09 GHz; the
spec tensor peaks are quoted at lower clocks (B200: 2.25e15 / (148 x 8,192) = 1.86 GHz), so the
per-SM-and-clock ratios above are kept rather than spec peak / spec exponential rate (450, 234)."""
FLASH_TENSOR_RATE = {"gb300": (1.166, GB300_OVER_GB200_TENSOR_RATE)}
"""(forward, backward) speed of a part's tensor-core-bound flash attention over what its peak and fitted
flash efficiency give (the efficiency is the GB200's: equal spec peaks, DEFAULT_ATTENTION_EFFICIENCY).
GB300: cuDNN's same-build benchmark on both parts (cuDNN 9.22, frontend 1.21.1; NVIDIA/cudnn-frontend
benchmark/sdpa_benchmark_training/results/{llama3.1,dsv3,kimiK26}/{gb200,gb300}/*.csv @3929da2, copied in
tests/fixtures/cudnn/gb200_gb300_kernels.yaml), BF16 rows (attention runs in BF16 here), head dim 128 / 192,
s 8,192-32,768, causal and full: forward GB200 / GB300 time geometric mean 1.166 (18 rows, 1.12-1.21),
backward 1.141 (18 rows, 1.08-1.22; efficiency.GB300_OVER_GB200_TENSOR_RATE). Applied only where the
exponential roof does not bind (exp_bound_stretch == 1: head dims >= 128 at 512 FLOPs per exponential):
the head-dim-64 GPT-OSS shape, exponential bound, ran 1.04 / 1.05x (above) and keeps the GB200's time;
head dims between 64 and 128 were not measured and keep it too. The FP8 rows (1.37 / 1.23) are not used:
FP8 attention takes its own FP8 / BF16 ratio on top (core.time.low_precision.fp8_attention_time_ratio).
Parts absent: (1.0, 1.0)."""
NO_TENSOR_RATE = (1.0, 1.0)


def part_flash_roof(gpu) -> tuple[float, tuple[float, float]]:
    """``gpu``'s (TENSOR_FLOPS_PER_EXP, FLASH_TENSOR_RATE), by its own id or the part whose kernels it
    runs: 0 (no exponential roof) and NO_TENSOR_RATE where the tables have no entry."""
    return _lookup(TENSOR_FLOPS_PER_EXP, gpu, 0.0), _lookup(FLASH_TENSOR_RATE, gpu, NO_TENSOR_RATE)
KEY_TILE = 128
"""Queries and keys per tile of a flash kernel (cuDNN SM100 / SM90, above): a sliding-window layer
computes whole key tiles."""
EAGER_FORWARD_BYTES = 8.0
EAGER_BACKWARD_BYTES = 14.0
EAGER_DROPOUT_BYTES = 5.0
ATTENTION_KERNELS = ("flash", "flash1", "eager")
FA1_SEQ_POINTS = (512, 1024, 2048, 4096, 8192, 16384)
FA1_CAUSAL_TFLOPS = {64: (58.0, 70.0, 77.0, 87.0, 92.0, 97.0), 128: (55.0, 62.0, 69.0, 76.0, 80.0, 83.0)}
FA2_CAUSAL_TFLOPS = {64: (88.0, 119.0, 140.0, 156.0, 165.0, 171.0), 128: (99.0, 133.0, 155.0, 173.0, 182.0, 189.0)}
"""``flash1``: FlashAttention 1 (flash-attn < 2, e.g. GPT-NeoX v1.0's pinned flash-attn==0.2.2), timed at its own
measured speed. Source: Dao 2023, FlashAttention-2, arXiv:2307.08691, Figure 4 (A100 80GB SXM4, FP16/BF16, forward
+ backward TFLOP/s, causal panels (c) head dim 64 and (d) head dim 128; the same chart is the flash-attention
repository's assets/flash2_a100_fwd_bwd_benchmark.png @4f285b35). Values are the numbers printed above the bars
(not read off bar heights), 'FlashAttention' (FA1) and 'FlashAttention-2' at s = 512 ... 16k. The chart counts a
forward + backward as 3.5x the forward's FLOPs (the backward 2.5x: FLASH_BACKWARD_RATIO, the flash-attention
benchmarks' 'fwd_bwd' count), so FA1's seconds per token are 3.5 x forward FLOPs / (FA1 TFLOP/s / 312 of the
A100's BF16 peak x the part's peak): at s 2,048, 77 (head dim 64) and 69 (128) TFLOP/s, 24.7% / 22.1% of peak,
which the FA2 abstract's '25-40% of peak' for FA1's forward agrees with. The rate, not the FA1 / FA2 speed ratio, is
taken: gpuplan's flash efficiency on Ampere (core.time.efficiency, 0.30 of peak = 94 TFLOP/s, fitted on
llm-foundry's A100 rows, which ran its Triton kernel: submit_benchmarks.py@300cc5c58 L119 --attn_impl triton) is
itself below the chart's FA2 bars (140-155), so the ratio (1.8-2.2x) would put FA1 at ~42-52 TFLOP/s, under its
own measurement. FlashAttention 1 is never faster than the flash kernel (max of the two). Other parts: the A100
fraction of peak, carried over (FA1 has no Hopper-specific kernels). Head dims: flash-attn 0.2.2 runs head dims
that are multiples of 8 up to 128 (csrc/flash_attn/fmha_api.cpp@v0.2.2 L245 / L408) on three kernels, d <= 32,
<= 64, <= 128 (run_fmha_fwd L179-187, run_fmha_bwd L329-333), whose matmul tiles are the kernel's width: columns
past the head dim are only predicated off in the loads (src/fmha/gmem_tile.h@v0.2.2 L70-76 col_predicate), so a
head dim of 80 computes 128 wide (FA1_KERNEL_DIMS). Sequence lengths between the points: log-linear; outside: the
end points. Head dim 32 takes 64's panel. FA2_CAUSAL_TFLOPS is kept for that comparison (tests)."""
A100_BF16_TFLOPS = 312.0
"""The A100's dense BF16 peak, the chart's part (NVIDIA A100 datasheet; catalog hardware a100-*.toml)."""
FA1_KERNEL_DIMS = (32, 64, 128)
FA1_ARCHS = ("ampere", "hopper", "blackwell")
"""Parts (Accelerator.collective_arch, NVIDIA) FlashAttention 1 runs on: flash-attn 0.2.x is CUDA code for Turing /
Ampere and later (its README's requirements; setup.py builds sm75 / sm80); the catalog's earlier part is Volta."""

SDPA_REFUSED_SOURCE = {
    "gemma2": "transformers' Gemma2PreTrainedModel sets _supports_sdpa = False (models/gemma2/modeling_gemma2.py"
              "@5.25.0 L353: attention logit soft-capping)",
    "gpt_oss": "transformers' GptOssPreTrainedModel sets _supports_sdpa = False (models/gpt_oss/modeling_gpt_oss.py"
               "@5.25.0 L378: the sinks are concatenated to the scores)",
}
"""Why each SDPA_REFUSED model_type runs eager in transformers (file and line)."""
SDPA_REFUSED = tuple(SDPA_REFUSED_SOURCE)
"""model_types whose transformers modeling code refuses SDPA (``_supports_sdpa = False``), so
transformers runs them with eager attention (the default request is 'sdpa' and falls back to 'eager'
when the model cannot dispatch it: modeling_utils.py@5.25.0 get_correct_attn_implementation L1856,
L1882-1889); each one's file and line: SDPA_REFUSED_SOURCE (gpt_oss's concatenation of the sinks: L241-242).
The ModelSpec records neither sinks nor the modeling file's flag, so the model_type decides."""


def runs_transformers_modules(framework: str | None, implementation: str | None) -> bool:
    """True where transformers' own modules run the model: --framework hf, or --implementation hf under any
    framework (deepspeed's profile default). One rule for runs_eager_only and fa1_refusal (wave 15c)."""
    return framework == "hf" or implementation == "hf"


def runs_eager_only(model_type: str, framework: str | None = None, implementation: str | None = None) -> bool:
    """True when transformers' own modules run the model (runs_transformers_modules) and its modeling code
    refuses SDPA (SDPA_REFUSED): eager attention only."""
    return runs_transformers_modules(framework, implementation) and model_type in SDPA_REFUSED


def execution_kernel(option: str | None, model_type: str = "", framework: str | None = None,
                     implementation: str | None = None) -> str:
    """The kernel an --attention-kernel option runs: 'eager' stays eager, 'flash' and 'sdpa' (its
    flash path) are 'flash'; where transformers' modules run a ``model_type`` that refuses SDPA
    (runs_eager_only) it is eager whatever the option, for the step and the memory alike."""
    if runs_eager_only(model_type, framework, implementation):
        return "eager"
    return "eager" if option == "eager" else "flash"


def step_kernel(option: str | None, executed: str) -> str:
    """The kernel the step times: 'flash1' where the option asks for FlashAttention 1 and the flash path runs
    (its memory is the flash kernel's: q, k, v, out and the log-sum-exp, so execution_kernel stays 'flash')."""
    return "flash1" if option == "flash1" and executed == "flash" else executed


def fa1_refusal(spec, framework: str | None, gpu, fp8_attention: bool, implementation: str | None) -> str | None:
    """Why FlashAttention 1 (flash-attn 0.2.x) cannot run ``spec``'s attention under ``framework``; None
    where it can: head dims multiples of 8 up to 128, one for q / k and v (fmha_api.cpp@v0.2.2 L245, L247-249),
    no sliding window (no window argument before flash-attn 2.3), and not where transformers' own modules run
    the model (runs_transformers_modules: --framework hf, or --implementation hf under any framework, deepspeed's
    default): their attn_implementation is one of AttentionInterface's flash_attention_2 / 3 / 4, flex_attention,
    sdpa or eager (modeling_utils.py@5.25.0 L5323-5330), flash_attention_2 needing flash-attn >= 2.3.3
    (utils/import_utils.py@5.25.0 L1331-1334): no FlashAttention 1. Under --implementation megatron the deepspeed
    profile is Megatron-DeepSpeed, which runs FlashAttention 1 ('--use-flash-attn', '--use-flash-attn-v1',
    megatron/arguments.py@4efb479 L927; args.use_flash_attn L433)."""
    if framework == "llmc":  # llmc/cudnn_att.cpp (USE_CUDNN=1) or llmc/attention.cuh's unfused kernels, no flash-attn
        return "--framework llmc runs cuDNN's fused attention or its own unfused kernels, not FlashAttention 1: give flash or eager"
    a = spec.attention
    if a.qk_head_dim != a.value_head_dim or a.qk_head_dim > 128 or a.qk_head_dim % 8:
        return (f"FlashAttention 1 runs one head dim, a multiple of 8 up to 128; {spec.name} has "
                f"{a.qk_head_dim} (q, k) / {a.value_head_dim} (v): give flash or eager")
    if spec.num_sliding_layers:
        return f"FlashAttention 1 takes no sliding window ({spec.name} has sliding layers): give flash or eager"
    if runs_transformers_modules(framework, implementation):  # wave 15c: megatron / generic with hf were answered
        where, also = ("--framework hf", "") if framework == "hf" else (
            f"--framework {framework} with --implementation hf",
            ", or --implementation megatron (Megatron-DeepSpeed's --use-flash-attn-v1)" if framework == "deepspeed"
            else ", or leave --implementation hf out")
        return f"transformers' modules ({where}) run SDPA or FlashAttention 2, not 1: give flash or eager{also}"
    if framework == "torchtitan":  # wave 16: was answered as flash, the kernel ignored
        return ("torchtitan's attention is PyTorch's SDPA, FlexAttention or varlen_attn (models/common/attention.py"
                "@b5bcd76 L24-39 imports no flash-attn), not FlashAttention 1: give flash or eager")
    if gpu is not None and (gpu.collective_arch if gpu.vendor.lower() == "nvidia" else None) not in FA1_ARCHS:
        return (f"FlashAttention 1 (flash-attn 0.2.x) is CUDA code for Turing / Ampere and later (its README's "
                f"requirements; setup.py builds sm75 / sm80); {gpu.name} is not: give flash or eager")
    if fp8_attention:
        return "FlashAttention 1 computes in fp16 / bf16; --fp8-attention is cuDNN's FP8 attention: give one of them"
    return None


def fa1_fraction_of_peak(seq_len, head_dim: int):
    """FlashAttention 1's forward + backward speed as a fraction of the part's BF16 peak, on the FLOPs of
    ``head_dim`` (the kernel computes FA1_KERNEL_DIMS' width): Figure 4's FA1 TFLOP/s at the width's panel and
    ``seq_len`` over A100_BF16_TFLOPS, times head dim / width (above)."""
    import numpy as np

    width = next((w for w in FA1_KERNEL_DIMS if head_dim <= w), FA1_KERNEL_DIMS[-1])
    panel = max(width, 64)
    x, points = np.log(np.clip(seq_len, FA1_SEQ_POINTS[0], FA1_SEQ_POINTS[-1])), np.log(FA1_SEQ_POINTS)
    return np.interp(x, points, FA1_CAUSAL_TFLOPS[panel]) / A100_BF16_TFLOPS * head_dim / width


def fa1_passes(forward_flops, seq_len, head_dim: int, peak: float, flash: tuple[object, object]):
    """(forward, backward) seconds of FlashAttention 1 for ``forward_flops`` (per token, one GPU's share) at
    ``seq_len``: (1 + FLASH_BACKWARD_RATIO) x forward_flops at fa1_fraction_of_peak of ``peak``, never below
    the ``flash`` kernel's (forward, backward), split as flash splits its passes."""
    import numpy as np

    fwd, bwd = flash
    total = (1.0 + FLASH_BACKWARD_RATIO) * forward_flops / (peak * fa1_fraction_of_peak(seq_len, head_dim))
    slower = np.maximum(1.0, total / (fwd + bwd))
    return fwd * slower, bwd * slower


def exp_bound_stretch(spec, tensor_flops_per_exp: float) -> float:
    """How much longer than its FLOPs the flash forward takes when exponentials bind (>= 1)."""
    a = spec.attention
    return max(1.0, tensor_flops_per_exp / (2.0 * (a.qk_head_dim + a.value_head_dim)))


def flash_passes(forward_seconds, spec, tensor_flops_per_exp: float,
                 tensor_rate: tuple[float, float] = NO_TENSOR_RATE) -> tuple[object, object]:
    """(forward, backward) seconds of a flash kernel whose forward FLOPs take ``forward_seconds`` at the
    part's flash efficiency: the exponential roof stretches the forward, the backward is 2.5x it, and a
    measured ``tensor_rate`` (FLASH_TENSOR_RATE: forward, backward) divides each pass where the roof
    does not bind."""
    stretch = exp_bound_stretch(spec, tensor_flops_per_exp)
    fwd_rate, bwd_rate = tensor_rate if stretch == 1.0 else NO_TENSOR_RATE
    forward = forward_seconds * stretch
    return forward / fwd_rate, FLASH_BACKWARD_RATIO * forward / bwd_rate


def flash_executed_keys(seq_len, window: int):
    """Keys per query a flash kernel computes in a sliding-window layer (causal, window ``window``
    keys): a query tile j of s / KEY_TILE reaches min(j + 1, k) key tiles, k = ceil((w - 1) /
    KEY_TILE) + 1, i.e. mean_attended_keys in tile units, times KEY_TILE."""
    band_tiles = -(-(window - 1) // KEY_TILE) + 1
    return KEY_TILE * F.mean_attended_keys(seq_len / KEY_TILE, band_tiles, "causal")


def flops_per_key(spec) -> float:
    """Forward FLOPs per query and key of one layer: QK^T and PV, 2·heads·(d_qk + d_v)."""
    a = spec.attention
    return 2.0 * a.num_heads * (a.qk_head_dim + a.value_head_dim)


def flash_forward_flops_per_token(spec, seq_len):
    """Forward FLOPs per token of the mean layer that a flash kernel executes: full layers their
    causal (s + 1) / 2 keys, sliding layers whole key tiles of their band (flash_executed_keys)."""
    sliding = spec.num_sliding_layers
    causal = F.attention_core_flops_per_token(spec, seq_len, "causal") / spec.num_layers
    if not sliding:
        return causal
    per_key = flops_per_key(spec)
    windowed = per_key * F.mean_attended_keys(seq_len, spec.sliding_window, "causal")
    executed = per_key * flash_executed_keys(seq_len, spec.sliding_window)
    return causal + sliding * (executed - windowed) / spec.num_layers


def attention_seconds_per_token(spec, seq_len, tp, *, kernel: str, peak: float, efficiency: float,
                                mamf: float, hbm_bytes_per_s: float, dropout: float = 0.0,
                                tensor_flops_per_exp: float = 0.0,
                                tensor_rate: tuple[float, float] = NO_TENSOR_RATE) -> tuple[object, object]:
    """(forward, backward) seconds per token for one layer's attention core on one GPU.
    ``peak``: the attention's dense FLOP/s (bf16); ``efficiency``: the flash kernel's fraction
    of it; ``mamf``: the batched matmuls' fraction (eager); ``hbm_bytes_per_s``: achievable HBM
    bandwidth (eager scores); ``tensor_flops_per_exp``: the part's TENSOR_FLOPS_PER_EXP (0: none);
    ``tensor_rate``: the part's FLASH_TENSOR_RATE (flash only)."""
    if kernel in ("flash", "flash1"):  # sliding layers by whole key tiles; the exponential roof (above)
        flops = flash_forward_flops_per_token(spec, seq_len) / tp
        fwd, bwd = flash_passes(flops / (peak * efficiency), spec, tensor_flops_per_exp, tensor_rate)
        if kernel == "flash":
            return fwd, bwd
        return fa1_passes(flops, seq_len, spec.attention.qk_head_dim, peak, (fwd, bwd))  # FA1_CAUSAL_TFLOPS
    if kernel != "eager":
        raise ValueError(f"attention kernel {kernel!r}: one of {', '.join(ATTENTION_KERNELS)}")
    matmuls = F.attention_core_flops_per_token(spec, seq_len, "full") / spec.num_layers / tp / (peak * mamf)
    scores = spec.attention.num_heads / tp * seq_len  # score elements per token (16-bit)
    drop = EAGER_DROPOUT_BYTES * (dropout > 0)
    forward = matmuls + scores * (EAGER_FORWARD_BYTES + drop) / hbm_bytes_per_s
    backward = 2 * matmuls + scores * (EAGER_BACKWARD_BYTES + drop) / hbm_bytes_per_s
    return forward, backward


def layer_attention_seconds(spec, gpu, settings, tp) -> tuple[object, object]:
    """(forward, backward) seconds per token of one layer's attention core on one GPU as core.time.step runs it:
    attention_seconds_per_token at the settings' kernel, efficiency (else the part's) and dropout, in bf16 at the
    part's attention peak (low_precision.attention_head_peak), FP8 attention's ratio where it is on
    (low_precision.fp8_attention_seconds). The CP ring hides each transfer behind one step of these
    (core.time.context_parallel.ring_exposed_per_layer)."""
    from gpuplan.core.time.efficiency import _mamf, attention_efficiency
    from gpuplan.core.time.low_precision import attention_head_peak, fp8_attention_seconds

    exp_roof, tensor_rate = part_flash_roof(gpu)
    return fp8_attention_seconds(settings.fp8_attention, gpu.id, spec, attention_seconds_per_token(
        spec, settings.seq_len, tp, kernel=settings.attention_kernel, peak=attention_head_peak(gpu, settings.dtype),
        efficiency=settings.attention_efficiency or attention_efficiency(gpu), mamf=_mamf(gpu),
        hbm_bytes_per_s=gpu.memory_bandwidth * settings.hbm_efficiency, dropout=settings.attention_dropout,
        tensor_flops_per_exp=exp_roof, tensor_rate=tensor_rate))


def attention_forward_share(spec, gpu, settings, tp):
    """The forward's share of one layer's attention core, forward + backward (layer_attention_seconds)."""
    forward, backward = layer_attention_seconds(spec, gpu, settings, tp)
    return forward / (forward + backward)
