"""Activation memory: the tensors a training step saves for backward, per token and layer.

What a layer saves depends on the implementation, not only the architecture, so the
implementation is a named input:

* ``hf`` — Hugging Face transformers modules in eager PyTorch (SDPA flash/efficient attention
  by default). Counted tensor by tensor from the modeling code and checked against
  ``gpuplan measure`` (FakeTensor + MemTracker); for a Llama layer in bf16:
  ``s·b·h·(16 + 4 + 4·h_kv/h + 8·i/h) + 4·a·s·b + 8·s·b`` bytes — two unfused RMSNorms saving an
  fp32 upcast, the normalised tensor and the matmul input (8h each), rotated q and k, v and the
  attention output, gate/silu(gate)/up/product, fp32 logsumexp and rstd. This is 45.5·sbh on
  Llama-2-7B at s=4096, 1.34x the textbook 34·sbh.
* ``megatron`` — Megatron-LM / Transformer Engine fused kernels, following Korthikanti et al.
  2022 ("Reducing Activation Recomputation in Large Transformer Models", Sec. 4, Table 2):
  34·sbh + 5·a·s²·b per layer for GPT with dropout and unfused attention. gpuplan's deviations:
  flash attention replaces the 5·a·s²·b term by q/k/v/out + fp32 logsumexp; GQA shrinks k/v;
  SwiGLU saves the fused gate/up output (4i bytes) and the product (2i); dropout masks only when
  dropout > 0 (modern LLM configs use none). With TP and sequence parallelism everything is /t.
* ``megatron-local`` — Megatron-Core's TE-free local layer (``get_gpt_layer_local_spec``;
  core 0.16.1): torch RMSNorm with an fp32 weight, which torch's fused kernel refuses, so it
  keeps an fp32 upcast and an fp32 normalised tensor (10h per norm with the bf16 output); RoPE
  keeps 4 cos/sin slices (4·c·d); the unfused SwiGLU keeps the fc1 output and three i-sized
  tensors (5·c·i); k and v are expanded to every head before the attention core. 63.3·sbh per
  Llama-3-8B layer, as measured on Megatron's own code.
* ``torchtitan`` — torchtitan's eager Llama (0.3.0, models/common): nn.RMSNorm, whose CUDA
  kernel (aten::_fused_rms_norm) keeps its input and rstd while the bf16 output is kept by the
  next matmul; q/k/v after RoPE, the attention output and logsumexp; w1 out, silu out, w3 out
  and their product (4i). On the CPU (``device="cpu"``: the fake-tensor runs of torchtitan's own
  code) torch.rms_norm decomposes and keeps an fp32 upcast and an fp32 normalised tensor
  instead: 53.0·sbh per Llama-3-8B layer measured, 41.0·sbh on CUDA by the same count.

Units: bytes per token per layer (multiply by s·b for a micro-batch). Compute dtype bytes
``c`` is 2 for bf16/fp16 activations and 4 for fp32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpuplan.core.model.spec import ModelSpec

Implementation = Literal["hf", "megatron", "megatron-local", "torchtitan"]
IMPLEMENTATIONS: tuple[str, ...] = ("hf", "megatron", "megatron-local", "torchtitan")
UNFUSED_RMSNORM = ("torchtitan-cpu", "megatron-local")
AttentionKernel = Literal["flash", "eager"]
RecomputeMode = Literal["none", "selective", "full"]

FP32 = 4  # bytes of an fp32 element (norm statistics, logsumexp, upcasts)
# transformers activations written as Python formulas (several saved intermediates), not one op
PYTHON_GELUS = ("gelu_new", "gelu_fast")


@dataclass(frozen=True)
class LayerActivations:
    """Bytes saved per token in one transformer layer, by part."""

    norms: float
    attention: float
    mlp: float
    dropout: float = 0.0
    linear_inputs: float = 0.0
    """Normalised inputs of the first attention and MLP matmuls when saved apart from the norm
    (fused kernels); full hidden width, so replicated across TP ranks without SP."""

    @property
    def total(self) -> float:
        return self.norms + self.attention + self.mlp + self.dropout + self.linear_inputs


def _norm_bytes(spec: ModelSpec, impl: str, c: int, *, feeds_matmul: bool = True, consumers: int = 1,
                autocast: bool = False) -> float:
    """One norm module over hidden states, per token.

    HF Llama-style RMSNorm (bf16): the fp32 upcast (4h, kept for pow/mean), the normalised bf16
    tensor (2h, kept by the weight multiply) and the output (2h, the next matmul's input) + rstd.
    Gemma's RMSNorm stays fp32 until the end: 4h + 4h (+ 2h output when a matmul reads it).
    Under torch.autocast with fp32 parameters the residual stream is fp32: the normalised tensor
    is fp32 and every consuming linear saves its own bf16 cast of the output (q, k, v: three).
    """
    h = spec.hidden_size
    if impl in UNFUSED_RMSNORM and spec.norm != "layernorm":  # torch.rms_norm's composite path
        # (CPU, meta; Megatron's local spec everywhere: its torch norm has an fp32 weight, which
        # the fused kernel refuses): fp32 upcast and fp32 normalised (4h + 4h), the bf16 output
        return 2 * FP32 * h + (c * h if feeds_matmul else 0) + FP32
    if impl == "torchtitan":  # nn.RMSNorm on CUDA: aten::_fused_rms_norm keeps its input + rstd;
        # the output is a new tensor the next matmul keeps (torch >= 2.8, _fused_rms_norm_cuda)
        return c * h + (c * h if feeds_matmul else 0) + (2 * FP32 if spec.norm == "layernorm" else FP32)
    if impl != "hf":  # fused kernels save the input and fp32 statistics (mean and/or rstd)
        return c * h + (2 * FP32 if spec.norm == "layernorm" else FP32)
    stats = 2 * FP32 if spec.norm == "layernorm" else FP32
    if autocast:
        output = consumers * 2 * h if feeds_matmul else 0
        kept = FP32 * h if spec.norm == "layernorm" else 2 * FP32 * h
        return kept + output + stats
    output = c * h if feeds_matmul else 0
    if spec.norm == "layernorm":  # native_layer_norm keeps its input; output feeds the matmul
        return c * h + output + stats
    # bf16: hidden.to(fp32) is a new tensor kept for pow/mean; fp32: .to() is a no-op and the
    # norm keeps its input (the residual stream) alive instead: 4h either way
    upcast = FP32 * h
    normalised = FP32 * h if spec.gemma_norm else c * h
    return upcast + normalised + output + stats


def _layer_norms(spec: ModelSpec, impl: str, c: int, autocast: bool) -> float:
    """All norms of one layer: the two that feed the attention and MLP matmuls (Falcon-7B: one
    feeding both), plus post-norms that feed residual adds only (Gemma 2/3: two)."""
    attn_consumers = 1 if spec.fused_qkv else 3
    mlp_consumers = 1 if (spec.fused_gate_up or not spec.mlp.gated) else 2
    if spec.norms_per_layer == 1:
        return _norm_bytes(spec, impl, c, consumers=attn_consumers + mlp_consumers, autocast=autocast)
    pre = (_norm_bytes(spec, impl, c, consumers=attn_consumers, autocast=autocast)
           + _norm_bytes(spec, impl, c, consumers=mlp_consumers, autocast=autocast))
    post = (spec.norms_per_layer - 2) * _norm_bytes(spec, impl, c, feeds_matmul=False, autocast=autocast)
    return pre + post


def sliding_mask_applies(spec: ModelSpec, seq_len) -> bool:
    """HF builds a materialised sliding-window mask once the sequence reaches the window
    (measured: Mistral window 4,096 at s 4,096 has it, at s 2,048 not; Phi-3 window 2,047 at 2,048)."""
    return bool(spec.sliding_window) and seq_len >= spec.sliding_window


def _sdpa_mask_bytes(spec: ModelSpec, seq_len, impl: str, kernel: str, c: int) -> float:
    """HF SDPA with a mask (sliding window reached): SDPA turns the boolean mask into an additive
    one in the compute dtype per call (torch convert_boolean_attn_mask) and saves it: c·s per
    token per layer; and with a mask present HF repeats k and v to every head (repeat_kv: its
    use_gqa_in_sdpa needs mask None), 2·(a − kv)·d·c. Measured (CPU oracle, bf16): Phi-3-mini
    +2·s, Mistral-7B +2·s + 3h (a 32, kv 8, d 128) per token per layer."""
    if impl != "hf" or kernel == "eager" or not sliding_mask_applies(spec, seq_len):
        return 0.0
    a = spec.attention
    repeat = 0 if a.is_mla else 2 * (a.num_heads - a.num_kv_heads) * a.qk_head_dim * c
    share = spec.num_sliding_layers / spec.num_layers if spec.layer_types else 1.0  # mixed: sliding ones
    return share * (c * seq_len + repeat)


def _attention_bytes(spec: ModelSpec, seq_len, impl: str, kernel: str, c: int, dropout: float,
                     mask_bytes: float = 1) -> float:
    """q/k/v as seen by the kernel, the output (= output-projection input), and softmax stats.
    ``mask_bytes``: bytes per element of a dropout mask (1: CUDA's fused native_dropout keeps a
    bool mask; the CPU path multiplies by a noise tensor of the input dtype and keeps that)."""
    a = spec.attention
    q = a.num_heads * a.qk_head_dim
    kv_heads = a.num_heads if (a.is_mla or impl == "megatron-local") else a.num_kv_heads
    k = kv_heads * a.qk_head_dim
    v = kv_heads * a.value_head_dim
    out = a.num_heads * a.value_head_dim
    saved = c * (q + k + v + out)
    if impl == "megatron-local" and spec.rotary:  # cos/sin slices kept by apply_rotary_pos_emb
        saved += 4 * c * a.qk_head_dim
    if impl == "hf" and spec.fused_qkv and spec.rotary:  # v is a view of the fused q/k/v output, which
        saved += c * (q + k)  # stays alive; RoPE writes new q and k (measured +4h on Pythia)
    if kernel == "flash":
        saved += FP32 * a.num_heads  # logsumexp
    elif impl == "hf":  # eager: probabilities per key; Llama-style fp32 softmax saves the fp32 output
        # and its bf16 copy (measured 6·a·s - 4·a on Llama-2-7B), GPT-2's bf16 softmax only 2·a·s
        per_key = (6 if spec.eager_softmax_fp32 else 2) + (2 if spec.attn_logit_softcap else 0)
        if dropout > 0:  # the dropout mask and the dropped probabilities the P·V matmul keeps
            per_key += mask_bytes + c  # (measured on the CPU oracle, GPT-2: +4·a·s with a bf16 noise mask)
        saved += per_key * a.num_heads * seq_len - 4 * a.num_heads  # softcap: + tanh output (Gemma 2)
    elif impl == "megatron-local":  # unfused softmax in fp32 (4·a·s) + its bf16 copy (2·a·s) and
        saved += 6 * a.num_heads * seq_len + seq_len  # the [s, s] bool causal mask each layer keeps
    else:  # Korthikanti: softmax output 2·a·s (+ dropout mask a·s and output 2·a·s)
        saved += (2 + (mask_bytes + 2 if dropout > 0 else 0)) * a.num_heads * seq_len
    saved += _sdpa_mask_bytes(spec, seq_len, impl, kernel, c)
    if a.qk_norm != "none" and impl == "hf":  # RMSNorm on q and k: fp32 upcast + normalised copy
        normalised = FP32 if spec.gemma_norm else c
        saved += (FP32 + normalised) * (q + k) + FP32 * (a.num_heads + kv_heads)
    if a.is_mla:  # latent kv (+ its RMSNorm) and, with q_lora, the q latent and its norm
        latent = (a.kv_lora_rank or 0) + a.qk_rope_head_dim
        saved += c * latent + (FP32 + 2 * c) * (a.kv_lora_rank or 0)
        if a.q_lora_rank:
            saved += c * a.q_lora_rank + (FP32 + 2 * c) * a.q_lora_rank
    return saved


def mlp_bytes(spec: ModelSpec, intermediate: int, impl: str, c: int, linear_input_bytes: float | None = None) -> float:
    """What one dense MLP (or one expert, per routed row) saves per token routed through it.
    ``linear_input_bytes``: bytes per element of the down-projection input when a quantising
    linear keeps it (Transformer Engine FP8 / MXFP8 / NVFP4: saved_linear_input_bytes)."""
    fc2 = c if linear_input_bytes is None or impl != "megatron" else linear_input_bytes
    if spec.mlp.gated:  # gate, act(gate), up, act(gate)*up (the down-projection input)
        inner = {"megatron": 2 * c + fc2, "megatron-local": 5 * c}.get(impl, 4 * c) * intermediate
    else:  # fc1 output (activation input) and activation output (fc2 input)
        inner = (c + fc2) * intermediate
    if impl == "hf" and spec.mlp.activation in PYTHON_GELUS:
        inner += 3 * c * intermediate  # x**3, the tanh output and 1 + tanh are saved (measured on GPT-2)
    return inner


def clamped_glu_extra_bytes(spec: ModelSpec, impl: str, c: int) -> float:
    """Per routed row: Megatron-Core's eager clamp of a clamped expert activation (GPT-OSS; core.time.eager_fallbacks
    'clamped-glu') saves its input, the first linear's output (2 x width), beside the clamped copy the fused activation
    saves: 2·c·i more (0 elsewhere)."""
    moe = spec.moe
    if impl != "megatron" or moe is None or moe.activation_clamp is None:
        return 0.0
    return 2.0 * c * moe.expert_intermediate_size


def unsaved_expert_output_bytes(spec: ModelSpec, impl: str, c: int, keeps_expert_output: bool = False) -> float:
    """Per routed row: the expert output (c·h) that HF's weighting by the routing probability saves and Megatron-Core
    does not, less the probability Megatron saves instead (one fp32; 0 outside ``megatron``). Megatron-Core from 0.13
    applies the probability inside the experts' activation (experts.py TEGroupedMLP: weighted_bias_swiglu_impl, whose
    WeightedSwiGLUFunction saves the fc1 output and the probability, fused_bias_swiglu.py@core_v0.16.1 L194-196) and
    unpermutes without probs in every dispatcher (token_dispatcher.py@core_v0.13.1 L303, L788, L1123; @core_v0.16.1
    L319, L833, L1310), a scatter whose backward needs no saved tensor; up to core 0.12 unpermute(probs=...) kept the
    expert output for the probs' gradient (@core_v0.12.0 L641-645, L900-905). The megatron profile is core 0.16.1's: the
    saving is the default, and ``--framework generic`` (the ``megatron`` implementation, core.frameworks) inherits it.
    ``keeps_expert_output``: a run on core <= 0.12 (MemorySettings.moe_keeps_expert_output, a published row's cited
    recipe fact: NeMo 25.02 / 25.04 pin core_r0.11.0 / core_r0.12.0 commits): no saving. Assumes TEGroupedMLP with
    bias_activation_fusion (the fused weighted SwiGLU); the unfused paths (experts.py@core_v0.16.1 L112-117, L720-735:
    act(x) * probs) save one more expert_intermediate-wide tensor per row, and moe_apply_probs_on_input (top-1) saves
    the input instead: neither is modelled. The unpermute still reads the row (core.time.step.layer_activation_bytes
    counts that traffic)."""
    return c * spec.hidden_size - FP32 if impl == "megatron" and not keeps_expert_output else 0.0


def routed_row_bytes(spec: ModelSpec, impl: str, c: int, linear_input_bytes=None, keeps_expert_output=False) -> float:
    """Per routed row, its width-h tensors: fc1's (GroupedLinear's) input and the weighted output less unsaved ones."""
    fc1 = c if linear_input_bytes is None or impl != "megatron" else linear_input_bytes  # GroupedLinear's input
    return (fc1 + c) * spec.hidden_size - unsaved_expert_output_bytes(spec, impl, c, keeps_expert_output)


def moe_bytes(spec: ModelSpec, impl: str, c: int, capacity_factor: float = 1.0,
              linear_input_bytes: float | None = None, keeps_expert_output: bool = False) -> float:
    """Router, per-token expert inputs/outputs and the top-k experts' MLPs (HF loop over experts: each routed token is
    gathered (h), run through the expert, weighted (h)). With a capacity factor (Switch Transformer, Fedus et al. 2021,
    eq. 3; Megatron --moe-expert-capacity-factor) experts are padded to capacity_factor x their fair share of tokens."""
    moe = spec.moe
    assert moe is not None
    router = FP32 * moe.num_experts + c * moe.num_experts  # logits and fp32 softmax
    per_routed = (routed_row_bytes(spec, impl, c, linear_input_bytes, keeps_expert_output) + clamped_glu_extra_bytes(
        spec, impl, c) + mlp_bytes(spec, moe.expert_intermediate_size, impl, c, linear_input_bytes))
    shared = mlp_bytes(spec, moe.shared_intermediate_size, impl, c, linear_input_bytes) \
        if moe.shared_intermediate_size else 0
    return router + capacity_factor * moe.experts_per_token * per_routed + shared


def lora_layer_activations(spec: ModelSpec, seq_len, rank: int, adapter_input_bytes: float, *,
                           kernel: str = "flash", compute_bytes: int = 2, dropout: float = 0.0,
                           mask_bytes: float = 1, moe_layer: bool = False) -> LayerActivations:
    """A PEFT LoRA layer on a frozen transformers base (adapters on every linear layer), per token.

    A frozen matmul keeps no input (its weight gets no gradient) and a frozen norm weight keeps
    no normalised tensor, so the base keeps the norms' fp32 upcast + rstd, q/k/v/out + logsumexp
    and gate/silu(gate)/up (3i). Each adapter keeps its own copy of its input for lora_A
    (``adapter_input_bytes`` per element: 4 for PEFT's fp32 adapters, which cast the input; 2
    under autocast, which casts it to bf16 per module) and lora_A's output (r). Llama-3-8B, r 16,
    PEFT 0.21 (tuners/lora/layer.py): 72.14·sbh measured, 53.24 under autocast (q, k, v cast apart).

    ``moe_layer`` (transformers 5.x's 3-D experts): peft folds the adapters into the expert and router weights
    (peft_fold_bytes), which then need a gradient, so the grouped GEMMs keep their token inputs as in full
    fine-tuning (moe_bytes, hf); only the shared experts' linears carry adapters of their own."""
    c, h, a = compute_bytes, spec.hidden_size, spec.attention
    norms = 2 * (FP32 * h + FP32)
    attention = _attention_bytes(spec, seq_len, "hf", kernel, c, dropout, mask_bytes)
    attn_inputs = [h] * (1 if spec.fused_qkv else 3) + [a.num_heads * a.value_head_dim]
    if moe_layer and spec.moe is not None:
        shared = spec.moe.shared_intermediate_size
        mlp = moe_bytes(spec, "hf", c)
        mlp_inputs = [h, h, shared] if shared else []
    else:
        i = spec.mlp.intermediate_size
        mlp = (3 if spec.mlp.gated else 1) * c * i
        mlp_inputs = ([h] * (1 if spec.fused_gate_up else 2) if spec.mlp.gated else [h]) + [i]
    adapters = sum(adapter_input_bytes * (width + rank) for width in attn_inputs + mlp_inputs)
    return LayerActivations(norms, attention, mlp, 0.0, adapters)


def saved_linear_input_bytes(recipe: str | None) -> float | None:
    """Bytes per element of the input a Transformer Engine linear keeps for its weight gradient under
    a low-precision recipe (None: the compute dtype's, no quantised copy). TE quantises the input and
    keeps only the copy the backward needs ('Discard row-wise data since it is not needed in backward
    pass'; Float8 tensorwise keeps its row-wise data, transposed in backward:
    transformer_engine/pytorch/module/linear.py, _linear_forward_impl, saved_inputmat = inputmat):
    FP8 1 byte (+ one fp32 scale per tensor), MXFP8 1 + 1/32 (an E8M0 scale per 32 elements), NVFP4
    0.5 + 1/16 (an E4M3 scale per 16)."""
    return {"tensorwise": 1.0, "mxfp8": 1.0 + 1.0 / 32, "nvfp4": 0.5 + 1.0 / 16}.get(recipe or "")


def layer_activations(spec: ModelSpec, seq_len, *, moe_layer: bool = False, impl: str = "hf",
                      kernel: str = "flash", compute_bytes: int = 2, dropout: float = 0.0,
                      autocast: bool = False, capacity_factor: float = 1.0,
                      mask_bytes: float = 1, lora: tuple[int, float] | None = None,
                      linear_input_bytes: float | None = None, keeps_expert_output: bool = False) -> LayerActivations:
    """Bytes saved per token by one layer (no recompute, no tensor parallelism). ``lora``:
    (rank, adapter input bytes) of a PEFT LoRA layer on a frozen HF base. ``linear_input_bytes``
    (``megatron`` only: Transformer Engine's quantising linears, saved_linear_input_bytes): the QKV
    and fc1 inputs and the down-projection input are kept quantised instead of in the compute dtype,
    and the output projection keeps a quantised copy of the attention output beside the bf16 one the
    attention kernel keeps for its own backward."""
    c = compute_bytes
    if lora is not None and impl == "hf":
        return lora_layer_activations(spec, seq_len, lora[0], lora[1], kernel=kernel, compute_bytes=c,
                                      dropout=dropout, mask_bytes=mask_bytes, moe_layer=moe_layer)
    quantised = linear_input_bytes if impl == "megatron" else None
    norms = _layer_norms(spec, impl, c, autocast)
    attention = _attention_bytes(spec, seq_len, impl, kernel, c, dropout, mask_bytes)
    if quantised is not None:  # the output projection's own quantised copy of the attention output
        attention += quantised * spec.attention.num_heads * spec.attention.value_head_dim
    if moe_layer and spec.moe is not None:
        mlp = moe_bytes(spec, impl, c, capacity_factor, quantised, keeps_expert_output)
    else:
        mlp = mlp_bytes(spec, spec.mlp.intermediate_size, impl, c, quantised)
    masks = 2 * mask_bytes * spec.hidden_size if dropout > 0 else 0.0  # two residual dropouts
    # fused norm+linear kernels save the normalised input of the QKV and first MLP matmuls;
    # HF's unfused RMSNorm output already is that tensor (counted in norms)
    # (quantised: the QKV input, and the fc1 input of a dense MLP; a MoE layer's normalised input feeds
    # the router, a bf16 linear, and is permuted to the experts, whose own quantised inputs moe_bytes counts)
    qkv = c if quantised is None else quantised
    mlp_in = c if quantised is None or (moe_layer and spec.moe is not None) else quantised
    inputs = (qkv + mlp_in) * spec.hidden_size if impl == "megatron" else 0.0
    return LayerActivations(norms, attention, mlp, masks, inputs)


def saved_bytes_per_token(spec: ModelSpec, seq_len, layers: int, moe_layers: int, *, impl: str = "hf",
                          kernel: str = "flash", recompute: str = "none", compute_bytes: int = 2,
                          tp: int = 1, sequence_parallel: bool = True, dropout: float = 0.0,
                          autocast: bool = False, capacity_factor: float = 1.0, mask_bytes: float = 1,
                          lora: tuple[int, float] | None = None, linear_input_bytes: float | None = None,
                          keeps_expert_output: bool = False) -> float:
    """Activation bytes per token held by ``layers`` layers (``moe_layers`` of them MoE) at the
    end of the forward pass, on one tensor-parallel rank.

    Full recompute keeps only each layer's input (Korthikanti eq. 6: 2·sbh per layer; one
    layer's full set exists again while it is recomputed in backward, see
    ``recomputed_layer_bytes_per_token``). Selective recompute drops what the
    attention core saves beyond q/k/v/out (only the eager s² terms: flash saves none).
    Tensor parallelism divides the layer's tensors by tp; without sequence parallelism the
    norm inputs and dropout masks are replicated (Korthikanti Sec. 4.2.2: 10·sbh of 34).
    """
    if recompute == "selective" and kernel == "eager":
        kernel = "flash"  # selective recompute keeps exactly what a flash kernel would
    dense = layer_activations(spec, seq_len, impl=impl, kernel=kernel, compute_bytes=compute_bytes,
                              dropout=dropout, autocast=autocast, mask_bytes=mask_bytes, lora=lora,
                              linear_input_bytes=linear_input_bytes)
    moe = layer_activations(spec, seq_len, moe_layer=True, impl=impl, kernel=kernel,
                            compute_bytes=compute_bytes, dropout=dropout, autocast=autocast,
                            capacity_factor=capacity_factor, mask_bytes=mask_bytes, lora=lora,
                            linear_input_bytes=linear_input_bytes, keeps_expert_output=keeps_expert_output)

    def on_rank(part: LayerActivations):
        if sequence_parallel and impl.startswith("torchtitan"):  # its SequenceParallel norms hand the
            # column-parallel matmuls an all-gathered input, which they keep at full sequence
            gathered = 2 * compute_bytes * spec.hidden_size * (1 - 1 / np.asarray(tp, dtype=float))
            return part.total / tp + gathered
        if sequence_parallel:  # (with tp = 1 both forms are the same)
            return part.total / tp
        return (part.attention + part.mlp) / tp + part.norms + part.dropout + part.linear_inputs

    if recompute == "full":
        residual = FP32 if autocast else compute_bytes
        return layers * residual * spec.hidden_size / (tp if sequence_parallel else 1)
    return (layers - moe_layers) * on_rank(dense) + moe_layers * on_rank(moe)


def recomputed_layer_bytes_per_token(spec: ModelSpec, seq_len, moe_layers, *, impl: str = "hf",
                                     kernel: str = "flash", compute_bytes: int = 2, tp: int = 1,
                                     dropout: float = 0.0, autocast: bool = False, mask_bytes: float = 1,
                                     lora: tuple[int, float] | None = None,
                                     linear_input_bytes: float | None = None,
                                     keeps_expert_output: bool = False) -> float:
    """Full recompute: the activations of the one layer being recomputed during backward."""
    dense = layer_activations(spec, seq_len, impl=impl, kernel=kernel, compute_bytes=compute_bytes,
                              dropout=dropout, autocast=autocast, mask_bytes=mask_bytes, lora=lora,
                              linear_input_bytes=linear_input_bytes).total
    if spec.moe is None:
        return dense / tp
    moe = layer_activations(spec, seq_len, moe_layer=True, impl=impl, kernel=kernel, compute_bytes=compute_bytes,
                            dropout=dropout, autocast=autocast, mask_bytes=mask_bytes, lora=lora,
                            linear_input_bytes=linear_input_bytes, keeps_expert_output=keeps_expert_output).total
    return np.where(np.asarray(moe_layers) > 0, max(dense, moe), dense) / tp


@dataclass(frozen=True)
class OutsideLayers:
    """Bytes per token outside the transformer layers on the last pipeline stage."""

    saved: float
    """Held at the end of forward: final norm, logits and the loss's saved tensors."""
    backward_temp: float
    """Transient at the start of backward: the loss's gradient w.r.t. the logits."""


def outside_layer_bytes(spec: ModelSpec, *, impl: str = "hf", compute_bytes: int = 2, tp: int = 1,
                        autocast: bool = False) -> OutsideLayers:
    """Final norm + LM head + cross-entropy (HF ForCausalLMLoss upcasts logits to fp32).

    Saved: bf16 logits (2V) and fp32 log-softmax (4V); backward temp: fp32 gradient of the
    log-softmax and of the upcast (8V). Measured on Llama-2-7B at s=4096 (V=32000): 0.25 + 0.5
    GiB saved and ~1 GiB temp. Vocab-parallel (tp) splits all of it.
    """
    v = spec.vocab_size / tp
    final_norm = _norm_bytes(spec, impl, compute_bytes, autocast=autocast)
    softcap = compute_bytes * v if spec.final_logit_softcap else 0.0  # tanh output (Gemma 2)
    return OutsideLayers(saved=final_norm + compute_bytes * v + FP32 * v + softcap, backward_temp=2 * FP32 * v)


def pipeline_micro_batches_in_flight(pp, vpp, micro_batches, stage=0, combined_1f1b=False, stage_layers=1) -> float:
    """Micro-batches' worth of a stage's activations pipeline ``stage`` holds at once (degrees: ints or arrays).

    1F1B: stage i holds pp - i (Narayanan et al. 2021, Sec. 2.2); interleaved with v virtual stages, Megatron-Core's
    warm-up runs w = 2 (pp - i - 1) + (v - 1) pp model chunks on rank i (microbatch_group_size_per_vp_stage = pp by
    default; pipeline_parallel/schedules.py get_pp_rank_microbatches, core_v0.14.0 L733-734, the same at
    core_v0.13.1 and core_v0.19.0) and holds w + 1 chunks of L / (pp v) layers at the first steady-state backward:
    (w + 1) / v stages' worth, pp (1 + (pp - 1) / (pp v)) on the first (Korthikanti et al. 2022, Sec. 4.2.3) and
    pp - (pp - 1) / v on the last; never more than the step has (warm-up capped at all m v chunks). Combined 1F1B
    (--overlap-moe-expert-parallel-comm) warms up w + 1 chunks (schedules.py@d98e8a64 L964-970), then runs chunk
    k + w + 1's forward layer j fused with chunk k's backward layer L' - 1 - j, whose nodes free their state
    (model_chunk_schedule_plan.py@d98e8a64 L553-586, utils.py ScheduleNode._backward): w + 1 chunks + one layer
    (of ``stage_layers``); pp 1 one micro-batch + one layer (combined_1f1b.py@d98e8a64 L97-117)."""
    extra = np.asarray(combined_1f1b, dtype=float) / np.maximum(stage_layers, 1)  # one layer, in stages' worth
    interleaved = (2 * (pp - stage - 1) + (vpp - 1) * pp + 1) / np.maximum(vpp, 1) + extra
    in_flight = np.where(pp == 1, 1.0 + extra, np.where(vpp > 1, interleaved, np.maximum(1.0, pp - stage)))
    return np.minimum(in_flight, micro_batches * 1.0)
