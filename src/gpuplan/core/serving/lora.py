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

from gpuplan.core.serving.kv_cache import kv_heads_per_gpu
from gpuplan.core.model.spec import ModelSpec
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


def check_supported(spec: ModelSpec) -> None:
    """InputError for shapes whose LoRA projections are not modelled (MLA attention)."""
    if spec.attention.is_mla:
        raise InputError("max_loras", "lora", f"{spec.name} uses MLA attention, whose LoRA projections "
                         "gpuplan does not model; multi-LoRA sizing covers MHA / GQA models")


def _mlp_elements(h: int, inter: int, rank: int, tp: int, gated: bool = True) -> float:
    """One slot's A and B for an MLP on one TP rank: gate/up (two slices when gated) column-parallel,
    down row-parallel."""
    slices = 2 if gated else 1
    up = slices * rank * h + slices * (inter / tp) * rank
    down = rank * (inter / tp) + h * rank
    return up + down


def _attention_elements(spec: ModelSpec, rank: int, tp: int) -> float:
    """One slot's A and B for q, k, v (three slices, column-parallel) and o_proj (row-parallel)."""
    attn, h = spec.attention, spec.hidden_size
    q_local = attn.num_heads // tp * attn.head_dim
    kv_local = kv_heads_per_gpu(attn, tp) * attn.head_dim
    return 3 * rank * h + rank * (q_local + 2 * kv_local) + rank * q_local + h * rank


def _moe_mlp_elements(spec: ModelSpec, rank: int, tp: int, experts: float) -> float:
    """``experts`` routed experts' A and B (all local experts for the slots, top-k for a token's
    FLOPs) plus the shared expert."""
    moe, h = spec.moe, spec.hidden_size
    mlp = experts * _mlp_elements(h, moe.expert_intermediate_size, rank, tp)
    if moe.shared_intermediate_size:
        mlp += _mlp_elements(h, moe.shared_intermediate_size, rank, tp)
    return mlp


def slot_elements_per_layer(spec: ModelSpec, rank: int, tp: int, moe_layer: bool,
                            experts: float | None = None) -> float:
    """Elements of one adapter slot in one decoder layer on one TP rank (vLLM shapes, module doc);
    a MoE layer counts ``experts`` routed experts (default all of them: the slot holds every local
    expert)."""
    check_supported(spec)
    if moe_layer and spec.moe is not None:
        mlp = _moe_mlp_elements(spec, rank, tp, spec.moe.num_experts if experts is None else experts)
    else:
        mlp = _mlp_elements(spec.hidden_size, spec.mlp.intermediate_size, rank, tp, spec.mlp.gated)
    return _attention_elements(spec, rank, tp) + mlp


def _model_elements(spec: ModelSpec, rank: int, tp: int, experts: float | None = None) -> float:
    """One slot over every decoder layer (dense and MoE layers) on one TP rank."""
    dense = spec.num_dense_layers * slot_elements_per_layer(spec, rank, tp, False) if spec.num_dense_layers else 0.0
    moe = (spec.num_moe_layers * slot_elements_per_layer(spec, rank, tp, True, experts)
           if spec.num_moe_layers else 0.0)
    return dense + moe


def slot_bytes_per_gpu(spec: ModelSpec, lora: LoraServing, tp: int, pp: int = 1) -> float:
    """Bytes of all ``max_loras`` slots on one GPU of the fullest pipeline stage (ceil(L / pp) of
    the L layers, at the model's mix of dense and MoE layers)."""
    stage_share = math.ceil(spec.num_layers / pp) / spec.num_layers
    return lora.max_loras * lora.dtype_bytes * _model_elements(spec, lora.rank, tp) * stage_share


def adapter_bytes(spec: ModelSpec, lora: LoraServing) -> float:
    """One adapter at the padded rank, unsharded (what the host cache keeps per adapter)."""
    return lora.dtype_bytes * _model_elements(spec, lora.rank, 1)


def active_adapters(lora: LoraServing, batch: int) -> int:
    """Distinct adapters a batch touches: one per sequence up to the slots (a gpuplan assumption:
    traffic spread over the adapters, the worst case for bytes read)."""
    return max(1, min(lora.max_loras, int(batch)))


def step_bytes(spec: ModelSpec, lora: LoraServing, tp: int, batch: int) -> float:
    """Adapter bytes one forward reads on a TP rank: each active slot once (summed over stages)."""
    return active_adapters(lora, batch) * lora.dtype_bytes * _model_elements(spec, lora.rank, tp)


def flops_per_token(spec: ModelSpec, lora: LoraServing) -> float:
    """Shrink + expand FLOPs of one token through every wrapped layer, whole model: 2 per A and B
    element of one slot (x A then (x A) B), at the padded rank; in a MoE layer only the token's
    top-k experts (and the shared one)."""
    top_k = spec.moe.experts_per_token if spec.moe is not None else None
    return 2.0 * _model_elements(spec, lora.rank, 1, top_k)


def check_rank(rank: int) -> int:
    if rank not in VLLM_RANKS:
        raise InputError("max_lora_rank", rank, f"must be one of {', '.join(map(str, VLLM_RANKS))} "
                         "(the ranks vLLM allocates)")
    return rank
