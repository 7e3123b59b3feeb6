"""Serving speed: the prefill and decode roofline per step, TP all-reduces, cost per token.

Units: bytes, bytes/s, FLOPs, FLOP/s, seconds, tokens. Sources are named next to each formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuplan.core.flops import (
    attention_core_flops_per_token,
    layer_matmul_weights_per_token,
)
from gpuplan.core.model import ModelSpec
from gpuplan.core.serving import lora as L
from gpuplan.core.serving.memory import draft_kv_share
from gpuplan.core.serving.setup import ServingSetup
from gpuplan.core.serving.weights import ParamGroups, decode_weight_bytes_read, param_groups


def allreduce_seconds(message_bytes, tp: int, link_bytes_per_s: float | None, latency_s: float):
    """Ring all-reduce: latency + 2(tp-1)/tp x message / per-direction link bandwidth
    (Patarasuk & Yuan 2009; NCCL's 'bus bandwidth' convention). 0 when tp = 1."""
    if tp <= 1:
        return 0.0
    per_direction = (link_bytes_per_s or 64e9) / 2
    return latency_s + 2 * (tp - 1) / tp * message_bytes / per_direction


def forward_allreduces(spec: ModelSpec) -> int:
    """Megatron TP: one all-reduce after attention and one after the MLP, per layer (Sec. 3)."""
    return 2 * spec.num_layers


@dataclass(frozen=True)
class StepTime:
    """One forward step on one GPU: memory time, compute time, communication; seconds."""

    memory_s: float
    compute_s: float
    comm_s: float
    draft_s: float = 0.0
    """Speculative decoding: the proposer's k draft steps before this (verify) step."""
    tokens_per_step: float = 1.0
    """Output tokens the step yields per sequence (speculative decoding: the mean accepted length)."""

    @property
    def total(self) -> float:
        """Seconds per output token."""
        return (max(self.memory_s, self.compute_s) + self.comm_s + self.draft_s) / self.tokens_per_step

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


def decode_flops_per_token(spec: ModelSpec, context) -> float:
    """FLOPs of one generated token: 2 per active matmul weight + LM head, and the new query
    against ``context`` cached keys (every key: the 'full' convention for a single query)."""
    return (2.0 * layer_matmul_weights_per_token(spec) + 2.0 * spec.vocab_size * spec.hidden_size
            + attention_core_flops_per_token(spec, context, "full"))


def prefill_flops(spec: ModelSpec, prompt_tokens) -> float:
    """FLOPs of a prompt's forward: matmuls per token, causal attention ((s+1)/2 keys on average,
    as flash kernels run it), LM head for the last token only (vLLM computes logits for it)."""
    per_token = 2.0 * layer_matmul_weights_per_token(spec) + attention_core_flops_per_token(spec, prompt_tokens,
                                                                                            "causal")
    return prompt_tokens * per_token + 2.0 * spec.vocab_size * spec.hidden_size


def step_time(bytes_read: float, flops: float, tokens: float, spec: ModelSpec, *, tp: int, pp: int,
              bandwidth: float, peak: float, link: float | None, bw_eff: float, compute_eff: float,
              latency_s: float, act_bytes: int = 2) -> StepTime:
    """Roofline for one forward over ``tokens`` tokens on a TP rank (summed over pp stages):
    max(bytes / (HBM bandwidth x eff), FLOPs / (peak x eff)) + TP all-reduces + pipeline hops."""
    message = tokens * spec.hidden_size * act_bytes
    comm = forward_allreduces(spec) * allreduce_seconds(message, tp, link, latency_s)
    comm += (pp - 1) * (latency_s + message / ((link or 64e9) / 2)) if pp > 1 else 0.0
    return StepTime(bytes_read / (bandwidth * bw_eff), flops / tp / (peak * compute_eff), comm)


def tokens_per_second(batch, step_seconds) -> float:
    return batch / step_seconds


def cost_per_million_tokens(price_per_gpu_hour: float, gpus: int, tokens_per_s: float) -> float:
    """USD per 1e6 generated tokens: GPU-hours per token x price (3600 s per hour)."""
    if tokens_per_s <= 0:
        return math.inf
    return price_per_gpu_hour * gpus / 3600.0 / tokens_per_s * 1e6


DECODE_ATTENTION = ("grouped", "per-query-head")
"""How the decode attention kernel reads the KV cache (kv_reads_per_step)."""


def kv_reads_per_step(spec: ModelSpec, decode_attention: str = "grouped") -> float:
    """How many times one decode step reads each cached K/V element from HBM.

    'grouped': once — the kernel serves every query head of a KV head from one load
    (FlashAttention / FlashInfer decode, TensorRT-LLM's XQA, "reducing data loading": its blog
    docs/source/blogs/XQA-kernel.md). 'per-query-head': num_heads / num_kv_heads times — the
    kernel runs one thread block per (query head, sequence) and each loads its KV head's cache:
    TensorRT-LLM's masked multi-head attention before XQA (decoderMaskedMultiheadAttention
    mmha_launch_kernel_ex, grid {num_heads, batch_size}) and vLLM's paged attention kernels
    (csrc/attention paged_attention_v1/v2 launchers, grid (num_heads, num_seqs)). MHA and MLA
    read once either way."""
    a = spec.attention
    if decode_attention == "grouped" or a.is_mla:
        return 1.0
    return a.num_heads / a.num_kv_heads


def decode_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, kv_per_sequence: float, *,
                tp: int, pp: int, batch, context, bandwidth: float, peak: float, link: float | None,
                which: int = 0) -> StepTime:
    """Time per output token at ``batch`` sequences of ``context`` cached tokens: weights (+ the
    experts the batch touches) and every sequence's KV read once per step, or the FLOPs when
    the batch is large, plus the TP all-reduces. ``which``: 0 expected, 1 low, 2 high efficiency."""
    eff = setup.efficiency
    s = setup.speculation
    positions = 1 + (s.tokens if s else 0)  # a verify step scores k proposed tokens + one of its own
    # kv_per_sequence is per stage (a token crosses all stages); a per-query-head kernel reads it
    # once per query head of each KV head
    kv_read = batch * kv_per_sequence * pp * kv_reads_per_step(spec, setup.decode_attention)
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, batch * positions) + kv_read
    flops = batch * positions * decode_flops_per_token(spec, context)
    if setup.lora is not None:  # the active adapter slots are read too, and shrink + expand run per token
        bytes_read += L.step_bytes(spec, setup.lora, tp, batch)
        flops += batch * positions * L.flops_per_token(spec, setup.lora)
    step = step_time(bytes_read, flops, batch * positions, spec, tp=tp, pp=pp, bandwidth=bandwidth, peak=peak,
                     link=link, bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which],
                     latency_s=eff.latency(link))
    if s is None:
        return step
    draft_s = 0.0
    if s.draft is not None:  # k proposer steps at the batch, plain decoding of the draft shape
        plain = replace(setup, speculation=None, lora=None)  # adapters wrap the target only
        draft_groups = param_groups(s.draft)
        if s.shares_embeddings:  # EAGLE / MTP read the target's LM head, not a head of their own
            draft_groups = replace(draft_groups, embedding=groups.embedding, lm_head=groups.lm_head,
                                   tied=groups.tied)
        share = draft_kv_share(spec, s, setup.kv_bytes, tp, pp)
        draft_kv = kv_per_sequence * share / (1 - share) if share < 1 else 0.0
        draft_s = s.tokens * decode_step(s.draft, draft_groups, plain, draft_kv, tp=tp, pp=1, batch=batch,
                                         context=context, bandwidth=bandwidth, peak=peak, link=link,
                                         which=which).total
    return StepTime(step.memory_s, step.compute_s, step.comm_s, draft_s, s.mean_accepted_length)


def prefill_step(spec: ModelSpec, groups: ParamGroups, setup: ServingSetup, *, tp: int, pp: int, prompt,
                 bandwidth: float, peak: float, link: float | None, which: int = 0) -> StepTime:
    """Time to first token for one prompt: compute-bound matmuls + attention, weights read once.
    With prefix caching only the uncached suffix is computed: causal FLOPs of the whole prompt
    minus those of the cached prefix (the suffix still attends to every cached key)."""
    eff = setup.efficiency
    cached = math.floor(setup.prefix_hit * prompt)
    new = max(1, prompt - cached)
    flops = prefill_flops(spec, prompt) - (prefill_flops(spec, cached) - 2.0 * spec.vocab_size * spec.hidden_size
                                           if cached else 0.0)
    bytes_read = decode_weight_bytes_read(spec, groups, setup.fmt, tp, new)
    if setup.lora is not None:
        bytes_read += L.step_bytes(spec, setup.lora, tp, 1)
        flops += new * L.flops_per_token(spec, setup.lora)
    return step_time(bytes_read, flops, new, spec, tp=tp, pp=pp, bandwidth=bandwidth,
                     peak=peak, link=link, bw_eff=eff.bandwidth[which], compute_eff=eff.compute[which],
                     latency_s=eff.latency(link))


def batch_sizes(limit: int, cap: int = 1024) -> list[int]:
    """1, 2, 4, ... up to ``limit`` (and ``limit`` itself): the throughput-vs-batch curve's points."""
    top = min(limit, cap)
    sizes = [1 << i for i in range(0, 11) if (1 << i) <= top]
    return sizes + ([top] if top > 0 and top not in sizes else [])
