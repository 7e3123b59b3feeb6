"""Measured kernel efficiencies by part: the achievable matmul rate (MAMF) and the fused
attention kernels' rate, as fractions of the dense peak, and the shape model of a GEMM.
Moved from core.time.step (which re-exports them) so the step models of core.time.step and core.time share one table.
Units: fractions of dense peak FLOP/s.
"""

from __future__ import annotations

# Maximum achievable matmul FLOPS as a fraction of dense peak (BF16), measured with
# mamf-finder.py (stas00/ml-engineering, compute/accelerator/README.md, "Maximum Achievable Matmul
# FLOPS comparison table", revision 744d01e of 2026-08-22). That revision re-measured MI300X at
# 51.4% (ROCm 6.3; an earlier revision's 60.1% is now listed as the MI325X's 60.4%) and added
# B300, GB200, MI325X, MI355X and Gaudi 3.
MAMF_FRACTION = {
    "a100-sxm4-80gb": 0.869, "a100-sxm4-40gb": 0.869, "a800-sxm4-80gb": 0.869,
    "a100-pcie-80gb": 0.811, "a100-pcie-40gb": 0.811,
    "h100-sxm": 0.803, "h800-sxm": 0.803, "h200-sxm": 0.803, "h100-pcie": 0.80, "h100-nvl": 0.80,
    "gh200": 0.838, "b200": 0.776, "b300": 0.786, "gb200": 0.729, "mi250x": 0.767, "mi300x": 0.514,
    "mi325x": 0.604, "mi355x": 0.680, "gaudi2": 0.969, "gaudi3": 0.741,
}
DEFAULT_MAMF_FRACTION = 0.75  # parts without a published MAMF measurement
# The same measurement for FP8 (e4m3) GEMMs, as a fraction of the dense FP8 peak (same table):
# H100 SXM 70.9%, H200 73.4%, GH200 77.6%, B200 76.3%, B300 74.5%, GB200 72.3%. Parts without an
# FP8 figure take their BF16 fraction scaled by the H100 ratio (0.709 / 0.803).
MAMF_FP8_FRACTION = {"h100-sxm": 0.709, "h800-sxm": 0.709, "h200-sxm": 0.734, "gh200": 0.776,
                     "b200": 0.763, "b300": 0.745, "gb200": 0.723}
FP8_MAMF_RATIO = 0.709 / 0.803
# GB300 (Blackwell Ultra, NVL72, 1,400 W): no MAMF is published, and its spec BF16 / FP8 peaks equal the
# GB200's although it has 160 SMs to 148 ("Inside NVIDIA Blackwell Ultra", developer.nvidia.com). cuDNN's
# training-attention benchmark, cuDNN 9.22 / frontend 1.21.1 on both parts (NVIDIA/cudnn-frontend
# benchmark/sdpa_benchmark_training/results/{llama3.1,dsv3,kimiK26}/{gb200,gb300}/*.csv @3929da2), runs the
# BF16 backward passes, tensor-core bound at head dim 128 / 192 (>= 1,280 FLOPs per exponential, 512 bind),
# 1.141x faster on the GB300 (geometric mean of 18 shapes at s >= 8,192, range 1.08-1.22; FP8 backward
# 1.23), while its memory-bound norm kernels (benchmark/norms/results) run 1.01x: the GB300 sustains
# ~1.14x the GB200's tensor rate at equal spec peaks (160 / 148 SMs = 1.08, the rest clock under 1,400 vs
# 1,200 W). Its BF16 / FP8 fractions are the GB200's measured MAMF x that ratio (equal peaks); NVFP4,
# never measured, keeps the B300's FP8 fraction (kernels_like). tests/test_gb300_kernel_rate.py.
# The FP8 backward's 1.234 is not the FP8 GEMM ratio: it would put the GB300's FP8 GEMMs at 2.14x its BF16
# ones on peaks 2.0x apart, and the same CSVs' MXFP8 backward gives 1.169 (docs/step.md "Blackwell twins").
GB300_OVER_GB200_TENSOR_RATE = 1.141
MAMF_FRACTION["gb300"] = round(MAMF_FRACTION["gb200"] * GB300_OVER_GB200_TENSOR_RATE, 3)
MAMF_FP8_FRACTION["gb300"] = round(MAMF_FP8_FRACTION["gb200"] * GB300_OVER_GB200_TENSOR_RATE, 3)
RATIO_DERIVED = ("gb300",)
"""Parts whose fractions above come from another part's MAMF and a measured BF16 / FP8 kernel ratio."""
# Executed (causal) attention FLOPs per second / dense peak, forward+backward of the fused
# attention kernel, fitted with the two GEMM constants below to the 209 llm-foundry MPT BF16
# benchmark runs (mosaicml/llm-foundry scripts/train/benchmarking/README.md; Triton/Flash
# attention of 2023-24): Ampere 0.30, Hopper 0.20 (FlashAttention-2 is not Hopper-tuned; FA3
# reaches ~0.6-0.75 fwd, Shah et al. 2024). Override with StepSettings.attention_efficiency.
ATTENTION_EFFICIENCY = {"h100-sxm": 0.20, "h800-sxm": 0.20, "h200-sxm": 0.20, "h100-pcie": 0.20,
                        "h100-nvl": 0.20, "h20": 0.20}
DEFAULT_ATTENTION_EFFICIENCY = 0.30
# Hopper-tuned attention kernels (FlashAttention-3, cuDNN fused attention as Transformer Engine
# uses it): 1.5-2.0x FlashAttention-2 on H100 (Shah et al. 2024, arXiv:2407.08608, abstract: FA2
# reaches 35% of H100, FA3 up to 75% forward). A framework profile that runs them scales the
# FA2-era Hopper efficiency above by the midpoint, 1.75.
HOPPER_TUNED_ATTENTION_SPEEDUP = 1.75


def _kernel_ids(gpu) -> tuple[str, ...]:
    """The ids whose measured kernel efficiencies apply to ``gpu`` (an Accelerator or an id): its
    own, then the part whose die it shares (catalog ``kernels_like``: the Grand Teton H100 and
    GH200 run the H100's kernels; the tables hold fractions of each part's own peak)."""
    if isinstance(gpu, str):
        return (gpu,)
    return (gpu.id,) + ((gpu.kernels_like,) if gpu.kernels_like else ())


def _lookup(table: dict[str, float], gpu, default: float) -> float:
    return next((table[i] for i in _kernel_ids(gpu) if i in table), default)


def attention_efficiency(gpu, hopper_tuned: bool = False) -> float:
    """Executed attention FLOPs / peak on ``gpu`` (an Accelerator or an id); ``hopper_tuned``: the
    framework runs FA3-class kernels, which only changes the Hopper parts (the table's FA2-era 0.20)."""
    base = _lookup(ATTENTION_EFFICIENCY, gpu, DEFAULT_ATTENTION_EFFICIENCY)
    hopper = any(i in ATTENTION_EFFICIENCY for i in _kernel_ids(gpu))
    return base * HOPPER_TUNED_ATTENTION_SPEEDUP if hopper_tuned and hopper else base


def _mamf(gpu) -> float:
    return _lookup(MAMF_FRACTION, gpu, DEFAULT_MAMF_FRACTION)


def gemm_efficiency(gpu, smallest_dim, d_half: float, low_precision: bool | str = False):
    """Fraction of dense peak a GEMM reaches on ``gpu`` (an Accelerator or an id): MAMF x d / (d + d_half),
    with the FP8 MAMF fraction for ``low_precision`` (True / 'fp8', or 'fp4': NVFP4 takes the FP8 fraction
    its die measured, never a RATIO_DERIVED one: no FP4 kernel ratio is published)."""
    fp8 = _lookup(MAMF_FP8_FRACTION, gpu, FP8_MAMF_RATIO * _mamf(gpu))
    if low_precision == "fp4" and any(i in RATIO_DERIVED for i in _kernel_ids(gpu)):
        fp8 = next((MAMF_FP8_FRACTION[i] for i in _kernel_ids(gpu)[1:] if i in MAMF_FP8_FRACTION), fp8)
    mamf = fp8 if low_precision else _mamf(gpu)
    return mamf * smallest_dim / (smallest_dim + d_half)


