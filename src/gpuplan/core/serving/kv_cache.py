"""KV cache: bytes per token and per sequence on one GPU, and how many sequences or tokens fit.

Units: bytes, tokens, sequences. Formulas:
  * MHA / GQA / MQA: each layer stores K and V for every KV head,
    ``2 · kv_heads · head_dim · bytes`` per token (Pope et al. 2022, "Efficiently Scaling
    Transformer Inference", Sec. 3.1; vLLM ``get_kv_cache_shape`` = (2, blocks, block_size,
    kv_heads, head_dim)). Tensor parallelism splits the KV heads; when tp exceeds the KV heads,
    vLLM replicates them (``ModelConfig.get_num_kv_heads``: max(1, kv_heads // tp)).
  * MLA (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1, "KV cache per token (d_c + d_h^R)·l elements"):
    one compressed latent of ``kv_lora_rank`` plus the decoupled RoPE key of
    ``qk_rope_head_dim`` per layer, shared by all heads; vLLM keeps the whole latent on every
    TP rank (MLA attention backends cache [blocks, block_size, kv_lora_rank + rope_dim]).
  * Sliding-window layers (Mistral, Gemma 2/3, hybrid ``layer_types``) keep at most
    ``window`` tokens per sequence (vLLM's hybrid KV-cache manager, SlidingWindowManager).
  * Paged blocks: each layer group allocates whole blocks of ``block_size`` tokens
    (Kwon et al. 2023, PagedAttention, Sec. 4.1; vLLM default block size 16).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.core.model.spec import AttentionSpec, ModelSpec
from gpuplan.core.parallel import layers_per_stage
from gpuplan.errors import InputError

KV_DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per cached element: vLLM ``--kv-cache-dtype`` auto (model dtype) or fp8 (e4m3/e5m2)."""
DEFAULT_BLOCK_SIZE = 16
"""vLLM's default ``--block-size`` on CUDA (vllm/config CacheConfig.block_size)."""


def kv_heads_per_gpu(attn: AttentionSpec, tp: int) -> int:
    """KV heads one tensor-parallel rank stores; InputError when tp and the KV heads do not fit."""
    if attn.num_heads % tp:
        raise InputError("tp", tp, f"must divide the {attn.num_heads} attention heads")
    if attn.is_mla:
        return 1
    kv = attn.num_kv_heads
    if kv % tp == 0:
        return kv // tp
    if tp % kv == 0:  # vLLM replicates each KV head on tp // kv ranks
        return 1
    fits = [d for d in range(1, attn.num_heads + 1) if attn.num_heads % d == 0 and (kv % d == 0 or d % kv == 0)]
    raise InputError("tp", tp, f"must divide the {kv} key/value heads (or be a multiple of them, "  # and the heads:
                     f"which replicates each head): try tp in {fits}")  # [1, 2, 4, 8, 16] offered 8 to 28 heads


def kv_bytes_per_token_per_layer(attn: AttentionSpec, kv_bytes: float, tp: int = 1) -> float:
    """Bytes one layer caches per token on one TP rank (MLA: the latent, replicated)."""
    if attn.is_mla:
        kv_heads_per_gpu(attn, tp)  # still checks heads % tp
        return ((attn.kv_lora_rank or 0) + attn.qk_rope_head_dim) * kv_bytes
    return 2 * kv_heads_per_gpu(attn, tp) * attn.head_dim * kv_bytes


@dataclass(frozen=True)
class KVLayout:
    """What one GPU of the worst pipeline stage caches. ``stages``: (full, sliding) layer counts
    per pipeline stage; every stage is checked and the largest is the one that limits capacity."""

    bytes_per_token_layer: float
    stages: tuple[tuple[int, int], ...]
    window: int | None
    block_size: int = DEFAULT_BLOCK_SIZE

    def stage_bytes(self, full: int, sliding: int, context) -> float:
        tokens = _blocks(context, self.block_size) * self.block_size
        kept = tokens if self.window is None else min(tokens, _blocks(self.window, self.block_size) * self.block_size)
        return self.bytes_per_token_layer * (full * tokens + sliding * kept)

    def bytes_per_sequence(self, context) -> float:
        """Cache bytes of one sequence of ``context`` tokens on the fullest GPU (block-rounded)."""
        return max(self.stage_bytes(f, s, context) for f, s in self.stages)

    @property
    def bytes_per_token(self) -> float:
        """Bytes per token while the sequence is shorter than any window (worst stage)."""
        return self.bytes_per_token_layer * max(f + s for f, s in self.stages)


def _blocks(tokens, block_size: int) -> int:
    return math.ceil(tokens / block_size)


def kv_layout(spec: ModelSpec, kv_bytes: float, tp: int = 1, pp: int = 1,
              block_size: int = DEFAULT_BLOCK_SIZE) -> KVLayout:
    """The cache shape on one GPU for ``spec`` under tp x pp (layers split as Megatron/vLLM do)."""
    per_layer = kv_bytes_per_token_per_layer(spec.attention, kv_bytes, tp)
    types = spec.layer_types if spec.sliding_window and spec.layer_types else ("full",) * spec.num_layers
    size = layers_per_stage(spec.num_layers, pp)
    stages = []
    for start in range(0, spec.num_layers, size):
        chunk = types[start:start + size]
        sliding = sum(t == "sliding" for t in chunk)
        stages.append((len(chunk) - sliding, sliding))
    return KVLayout(per_layer, tuple(stages), spec.sliding_window if spec.num_sliding_layers else None, block_size)


def max_sequences(layout: KVLayout, kv_budget: float, context: int) -> int:
    """Concurrent sequences of ``context`` tokens whose cache fits ``kv_budget`` bytes per GPU."""
    if kv_budget <= 0:
        return 0
    return int(kv_budget // layout.bytes_per_sequence(context))


def max_context(layout: KVLayout, kv_budget: float, batch: int) -> float:
    """Longest context (tokens, a multiple of the block size) that ``batch`` sequences can all
    reach within ``kv_budget`` bytes per GPU; ``inf`` when every layer slides."""
    if kv_budget <= 0:
        return 0
    per_sequence = kv_budget / batch
    best = math.inf
    for full, sliding in layout.stages:
        best = min(best, _stage_max_context(layout, full, sliding, per_sequence))
    return best


def _stage_max_context(layout: KVLayout, full: int, sliding: int, budget: float) -> float:
    """Invert stage_bytes: linear in tokens up to the window, then only full layers grow."""
    b, per = layout.block_size, layout.bytes_per_token_layer
    tokens = (budget // (per * (full + sliding) * b)) * b
    if layout.window is None or sliding == 0 or tokens <= layout.window:
        return tokens
    if full == 0:
        return math.inf
    window_tokens = _blocks(layout.window, b) * b
    return ((budget - per * sliding * window_tokens) // (per * full * b)) * b


def tokens_in(layout: KVLayout, kv_budget: float) -> int:
    """Cache capacity in tokens (whole blocks) for a full-attention model, as vLLM logs it
    ('# GPU blocks' x block size, or 'GPU KV cache size: N tokens')."""
    block_bytes = layout.bytes_per_token * layout.block_size
    return int(kv_budget // block_bytes) * layout.block_size if kv_budget > 0 else 0
