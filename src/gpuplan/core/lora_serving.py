"""Multi-LoRA serving: the adapter slots an engine preallocates on every GPU, what they add to each
forward step, and the host-memory cache of adapters.

vLLM (``--enable-lora --max-loras --max-lora-rank``) wraps every supported linear layer and
allocates, at model load, zero-filled stacks for ``max_loras`` adapters at ``max_lora_rank``
(vllm/lora/layers/base_linear.py and column_parallel_linear.py, ``create_lora_weights``):

- column-parallel layers (q/k/v, gate/up): A = [max_loras, 1, rank, input] per packed slice, the
  full input on every rank; B = [max_loras, 1, output / tp, rank] per slice;
- row-parallel layers (o_proj, down_proj): A = [max_loras, 1, rank, input / tp]; B =
  [max_loras, 1, output, rank], the full output on every rank;
- fused MoE experts (vllm/lora/layers/fused_moe.py, vLLM >= 0.11): the same per expert,
  [max_loras, local experts, ...] for w13 (two slices) and w2.

The profiler counts these stacks with the weights, so they come out of the KV cache. SGLang's
LoRA memory pool (``--max-loras-per-batch``, default 8; sglang/srt/lora/mem_pool.py) holds the
same A/B shapes per target module and is allocated before the KV pool is sized. The Punica
kernels (lora_shrink / lora_expand) read the whole padded rank of every active slot
(vLLM docs/features/lora.md, "Configuring max_lora_rank", PR #22782).
Units: elements, bytes, FLOPs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuplan.core.model import ModelSpec
from gpuplan.errors import InputError

VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""max_lora_rank values vLLM accepts (vllm/config/lora.py, LoRAConfig possible_max_ranks)."""
DEFAULT_RANK = 16
"""vLLM and SGLang default max_lora_rank (vllm/config/lora.py; SGLang server_args infers it from
the adapters, 16 being the common PEFT rank)."""
DEFAULT_MAX_LORAS = {"vllm": 1, "sglang": 8}
"""Adapters active in one batch: vLLM --max-loras default 1 (vllm/config/lora.py); SGLang
--max-loras-per-batch default 8 (sglang/srt/server_args.py)."""


@dataclass(frozen=True)
class LoraServing:
    """A multi-LoRA setup: GPU slots, padded rank, adapters kept in host memory."""

    max_loras: int
    """Adapter slots on every GPU (adapters one batch can mix)."""
    rank: int
    """max_lora_rank: every slot is padded to it."""
    cpu_loras: int
    """Adapters cached in host memory (vLLM --max-cpu-loras, default max_loras)."""
    dtype_bytes: int = 2
    """lora_dtype 'auto' = the model's activation dtype (bf16 / fp16)."""


def _gated_mlp_elements(h: int, inter: int, rank: int, tp: int, gated: bool) -> float:
    """One slot's A and B for an MLP on one TP rank: gate/up (two slices when gated) column-parallel,
    down row-parallel."""
    slices = 2 if gated else 1
    up = slices * rank * h + slices * (inter / tp) * rank
    down = rank * (inter / tp) + h * rank
    return up + down


def slot_elements_per_layer(spec: ModelSpec, rank: int, tp: int, moe_layer: bool) -> float:
    """Elements of one adapter slot in one decoder layer on one TP rank (vLLM shapes, module doc)."""
    attn, h = spec.attention, spec.hidden_size
    if attn.is_mla:
        raise InputError("max_loras", "lora", f"{spec.name} uses MLA attention, whose LoRA projections "
                         "gpuplan does not model; multi-LoRA sizing covers MHA / GQA models")
    from gpuplan.core.kv_cache import kv_heads_per_gpu

    q_local = attn.num_heads // tp * attn.head_dim
    kv_local = kv_heads_per_gpu(attn, tp) * attn.head_dim
    qkv = 3 * rank * h + rank * (q_local + 2 * kv_local)  # three slices: q, k, v
    o_proj = rank * q_local + h * rank
    if moe_layer and spec.moe is not None:
        moe = spec.moe
        mlp = moe.num_experts * _gated_mlp_elements(h, moe.expert_intermediate_size, rank, tp, True)
        if moe.shared_intermediate_size:
            mlp += _gated_mlp_elements(h, moe.shared_intermediate_size, rank, tp, True)
    else:
        mlp = _gated_mlp_elements(h, spec.mlp.intermediate_size, rank, tp, spec.mlp.gated)
    return qkv + o_proj + mlp


def _layer_kinds(spec: ModelSpec) -> list[bool]:
    if spec.moe is None:
        return [False] * spec.num_layers
    flags = list(spec.moe_layers) or [True] * spec.num_layers
    return flags + [False] * (spec.num_layers - len(flags))


def slot_bytes_per_gpu(spec: ModelSpec, lora: LoraServing, tp: int, pp: int = 1) -> float:
    """Bytes of all ``max_loras`` slots on one GPU of the fullest pipeline stage."""
    kinds = _layer_kinds(spec)
    per_stage = math.ceil(len(kinds) / pp)
    total = sum(slot_elements_per_layer(spec, lora.rank, tp, moe) for moe in kinds)
    return lora.max_loras * lora.dtype_bytes * total * per_stage / len(kinds)


def adapter_bytes(spec: ModelSpec, lora: LoraServing) -> float:
    """One adapter at the padded rank, unsharded (what the host cache keeps per adapter)."""
    return lora.dtype_bytes * sum(slot_elements_per_layer(spec, lora.rank, 1, moe) for moe in _layer_kinds(spec))


def active_adapters(lora: LoraServing, batch: int) -> int:
    """Distinct adapters a batch touches: one per sequence up to the slots (a gpuplan assumption:
    traffic spread over the adapters, the worst case for bytes read)."""
    return max(1, min(lora.max_loras, int(batch)))


def step_bytes(spec: ModelSpec, lora: LoraServing, tp: int, batch: int) -> float:
    """Adapter bytes one forward reads on a TP rank: each active slot once (summed over stages)."""
    per_slot = slot_bytes_per_gpu(spec, lora, tp) / lora.max_loras
    return active_adapters(lora, batch) * per_slot


def flops_per_token(spec: ModelSpec, lora: LoraServing) -> float:
    """Shrink + expand FLOPs of one token through every wrapped layer, whole model: 2 per A and B
    element of one slot (x A then (x A) B), at the padded rank."""
    return 2.0 * sum(_active_elements(spec, lora.rank, moe) for moe in _layer_kinds(spec))


def _active_elements(spec: ModelSpec, rank: int, moe_layer: bool) -> float:
    """A token passes only its top-k experts (and the shared one) in a MoE layer."""
    if not moe_layer or spec.moe is None:
        return slot_elements_per_layer(spec, rank, 1, moe_layer)
    moe, h = spec.moe, spec.hidden_size
    attn_only = slot_elements_per_layer(spec, rank, 1, False) - _gated_mlp_elements(
        h, spec.mlp.intermediate_size, rank, 1, spec.mlp.gated)
    mlp = moe.experts_per_token * _gated_mlp_elements(h, moe.expert_intermediate_size, rank, 1, True)
    if moe.shared_intermediate_size:
        mlp += _gated_mlp_elements(h, moe.shared_intermediate_size, rank, 1, True)
    return attn_only + mlp


def check_rank(rank: int) -> int:
    if rank not in VLLM_RANKS:
        raise InputError("max_lora_rank", rank, f"must be one of {', '.join(map(str, VLLM_RANKS))} "
                         "(the ranks vLLM allocates)")
    return rank
