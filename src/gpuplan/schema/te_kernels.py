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
* The CUDA-graph scope of an eager MoE layer (--cuda-graph-scope none / moe-router; full-iteration is the
  graph above): Transformer Engine graphs of the router and the dispatcher's preprocessing, or none
  (StepSettings.moe_router_graphs, core.time.moe_host.ungraphed_router_seconds); timed under --framework
  megatron, whose MoE host time is charged per layer (core.frameworks moe_launch 'eager').
* The flex dispatcher's backend (--flex-backend deepep / hybridep, StepSettings.flex_backend): DeepEP leaves
  the expert counts unaligned, so FP8 pads them with copies (core.time.moe_layer.pads_for_quantization).
"""

from __future__ import annotations

from typing import Any

from gpuplan.core.frameworks import MEGATRON_CORE_FRAMEWORKS, framework as framework_profile
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
DEFAULT_EXPERT_KERNELS = "per-expert"
"""TE's GroupedLinear, Megatron-Core's path unless the op fuser and NVTE_CUTEDSL_FUSED_GROUPED_MLP are set."""
MoeExpertKernels = option(T.choice(*EXPERT_KERNELS), DEFAULT_EXPERT_KERNELS, "MoE expert kernels: per-expert (TE "
                          "GroupedLinear: a quantisation and a cuBLAS GEMM per local expert) or fused (TE's CuTe DSL "
                          "grouped MLP, use_transformer_engine_op_fuser + NVTE_CUTEDSL_FUSED_GROUPED_MLP=1: one "
                          "kernel for all experts, SwiGLU and MXFP8 quantisation in its epilogues; needs --dtype fp8 "
                          "--fp8-recipe mxfp8 on Blackwell).")
FullIterationGraph = option(T.Bool, False, "The whole training step captured in one CUDA graph (Megatron-Bridge "
                            "cuda_graph_impl='full_iteration'): no MoE host time per layer; --framework megatron. "
                            "The same as --cuda-graph-scope full-iteration.")
CUDA_GRAPH_SCOPES = ("none", "moe-router", "full-iteration")
"""--cuda-graph-scope: Megatron-Core cuda_graph_impl 'none'; 'transformer_engine' with cuda_graph_scope moe_router +
moe_preprocess (with attn or not: attention graphs are not timed, docs/step.md); the full-iteration graph."""
DEFAULT_CUDA_GRAPH_SCOPE = "none"
"""Megatron-Core's default: cuda_graph_impl 'none', "no CUDA graph" (megatron/core/transformer/transformer_config.py
@core_v0.16.1 L776-782, the version core.frameworks profiles; the same default at core_v0.15.0 L638). Megatron-Bridge
keeps it unless a recipe or its --cuda_graph_impl sets one (scripts/performance/argument_parser.py@v0.4.2: default
None; the published rows' derived.cuda_graph cite each recipe's)."""
FLEX_BACKENDS = ("deepep", "hybridep")
DEFAULT_FLEX_BACKEND = "deepep"
"""Megatron-Core's moe_flex_dispatcher_backend default, "deepep" (transformer_config.py@core_v0.16.1 L682-685);
Megatron-Bridge switches to HybridEP only where asked (training/flex_dispatcher_backend.py@v0.4.2
apply_flex_dispatcher_backend, from a recipe or --moe_flex_dispatcher_backend)."""
STATED_DEFAULTS = {"cuda_graph_scope": DEFAULT_CUDA_GRAPH_SCOPE, "flex_backend": DEFAULT_FLEX_BACKEND}
"""Values a stated option shares with its unstated reading: answered where nothing reads them, as unstated (the
lead's rule, review w16 R5 S3; wave 18: --cuda-graph-scope none under torchtitan, --flex-backend deepep without
--ep-dispatcher flex were refused)."""
CudaGraphScope = option(T.choice(*CUDA_GRAPH_SCOPES) | None, None, "CUDA graphs of Megatron-Core's MoE layers: none "
                        "(cuda_graph_impl 'none', Megatron-Core's default, transformer_config.py@core_v0.16.1 L776: the "
                        "router and the dispatcher's preprocessing issued op by op, 42-43 host ops per MoE layer and "
                        "micro-batch), moe-router (cuda_graph_impl 'transformer_engine', cuda_graph_scope moe_router + "
                        "moe_preprocess, with attn or not: those ops replayed) or full-iteration (Megatron-Bridge "
                        "cuda_graph_impl='full_iteration', as --full-iteration-graph); --framework megatron (generic: "
                        "full-iteration only).", "none")
FlexBackend = option(T.choice(*FLEX_BACKENDS) | None, None, "Backend of --ep-dispatcher flex (Megatron-Core "
                     "moe_flex_dispatcher_backend, default deepep, transformer_config.py@core_v0.16.1 L682): deepep "
                     "leaves each expert's rows unaligned, so under FP8 Fp8Padding / Fp8Unpadding copy them "
                     "(token_dispatcher.py _DeepepManager); hybridep pads in its dispatch kernel (Megatron-Bridge "
                     "moe_flex_dispatcher_backend='hybridep'). --framework megatron; memory counts the backend's own "
                     "buffers (DeepEP's normal-mode buffers or HybridEP's), in plan and memory alike.", "deepep")


def kernel_step_settings(fp8_attention: bool, moe_expert_kernels: str, graph_scope: str, launch: str,
                         flex_backend: str = DEFAULT_FLEX_BACKEND) -> dict[str, Any]:
    """StepSettings fields (fp8_attention, moe_expert_kernels, moe_launch, moe_router_graphs, flex_backend) of
    these choices; ``graph_scope``: one of CUDA_GRAPH_SCOPES; ``launch``: the moe_launch without a
    full-iteration graph (the framework's, or the published row's)."""
    return {"fp8_attention": bool(fp8_attention), "moe_expert_kernels": moe_expert_kernels,
            "moe_launch": "graph" if graph_scope == "full-iteration" else launch,
            "moe_router_graphs": graph_scope != "none", "flex_backend": flex_backend}


def graph_scope(fields) -> str:
    """The CUDA-graph scope asked: --full-iteration-graph, else --cuda-graph-scope, else Megatron-Core's default."""
    return "full-iteration" if fields.full_iteration_graph else fields.cuda_graph_scope or DEFAULT_CUDA_GRAPH_SCOPE


def step_settings_of(fields) -> dict[str, Any]:
    """kernel_step_settings of the inputs (schema.training_fields.StepFields), the framework's moe_launch."""
    return kernel_step_settings(fields.fp8_attention, fields.moe_expert_kernels, graph_scope(fields),
                                fields.profile.moe_launch, fields.flex_backend or DEFAULT_FLEX_BACKEND)


def check_kernel_fields(fields) -> None:
    """InputError for a choice the inputs' dtype / FP8 recipe / framework rule out (StepFields validator)."""
    dtype, framework = fields.dtype, getattr(fields, "framework", "megatron")
    asked = [name for name in ("fp8_attention", "full_iteration_graph", "cuda_graph_scope", "flex_backend")
             if fields.stated_otherwise(name, STATED_DEFAULTS.get(name))]  # each default (None / False) unread
    if fields.moe_expert_kernels == "fused":
        asked.append("moe_expert_kernels")
    if asked and framework not in MEGATRON_CORE_FRAMEWORKS:  # the first asked, as the CLI shows its value
        raise InputError(asked[0], getattr(fields, asked[0]), f"is a Transformer Engine / Megatron-Core path: give "
                         f"--framework megatron (not {framework})")
    check_graph_fields(fields, framework)
    if fields.fp8_attention and dtype != "fp8":
        raise InputError("fp8_attention", True, f"runs with FP8 linears: give --dtype fp8 (not {dtype})")
    if fields.moe_expert_kernels == "fused" and (dtype != "fp8" or fields.fp8_recipe != "mxfp8"):
        raise InputError("moe_expert_kernels", "fused", "TE's CuTe DSL grouped MLP is MXFP8 only: give --dtype fp8 "
                         "--fp8-recipe mxfp8, or per-expert")


def check_graph_fields(fields, framework: str) -> None:
    """InputError for --cuda-graph-scope / --flex-backend that cannot apply: two scopes asked, a per-layer scope or
    a backend where the framework times no eager MoE layer (generic), a backend without --ep-dispatcher flex."""
    scope, backend = fields.cuda_graph_scope, fields.flex_backend
    if fields.full_iteration_graph and scope not in (None, "full-iteration"):
        raise InputError("cuda_graph_scope", scope, "--full-iteration-graph is --cuda-graph-scope full-iteration: "
                         "give one of the two")
    if framework_profile(framework).moe_launch != "eager":  # (the frameworks left: MEGATRON_CORE_FRAMEWORKS)
        if scope == "moe-router":  # 'none', the default, is answered: it is how these frameworks run
            raise InputError("cuda_graph_scope", scope, f"--framework {framework} times no per-layer MoE host time "
                             "(graphed or not), so only full-iteration changes its answer: give --framework megatron "
                             "or leave it out")
        if backend not in (None, DEFAULT_FLEX_BACKEND):
            raise InputError("flex_backend", backend, f"--framework {framework} does not time Megatron-Core's "
                             "FP8 padding of the flex dispatcher: give --framework megatron")
    if backend not in (None, DEFAULT_FLEX_BACKEND) and getattr(fields, "ep_dispatcher", "alltoall") != "flex":
        raise InputError("flex_backend", backend, "is the backend of the flex dispatcher: give --ep-dispatcher flex "
                         "(not alltoall), or leave --flex-backend out")


def check_kernels_run_on(inputs, gpu, spec) -> None:
    """InputError where the part (core.hardware.Accelerator) cannot run the asked kernels. ``spec`` is kept for the
    callers (jobs.plan.search._checked_gpu); the model's own refusals (fused expert kernels or a CUDA-graph scope on a
    dense model) run earlier, at spec resolution (schema.layout_rules.check_model via SetupFields.adjust_spec), so
    this no longer repeats them (review w16 R5 S2: they were unreachable)."""
    arch = gpu.collective_arch if gpu.vendor.lower() == "nvidia" else None
    if inputs.fp8_attention and arch not in FP8_ATTENTION_ARCHS:
        raise InputError("fp8_attention", True, f"cuDNN's FP8 fused attention runs on Hopper and Blackwell (sm90+), "
                         f"not {gpu.name}")
    if inputs.moe_expert_kernels == "fused" and arch not in FUSED_MLP_ARCHS:
        raise InputError("moe_expert_kernels", "fused", f"TE's CuTe DSL grouped MLP is built for Blackwell "
                         f"(sm100: b200, gb200, b300, gb300), not {gpu.name}: give per-expert")
