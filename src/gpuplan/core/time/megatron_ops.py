"""Megatron-Core with Transformer Engine: the memory-bound work of one dense decoder layer, op
class by op class, forward and backward, read from the code.

The layer is Megatron-Core's ``get_gpt_layer_with_transformer_engine_spec`` (megatron/core/models/
gpt/gpt_layer_specs.py, core_v0.15.0) with the fusions Megatron-Bridge's Llama providers switch on
(src/megatron/bridge/models/llama/llama_provider.py: bias_activation_fusion, bias_dropout_fusion,
apply_rope_fusion, persist_layer_norm True; gpt_provider.py: cross_entropy_loss_fusion True):

* ``norm``: TE's ``LayerNormLinear`` runs the RMSNorm / LayerNorm kernel on the linear's input
  (transformer_engine/pytorch/module/layernorm_linear.py, v2.9: ``apply_normalization``); forward
  reads x and writes its output (2 + 2 B per element, two norms a layer), backward the norm's
  backward kernel reads dy and x and writes dx (6 B) + the weight-gradient finalisation (per-SM
  partials: a second, small kernel).
* ``qkv_split``: ``get_query_key_value_tensors`` (megatron/core/transformer/attention.py) splits
  the fused QKV output with TE's ``SplitAlongDim`` and ``query.reshape(sq, b, -1, hn)`` copies the
  strided query slice (read 2 + write 2 per query element); backward, SplitAlongDim concatenates
  dq, dk, dv into the fused gradient (read + write 2 B each).
* ``rope``: TE's fused RoPE (``apply_rotary_pos_emb`` with ``apply_rope_fusion``: transformer_engine/
  pytorch/attention/rope.py ``FusedRoPEFunc``): one kernel per tensor, q and k read and written
  once (4 B per element) forward and backward.
* ``swiglu``: ``bias_swiglu_impl`` (megatron/core/fusions/fused_bias_swiglu.py, jit-fused): forward
  reads the 2I fc1 output and writes I (6 B per I), backward reads dy and the 2I input and writes
  the 2I gradient (10 B per I); ungated MLPs ``bias_gelu_impl`` (fused_bias_gelu.py): 4 and 6.
* ``residual``: ``bias_dropout_add_fused_train`` (megatron/core/fusions/fused_bias_dropout.py):
  x + residual (no bias, dropout 0 in the Llama providers: read 2 + 2, write 2) twice a layer;
  dropout with p = 0 returns its input, so the backward passes the gradient through.
* ``grad_sums``: backward only: autograd sums the residual-stream gradient and the norm's dx at each
  of the layer's two branch points (read 2 + 2, write 2).
* ``fp8_casts`` (FP8 / NVFP4 linears): every GEMM input quantised once forward (QKV, proj, fc1,
  fc2) and every output gradient once backward. Bytes per element by quantiser (transformer_engine/
  pytorch/csrc/quantizer.cpp, v2.9): current scaling (``Float8CurrentScalingQuantizer::quantize_impl``:
  nvte_compute_amax read 2, compute_scale_from_amax, nvte_quantize read 2 write 1, + 1 for the
  transpose a Hopper GEMM needs: 3 kernels, 6 B; Blackwell takes non-TN FP8 GEMMs,
  ``is_non_tn_fp8_gemm_supported`` = sm 10.x / 11.x, so no transpose: 5 B); after a TE norm the
  amax comes from the norm kernel (csrc/extensions/normalization.cpp ``FUSED_NORM_AMAX_FP8``:
  quantize_with_amax, 2 kernels, 4 / 3 B). Delayed scaling (``Float8Quantizer``): one cast(-transpose)
  kernel, 4 / 3 B; after a norm the norm itself writes FP8 (``FULLY_FUSED``: its output 1 B
  instead of 2) and Hopper transposes it (read 1, write 1). MXFP8 (``MXFP8Quantizer``): one pass
  writing rowwise and columnwise copies with their E8M0 scales, 2 + 2 x (1 + 1/32) B; the norm
  stays unfused (cuDNN's fused MXFP8 norm only under NVTE_NORM_FWD_USE_CUDNN). NVFP4
  (``NVFP4Quantizer::quantize_impl`` with the random Hadamard transform): a post-RHT amax pass
  (read 2), the rowwise cast (read 2, write 0.5 + 1/16 of E4M3 scales) and the fused RHT-cast of
  the columnwise copy (the same): 7.125 B, 3 kernels. Under sequence parallelism (tp > 1) a Hopper
  GEMM's gathered FP8 input cannot be gathered transposed: the local cast writes the rowwise copy
  only and the gathered, full-sequence tensor is transposed after the all-gather
  (transformer_engine/pytorch/distributed.py ``_all_gather_fp8``: ``needs_transpose`` ->
  ``_create_transpose``, v2.9): read 1 + write 1 B per element of all tp ranks' tokens, one kernel,
  for the two norm outputs (QKV and fc1 inputs) and the two row-parallel output gradients (proj
  and fc2), per-tensor recipes only (Blackwell needs no transpose).

* ``cp_attention`` (context parallelism, cp > 1): TE's ring attention (``AttnFuncWithCPAndKVP2P``,
  transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, v2.9, sbhd, bf16)
  concatenates k and v into the ring's send buffer (read + write 2 B each), takes the first step's
  output (``flash_attn_fwd_out_correction_init``: 4 B per output element) and merges each later
  step's (``flash_attn_fwd_out_correction``: out += out_step x exp(lse_step - lse), read 2 + 2 write
  2, on half the queries for the causal steps past the rank's own: 4.5 B on average) with its LSE
  correction; backward the first step's dq, dk, dv are copied into the accumulators (4 B) and each
  later step's added (``dq.add_``, ``dk.add_``, ``dv.add_``: 6 B, half-size on half the steps:
  4.5 B). Averaged over the ranks; per local token.

The loss (``loss_class``): Megatron's vocab-parallel cross-entropy over the LM head's logits, per
the model's provider: TE's Triton ``parallel_cross_entropy`` (``cross_entropy_fusion_impl='te'``:
transformer_engine/pytorch/triton/cross_entropy.py: an online-softmax pass reads the bf16 logits,
a second pass re-reads them and writes the gradient in place; backward multiplies it by the
incoming gradient: 10 B per vocabulary element, 3 kernels) or Megatron's fused one
(``'native'``, megatron/core/fusions/fused_cross_entropy.py: the logits cast to fp32 with their
max (2 + 4), exp and sum (4 + 4), the softmax division in place (4 + 4); backward the gradient
from the saved softmax, cast to bf16 (4 + 2): 28 B, 4 kernels).

Kernel time is core.time.memory_kernels' line (fixed seconds per kernel + bytes at 89% of HBM).
The step's other Megatron terms (FP8 weight casts once a step, the distributed optimizer, the
host) are in core.time.megatron_ops_step. Units: bytes per token (one GPU's share before tensor
parallelism), kernels per layer and micro-batch, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.titan_ops import OpClass

BF16 = 2.0
RECIPES = ("current", "delayed", "mxfp8", "nvfp4")
LOSS_OF_CROSS_ENTROPY = {"te": "te-ce", "native": "vocab-parallel-ce"}
"""Megatron's cross_entropy_fusion_impl -> the loss the memory model names (core.memory.training: te-ce, TE's
fused parallel_cross_entropy; vocab-parallel-ce, Megatron's own fused vocab-parallel CE). Both directions read
it: SetupFields.loss_for (impl -> loss) and cross_entropy_impl (loss -> impl)."""
CROSS_ENTROPY = tuple(LOSS_OF_CROSS_ENTROPY)
NVFP4_SCALED_BYTES = 0.5 + 1.0 / 16  # e2m1 + one E4M3 scale per 16 elements
MXFP8_SCALED_BYTES = 1.0 + 1.0 / 32  # e4m3 + one E8M0 scale per 32 elements
# Share of a layer's counted TP collectives (core.comm.step_comm._tp_cost: 4 reduce-scatter +
# all-gather pairs, 2 forward, 2 backward) that TE's linears hide without userbuffers
# (StepSettings.tp_overlap): in the backward of a column-parallel linear under sequence parallelism
# (QKV, fc1) the reduce-scatter of dgrad is issued async_op=True and runs beside the wgrad GEMM
# (transformer_engine/pytorch/module/linear.py, v2.9, L730-745; layernorm_linear.py L746-749;
# layernorm_mlp.py L1136-1139), and the re-gather of the saved input shard beside the dgrad GEMM
# (linear.py L636-665, layernorm_linear.py L669-672: traffic the count leaves out); the row-parallel
# linears' grad_output all-gather (base.py grad_output_preprocess, L1145-1151) and the forward's
# gathers and reduce-scatters block. 2 of the 8 counted collectives hidden: 0.25. Megatron-Core's
# own linears do the same (tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication).
# With userbuffers the same two are TE's bulk overlaps (qkv_wgrad / fc1_wgrad BulkOverlapCfg) and
# the other six are the ring-exchange ones tp_comm_overlap chunks: 3 pairs / tp exposed.
TE_HIDDEN_TP_COLLECTIVES = 2
CROSS_ENTROPY_OF_LOSS = {name: impl for impl, name in LOSS_OF_CROSS_ENTROPY.items()}
"""LOSS_OF_CROSS_ENTROPY inverted (loss -> cross_entropy_fusion_impl)."""


def te_hidden_tp_share(recompute: str) -> float:
    """TE_HIDDEN_TP_COLLECTIVES over the collectives _tp_cost counts under ``recompute``: 8 a layer (4 pairs);
    full recompute re-runs the forward's blocking pairs (2 more a layer), so 2 of 12."""
    return TE_HIDDEN_TP_COLLECTIVES / (8.0 + 4.0 * (recompute == "full"))


TE_HIDDEN_TP_SHARE = te_hidden_tp_share("none")
"""The share without full recompute: 2 of 8, 0.25 (the comment above)."""

# Megatron-Bridge providers that set cross_entropy_fusion_impl = "te" (llama_provider.py:
# Llama3ModelProvider8B / 70B, Llama31ModelProvider405B; DeepSeek-V3 at every tag of the rows:
# deepseek/deepseek_provider.py DeepSeekModelProvider@v0.1.0rc4 L111, @v0.2.0 / @v0.3.0 L114, then
# deepseek/deepseek_v3_bridge.py@v0.4.2 L75, @v0.6.0 L82 and recipes/deepseek/deepseek_v3.py@v0.4.2 L135);
# the others keep GPTModelProvider's 'native'
TE_CROSS_ENTROPY_MODELS = ("llama-3-8b", "llama-3-70b", "llama-3.1-405b", "deepseek-v3")


@dataclass(frozen=True)
class MegatronOps:
    """How Megatron-Core + TE runs a dense layer's memory-bound work (StepSettings.megatron_ops)."""

    cross_entropy: str = "native"
    """'te' (TE's Triton parallel_cross_entropy) or 'native' (Megatron's fused vocab-parallel CE)."""
    rope_fusion: bool = True
    """TE's fused RoPE (apply_rope_fusion); False: Megatron's unfused _apply_rotary_pos_emb_bshd."""
    fp8_delayed: bool = False
    """FP8 linears with delayed scaling (TE DelayedScaling) instead of current scaling."""
    cuda_graphs: bool = False
    """The recipe captures the layers in CUDA graphs (no host issue time per kernel)."""


def default_ops(spec: ModelSpec) -> MegatronOps | None:
    """`--framework megatron`'s op list for ``spec`` (None where it does not cover the model)."""
    if not covers(spec):
        return None
    return MegatronOps(cross_entropy=loss_impl(spec))


def loss_impl(spec: ModelSpec) -> str:
    """The provider's cross_entropy_fusion_impl: 'te' for TE_CROSS_ENTROPY_MODELS, else GPTModelProvider's 'native'."""
    return "te" if spec.name in TE_CROSS_ENTROPY_MODELS else "native"


def cross_entropy_impl(spec: ModelSpec, loss: str | None) -> str:
    """The cross_entropy_fusion_impl a Megatron run uses: ``loss``'s (a --loss or a row's recipe_memory.loss,
    LOSS_OF_CROSS_ENTROPY inverted: te-ce -> 'te', any other loss -> 'native'), else the provider's (loss_impl)."""
    if loss is None:
        return loss_impl(spec)
    return CROSS_ENTROPY_OF_LOSS.get(loss, "native")


def active(spec: ModelSpec, settings) -> MegatronOps | None:
    """settings.megatron_ops where it covers ``spec`` (a MoE or MLA model keeps the fitted model)."""
    ops = settings.megatron_ops
    return ops if ops is not None and covers(spec) else None


def covers(spec: ModelSpec) -> bool:
    """Dense blocks with standard attention (MoE layers and MLA keep core.time.step's model)."""
    return spec.moe is None and spec.attention.kv_lora_rank is None and spec.attention.q_lora_rank is None


def cast_recipe(dtype: str, fp8_recipe: str, ops: MegatronOps) -> str | None:
    """The TE quantiser of the linears: None (16-bit), 'current', 'delayed', 'mxfp8' or 'nvfp4'."""
    if dtype == "fp4":
        return "nvfp4"
    if dtype != "fp8":
        return None
    if fp8_recipe == "mxfp8":
        return "mxfp8"
    return "delayed" if ops.fp8_delayed else "current"


def non_tn_fp8(gpu) -> bool:
    """TE's is_non_tn_fp8_gemm_supported: data-centre Blackwell (compute capability 10.x, not sm_120) runs
    FP8 GEMMs on a column-wise operand without a transpose (core.hardware.Accelerator.fp8_any_layout_gemm)."""
    return gpu.fp8_any_layout_gemm


def quantize_cost(recipe: str, after_norm: bool, non_tn: bool) -> tuple[float, float]:
    """(bytes per element, kernels) of one TE quantisation of a bf16 tensor (module docstring);
    ``after_norm``: the input of a LayerNormLinear, whose norm kernel fuses what it can."""
    transpose = 0.0 if non_tn else 1.0
    if recipe == "current":
        return (2.0 + 1.0 + transpose, 2) if after_norm else (2.0 + 2.0 + 1.0 + transpose, 3)
    if recipe == "delayed":  # after a norm: its output written as FP8 (-1 B), + the transpose (1 + 1)
        return (-1.0 + 2 * transpose, transpose) if after_norm else (2.0 + 1.0 + transpose, 1)
    if recipe == "mxfp8":
        return 2.0 + 2 * MXFP8_SCALED_BYTES, 1
    if recipe == "nvfp4":
        return 2.0 + 2 * (2.0 + NVFP4_SCALED_BYTES), 3
    raise ValueError(f"recipe must be one of {RECIPES}, not {recipe!r}")


def _widths(spec: ModelSpec) -> tuple[float, float, float, float, float, bool]:
    """(h, q, kv, v, I, gated): hidden, query and key widths, value width, MLP width, gated MLP."""
    a = spec.attention
    return (float(spec.hidden_size), float(a.num_heads * a.qk_head_dim), float(a.num_kv_heads * a.qk_head_dim),
            float(a.num_kv_heads * a.value_head_dim), float(spec.mlp.intermediate_size), spec.mlp.gated)


FUSED_ROPE = (2, 2 * BF16, 2, 2 * BF16)
"""(fwd kernels, fwd bytes per element, bwd kernels, bwd bytes per element) of TE's FusedRoPEFunc on q and k: one
kernel per tensor, read + write each way."""
UNFUSED_ROPE = (2 * 6, 24.0, 2 * 7, 26.0)
"""The same for _apply_rotary_pos_emb_bshd on q and k (core.time.eager_fallbacks' YaRN reading), per element: t*cos 4,
rotate_half 6, *sin 4, the sum 6, the closing cat 4 = 24 B, 6 kernels a tensor; backward 26 B, 7 kernels a tensor."""


def _rope(ops: MegatronOps, width: float) -> tuple[float, float, float, float]:
    """(fwd kernels, fwd bytes, bwd kernels, bwd bytes) of RoPE on q and k of ``width`` elements in all."""
    fwd_kernels, fwd_bytes, bwd_kernels, bwd_bytes = FUSED_ROPE if ops.rope_fusion else UNFUSED_ROPE
    return fwd_kernels, fwd_bytes * width, bwd_kernels, bwd_bytes * width


def cp_class(spec: ModelSpec, cp) -> OpClass:
    """Context parallelism's own kernels per local token (module docstring); zero at cp 1. The output corrections
    act on the attention output, heads x value_head_dim wide (``o``): TE views it as ``v_shape`` under MLA
    (context_parallel.py@v2.9 L1643-1650: 128 x 128 for DeepSeek-V3, not the queries' 128 x 192); dq is q wide."""
    _, q, kv, v, _, _ = _widths(spec)
    o = float(spec.attention.num_heads * spec.attention.value_head_dim)
    ring = cp > 1
    steps = cp - 1.0  # steps after the first
    forward = (2 * BF16 * (kv + v) + 2 * BF16 * o + 4.5 * o * steps) * ring
    backward = (2 * BF16 * (q + kv + v) + 4.5 * (q + kv + v) * steps) * ring
    return OpClass("cp_attention", (2 + 2 * steps) * ring, forward, 3 * cp * ring, backward)


def layer_classes(spec: ModelSpec, ops: MegatronOps, recipe: str | None = None,
                  non_tn: bool = False, tp=1, cp=1) -> tuple[OpClass, ...]:
    """One layer's memory-bound op classes (module docstring); ``recipe``: cast_recipe's."""
    if not covers(spec):
        raise ValueError(f"{spec.name}: Megatron's op list covers dense layers with standard attention")
    h, q, kv, v, inter, gated = _widths(spec)
    rope = _rope(ops, q + kv)
    act = OpClass("swiglu", 1, 6 * BF16 / 2 * inter, 1, 10 * BF16 / 2 * inter) if gated else \
        OpClass("gelu", 1, 4 * BF16 / 2 * inter, 1, 6 * BF16 / 2 * inter)
    classes = (
        OpClass("norm", 2, 2 * 2 * BF16 * h, 4, 2 * 3 * BF16 * h),
        OpClass("qkv_split", 1, 2 * BF16 * q, 1, 2 * BF16 * (q + kv + v)),
        OpClass("rope", *rope),
        act,
        OpClass("residual", 2, 2 * 3 * BF16 * h, 0, 0.0),
        OpClass("grad_sums", 0, 0.0, 2, 2 * 3 * BF16 * h),
    )
    return classes + ((cp_class(spec, cp),) if np_any(cp > 1) else ()) \
        + ((fp8_cast_class(spec, recipe, non_tn, tp),) if recipe else ())


def gathered_transpose_bytes(recipe: str, non_tn: bool, tp):
    """Bytes per element (one GPU's share before tp) of a gathered FP8 tensor's transpose beyond the
    local cast's (module docstring): 2 x tp - 1 under sequence parallelism on Hopper, else 0."""
    if recipe not in ("current", "delayed") or non_tn:
        return 0.0
    return (2.0 * tp - 1.0) * (tp > 1)


def fp8_cast_class(spec: ModelSpec, recipe: str, non_tn: bool, tp=1) -> OpClass:
    """The layer's activation and gradient quantisations: forward the QKV and fc1 inputs (after
    their norms), the proj and fc2 inputs; backward the four GEMMs' output gradients; and, under
    sequence parallelism on Hopper, the transposes of the gathered ones (needed for the backward)."""
    h, q, kv, v, inter, gated = _widths(spec)
    heads_v = float(spec.attention.num_heads * spec.attention.value_head_dim)
    b_norm, k_norm = quantize_cost(recipe, True, non_tn)
    b_free, k_free = quantize_cost(recipe, False, non_tn)
    fc1_out = inter * (2 if gated else 1)
    # backward re-gathers the two norm outputs for the weight gradients and gathers the two
    # row-parallel output gradients: four transposes of h-wide tensors, one kernel each
    gathered = gathered_transpose_bytes(recipe, non_tn, tp) * 4 * h
    return OpClass("fp8_casts", 2 * k_norm + 2 * k_free, b_norm * 2 * h + b_free * (heads_v + inter),
                   4 * k_free + 4 * (gathered > 0), b_free * (h + fc1_out + h + q + kv + v) + gathered)


def loss_class(spec: ModelSpec, ops: MegatronOps, tp=1) -> OpClass:
    """The vocab-parallel cross-entropy per token (module docstring), vocabulary sharded over tp."""
    vocab = spec.vocab_size / tp
    if ops.cross_entropy == "te":
        return OpClass("loss", 2, 3 * BF16 * vocab, 1, 2 * BF16 * vocab)
    return OpClass("loss", 3, 22.0 * vocab, 1, 6.0 * vocab)


def loss_seconds(spec: ModelSpec, impl: str, tokens, hbm_bytes_per_s: float, tp=1):
    """Forward + backward seconds of the vocab-parallel loss over ``tokens`` tokens' logits on one GPU
    (loss_class at memory_kernels' line); ``impl``: 'te' or 'native' (CROSS_ENTROPY)."""
    if impl not in CROSS_ENTROPY:
        raise ValueError(f"cross-entropy implementation must be one of {CROSS_ENTROPY}, not {impl!r}")
    loss = loss_class(spec, MegatronOps(cross_entropy=impl), tp)
    return memory_bound_seconds(loss.bytes * tokens, loss.kernels, hbm_bytes_per_s)


def np_any(x) -> bool:
    """True when a scalar or any element of an array (the planner's bulk layouts) is."""
    try:
        return bool(x)
    except ValueError:  # numpy array: truth value ambiguous
        return bool(x.any())


def elementwise_seconds_per_token(spec: ModelSpec, ops: MegatronOps, recipe, non_tn: bool, tokens,
                                  hbm_bytes_per_s: float, tp=1, cp=1):
    """Forward + backward seconds per token of one layer's memory-bound kernels (each class's bytes
    / tp: sequence-parallel norms and residuals, head- and width-sharded RoPE, SwiGLU and casts)."""
    return sum(memory_bound_seconds(c.bytes / tp, c.kernels / tokens, hbm_bytes_per_s)
               for c in layer_classes(spec, ops, recipe, non_tn, tp, cp))


def class_seconds(spec: ModelSpec, ops: MegatronOps, recipe, non_tn: bool, tokens, hbm_bytes_per_s: float,
                  tp=1, cp=1) -> dict[str, float]:
    """Seconds per micro-batch of ``tokens`` per layer by op class, and the loss's (explain lines)."""
    out = {c.name: memory_bound_seconds(c.bytes / tp * tokens, c.kernels, hbm_bytes_per_s)
           for c in layer_classes(spec, ops, recipe, non_tn, tp, cp) if np_any(c.kernels)}
    out["loss"] = loss_seconds(spec, ops.cross_entropy, tokens, hbm_bytes_per_s, tp)
    return out
