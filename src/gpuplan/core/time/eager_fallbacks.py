"""HBM traffic of four Megatron-Core paths that fall back to eager PyTorch ops for GPT-OSS-like models.

**Expert fc2 bias** (``"expert-bias"``). Models whose experts carry biases (GPT-OSS:
``gate_up_proj_bias`` / ``down_proj_bias``, transformers ``models/gpt_oss/modeling_gpt_oss.py``) run,
in Megatron-Core's ``TEGroupedMLP`` without the Transformer Engine op fuser, the first linear's
bias inside TE's ``GroupedLinear`` (built with ``skip_bias_add=False``, experts.py@core_v0.16.0
L541-552, so ``weighted_bias_quick_geglu_impl`` gets no bias: the GEMM epilogue adds it and, in
BF16, the wgrad GEMM's epilogue sums its gradient, transformer_engine/pytorch/module/
grouped_linear.py@v2.12 L370-374, L462: no extra pass) but the second one eagerly, per local
expert: ``torch.cat([t + b * p for t, b, p in zip(split(out), biases, split(probs))])
.to(out.dtype)`` (``megatron/core/transformer/moe/experts.py``, ``TEGroupedMLP._apply_bias``, the
same at core_v0.16.0, 0.17.0, 0.18.0 and 0.19.0). With ``use_transformer_engine_op_fuser`` (core >=
0.18, TE >= 2.14; the Megatron-Bridge presets' ``cutedsl_fused_grouped_mlp``) the bias goes into
TE's grouped linear op instead. Bytes per element of one expert output row (each routed copy of a
token is a row of hidden-size elements), read from the ops and their autograd backward:

* probabilities in bf16 (the router's dtype when ``moe_router_dtype`` is unset, which the NCCL
  ``alltoall`` dispatcher keeps): forward ``b * p`` writes 2, ``t + .`` reads 2 + 2 and writes 2,
  ``cat`` reads 2 and writes 2 (``.to`` is a no-op): 12; backward the bias gradient ``g * p``
  (read 2, write 2) summed over rows (read 2) and the probability gradient ``g * b`` likewise:
  12, and the gradient of ``torch.split``'s views re-assembled into one tensor for fc2's backward
  (autograd's ``split_with_sizes_backward`` is ``at::cat`` of the per-expert gradients,
  torch/csrc/autograd/FunctionsManual.cpp; read 2, write 2): 16. Total 28.
* probabilities in fp32 (DeepEP and HybridEP convert them: ``token_dispatcher.py``, "HybridEP only
  supports float32 probs"), so the sum is promoted to fp32: forward ``b * p`` writes 4, ``t + .``
  reads 2 + 4 and writes 4, ``cat`` reads 4 and writes 4, ``.to(bf16)`` reads 4 and writes 2: 28;
  backward the cast back (read 2, write 4), the gradient of ``t`` cast to bf16 (read 4, write 2),
  the two products and sums above in fp32 (12 each) and the split's re-assembly (read 2, write 2):
  40. Total 68.

**YaRN RoPE with an attention factor** (``"yarn-rope"``). ``apply_rotary_pos_emb`` takes TE's fused
RoPE only when the YaRN concentration factor ("mscale") is 1: otherwise it logs "mscale=... is not
supported by TE's fused RoPE. Using unfused implementation" and runs ``_apply_rotary_pos_emb_bshd``
on the query and the key (``megatron/core/models/common/embeddings/rope_utils.py``, the same at
core_v0.16.0-0.19.0; ``attention.py`` passes ``_yarn_get_concentration_factor_from_config``).
GPT-OSS's Megatron-Bridge bridge sets YaRN factor 32 with ``yarn_mscale`` / ``yarn_mscale_all_dim``
None (``models/gpt_oss/gpt_oss_bridge.py``, v0.3.0-v0.6.0), so the factor is 0.1 ln 32 + 1 = 1.35.
Per element of q or k (bf16): forward ``t * cos`` 4, ``_rotate_half`` (negate half: 2, ``cat``: 4)
6, ``* sin`` 4, the sum 6, the closing ``cat`` 4: 24; backward the two products' gradients 4 + 4,
the rotation's (negate 2, re-assembling the halves 4) 6, summing the two paths 6, and the slice
``t[..., :rot_dim]`` (zeros, then a copy) 6: 26. Total 50, of which a fused RoPE kernel's own
read-and-write, forward and backward (8), is already in the elementwise term: 42 extra.

**Clamped GLU activation** (``"clamped-glu"``). GPT-OSS clamps its expert activation's inputs
(``swiglu_limit`` 7.0; Megatron-Bridge sets ``activation_func_clamp_value`` 7.0 in its GPT-OSS
provider / bridge at every tag v0.2.2-v0.6.0). ``TEGroupedMLP.bias_act_func`` calls
``weighted_bias_quick_geglu_impl`` (``megatron/core/fusions/fused_bias_geglu.py``, the same at
core_v0.15.0-0.19.0), which fuses the activation itself (``jit_fuser`` = torch.compile) but clamps
eagerly first: ``x_glu, x_linear = input.chunk(2, -1)``, ``torch.cat((x_glu.clamp(max=v),
x_linear.clamp(min=-v, max=v)), -1)``. Per element of the first linear's output (bf16, 2 x expert
width per routed row): forward the clamps read 2 and write 2, the ``cat`` reads 2 and writes 2: 8;
backward ``clamp_backward`` (torch ``FunctionsManual.cpp``: ``where(self <= max, grad, 0)`` for
the gate half: compare 2 + 1, ``where`` 1 + 2 + 2 = 8; the linear half's two compares,
``logical_and_`` and ``where``: 14; mean 11) and the chunk's backward re-assembling the two
gradients (read 2, write 2): 15. Total 23. TE's op fuser runs ``ScaledClampedQGeGLU`` instead
(``experts.py`` at core 0.18-0.19), with no eager clamp.

**Unfused bias-dropout-add** (``"unfused-bda"``). Megatron-Core's TEGroupedMLP refuses bias_dropout_fusion
with linear biases (``assert not (add_bias_linear and bias_dropout_fusion)``, experts.py@core_v0.15.0 L764,
@core_v0.16.0 L531, @2edffad L173-175), so a MoE model whose experts carry biases runs every bias-dropout-add
unfused (Megatron-Bridge's GPT-OSS provider: ``bias_dropout_fusion = False``, gpt_oss_provider.py@v0.2.2 L82,
gpt_oss_bridge.py@v0.3.1 L81, @v0.4.2 L74). ``get_bias_dropout_add`` then returns the
unfused ``_bias_dropout_add_func`` (megatron/core/fusions/fused_bias_dropout.py@2edffad L83-94, L11-57), which adds
linear_proj's bias in a kernel of its own (``x = x + bias``: reads 2, writes 2 a bf16 element of h), whose dropout
at p = 0 returns its input (ATen Dropout.cpp ``_dropout``: p == 0 returns the input), and whose residual add moves
what the fused kernel moves; the MoE layer's bda has no bias (the experts' fc2 bias is ``"expert-bias"``'s).
The bias's gradient is a sum over tokens in either form. 4 h B a token and one tensor-sized kernel a layer,
forward, where the attention's output projection has a bias.

**Their kernels' fixed time.** The bytes above are charged at HBM speed; each eager kernel also
pays core.time.memory_kernels' fixed ~8 us (launch, ramp-up, tail wave), which a per-token term
cannot see. Counted per layer and micro-batch beyond the fused path's kernels (the fc2 bias's
per-expert kernels are core.time.moe_layer's): the unfused RoPE, per call (q, then k:
``apply_rotary_pos_emb`` once each), runs forward ``t * cos_``, the negation and ``cat`` of
``_rotate_half``, ``* sin_``, the sum and the closing ``cat`` over the tensor (6): 12 for q and k,
less the fused kernel's 2: 10; backward the 7 a call that the byte count above reads
(core.time.megatron_ops._rope: 14 for q and k), less the fused 2: 12. Before them each call rebuilds
its factors from the position frequencies, ``cos``, ``* mscale``, ``.to`` and the same for ``sin``: 6 kernels over s x
64 fp32 values (1 MB at 4,096), 12 a layer, each taken at a one-block kernel's time
(core.time.memory_kernels.TINY_KERNEL_SECONDS, a lower bound) rather than the fixed ~8 us of a tensor-sized pass
(rope_utils.py@2edffad, the Megatron-LM commit Megatron-Bridge v0.4.2 pins, L92-126, reached from
``apply_rotary_pos_emb`` L250-318). The clamp: forward the two ``clamp`` and the ``cat`` (``chunk`` is a view): 3;
backward the gate half's ``clamp_backward`` (compare, ``where``: 2), the linear half's (two compares, ``logical_and_``,
``where``: 4) and the chunk's re-assembly (1): 7
(fused_bias_geglu.py@2edffad L410-442). A recompute that re-runs the function re-runs its forward
kernels: Megatron's 'moe_act' (or 'moe', or full) for the clamp, full recompute for the RoPE.

Units: bytes per token per layer; kernels per layer and micro-batch.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.memory_kernels import KERNEL_FIXED_SECONDS, TINY_KERNEL_SECONDS
from gpuplan.core.time.megatron_ops import FUSED_ROPE, UNFUSED_ROPE

EXPERT_BIAS = "expert-bias"
YARN_ROPE = "yarn-rope"
CLAMPED_GLU = "clamped-glu"
UNFUSED_BDA = "unfused-bda"
MEGATRON_EAGER_FALLBACKS = (EXPERT_BIAS, YARN_ROPE, CLAMPED_GLU, UNFUSED_BDA)
"""What Megatron-Core runs eagerly by default (no TE op fuser), for a model that has each path."""
EAGER_FC2_BIAS_BYTES_PER_ELEMENT = {"bf16": 28.0, "fp32": 68.0}
"""HBM bytes per element of an expert output row, forward + backward, by probability dtype."""
EAGER_ROPE_EXTRA_BYTES_PER_ELEMENT = UNFUSED_ROPE[1] + UNFUSED_ROPE[3] - FUSED_ROPE[1] - FUSED_ROPE[3]
"""HBM bytes per element of q and k beyond a fused RoPE kernel's, forward + backward: 24 + 26 - (4 + 4) = 42
(core.time.megatron_ops' counts of both)."""
EAGER_GLU_CLAMP_FORWARD_BYTES_PER_ELEMENT = 8.0
EAGER_GLU_CLAMP_BYTES_PER_ELEMENT = EAGER_GLU_CLAMP_FORWARD_BYTES_PER_ELEMENT + 15.0
"""HBM bytes per element of an expert's first-linear output (bf16), forward (8) + backward (15)."""


UNFUSED_BDA_BIAS_BYTES_PER_ELEMENT = 2.0 + 2.0
"""HBM bytes per element of h of the unfused bias add (read, write; bf16), forward."""
UNFUSED_BDA_KERNELS = (1, 0)
"""(forward, backward) kernels per layer of the unfused bias add beyond the fused bias-dropout-add's."""
EAGER_ROPE_EXTRA_KERNELS = (UNFUSED_ROPE[0] - FUSED_ROPE[0], UNFUSED_ROPE[2] - FUSED_ROPE[2])  # (12 - 2, 14 - 2)
"""(forward, backward) tensor-sized kernels per layer the unfused RoPE of q and k launches beyond TE's fused RoPE."""
EAGER_ROPE_FACTOR_KERNELS = 2 * 6
"""Small forward kernels per layer that rebuild cos / sin x mscale from the frequencies (q and k: 6 each)."""
EAGER_GLU_CLAMP_KERNELS = (3, 7)
"""(forward, backward) kernels per MoE layer of the eager clamp before the quick-GEGLU."""


def routing_probs_dtype(ep_dispatcher: str) -> str:
    """The dtype of the routing probabilities the experts see under Megatron-Core's dispatcher:
    'fp32' for 'flex' (DeepEP / HybridEP), 'bf16' for the NCCL 'alltoall' one (router unset)."""
    return "fp32" if ep_dispatcher == "flex" else "bf16"


def eager_expert_bias_bytes_per_token(spec: ModelSpec, probs_dtype: str) -> float:
    """HBM bytes per token of the mean layer that the unfused expert fc2 bias moves, forward +
    backward (0 when the experts have no bias)."""
    moe = spec.moe
    if moe is None or not moe.expert_bias or not spec.num_moe_layers:
        return 0.0
    per_row = EAGER_FC2_BIAS_BYTES_PER_ELEMENT[probs_dtype] * spec.hidden_size
    return per_row * moe.experts_per_token * spec.num_moe_layers / spec.num_layers


def eager_rope_bytes_per_token(spec: ModelSpec) -> float:
    """HBM bytes per token and layer the unfused RoPE moves beyond the fused kernel's (0 without a
    YaRN attention factor; multi-latent attention takes Megatron's MLA RoPE path, not this one)."""
    attn = spec.attention
    if attn.rope_attention_factor == 1.0 or attn.is_mla:
        return 0.0
    return EAGER_ROPE_EXTRA_BYTES_PER_ELEMENT * (attn.num_heads + attn.num_kv_heads) * attn.head_dim


def eager_glu_clamp_bytes_per_token(spec: ModelSpec) -> float:
    """HBM bytes per token of the mean layer that the eager clamp of the experts' gated activation
    moves, forward + backward (0 when the experts' activation has no clamp)."""
    moe = spec.moe
    if moe is None or moe.activation_clamp is None or not spec.num_moe_layers:
        return 0.0
    per_row = EAGER_GLU_CLAMP_BYTES_PER_ELEMENT * 2 * moe.expert_intermediate_size
    return per_row * moe.experts_per_token * spec.num_moe_layers / spec.num_layers


def unfused_bda_bytes_per_token(spec: ModelSpec) -> float:
    """HBM bytes per token and layer the unfused bias-dropout-add moves beyond the fused one's: the attention's output
    bias added in a pass of its own, where the experts carry biases (Megatron then turns the fusion off; 0 otherwise)."""
    moe = spec.moe
    if moe is None or not moe.expert_bias or not spec.attention.out_bias:
        return 0.0
    return UNFUSED_BDA_BIAS_BYTES_PER_ELEMENT * spec.hidden_size


def eager_fallback_bytes_per_token(spec: ModelSpec, fallbacks: tuple[str, ...], ep_dispatcher: str) -> float:
    """Bytes per token of the mean layer (one GPU's share before tensor parallelism) that the
    ``fallbacks`` a run takes move beyond what the elementwise term already charges."""
    total = 0.0
    if EXPERT_BIAS in fallbacks:
        total += eager_expert_bias_bytes_per_token(spec, routing_probs_dtype(ep_dispatcher))
    if YARN_ROPE in fallbacks:
        total += eager_rope_bytes_per_token(spec)
    if CLAMPED_GLU in fallbacks:
        total += eager_glu_clamp_bytes_per_token(spec)
    if UNFUSED_BDA in fallbacks:
        total += unfused_bda_bytes_per_token(spec)
    return total


def eager_fallback_kernels(spec: ModelSpec, fallbacks: tuple[str, ...], rerun_rope: bool = False,
                           rerun_clamp: bool = False) -> tuple[float, float]:
    """(tensor-sized, small) kernels the ``fallbacks`` a run takes launch per micro-batch in the mean
    layer beyond the fused path's (module docstring): forward + backward, and the forward again where a
    recompute re-runs it (``rerun_rope``: full recompute; ``rerun_clamp``: full, 'moe' or 'moe_act').
    The expert bias's per-expert kernels are core.time.moe_layer's, not counted here."""
    passes, small = 0.0, 0.0
    if YARN_ROPE in fallbacks and eager_rope_bytes_per_token(spec):
        forward, backward = EAGER_ROPE_EXTRA_KERNELS
        passes += forward * (1 + rerun_rope) + backward
        small += EAGER_ROPE_FACTOR_KERNELS * (1 + rerun_rope)
    forward, backward = path_kernels(spec, fallbacks, CLAMPED_GLU)
    passes += (forward * (1 + rerun_clamp) + backward) * spec.num_moe_layers / spec.num_layers
    forward, backward = path_kernels(spec, fallbacks, UNFUSED_BDA)
    passes += forward * (1 + rerun_rope) + backward  # full recompute re-runs the layer's forward
    return passes, small


def path_kernels(spec: ModelSpec, fallbacks: tuple[str, ...], path: str) -> tuple[int, int]:
    """(forward, backward) tensor-sized kernels one layer that has it launches for ``path`` (CLAMPED_GLU: a MoE
    layer's eager clamp, EAGER_GLU_CLAMP_KERNELS; UNFUSED_BDA: the unfused bias add, UNFUSED_BDA_KERNELS) where
    the run takes that fallback and the model has the path, else (0, 0): the one reading eager_fallback_kernels
    (the mean layer) and core.time.moe_layer.eager_fallback_layer_seconds (a MoE layer's phases) share."""
    has_path, kernels = {CLAMPED_GLU: (eager_glu_clamp_bytes_per_token, EAGER_GLU_CLAMP_KERNELS),
                         UNFUSED_BDA: (unfused_bda_bytes_per_token, UNFUSED_BDA_KERNELS)}[path]
    return kernels if path in fallbacks and has_path(spec) else (0, 0)


def eager_rope_fixed_seconds(spec: ModelSpec, fallbacks: tuple[str, ...]) -> float:
    """Fixed GPU seconds per micro-batch of one layer's unfused YaRN RoPE kernels beyond the fused kernel's, forward
    + backward (eager_fallback_kernels: 10 + 12 tensor-sized at KERNEL_FIXED_SECONDS, 12 small ones at
    TINY_KERNEL_SECONDS: 183.52 us), for dense and MoE models alike; 0 without the fallback or a YaRN attention
    factor. core.time.step charges them where it charges the RoPE's bytes, in the element-wise work (a third
    forward, two thirds backward, a full recompute re-running the third, as those bytes)."""
    passes, small = eager_fallback_kernels(spec, tuple(f for f in fallbacks if f == YARN_ROPE))
    return KERNEL_FIXED_SECONDS * passes + TINY_KERNEL_SECONDS * small
