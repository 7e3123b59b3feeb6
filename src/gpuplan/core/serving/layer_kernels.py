"""Kernels one decoder layer runs, counted from the engines' code, per model family and path.

Units: kernels a decoder layer (all-reduces apart: core.serving.kernels.allreduces_per_layer counts
those). One count serves two rules, so they cannot disagree:

- ``issued``: the kernels the host launches, one by one, for a layer of an eager forward (each
  torch op, custom op or library call that reaches the GPU; a library call that launches several
  kernels from C++ is one launch here). first_token_path's issue time is layers x (issued +
  all-reduces) x its per-launch host time.
- ``graph``: the kernels on the critical path of a CUDA-graph decode step of that layer (a library
  call counted by the kernels it runs; work forked onto a second stream under graph capture counted
  once, the longer branch). graph_floor.graph_layer_seconds_of's floor is GRAPH_KERNEL_S x graph
  (4.267 us a kernel).

Sources: the sglang 0.5.6 wheel (python/sglang/srt/...), flashinfer-python 0.5.3 (sglang 0.5.6's pin,
its METADATA: flashinfer_python==0.5.3; data/csrc/...) and the vllm 0.9.1 wheel, cited file@version:line.
Where no entry matches, the counting rule of graph_floor.graph_kernels_per_layer stands (it is the count
below for a bf16 dense layer in SGLang 0.5.6 and for Qwen3 in vLLM 0.9.1: SGLANG_DENSE_A100, VLLM_091_QWEN3).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.hardware import Accelerator
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving import graph_floor as GF
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving.releases import EngineRelease


@dataclass(frozen=True)
class LayerKernels:
    """One decoder layer's kernels on one path, all-reduces apart (module docstring)."""

    issued: float
    """Launches the host issues for the layer when it runs eagerly."""
    graph: float
    """Kernels on a CUDA-graph step's critical path for the layer (GPU)."""
    source: str


FP8_BLOCK_LINEAR = 2
"""An FP8 block-scale (128 x 128) linear in SGLang 0.5.6 is two kernels whatever the GEMM backend:
the activations' per-token-group quantisation, then the GEMM (layers/quantization/fp8_utils.py@v0.5.6:
dispatch L151-161; flashinfer L177-188, CUTLASS L218-224 (shapes not a multiple of 128 fall back to
Triton, L206-212), DeepGEMM L261-272, Triton L386-392: per_token_group_quant_fp8 then the matmul)."""

NORMS_IN_ALLREDUCE_MAX_TOKENS = 2048
"""SGLang 0.5.6 fuses the all-reduce with the residual add and the next RMSNorm (flashinfer's
allreduce_residual_rmsnorm) for steps of up to 2,048 tokens at TP > 1 where
enable_flashinfer_allreduce_fusion is set (layers/communicator.py@v0.5.6:76 FUSE_ALLREDUCE_MAX_BATCH_SIZE,
L532-568, L766-780); server_args.py@v0.5.6:1028-1034 sets it on sm100 for DeepseekV3ForCausalLM and
L1086-1092 for GptOssForCausalLM (one node, no DP attention). Past it, two fused add + RMSNorm kernels
a layer run again."""

# --- DeepSeek-V3 / R1, native FP8 block-scale checkpoint, SGLang 0.5.6 -----------------------------
# B200 (sm100) defaults: attention trtllm_mla (server_args.py@v0.5.6:1016-1025), MoE runner
# flashinfer_trtllm for fp8 (L1052-1060), which sets disable_shared_experts_fusion (L1521-1531): the
# shared expert runs as its own MLP. Per layer, from models/deepseek_v2.py@v0.5.6 unless named:
_MLA_COMMON = ("qkv_a FP8 linear 2 (fused_qkv_a_proj_with_mqa via fetch_qkv_latent, L1757-1764), q_b FP8 "
               "linear 2 (L1814), o_proj FP8 linear 2 (L2092); w_kc / w_vc dequantised to bf16 at load for "
               "128x128 blocks (L3584-3602), so torch.bmm 1 each (L1893, L2085-2091)")
DEEPSEEK_SM100_DECODE_ATTENTION = LayerKernels(
    issued=15, graph=14,
    source="absorbed MLA (handle_attention_trtllm_mla L391-411: decode -> MLA): " + _MLA_COMMON + "; q_a / "
           "kv_a RMSNorm 2 (L1806-1807; under graph capture kv_a on the alt stream beside q_a, L1768-1775: 1 on "
           "the critical path); rotary 1 (bf16 KV: not fused into the attention, L1720-1731, L1899-1904); "
           "trtllm_mla_backend.py@v0.5.6 forward_decode L793-891: set_mla_kv_buffer 1, concat_mla_absorb_q 1, "
           "seq_lens.to(int32) 1, trtllm_batch_decode_with_kv_cache_mla 1; input / post-attention norms in the "
           "all-reduces (NORMS_IN_ALLREDUCE_MAX_TOKENS): 2+2+2+1+1+2+1+4 = 15 issued, 14 on the graph's path")
DEEPSEEK_SM100_PREFILL_ATTENTION = LayerKernels(
    issued=17, graph=17,
    source="prefill without prefix: MHA_CHUNKED_KV (L391-396), forward_normal_prepare L1600-1712: qkv_a 2 "
           "(L1608-1614), q_a RMSNorm 1 + q_b 2 (L1649-1650), kv_a RMSNorm 1 + kv_b FP8 linear 2 (L1681-1682), "
           "rotary 1 (L1688), q_pe copy 1 (L1689), set_mla_kv_buffer 1 (L1691, L2740-2744), kv_b again 2 "
           "(L1706: outside the one-shot branch, so the file runs it twice), k concat 1 (L1711; 16 local heads "
           "at TP 8: concat_and_cast_mha_k_triton, L2818-2828), trtllm_ragged_attention_deepseek 1 "
           "(trtllm_mla_backend.py@v0.5.6:1072), o_proj 2 (L2706): 17")
DEEPSEEK_SM100_MOE_DECODE = LayerKernels(
    issued=11, graph=11,
    source="DeepseekV2MoE under graph capture: forward_normal_dual_stream (L756-821): shared expert "
           "(DeepseekV2MLP L483-511: gate_up FP8 2, SiLU-and-mul 1, down FP8 2) = 5 on the main stream; on "
           "the alt stream dsv3_router_gemm 1 (<= 16 tokens, L566-577, float32 out), BYPASSED top-k (topk.py"
           "@v0.5.6:285-307), fp8.py@v0.5.6 apply_with_router_logits L1212-1281: per_token_group_quant 1 (L1234), "
           "a_sf.t().contiguous() 1 (L1236), correction_bias.to(bf16) 1 (L1241; a float32 parameter, L526-536), "
           "trtllm_fp8_block_scale_moe 1 launch running 6 kernels (flashinfer 0.5.3 "
           "csrc/trtllm_fused_moe_routing_deepseek.cu:600-624 routingMainKernel + routingIndicesClusterKernel; "
           "trtllm_fused_moe_runner.cu:520-555 gemm1, activation (DeepSeek FP8 only), gemm2, finalize) = 10; "
           "then += shared 1. Issued 5 + 5 + 1 = 11; graph max(5, 4 + 6) + 1 = 11")
DEEPSEEK_SM100_MOE_PREFILL = LayerKernels(
    issued=12, graph=17,
    source="forward_normal (L822-898), eager: shared expert 5, router F.linear 1 (> 16 tokens, L577-578), "
           "router_logits.to(float32) 1 (fp8.py@v0.5.6:1256), quant 1 (L1234), transpose 1 (L1236), "
           "bias cast 1 (L1241), "
           "trtllm_fp8_block_scale_moe 1 (6 kernels on the GPU), += shared 1: 12 issued, 17 run")
DEEPSEEK_FP8_DENSE_MLP = LayerKernels(  # the same on sm90 (PR 12160's forward) and sm100: no backend choice in it
    issued=5, graph=5, source="first_k_dense_replace layers: DeepseekV2MLP gate_up FP8 2, SiLU-and-mul 1, down FP8 2")

# sglang PR 12160's eager forward (the per-launch host time's measurement): a Hopper machine (the PR
# names none; the path below is sm90's) at sglang 0.5.3-0.5.4, counted on 0.5.6's code: attention
# fa3 (the sm90 default for DeepSeek), a 1-new-token extend with 1 cached token -> absorbed MLA
# (_handle_attention_backend L343-365: prefix 1 is neither 0 nor >= chunked_prefix_cache_threshold),
# no all-reduce fusion (sm100 only), MoE triton with the shared expert fused in (L3412-3452: CUDA sm >= 80,
# no EP, not flashinfer_trtllm).
DEEPSEEK_SM90_PR12160_ATTENTION = LayerKernels(
    issued=15, graph=14,
    source="input fused add + RMSNorm 1, " + _MLA_COMMON + ", q_a / kv_a RMSNorm 2, rotary 1, fa3 "
           "forward_extend MLA set_mla_kv_buffer 1 + flash_attn_with_kvcache 1 (layers/attention/"
           "flashattention_backend.py@v0.5.6:705-712, L940-960), post-attention fused add + RMSNorm 1: "
           "1+2+2+2+1+1+2+1+2+1 = 15")
DEEPSEEK_SM90_PR12160_MOE = LayerKernels(
    issued=9, graph=9,
    source="dsv3_router_gemm 1, moe_fused_gate 1 (topk.py@v0.5.6:807-831), triton fused_experts_impl "
           "(fused_moe_triton/fused_moe.py@v0.5.6:517-640): moe_align_block_size 1, w13 quant + kernel 2 "
           "(fused_moe_triton_kernels.py@v0.5.6:633), SiLU-and-mul 1, w2 quant + kernel 2, moe_sum_reduce 1: 9")

# --- GPT-OSS (MXFP4 experts, bf16 attention with sinks / sliding window), SGLang 0.5.6 on sm100 ------
GPT_OSS_SM100 = LayerKernels(
    issued=8, graph=11,
    source="attention trtllm_mha and MoE flashinfer_mxfp4 on sm100 (server_args.py@v0.5.6:1062-1111); "
           "models/gpt_oss.py@v0.5.6: qkv linear (bias in the GEMM) 1, rotary with the KV write fused (bf16 KV, "
           "L298-313; models/utils.py@v0.5.6:29-35) 1, q.contiguous() 1 and trtllm_batch_decode_with_kv_cache "
           "(sinks and window as arguments) 1 (layers/attention/trtllm_mha_backend.py@v0.5.6:515-573; prefill "
           "trtllm_batch_context_with_kv_cache L636), o_proj 1; norms in the all-reduces; MoE router 1 "
           "(L179), mxfp8_quantize 1 (layers/quantization/mxfp4.py@v0.5.6:636-638), "
           "trtllm_fp4_block_scale_moe 1 launch (L660) running 4 kernels (routing: one block kernel "
           "at few tokens, csrc/trtllm_fused_moe_routing_renormalize.cu:436-457; gemm1 with its activation "
           "fused, gemm2, finalize: trtllm_fused_moe_runner.cu:520-555): issued 8, graph 11")

# --- confirmations of the general rule ------------------------------------------------------------
# Citations only: no rule reads these two (the general rule gives the same counts); tests/test_layer_kernels.py
# checks that they stay equal to graph_floor.graph_kernels_per_layer.
SGLANG_DENSE_A100 = LayerKernels(
    issued=11, graph=11,
    source="Llama on A100 (attention flashinfer): models/llama.py@v0.5.6 L188-199, L253-272: input fused add + "
           "RMSNorm 1, qkv 1, rotary 1, flashinfer extend set_kv_buffer + ragged prefill 2 (layers/attention/"
           "flashinfer_backend.py@v0.5.6:715-800; decode: the cache write + decode kernel), o_proj 1, post "
           "norm 1, gate_up 1, SiLU-and-mul 1, down 1: 11 = GRAPH_KERNELS_DENSE")
VLLM_091_QWEN3 = LayerKernels(
    issued=13, graph=13,
    source="vllm 0.9.1 Qwen3 (AWQ converted to awq_marlin: one gptq_marlin_gemm a linear), eager: "
           "model_executor/models/qwen3.py@v0.9.1 L128-147, L201-225: fused add + RMSNorm 1, qkv 1, "
           "q_norm 1, k_norm 1 (layers/layernorm.py@v0.9.1:20-43), rotary 1, reshape_and_cache_flash + "
           "flash_attn_varlen_func 2, o_proj 1, post norm 1, gate_up 1, SiLU-and-mul 1, down 1: 13 = "
           "GRAPH_KERNELS_DENSE + GRAPH_KERNELS_QK_NORM['vllm']")


# --- Qwen3's per-head q / k reshape before its norms, SGLang 0.5.x ---------------------------------------
QWEN3_QK_RESHAPE_MODEL_TYPES = ("qwen3", "qwen3_moe")
"""Model types whose SGLang attention norms q and k per head through ``x.reshape(-1, head_dim)`` of the
qkv projection's split (qwen3_moe.py@v0.5.6:369-389, _apply_qk_norm: eager L383 q and L385 k, under graph
capture L376 q and L379 k; qwen3.py@v0.5.6:152-161 the same; forward_prepare_native splits q, k, v off one qkv
tensor, qwen3_moe.py@v0.5.6:434-435, qwen3.py@v0.5.6:168-169)."""
QWEN3_QK_RESHAPE_SINCE = (0, 5, 0)
"""The first SGLang release read with that reshape: the 0.5.0rc0, 0.5.1-0.5.1.post3, 0.5.2 and 0.5.3 wheels'
qwen3_moe.py have the two ``reshape(-1, self.head_dim)`` calls, as 0.5.6 does; the 0.4.x releases with Qwen3
(0.4.6 on) were not read and keep the general rule."""


def qk_reshape_copies(spec: ModelSpec, release: EngineRelease, tokens: float, tp: int) -> int:
    """Copy kernels a Qwen3 layer of an SGLang forward of ``tokens`` tokens launches for the per-head reshape of q and
    k before their RMSNorms, at ``tp`` ranks. q is a column slice of the qkv output, its rows qkv_size apart, not
    q_size: reshaping it to (tokens x heads, head_dim) cannot be a view (tokens and heads do not merge: their strides
    are qkv_size and head_dim, and qkv_size != heads x head_dim), so torch copies it, one kernel. With one token the
    token dimension has size 1 and the reshape is a view (no kernel: a batch-1 decode step has none), and likewise
    with one head a rank (the reshape keeps the shape). k copies by the same rule where a rank holds more than one KV
    head (KV heads are replicated where there are fewer than ranks: one a rank). Checked with torch on the shapes
    (Qwen3-235B-A22B at TP 8: q 8 heads of 128 in rows of 1,280 copies at 2+ tokens and is a view at 1; k, one
    head, a view). Eagerly the copies are launched one by one: 1 for q, + 1 for k where it copies. A CUDA-graph step
    (graph_kernels) runs q's copy on the main stream (qwen3_moe.py@v0.5.6:376) and k's on the alternate stream with
    k_norm (L378-380, off the critical path): q's only. 0 for other models, engines and releases before
    QWEN3_QK_RESHAPE_SINCE."""
    if (release.engine != "sglang" or release.version < QWEN3_QK_RESHAPE_SINCE or tokens <= 1
            or spec.model_type not in QWEN3_QK_RESHAPE_MODEL_TYPES or spec.attention.qk_norm != "per_head"):
        return 0
    heads_a_rank = spec.attention.num_heads // max(1, tp)
    kv_heads_a_rank = max(1, spec.attention.num_kv_heads // max(1, tp))
    return int(heads_a_rank > 1) + int(kv_heads_a_rank > 1)


def _sm100(fabric: Accelerator | None) -> bool:
    return fabric is not None and (fabric.compute_capability or (0, 0)) >= (10, 0)


def _deepseek_fp8(spec: ModelSpec, fmt_name: str) -> bool:
    return spec.attention.is_mla and spec.moe is not None and fmt_name == "fp8"


def _plus(a: LayerKernels, b: LayerKernels) -> LayerKernels:
    return LayerKernels(a.issued + b.issued, a.graph + b.graph, a.source + "; " + b.source)


_DEEPSEEK_SM100 = {prefill: (_plus(attention, DEEPSEEK_FP8_DENSE_MLP), _plus(attention, moe))
                   for prefill, attention, moe in ((True, DEEPSEEK_SM100_PREFILL_ATTENTION, DEEPSEEK_SM100_MOE_PREFILL),
                                                   (False, DEEPSEEK_SM100_DECODE_ATTENTION, DEEPSEEK_SM100_MOE_DECODE))}
"""(dense layer, MoE layer) of DeepSeek-V3 FP8 on sm100, by prefill: built once (table_entry runs per step)."""


def table_path(spec: ModelSpec, release: EngineRelease, fabric: Accelerator | None, fmt_name: str) -> str | None:
    """The decode attention backend of the path the table has (SGLang on sm100: 'trtllm_mla' for DeepSeek-V3-style
    MLA + MoE in FP8, 'trtllm_mha' for GPT-OSS in MXFP4); None where the general rule stands. table_entry's entries
    and outside_layers' metadata count both read it (review w17 ME N2)."""
    if release.engine != "sglang" or not _sm100(fabric):
        return None
    if _deepseek_fp8(spec, fmt_name):
        return "trtllm_mla"
    if spec.model_type == "gpt_oss" and fmt_name == "mxfp4":
        return "trtllm_mha"
    return None


def table_entry(spec: ModelSpec, release: EngineRelease, fabric: Accelerator | None, fmt_name: str,
                prefill: bool) -> tuple[LayerKernels, LayerKernels] | None:
    """(dense layer, MoE layer) counts where the table has the path (table_path); None where the general rule
    stands."""
    path = table_path(spec, release, fabric, fmt_name)
    if path is None:
        return None
    return _DEEPSEEK_SM100[bool(prefill)] if path == "trtllm_mla" else (GPT_OSS_SM100, GPT_OSS_SM100)


def layer_mean(pair: tuple[LayerKernels, LayerKernels], layers: int, moe_layers: int, attr: str) -> float:
    """Mean kernels a layer (``attr``: 'issued' or 'graph') of a model of ``layers`` decoder layers, ``moe_layers``
    of them MoE: (dense x (layers - moe_layers) + MoE x moe_layers) / layers. The one weighting both a spec's
    count (_mean) and first_token_path's PR 12160 forward (DeepSeek-V3, 61 layers, 58 MoE) read."""
    dense, moe = pair
    share = moe_layers / layers
    return getattr(dense, attr) * (1 - share) + getattr(moe, attr) * share


def _mean(pair: tuple[LayerKernels, LayerKernels], spec: ModelSpec, attr: str) -> float:
    return layer_mean(pair, spec.num_layers, spec.num_moe_layers if spec.moe is not None else 0, attr)


def graph_kernels(spec: ModelSpec, release: EngineRelease, fabric: Accelerator | None = None,
                  fmt_name: str = "bf16", *, tp: int = 1, tokens: float = 1.0) -> float:
    """Mean kernels a layer of a CUDA-graph decode step of ``tokens`` tokens runs on its critical path, all-reduces
    apart: the table's where it has the path, else graph_floor.graph_kernels_per_layer, plus SGLang's Qwen3 q copy at two
    tokens or more (qk_reshape_copies; k's runs on the alternate stream: at most 1; review w14 R1 S1). Where the
    table's path fuses the norms into the all-reduces, a step without TP runs the two add + RMSNorm kernels
    (_norms_apart: issued_kernels' rule; a graph step is never past NORMS_IN_ALLREDUCE_MAX_TOKENS)."""
    pair = table_entry(spec, release, fabric, fmt_name, prefill=False)
    if pair is None:
        return GF.graph_kernels_per_layer(spec, release.engine) + min(1, qk_reshape_copies(spec, release, tokens, tp))
    return _mean(pair, spec, "graph") + (2 if _norms_apart(tp, 1.0) else 0)


def _norms_apart(tp: int, tokens: float) -> bool:
    """The table's paths fuse the residual add + RMSNorm into the all-reduces (NORMS_IN_ALLREDUCE_MAX_TOKENS);
    without TP, or past that many tokens, the two add + RMSNorm kernels run apart."""
    return tp <= 1 or tokens > NORMS_IN_ALLREDUCE_MAX_TOKENS


def issued_kernels(spec: ModelSpec, release: EngineRelease, fabric: Accelerator | None = None,
                   fmt_name: str = "bf16", *, prefill: bool = True, tokens: float = 1.0, tp: int = 1) -> float:
    """Mean launches the host issues a layer of an eager forward of ``tokens`` tokens, all-reduces
    included (kernels.allreduces_per_layer at tp > 1): the table's where it has the path, else the
    general rule, graph_floor.graph_kernels_per_layer with q and k normed by two launches (under graph
    capture SGLang forks k_norm onto a second stream; eagerly both run: qwen3_moe.py@v0.5.6:373-386), plus
    SGLang's Qwen3 per-head reshape copies at two tokens or more (qk_reshape_copies).
    Where the path fuses the norms into the all-reduces (NORMS_IN_ALLREDUCE_MAX_TOKENS), a step of more
    tokens, or one without TP, issues the two add + RMSNorm kernels again."""
    pair = table_entry(spec, release, fabric, fmt_name, prefill)
    if pair is None:
        extra = 2 - GF.GRAPH_KERNELS_QK_NORM.get(release.engine, 2) if spec.attention.qk_norm != "none" else 0
        count = GF.graph_kernels_per_layer(spec, release.engine) + extra + qk_reshape_copies(spec, release, tokens, tp)
    else:
        count = _mean(pair, spec, "issued") + (2 if _norms_apart(tp, tokens) else 0)
    return count + (KR.allreduces_per_layer(spec, release) if tp > 1 else 0)


def graph_floor_scale(spec: ModelSpec, release: EngineRelease, fabric: Accelerator | None, fmt_name: str,
                      tp: int = 1, tokens: float = 1.0) -> float:
    """graph_kernels / graph_floor.graph_kernels_per_layer at ``tokens`` a step: how much the table's count (and SGLang's
    Qwen3 q copy) moves the general rule's floor (1 where neither applies)."""
    return (graph_kernels(spec, release, fabric, fmt_name, tp=tp, tokens=tokens)
            / GF.graph_kernels_per_layer(spec, release.engine))
