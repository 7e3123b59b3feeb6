"""Diagnostic (docs/step.md, "Where the H200 gap is, and where it is not"): how many of the bytes one
Hugging Face Llama decoder layer's forward reads in its memory-bound kernels an L2 cache could serve.

Runs transformers' own LlamaDecoderLayer (bf16, SDPA) on the meta device at a real shape (one sequence
of ``tokens`` tokens) under a TorchDispatchMode that sees every ATen op. View ops move nothing; matmuls
and the attention kernel (replaced by an empty output: the meta device would decompose SDPA into the
math path) add their operands to the traffic but are not scored. Each other op reads its tensor
operands and writes its outputs. A read is an L2 hit when an LRU cache of ``--l2-bytes`` still holds
the operand: the bytes touched since the operand's last touch plus its own size fit (a tensor streamed
in order is evicted from its start onward, so a tensor larger than the room left misses whole);
``--partial`` credits the part that fits instead (an upper bound). Writes are charged in full.

The L2 default is 50 MB: H100 SXM5's (NVIDIA H100 Tensor Core GPU Architecture whitepaper), the same
GH100 die as the H200. Hit bytes are converted to time at 4.272 TB/s (core/time/memory_kernels.py:
0.89 x the H200's 4.8 TB/s), i.e. what the memory-bound model would charge for them.

Usage: python scripts/hf_l2_reuse.py llama-3.2-1b --tokens 4096 [--partial]
Prints one line: kernels, read and written GB, hit GB and the ms per layer the hits are charged.
Units: bytes, seconds.
"""

from __future__ import annotations

import argparse
from collections import OrderedDict

from gpuplan.catalog import load_accelerator
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY

HBM_SECONDS_PER_BYTE = 1 / (HBM_STREAM_EFFICIENCY * load_accelerator("h200-sxm").memory_bandwidth)
"""Seconds a streamed byte costs on the H200 the rows ran on (the element-wise kernels' HBM share)."""
NOT_SCORED = ("mm", "bmm", "addmm", "empty_like")
"""Matmuls (core/time/linears.py's class) and the stand-in for the attention kernel."""


def _is_view(func) -> bool:
    import torch

    views = (torch.ops.aten.t, torch.ops.aten.view, torch.ops.aten._unsafe_view)  # _unsafe_view: a view not marked one
    return bool(getattr(func, "is_view", False)) or func.overloadpacket in views


class _LruTraffic:
    """An LRU cache over tensor storages, with memory-bound read, hit and write bytes."""

    def __init__(self, capacity: float, partial: bool):
        self.capacity, self.partial = capacity, partial
        self.order: OrderedDict[int, float] = OrderedDict()
        self.read = self.hit = self.written = 0.0
        self.kernels = 0

    def touch(self, key: int, size: float) -> float:
        """Mark a storage touched; return the fraction of it the cache held."""
        between, found = 0.0, False
        for other in reversed(self.order):
            if other == key:
                found = True
                break
            between += self.order[other]
        self.order.pop(key, None)
        self.order[key] = size
        if not found:
            return 0.0
        if self.partial:
            return max(0.0, min(1.0, (self.capacity - between) / size))
        return 1.0 if between + size <= self.capacity else 0.0


def _mode(traffic: _LruTraffic):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    def tensors(obj):
        return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if _is_view(func):
                return out
            scored = func.overloadpacket.__name__ not in NOT_SCORED
            seen = set()
            for t in tensors((args, kwargs)):
                key = t.untyped_storage()._cdata
                if t.numel() <= 1 or key in seen:
                    continue
                seen.add(key)
                size = t.numel() * t.element_size()
                held = traffic.touch(key, size)
                if scored:
                    traffic.read += size
                    traffic.hit += held * size
            for t in tensors(out):
                size = t.numel() * t.element_size()
                traffic.touch(t.untyped_storage()._cdata, size)
                traffic.written += size if scored else 0.0
            traffic.kernels += int(scored)
            return out

    return Recorder()


def layer_forward_traffic(model: str, tokens: int, l2_bytes: float, partial: bool) -> _LruTraffic:
    """Run one decoder layer's forward of the catalog model at ``tokens`` tokens and count its traffic."""
    import torch
    import torch.nn.functional as F
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import (
        LlamaDecoderLayer,
        LlamaRotaryEmbedding,
    )

    from gpuplan.catalog import model_entry

    cfg = LlamaConfig(**{**model_entry(model)["config"], "num_hidden_layers": 1})
    cfg._attn_implementation = "sdpa"
    traffic = _LruTraffic(l2_bytes, partial)
    sdpa = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = lambda q, k, v, *a, **kw: torch.empty_like(q)  # the kernel, not its math path
    try:
        with torch.device("meta"):
            layer = LlamaDecoderLayer(cfg, 0).to(torch.bfloat16)
            x = torch.empty(1, tokens, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
            positions = torch.arange(tokens)[None]
            cos, sin = LlamaRotaryEmbedding(cfg)(x, positions)
            with _mode(traffic):
                layer(x, attention_mask=None, position_ids=positions, position_embeddings=(cos, sin))
    finally:
        F.scaled_dot_product_attention = sdpa
    return traffic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--l2-bytes", type=float, default=50e6)
    parser.add_argument("--partial", action="store_true")
    args = parser.parse_args()
    t = layer_forward_traffic(args.model, args.tokens, args.l2_bytes, args.partial)
    print(f"{args.model} {args.tokens} tokens: {t.kernels} memory-bound kernels, reads {t.read / 1e9:.3f} GB, "
          f"writes {t.written / 1e9:.3f} GB, L2 read hits {t.hit / 1e9:.3f} GB ({t.hit / max(t.read, 1):.0%}) "
          f"= {t.hit * HBM_SECONDS_PER_BYTE * 1e3:.3f} ms per layer")


if __name__ == "__main__":
    main()
