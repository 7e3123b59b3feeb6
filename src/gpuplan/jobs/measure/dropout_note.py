"""Why `gpuplan measure` finds more activation memory than the estimate on a model trained with attention dropout.

With dropout_p > 0, torch's SDPA on the CPU takes the math path (the CPU flash kernel is skipped), which keeps
three fp32 (micro-batch, heads, seq, seq) tensors a layer for backward — the softmax output, the dropout mask
and the dropped probabilities — and fp32 copies of q, k and v (bf16 inputs are upcast), where CUDA's flash and
memory-efficient kernels keep q, k, v, the output (bf16) and the log-sum-exp (fp32, per row). Measured here
(torch 2.13.0+cpu, torch.autograd.graph.saved_tensors_hooks around F.scaled_dot_product_attention, bf16, b 2,
a 12, s 512, d 64, causal): 84,934,656 bytes saved at dropout_p 0.1 against 6,340,608 at 0, a difference of
78,594,048 = 12·b·a·s² + 4·b·s·h − 4·b·a·s exactly (h = a·d). `gpuplan memory` estimates the CUDA kernels, so
this is a measurement-side gap, not an estimate error (jobs.memory.estimate._notes says the same)."""

from __future__ import annotations

from typing import Any

ATTENTION_DROPOUT_KEYS = ("attn_pdrop", "attention_dropout", "attention_probs_dropout_prob")
"""HF config keys of the attention-probability dropout (GPT-2 / GPT-BigCode, Llama-style, BERT-style)."""
GiB = 2**30


def attention_dropout(config: dict[str, Any]) -> tuple[str, float]:
    """(key, probability) of the config's attention dropout, its model_type's HF defaults filling a key it omits
    (adapters.hf_config.CONFIG_DEFAULTS: GPT-2's attn_pdrop 0.1); ('', 0.0) where it has none."""
    from gpuplan.adapters.hf_config import CONFIG_DEFAULTS

    cfg = config.get("text_config", config)
    cfg = {**CONFIG_DEFAULTS.get(cfg.get("model_type", ""), {}), **cfg}
    for key in ATTENTION_DROPOUT_KEYS:
        value = cfg.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return key, float(value)
    return "", 0.0


def math_path_extra_bytes(spec: Any, micro_batch: int, seq_len: int) -> float:
    """Bytes the CPU math path keeps beyond the flash kernels, whole model: per layer 12·b·a·s² (three fp32 s x s
    tensors) + 4·b·s·h (fp32 q, k, v: 12·b·s·h, against the flash path's bf16 q, k, v and output, 8·b·s·h)
    − 4·b·a·s (the flash path's fp32 log-sum-exp). Module docstring: measured, exact at b 2, a 12, s 512."""
    b, s = micro_batch, seq_len
    a = spec.attention.num_heads
    h = a * spec.attention.head_dim
    return spec.num_layers * (12 * b * a * s * s + 4 * b * s * h - 4 * b * a * s)


def math_path_note(config: dict[str, Any], spec: Any, kernel: str, micro_batch: int, seq_len: int,
                   activation_gap: float) -> str:
    """The note `measure` prints where the config trains with attention dropout and the kernel asked is flash /
    sdpa: the math path's extra bytes, the share of the measured activation gap (measured - estimated, bytes) they
    explain, and how to compare like with like; '' otherwise."""
    key, p = attention_dropout(config)
    if not p or kernel not in ("flash", "sdpa"):
        return ""
    extra = math_path_extra_bytes(spec, micro_batch, seq_len)
    # a share of the gap only where they fit in it: at a peak the math path's tensors are not all held at (a small
    # model's peak is the optimizer step's), the gap can be ~0 and the share was printed as 178800% (wave 11)
    share = "" if not activation_gap > 0 else \
        f", {extra / activation_gap:.0%} of the measured activation gap ({activation_gap / GiB:.3f} GiB)" \
        if extra <= activation_gap else \
        f", more than the measured activation gap at the peak ({activation_gap / GiB:.3f} GiB), so not all held there"
    return (f"attention dropout {p:g} ({key}): on the CPU torch's SDPA takes the math path, which keeps three fp32 "
            f"s x s tensors a layer (softmax, dropout mask, dropped probabilities) and fp32 q, k, v that CUDA's "
            f"flash / efficient kernels do not: 12·b·a·s² + 4·b·s·h − 4·b·a·s bytes a layer, "
            f"{extra / GiB:.3f} GiB over {spec.num_layers} layers{share}. The estimate is the CUDA kernels'; to "
            f"compare like with like, measure a config.json with {key}: 0 (measure takes no --dropout)")
