"""Transformer Engine kernel choices of a Megatron-Core recipe that change the step time: FP8 attention,
the fused grouped MoE MLP and a full-iteration CUDA graph. One vocabulary for plan / train / budget /
web / Python API (schema.training_fields.StepFields) and for the published-row mapping
(jobs.validation.published_throughput), which builds its StepSettings through ``kernel_step_settings``.

Where each runs (the conditions the step model's terms were read under):

* FP8 attention (Megatron-Bridge ``mixed_precision.fp8_dot_product_attention``, Megatron
  --fp8-dot-product-attention): TE's cuDNN fused attention with FP8 Q, K, V, O, on the FP8 linears' recipe
  (--dtype fp8); cuDNN's FP8 fused attention is an sm90+ kernel (Hopper, Blackwell). Its time ratio is
  measured on GB200 / GB300 only (core.time.low_precision.FP8_ATTENTION_TIME_RATIO); elsewhere it keeps
  the BF16 time.
* The fused grouped MLP (Megatron-Core use_transformer_engine_op_fuser with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1:
  TE's ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8 / BackwardGroupedMLP_CuTeGEMMDSwiGLU_MXFP8, cuDNN CuTe DSL
  ``grouped_gemm_glu_wrapper_sm100``): MXFP8 only (core.time.moe_layer.FUSED_MLP_RECIPES), on sm100-class
  parts (NVIDIA Blackwell: B200, GB200, B300, GB300), MoE models.
* A full-iteration CUDA graph (Megatron-Bridge cuda_graph_impl='full_iteration'): the MoE layers issue no
  host work per step (StepSettings.moe_launch 'graph', core.time.moe_host); Megatron-Core only.
"""

from __future__ import annotations

from typing import Any

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS
from gpuplan.errors import InputError
from gpuplan.schema import types as T
from gpuplan.schema.vocabulary import option

FP8_ATTENTION_ARCHS = ("hopper", "blackwell")
"""NVIDIA generations (Accelerator.collective_arch) with cuDNN's FP8 fused attention (sm90+)."""
FUSED_MLP_ARCHS = ("blackwell",)
"""NVIDIA generations the CuTe DSL grouped MLP kernels are built for (``*_sm100``)."""
EXPERT_KERNELS = ("per-expert", "fused")
"""core.time.moe_layer.EXPERT_KERNEL_MODES."""

Fp8Attention = option(T.Bool, False, "FP8 attention core (Megatron --fp8-dot-product-attention, Megatron-Bridge "
                      "fp8_dot_product_attention): cuDNN's FP8 fused attention; needs --dtype fp8, --framework "
                      "megatron and a Hopper or Blackwell part (timed from cuDNN's GB200 / GB300 benchmark; other "
                      "parts keep the BF16 time).")
MoeExpertKernels = option(T.choice(*EXPERT_KERNELS), "per-expert", "MoE expert kernels: per-expert (TE "
                          "GroupedLinear: a quantisation and a cuBLAS GEMM per local expert) or fused (TE's CuTe DSL "
                          "grouped MLP, use_transformer_engine_op_fuser + NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: one "
                          "kernel for all experts, SwiGLU and MXFP8 quantisation in its epilogues; needs --dtype fp8 "
                          "--fp8-recipe mxfp8 on Blackwell).")
FullIterationGraph = option(T.Bool, False, "The whole training step captured in one CUDA graph (Megatron-Bridge "
                            "cuda_graph_impl='full_iteration'): no MoE host time per layer; --framework megatron.")


def kernel_step_settings(fp8_attention: bool, moe_expert_kernels: str, full_iteration_graph: bool,
                         launch: str) -> dict[str, Any]:
    """StepSettings fields (fp8_attention, moe_expert_kernels, moe_launch) of these choices; ``launch``:
    the moe_launch without a full-iteration graph (the framework's, or the published row's)."""
    return {"fp8_attention": bool(fp8_attention), "moe_expert_kernels": moe_expert_kernels,
            "moe_launch": "graph" if full_iteration_graph else launch}


def check_kernel_fields(fields) -> None:
    """InputError for a choice the inputs' dtype / FP8 recipe / framework rule out (StepFields validator)."""
    dtype, framework = getattr(fields, "dtype", "fp8"), getattr(fields, "framework", "megatron")
    asked = [name for name in ("fp8_attention", "full_iteration_graph") if getattr(fields, name)]
    if fields.moe_expert_kernels == "fused":
        asked.append("moe_expert_kernels")
    if asked and framework not in MEGATRON_CORE_FRAMEWORKS:  # the first asked, as the CLI shows its value
        raise InputError(asked[0], "fused" if asked[0] == "moe_expert_kernels" else True, f"is a Transformer "
                         f"Engine / Megatron-Core path: give --framework megatron (not {framework})")
    if fields.fp8_attention and dtype != "fp8":
        raise InputError("fp8_attention", True, f"runs with FP8 linears: give --dtype fp8 (not {dtype})")
    if fields.moe_expert_kernels == "fused" and (dtype != "fp8" or fields.fp8_recipe != "mxfp8"):
        raise InputError("moe_expert_kernels", "fused", "TE's CuTe DSL grouped MLP is MXFP8 only: give --dtype fp8 "
                         "--fp8-recipe mxfp8, or per-expert")


def check_kernels_run_on(inputs, gpu, spec) -> None:
    """InputError where the part (core.hardware.Accelerator) or the model cannot run the asked kernels."""
    arch = gpu.collective_arch if gpu.vendor.lower() == "nvidia" else None
    if inputs.fp8_attention and arch not in FP8_ATTENTION_ARCHS:
        raise InputError("fp8_attention", True, f"cuDNN's FP8 fused attention runs on Hopper and Blackwell (sm90+), "
                         f"not {gpu.name}")
    if inputs.moe_expert_kernels == "fused":
        if arch not in FUSED_MLP_ARCHS:
            raise InputError("moe_expert_kernels", "fused", f"TE's CuTe DSL grouped MLP is built for Blackwell "
                             f"(sm100: b200, gb200, b300, gb300), not {gpu.name}: give per-expert")
        if spec.moe is None:
            raise InputError("moe_expert_kernels", "fused", f"applies to mixture-of-experts models; {spec.name} is "
                             "dense")
