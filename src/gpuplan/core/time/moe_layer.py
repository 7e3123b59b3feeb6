"""GPU time of the kernels a Megatron-Core MoE layer launches once per local expert.

Megatron-Core's grouped experts (experts.py@core_v0.15.0 L746 TEGroupedMLP) run fc1 and fc2 through
Transformer Engine's GroupedLinear (extensions/transformer_engine.py L1086 TEGroupedLinear). Up to
TE v2.18 (the last tag read, 2026-08; every NeMo container in the reference set) GroupedLinear's
default path works expert by expert (read at TE v2.12, transformer_engine/pytorch/module/
grouped_linear.py; the same calls at v2.5, v2.7, v2.8 and v2.15):

* the input of each expert is quantised on its own: ``tex.split_quantize`` ->
  ``multi_tensor_quantize_impl`` (pytorch/csrc/extensions/cast.cpp) has a fused multi-tensor kernel
  only for delayed scaling (``nvte_multi_cast_transpose``); every other recipe runs
  ``quantizer->quantize`` once per expert. For FP8 current scaling ('tensorwise', Megatron's
  ``--fp8-recipe tensorwise``) that is four kernels (pytorch/csrc/quantizer.cpp
  Float8CurrentScalingQuantizer::quantize_impl: ``nvte_compute_amax_with_config``, which zeroes the
  amax with a one-block kernel before its pass, and ``nvte_quantize_v2``, two passes over the slice,
  with the one-block ``nvte_compute_scale_from_amax`` between them; no amax all-reduce, GroupedLinear
  sets none), for MXFP8 one (MXFP8Quantizer::quantize:
  ``nvte_quantize_v2`` writes the rowwise and columnwise copies). BF16 splits views (no kernel);
  NVFP4 has a fused split quantiser (``split_quantize_nvfp4_impl``: no kernel per expert).
  Forward: fc1's and fc2's inputs; backward: their output gradients (``tex.split_quantize`` of
  ``grad_output``): 4 quantisations per expert.
* each expert's GEMM is its own cuBLAS call: ``general_grouped_gemm`` -> ``nvte_multi_tensor_gemm``
  -> ``multi_stream_cublas_gemm`` (common/gemm/cublaslt_gemm.cu), round-robin over
  ``get_num_compute_streams() = 4`` streams (common/util/multi_stream.cpp); CUTLASS's grouped GEMM
  only on Hopper with NVTE_USE_CUTLASS_GROUPED_GEMM=1. fc1 and fc2 each fprop, dgrad and wgrad:
  6 GEMMs per expert.

TE v2.17 added a grouped-tensor path (one ``group_quantize`` and one grouped GEMM for all experts)
behind NVTE_GROUPED_LINEAR_USE_FUSED_GROUPED_GEMM, default "0" (grouped_linear.py@v2.17
``_is_grouped_tensor_path_supported``); Megatron-Core's fused grouped MLP (CuTe DSL, the rows with
``moe_comm.fused_grouped_mlp``) runs fc1 + activation + fc2 as one kernel. Neither pays this term.

Each of these kernels has a fixed GPU time beside its work (launch, ramp-up, tail wave):
core.time.memory_kernels.KERNEL_FIXED_SECONDS, 7.84 us, the intercept of PyTorch element-wise
kernels timed on an H200 (a one-block kernel: TINY_KERNEL_SECONDS). The quantisation kernels run
one after another on the compute stream and pay it in full; the GEMMs on four streams overlap
their fixed parts, so each pays it / min(4, local experts). The kernels' work (FLOPs, bytes) is charged elsewhere (core.time.step: the routed
GEMMs at the expert shape's efficiency, the casts at HBM speed); this module adds only the fixed
part, which the per-token terms cannot see: it grows with the local experts, not the tokens.

Megatron-Core's NCCL ``alltoall`` dispatcher also sorts the received tokens by local expert
(MoEAlltoAllTokenDispatcher.dispatch_postprocess, "Permutation 2", ``sort_chunks_by_idxs`` of the
tokens and their probabilities; combine_preprocess un-sorts the expert outputs: token_dispatcher.py
@core_v0.15.0 L663-691, L715-729) whenever a rank holds more than one expert. With
``moe_permute_fusion`` each is one TE kernel (``moe_sort_chunks_by_index``) that reads and writes
the rank's k routed copies of its tokens; the backward runs the inverse gather: four copies of
k x h bf16 values per token, read and written, per MoE layer (16 k h bytes), at core.time.
memory_kernels' stream efficiency plus one fixed time each. The layer's saved activations (the
fitted element-wise term) do not include them: the sorted copy is not kept for the backward.
DeepEP / HybridEP ('flex') permute once in or after the dispatch and have no second sort. Under FP8 /
FP4 the alltoall and DeepEP rows are copied twice more each way by Megatron-Core's quantisation padding
(Fp8Padding / Fp8Unpadding around the experts: QUANTIZATION_PADDING_COPIES below), unless the router pads;
HybridEP pads in its dispatch kernel.

Experts with biases (GPT-OSS) add the second linear's bias eagerly, expert by expert
(``TEGroupedMLP._apply_bias``, experts.py@core_v0.15.0 L823-840: ``torch.cat([t + b * p for t, b, p
in zip(split(out), biases, split(probs))]).to(out.dtype)``; core.time.eager_fallbacks prices its
bytes). Per local expert that is two forward kernels (``b * p``, ``t + .``) and, from autograd's
MulBackward0 / AddBackward0, four backward ones (``g * p`` and ``g * b``, each reduced to the bias's and
the probability's shape); with fp32 probabilities (the 'flex' dispatchers) the promoted sum adds
the casts of ``t``'s and ``b``'s gradients back to bf16: six. Each pays the fixed time above.

Transformer Engine's fused grouped MLP (the 'fused' rows: Megatron-Core's
``use_transformer_engine_op_fuser`` with NVTE_CUTEDSL_FUSED_GROUPED_MLP=1, MXFP8 only) also folds
the gated activation and the quantisations around it into GEMM epilogues:
ForwardGroupedMLP_CuTeGEMMSwiGLU_MXFP8 (transformer_engine/pytorch/ops/fused/forward_grouped_mlp.py,
TE #2769 / #2855, v2.17) runs fc1 + probability-scaled SwiGLU + the MXFP8 row- and columnwise
quantisation of fc2's input in one cuDNN CuTe DSL kernel (``grouped_gemm_glu_wrapper_sm100``,
c = the bf16 SwiGLU input kept for the backward, d = fc2's FP8 input), and
BackwardGroupedMLP_CuTeGEMMDSwiGLU_MXFP8 (backward_grouped_mlp.py) runs fc2's dgrad + dSwiGLU +
the probabilities' gradient + the MXFP8 quantisation of fc1's output gradient in one
(``grouped_gemm_dglu_wrapper_sm100``, d_dtype float8_e4m3fn). Per routed copy of a token and
expert-intermediate element, the unfused path's passes it no longer runs: forward the SwiGLU's
read of fc1's output (4 B) and write of its own (2 B) and the quantiser's read of it (2 B): 8 B;
backward fc2's dgrad output written and read by dSwiGLU (2 + 2 B), dSwiGLU's gradient written and
read by the quantiser (4 + 4 B): 12 B. The writes the epilogues still make (c, d, fc1's FP8 output
gradient) are the ones the unfused kernels made too. The step model charges those passes in its
element-wise term (the fitted factor over the saved SwiGLU bytes, core.time.step) and its cast
term (the quantisers' reads); this module subtracts them at the same HBM efficiency.
Nothing is fitted. Units: seconds, counts, bytes.
"""

from __future__ import annotations

from gpuplan.core.bulk import minimum
from gpuplan.core.time.eager_fallbacks import (CLAMPED_GLU, EXPERT_BIAS, UNFUSED_BDA, YARN_ROPE,
                                               eager_fallback_kernels, path_kernels, routing_probs_dtype)
from gpuplan.core.time.memory_kernels import KERNEL_FIXED_SECONDS, TINY_KERNEL_SECONDS, memory_bound_seconds

EXPERT_KERNEL_MODES = ("per-expert", "fused")
"""How a Megatron-Core MoE layer's experts are launched: 'per-expert' (TE GroupedLinear's default
path, above) or 'fused' (one kernel for all experts: Megatron's fused grouped MLP, TE's grouped
tensor path); StepSettings.moe_expert_kernels."""

QUANTIZE_KERNELS_PER_CALL = {"bf16": (0, 0), "tensorwise": (2, 2), "delayed": (0, 0), "mxfp8": (1, 0),
                             "nvfp4": (0, 0)}
"""(passes over the expert's slice, tiny kernels) one expert's quantisation launches, by linear recipe
(None = BF16): current scaling zeroes its amax (``zero_amax_kernel<<<1, 1>>>``, common/recipe/
current_scaling.cu@v2.9-v2.18 L75-76; ``cudaMemsetAsync`` at v2.5-v2.8), runs the amax pass, the
one-block ``compute_scale_from_amax_kernel`` (L258@v2.12) and the cast pass (a cast-transpose where
Hopper needs the columnwise copy: one kernel writing both, common/cast/dispatch/quantize.cuh@v2.12
NVTE_DELAYED_TENSOR_SCALING case, which current-scaling tensors take); MXFP8 one cast pass; delayed
scaling and NVFP4 fused across the experts (no kernel per expert)."""
QUANTIZE_CALLS_PER_EXPERT = (2, 2)
"""(forward, backward): fc1 / fc2 inputs, then fc1 / fc2 output gradients."""
GEMMS_PER_EXPERT = (2, 4)
"""(forward, backward): fc1 and fc2 fprop; dgrad and wgrad of each."""
GEMM_STREAMS = 4
"""TE's compute streams for per-expert cuBLAS GEMMs (common/util/multi_stream.cpp)."""


def quantize_launches_per_call(recipe: str | None) -> int:
    """Kernels one expert's quantisation launches (QUANTIZE_KERNELS_PER_CALL: passes + tiny kernels);
    0 for BF16 and for the recipes quantised across all experts at once."""
    return sum(QUANTIZE_KERNELS_PER_CALL.get(recipe or "bf16", (0, 0)))


def forward_launches_per_local_expert(recipe: str | None) -> int:
    """Kernels GroupedLinear launches per local expert in one MoE layer's forward (fc1 and fc2: the
    input's quantisation and the fprop GEMM each): current scaling 2 x 4 + 2 = 10, MXFP8 2 x 1 + 2 =
    4, BF16 / delayed / NVFP4 2."""
    return QUANTIZE_CALLS_PER_EXPERT[0] * quantize_launches_per_call(recipe) + GEMMS_PER_EXPERT[0]


def backward_launches_per_local_expert(recipe: str | None) -> int:
    """Kernels GroupedLinear launches per local expert in one MoE layer's backward (fc1 and fc2: the
    output gradient's quantisation, dgrad and wgrad GEMMs): BF16 / delayed / NVFP4 4, MXFP8 2 x 1 + 4 = 6,
    current scaling 2 x 4 + 4 = 12."""
    return QUANTIZE_CALLS_PER_EXPERT[1] * quantize_launches_per_call(recipe) + GEMMS_PER_EXPERT[1]


def expert_kernel_fixed_seconds(local_experts, recipe: str | None, fixed: float = KERNEL_FIXED_SECONDS):
    """(forward, backward) fixed GPU seconds of one MoE layer's per-expert kernels for one
    micro-batch on one GPU (``recipe``: the linears' low-precision recipe, None for BF16)."""
    passes, tiny = QUANTIZE_KERNELS_PER_CALL.get(recipe or "bf16", (0, 0))
    quantize = passes * fixed + tiny * TINY_KERNEL_SECONDS
    per_gemm = fixed / minimum(local_experts, GEMM_STREAMS)
    return tuple(local_experts * (calls * quantize + gemms * per_gemm)
                 for calls, gemms in zip(QUANTIZE_CALLS_PER_EXPERT, GEMMS_PER_EXPERT))


EAGER_BIAS_KERNELS_PER_EXPERT = {"bf16": (2, 4), "fp32": (2, 6)}
"""(forward, backward) kernels of the eager expert fc2 bias per local expert, by the routing
probabilities' dtype (core.time.eager_fallbacks.routing_probs_dtype)."""


def eager_bias_fixed_seconds(local_experts, probs_dtype: str, fixed: float = KERNEL_FIXED_SECONDS):
    """(forward, backward) fixed GPU seconds of one MoE layer's eager per-expert fc2 bias, one
    micro-batch on one GPU."""
    return tuple(local_experts * n * fixed for n in EAGER_BIAS_KERNELS_PER_EXPERT[probs_dtype])


SORT_COPIES = (2, 2)
"""(forward, backward) sorts of the routed tokens by the alltoall dispatcher: sort + un-sort, and their
inverse gathers."""


def routed_copy_seconds(copies, tokens, top_k: int, hidden: int, hbm_bytes_per_s: float, value_bytes: float = 2.0):
    """(forward, backward) seconds of ``copies`` (forward, backward) kernels that each read and write the
    ``top_k`` routed copies of ``tokens`` tokens of one rank (``hidden`` values each)."""
    one = memory_bound_seconds(2.0 * tokens * top_k * hidden * value_bytes, 1, hbm_bytes_per_s)
    return tuple(n * one for n in copies)


def alltoall_sort_seconds(tokens, top_k: int, hidden: int, hbm_bytes_per_s: float, value_bytes: float = 2.0):
    """(forward, backward) seconds of the ``alltoall`` dispatcher's sorts by local expert for ``tokens``
    tokens of one rank (each read and written as ``top_k`` routed copies of ``hidden`` values)."""
    return routed_copy_seconds(SORT_COPIES, tokens, top_k, hidden, hbm_bytes_per_s, value_bytes)


QUANTIZATION_PADDING_COPIES = (2, 2)
"""(forward, backward) copies of the routed tokens by Megatron-Core's quantisation padding: TEGroupedMLP.forward
pads the experts' input to the FP8 / FP4 GEMM alignment (16 rows; 32 for MXFP8 / NVFP4) with TE's Fp8Padding
and unpads fc2's output with Fp8Unpadding whenever the model runs FP8 (experts.py@core_v0.13.0 L751-756,
@core_v0.15.0 L860-867 / L957-958; 'fp8 or fp4' from core_v0.16.0 L646-651); each is one
``fused_multi_row_padding`` / ``fused_multi_row_unpadding`` kernel reading and writing every routed row
(transformer_engine/pytorch/module/fp8_padding.py, fp8_unpadding.py@v2.9), and their backwards run the inverse
copy. TE skips the copy only when every expert's count is already aligned (``m_splits == padded_m_splits``),
which dropless routing gives only where the dispatcher pads: the router's ``moe_router_padding_for_fp8`` /
``_for_quantization`` (default False; the Qwen3 and DeepSeek-V3 recipes of the published rows leave it off,
Megatron-Bridge recipes/qwen/qwen3_moe.py@v0.4.0 L97, recipes/deepseek/deepseek_v3.py@v0.3.1 L158) or
HybridEP's in-kernel ``pad_multiple`` (token_dispatcher.py@core_v0.16.0 L1035-1047). Charged for the NCCL
``alltoall`` dispatcher, which pads only through the router flag, and for DeepEP ('flex' with flex_backend
'deepep': _DeepepManager pads the routing map only under the router flag, token_dispatcher.py@d7288711
L1258-1296); not for HybridEP, which has passed ``pad_multiple`` to its dispatch kernel under FP8 since the
commit that added it to Megatron-Core (d9153a50ce, 2025-10-21, token_dispatcher.py L970 / L1015; every
published HybridEP row runs a core at or after it: Megatron-Bridge v0.2.2's pin cba6b0e L1050 onward), so the
core version decides nothing here; nor for drop-and-pad ('static') or fused-MLP layers. The padded
probabilities (one value per row) are left out."""


def pads_for_quantization(settings, recipe: str | None) -> bool:
    """Whether Megatron-Core's Fp8Padding / Fp8Unpadding copy the routed tokens each micro-batch (above): a
    quantised recipe, TE GroupedLinear per expert, dropless eager layers and a dispatcher that leaves the
    counts unaligned (``alltoall``, or 'flex' on DeepEP)."""
    unaligned = settings.ep_dispatcher == "alltoall" or settings.flex_backend == "deepep"
    return recipe is not None and settings.moe_expert_kernels == "per-expert" and settings.moe_launch == "eager" \
        and unaligned


FUSED_MLP_SAVED_BYTES = (8.0, 12.0)
"""(forward, backward) HBM bytes per routed token copy and expert-intermediate element that TE's
fused MXFP8 grouped MLP does not move (module docstring: the SwiGLU and dSwiGLU passes and the
quantisers' reads folded into GEMM epilogues)."""
FUSED_MLP_RECIPES = ("mxfp8",)
"""Linear recipes the CuTe DSL grouped MLP fuses (TE v2.17-v2.18: the _MXFP8 ops only)."""


def fused_mlp_saved_seconds(tokens, top_k: int, expert_intermediate: int, hbm_bytes_per_s: float):
    """(forward, backward) seconds of element-wise traffic the fused MXFP8 grouped MLP removes from one
    MoE layer for ``tokens`` tokens of one rank (``hbm_bytes_per_s``: the bandwidth the step model's
    element-wise term runs at)."""
    return tuple(n * tokens * top_k * expert_intermediate / hbm_bytes_per_s for n in FUSED_MLP_SAVED_BYTES)


def stage_expert_kernel_seconds(spec, settings, ep, layers, recipe: str | None, tokens=0.0,
                                hbm_bytes_per_s: float = 0.0):
    """Per micro-batch: the MoE layers among a stage's ``layers`` (forward, backward and a recompute's
    second forward, reruns_experts): the per-expert kernels' fixed seconds (``settings.moe_expert_kernels``
    'per-expert'), the alltoall dispatcher's sorts of the rank's ``tokens`` (a rank holding more than
    one expert) and its quantisation padding's copies (pads_for_quantization), the eager fc2 bias's per-expert kernels
    and the eager clamp's and bias add's fixed time (settings.eager_fallbacks; the RoPE's: core.time.step), less the
    element-wise passes the fused MXFP8 grouped MLP folds into its GEMMs (negative then). 0 unless
    Megatron-Core's MoE layer is modelled (``settings.moe_launch`` not 'none')."""
    if spec.moe is None or not spec.num_moe_layers or settings.moe_launch == "none":
        return 0.0
    local = spec.moe.num_experts / ep
    forward, backward = expert_kernel_fixed_seconds(local, recipe) \
        if settings.moe_expert_kernels == "per-expert" else (0.0, 0.0)
    if hbm_bytes_per_s > 0:
        sort_f, sort_b = alltoall_sort_seconds(tokens, spec.moe.experts_per_token, spec.hidden_size, hbm_bytes_per_s)
        # counted as numbers: with ``local`` an array (the planner's search) the comparison is a bool array, and
        # numpy adds bools as a logical or (True + True is True), so the search charged one copy where the single
        # layout charged two (the sorts and the padding together: FP8 alltoall, > 1 expert a rank; helper MT s24)
        sorts = 1.0 * (local > 1) if settings.ep_dispatcher == "alltoall" else 0.0
        copies = sorts + float(pads_for_quantization(settings, recipe))  # the sorts' and the padding's copies match
        forward, backward = forward + copies * sort_f, backward + copies * sort_b
    if settings.moe_expert_kernels == "fused" and recipe in FUSED_MLP_RECIPES and hbm_bytes_per_s > 0:
        saved_f, saved_b = fused_mlp_saved_seconds(tokens, spec.moe.experts_per_token, spec.moe.expert_intermediate_size,
                                                   hbm_bytes_per_s * settings.hbm_efficiency)
        forward, backward = forward - saved_f, backward - saved_b
    if spec.moe.expert_bias and EXPERT_BIAS in settings.eager_fallbacks:
        bias_f, bias_b = eager_bias_fixed_seconds(local, routing_probs_dtype(settings.ep_dispatcher))
        forward, backward = forward + bias_f, backward + bias_b
    moe_share = spec.num_moe_layers / spec.num_layers
    return (forward + backward + forward * reruns_experts(settings)) * moe_share * layers \
        + eager_fallback_fixed_seconds(spec, settings) * layers


def eager_fallback_fixed_seconds(spec, settings, fixed: float = KERNEL_FIXED_SECONDS):
    """Fixed GPU seconds per micro-batch of the mean layer's eager clamp and unfused bias-add kernels
    (core.time.eager_fallbacks.eager_fallback_kernels; their bytes are the element-wise term's) at ``fixed``.
    Full recompute re-runs both forwards, Megatron's 'moe' / 'moe_act' modules the clamp's. The eager RoPE's
    kernels are not here: every model with a YaRN factor runs them, dense ones too, so core.time.step charges them
    beside the RoPE's bytes (eager_fallbacks.eager_rope_fixed_seconds; review w12 R1 S3)."""
    full = _recomputes_every_layer(settings)
    act = full or (settings.recompute == "selective" and bool({"moe", "moe_act"} & set(settings.recompute_modules)))
    passes, _ = eager_fallback_kernels(spec, _without_rope(settings.eager_fallbacks), rerun_rope=full,
                                       rerun_clamp=act)  # no small kernels: only the RoPE's are (left out here)
    return fixed * passes


def _without_rope(fallbacks):
    """The eager fallbacks a MoE layer's fixed time counts: all but the RoPE's (core.time.step's)."""
    return tuple(f for f in fallbacks if f != YARN_ROPE)


def _recomputes_every_layer(settings) -> bool:
    """Full recompute of every layer (Megatron's block recompute of N layers a chunk, recompute_layers, is not)."""
    return settings.recompute == "full" and settings.recompute_layers is None


def eager_fallback_layer_seconds(spec, settings, ep, fixed: float = KERNEL_FIXED_SECONDS):
    """(forward, backward) fixed GPU seconds of one MoE layer and micro-batch's eager-fallback kernels
    (``settings.eager_fallbacks``: the fc2 bias's per-expert ones, the clamp's and the unfused bias add's,
    core.time.eager_fallbacks' EAGER_GLU_CLAMP_KERNELS and UNFUSED_BDA_KERNELS, at ``fixed``), the GPU time
    core.time.moe_host compares the host against beside the layer's phases (core.comm.moe_overlap.MoeLayerPhases
    hold only per-token work). The host side counts these paths' Python ops (moe_host.fallback_python_ops,
    EAGER_BIAS_PYTHON_OPS_PER_EXPERT), so a host-bound layer hides their kernels up to its excess: the layer takes
    max(host, GPU + these), and stage_expert_kernel_seconds charges them after (review w12 M1). Left out as the
    phases leave them out: a recompute's second forward (its host ops are not counted either). Not included
    (measured, not adopted: docs/step.md 'The release outliers, wave 12'): the per-expert GroupedLinear kernels'
    fixed time (expert_kernel_fixed_seconds), which the host's per-expert launches would hide the same way."""
    if spec.moe is None or not spec.num_moe_layers or settings.moe_launch == "none":
        return 0.0, 0.0
    forward = backward = 0.0
    if spec.moe.expert_bias and EXPERT_BIAS in settings.eager_fallbacks:
        forward, backward = eager_bias_fixed_seconds(spec.moe.num_experts / ep,
                                                     routing_probs_dtype(settings.ep_dispatcher), fixed)
    # the clamp's and the unfused bias add's kernels (eager_fallbacks' counts; the RoPE's sit in the phases'
    # element-wise work: core.time.step, eager_fallbacks.eager_rope_fixed_seconds); no small ones among them
    for path in (UNFUSED_BDA, CLAMPED_GLU):  # eager_fallback_kernels' counts, per MoE layer and split by pass
        kernels_f, kernels_b = path_kernels(spec, settings.eager_fallbacks, path)
        forward, backward = forward + fixed * kernels_f, backward + fixed * kernels_b
    return forward, backward


def reruns_experts(settings) -> bool:
    """Whether the recomputed forward runs the experts again: full recompute of every layer, or
    selective recompute of Megatron's 'moe' module (the whole MoE layer; 'moe_act' re-runs only the
    activation). Block recompute of N layers per chunk (recompute_layers) is not counted."""
    return _recomputes_every_layer(settings) or (settings.recompute == "selective" and "moe" in settings.recompute_modules)
