"""The matmuls one decoder layer executes in an eager stack, and their seconds.

Shapes follow the modeling code (transformers: separate q/k/v/o and gate/up/down projections;
Phi-3 and GPT-NeoX fuse q/k/v, Phi-3 gate/up; MoE layers a router and grouped expert GEMMs,
transformers' default ``experts_implementation="grouped_mm"`` (integrations/moe.py,
grouped_mm_experts_forward: torch._grouped_mm over the tokens sorted by expert)). A linear y = x W^T
on T tokens runs a forward GEMM (T x in x out), the input gradient (T x out x in) and, when W is
trained, the weight gradient (out x T x in). LoRA (peft) adds, per adapted linear, A (in -> r) and
B (r -> out) in the adapters' dtype (fp32: peft's autocast_adapter_dtype), each with its forward,
input-gradient and weight-gradient matmul.

Seconds of one GEMM: the slower of its FLOPs at the part's achievable matmul rate and its operands
at HBM speed,

    t = max(2 m k n / (peak x MAMF x d / (d + d_half)),  memory_bound_seconds(bytes, 1 kernel))

with d the smallest of m, k, n but at least one 128-wide tile (the matmul shape model of core.time.step,
MAMF and d_half as fitted there; a dimension below a tile wastes tile work, not bandwidth, so a
skinny LoRA GEMM is bound by reading its input: the memory floor). Units: seconds, FLOPs, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.bulk import maximum, minimum
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.memory_kernels import memory_bound_seconds

TILE = 128.0
"""Smallest dimension the shape model sees: one CTA tile (cuBLAS/CUTLASS Hopper tiles are 64-256)."""


@dataclass(frozen=True)
class Linear:
    """One projection: ``count`` of them of ``inputs`` -> ``outputs`` features per token (per expert
    for routed experts: ``rows`` is then the share of the tokens each expert receives)."""

    name: str
    inputs: float
    outputs: float
    count: float = 1.0
    rows: float = 1.0
    """Rows per token the GEMM sees (routed experts: top-k / experts of the tokens each)."""
    groups: float = 1.0
    """GEMMs of this shape (routed experts: one per expert, run as one grouped GEMM)."""


def layer_linears(spec: ModelSpec, moe_layer: bool = False) -> list[Linear]:
    """The projections of one decoder layer (a MoE layer's router and experts when ``moe_layer``)."""
    a, h = spec.attention, spec.hidden_size
    q, kv = a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    v, o_in = a.num_kv_heads * a.value_head_dim, a.num_heads * a.value_head_dim
    out = [Linear("qkv", h, q + kv + v)] if spec.fused_qkv else [Linear("q", h, q), Linear("k", h, kv),
                                                                   Linear("v", h, v)]
    out.append(Linear("o", o_in, h))
    if moe_layer and spec.moe is not None:
        m = spec.moe
        share = m.experts_per_token / m.num_experts
        out += [Linear("router", h, m.num_experts),
                Linear("experts.gate_up", h, 2 * m.expert_intermediate_size, rows=share, groups=m.num_experts),
                Linear("experts.down", m.expert_intermediate_size, h, rows=share, groups=m.num_experts)]
        if m.shared_intermediate_size:
            out += [Linear("shared.gate_up", h, 2 * m.shared_intermediate_size),
                    Linear("shared.down", m.shared_intermediate_size, h)]
        return out
    i = spec.mlp.intermediate_size
    if not spec.mlp.gated:
        return out + [Linear("up", h, i), Linear("down", i, h)]
    mlp = [Linear("gate_up", h, 2 * i)] if spec.fused_gate_up else [Linear("gate", h, i), Linear("up", h, i)]
    return out + mlp + [Linear("down", i, h)]


def lora_linears(spec: ModelSpec, rank: int) -> list[Linear]:
    """peft's A and B of every adapted linear (gpuplan adapts q, k, v, o and the MLP, as
    core.model.finetune.lora_params_per_layer counts)."""
    base = [lin for lin in layer_linears(spec) if lin.name not in ("router",)]
    return [x for lin in base for x in (Linear(lin.name + ".lora_A", lin.inputs, rank),
                                         Linear(lin.name + ".lora_B", rank, lin.outputs))]


def gemm_seconds(m, k, n, *, peak: float, mamf: float, d_half: float, hbm_bytes_per_second: float,
                 operand_bytes: float = 2.0, groups=1.0):
    """Seconds of ``groups`` GEMMs of m x k x n (one launch: a grouped GEMM when groups > 1)."""
    d = maximum(minimum(minimum(m, k), n), TILE)
    compute = groups * 2.0 * m * k * n / (peak * mamf * d / (d + d_half))
    nbytes = groups * operand_bytes * (m * k + k * n + m * n)
    return maximum(compute, memory_bound_seconds(nbytes, 1.0, hbm_bytes_per_second))


@dataclass(frozen=True)
class GemmRates:
    """What a GEMM costs on the part: its peak for the operand dtype and its shape constants."""

    peak: float
    mamf: float
    d_half: float
    hbm_bytes_per_second: float
    operand_bytes: float = 2.0


def linears_seconds(linears: list[Linear], tokens, rates: GemmRates, *, weight_grads: bool):
    """(forward, backward) seconds of ``linears`` on ``tokens`` tokens; the backward takes the
    input gradient and, when ``weight_grads``, the weight gradient."""
    fwd = bwd = 0.0
    for lin in linears:
        m = tokens * lin.rows
        g = dict(peak=rates.peak, mamf=rates.mamf, d_half=rates.d_half,
                 hbm_bytes_per_second=rates.hbm_bytes_per_second, operand_bytes=rates.operand_bytes, groups=lin.groups)
        fwd = fwd + lin.count * gemm_seconds(m, lin.inputs, lin.outputs, **g)
        bwd = bwd + lin.count * gemm_seconds(m, lin.outputs, lin.inputs, **g)
        if weight_grads:
            bwd = bwd + lin.count * gemm_seconds(lin.outputs, m, lin.inputs, **g)
    return fwd, bwd


def linears_flops(linears: list[Linear], tokens) -> float:
    """Forward FLOPs of ``linears`` on ``tokens`` tokens (2 per multiply-add)."""
    return sum(lin.count * lin.groups * 2.0 * tokens * lin.rows * lin.inputs * lin.outputs for lin in linears)
