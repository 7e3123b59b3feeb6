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
* ``torchtitan`` — torch.compile'd torchtitan: like ``megatron`` (fused norms save input +
  rstd) without dropout. Not validated against a measurement on this machine (needs CUDA +
  compile); treat as an estimate.

Units: bytes per token per layer (multiply by s·b for a micro-batch). Compute dtype bytes
``c`` is 2 for bf16/fp16 activations and 4 for fp32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from gpuplan.core.model import ModelSpec

Implementation = Literal["hf", "megatron", "torchtitan"]
IMPLEMENTATIONS: tuple[str, ...] = ("hf", "megatron", "torchtitan")
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


def _attention_bytes(spec: ModelSpec, seq_len, impl: str, kernel: str, c: int, dropout: float) -> float:
    """q/k/v as seen by the kernel, the output (= output-projection input), and softmax stats."""
    a = spec.attention
    q = a.num_heads * a.qk_head_dim
    kv_heads = a.num_heads if a.is_mla else a.num_kv_heads
    k = kv_heads * a.qk_head_dim
    v = kv_heads * a.value_head_dim
    out = a.num_heads * a.value_head_dim
    saved = c * (q + k + v + out)
    if impl == "hf" and spec.fused_qkv and spec.rotary:  # v is a view of the fused q/k/v output, which
        saved += c * (q + k)  # stays alive; RoPE writes new q and k (measured +4h on Pythia)
    if kernel == "flash":
        saved += FP32 * a.num_heads  # logsumexp
    elif impl == "hf":  # eager: probabilities per key; Llama-style fp32 softmax saves the fp32 output
        # and its bf16 copy (measured 6·a·s - 4·a on Llama-2-7B), GPT-2's bf16 softmax only 2·a·s
        per_key = (6 if spec.eager_softmax_fp32 else 2) + (2 if spec.attn_logit_softcap else 0)
        saved += per_key * a.num_heads * seq_len - 4 * a.num_heads  # softcap: + tanh output (Gemma 2)
    else:  # Korthikanti: softmax output 2·a·s (+ dropout mask a·s and output 2·a·s)
        saved += (5 if dropout > 0 else 2) * a.num_heads * seq_len
    if a.qk_norm != "none" and impl == "hf":  # RMSNorm on q and k: fp32 upcast + normalised copy
        normalised = FP32 if spec.gemma_norm else c
        saved += (FP32 + normalised) * (q + k) + FP32 * (a.num_heads + kv_heads)
    if a.is_mla:  # latent kv (+ its RMSNorm) and, with q_lora, the q latent and its norm
        latent = (a.kv_lora_rank or 0) + a.qk_rope_head_dim
        saved += c * latent + (FP32 + 2 * c) * (a.kv_lora_rank or 0)
        if a.q_lora_rank:
            saved += c * a.q_lora_rank + (FP32 + 2 * c) * a.q_lora_rank
    return saved


def _mlp_bytes(spec: ModelSpec, intermediate: int, impl: str, c: int) -> float:
    """A dense (or one expert's) MLP per token routed through it."""
    if spec.mlp.gated:  # gate, act(gate), up, act(gate)*up (the down-projection input)
        inner = 4 * c * intermediate if impl == "hf" else 3 * c * intermediate
    else:  # fc1 output (activation input) and activation output (fc2 input)
        inner = 2 * c * intermediate
    if impl == "hf" and spec.mlp.activation in PYTHON_GELUS:
        inner += 3 * c * intermediate  # x**3, the tanh output and 1 + tanh are saved (measured on GPT-2)
    return inner


def _moe_bytes(spec: ModelSpec, impl: str, c: int, capacity_factor: float = 1.0) -> float:
    """Router, per-token expert inputs/outputs and the top-k experts' MLPs (HF loop over experts:
    each routed token is gathered (h), run through the expert, weighted (h)). With a capacity
    factor (Switch Transformer, Fedus et al. 2021, eq. 3; Megatron --moe-expert-capacity-factor)
    experts are padded to capacity_factor x their fair share of tokens."""
    moe = spec.moe
    assert moe is not None
    h = spec.hidden_size
    router = FP32 * moe.num_experts + c * moe.num_experts  # logits and fp32 softmax
    per_routed = 2 * c * h + _mlp_bytes(spec, moe.expert_intermediate_size, impl, c)
    shared = _mlp_bytes(spec, moe.shared_intermediate_size, impl, c) if moe.shared_intermediate_size else 0
    return router + capacity_factor * moe.experts_per_token * per_routed + shared


def layer_activations(spec: ModelSpec, seq_len, *, moe_layer: bool = False, impl: str = "hf",
                      kernel: str = "flash", compute_bytes: int = 2, dropout: float = 0.0,
                      autocast: bool = False, capacity_factor: float = 1.0) -> LayerActivations:
    """Bytes saved per token by one layer (no recompute, no tensor parallelism)."""
    c = compute_bytes
    norms = _layer_norms(spec, impl, c, autocast)
    attention = _attention_bytes(spec, seq_len, impl, kernel, c, dropout)
    if moe_layer and spec.moe is not None:
        mlp = _moe_bytes(spec, impl, c, capacity_factor)
    else:
        mlp = _mlp_bytes(spec, spec.mlp.intermediate_size, impl, c)
    masks = 2 * spec.hidden_size if dropout > 0 else 0.0  # two residual dropouts, 1-byte masks
    # fused norm+linear kernels save the normalised input of the QKV and first MLP matmuls;
    # HF's unfused RMSNorm output already is that tensor (counted in norms)
    inputs = 0.0 if impl == "hf" else 2 * c * spec.hidden_size
    return LayerActivations(norms, attention, mlp, masks, inputs)


def saved_bytes_per_token(spec: ModelSpec, seq_len, layers: int, moe_layers: int, *, impl: str = "hf",
                          kernel: str = "flash", recompute: str = "none", compute_bytes: int = 2,
                          tp: int = 1, sequence_parallel: bool = True, dropout: float = 0.0,
                          autocast: bool = False, capacity_factor: float = 1.0) -> float:
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
                              dropout=dropout, autocast=autocast)
    moe = layer_activations(spec, seq_len, moe_layer=True, impl=impl, kernel=kernel,
                            compute_bytes=compute_bytes, dropout=dropout, autocast=autocast,
                            capacity_factor=capacity_factor)

    def on_rank(part: LayerActivations):
        if sequence_parallel:  # (with tp = 1 both forms are the same)
            return part.total / tp
        return (part.attention + part.mlp) / tp + part.norms + part.dropout + part.linear_inputs

    if recompute == "full":
        residual = FP32 if autocast else compute_bytes
        return layers * residual * spec.hidden_size / (tp if sequence_parallel else 1)
    return (layers - moe_layers) * on_rank(dense) + moe_layers * on_rank(moe)


def recomputed_layer_bytes_per_token(spec: ModelSpec, seq_len, moe_layers, *, impl: str = "hf",
                                     kernel: str = "flash", compute_bytes: int = 2, tp: int = 1,
                                     dropout: float = 0.0, autocast: bool = False) -> float:
    """Full recompute: the activations of the one layer being recomputed during backward."""
    dense = layer_activations(spec, seq_len, impl=impl, kernel=kernel, compute_bytes=compute_bytes,
                              dropout=dropout, autocast=autocast).total
    if spec.moe is None:
        return dense / tp
    moe = layer_activations(spec, seq_len, moe_layer=True, impl=impl, kernel=kernel, compute_bytes=compute_bytes,
                            dropout=dropout, autocast=autocast).total
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


def pipeline_micro_batches_in_flight(pp: int, vpp: int, micro_batches: int) -> float:
    """Micro-batches whose activations the first stage holds at once.

    1F1B: up to pp (Narayanan et al. 2021, Sec. 2.2); interleaved with v virtual stages:
    pp·(1 + (pp-1)/(pp·v)) (Korthikanti et al. 2022, Sec. 4.2.3). Never more than the step has.
    """
    interleaved = pp * (1 + (pp - 1) / (pp * vpp))
    in_flight = np.where(pp == 1, 1.0, np.where(vpp > 1, interleaved, pp * 1.0))
    return np.minimum(in_flight, micro_batches * 1.0)
