#!/usr/bin/env python3
"""vLLM 0.19's per-graph CUDA-graph sample priced by the graphs' kernel nodes (issue 38 diagnostic, model unchanged).

The per-graph sample (2-18 MiB in the v0.19.0 logs) is the instantiated graphs' own device memory, outside
PyTorch's allocator (docs/inference.md, 'Pages and PyTorch's caching allocator'). This script prices it from
what the graphs contain instead of core.serving.profile's per-layer constants: kernel nodes per decoder layer,
counted from vLLM 0.19's forward, x one device-memory cost per node (and, in the second rule, a cost per
instantiated graph: a PIECEWISE size is layers + 1 piece graphs, a FULL size one), in whole 2 MiB pages per
mode, at least the code's 1 MiB. The constants are fitted on the 10 rows the validation marks fitted for the
CUDA-graph estimate ('fitted: [graphs]' in serving_memory_logs.yaml) and scored on the 25 held-out logs and the
excluded one, untouched. A rejected alternative, kept here and out of the package. ~1 s a scoring, ~2 min a fit.

    python scripts/graph_nodes_check.py [--fit]

Per-node cost, the sources: NVIDIA/cccl PR 3768 (2025-02-11, cudax STF executable-graph cache): 'CUDA graph
consumes around 10KB per kernel node'; NVIDIA developer forum 'Increasing memory footprint with large task
graphs' (t/244901, driver 470, CUDA 11.2, empty kernels, nvidia-smi): 362 / 395 / 458 MB at 500 / 1,000 /
2,000 nodes, 66 and 63 KB a node. They differ six-fold and neither is on an H100 with the 0.19 logs' driver,
so the cost is fitted (below), not taken from either; the fits land at 6.5 and 14.75 KiB a node (0.65x and 1.5x cccl's figure).

Kernel nodes per decoder layer at the sampled sizes (496 tokens: the second capture of each mode), counted
from the layer's forward in vLLM 0.19 (model_executor/models/llama.py LlamaDecoderLayer; qwen2.py, phi3.py
the same sequence), not from a captured graph (no GPU in this session):
  dense, both modes: residual add + RMSNorm, QKV GEMM, rotary, o_proj GEMM, residual add + RMSNorm, gate_up
  GEMM, SiLU-and-mul, down GEMM = 8 (Inductor fuses the add into the norm; bias adds into the GEMM epilogue);
  Gemma 2 / 3's sandwich norms (gemma2.py / gemma3.py: post-attention and post-feedforward norms, the spec's
  norms_per_layer 4) one node each more, q / k norms (qwen3.py, gemma3.py) +2;
  FULL adds the attention, which PIECEWISE leaves between its pieces (the splitting op): the KV-cache write,
  the attention kernel and FlashAttention's split-KV combine = 3;
  an MoE layer (fused_moe/fused_moe.py, layer.py): the router GEMM, top-k softmax, moe_align_block_size, two
  expert GEMMs, the activation and moe_sum where a dense MLP has 3 = +4; shared experts +3 (their own MLP);
  MLA (model_executor/layers/mla.py, v1/attention/backends/mla/common.py): kv_a_proj_with_mqa, the latent
  RMSNorm and the rope split / concat = +3 in both modes, the W_UK and W_UV absorption bmms and the output
  concat in the FULL decode = +3 more;
  W8A8 GEMMs: the per-token input quantization of each of the four linears = +4 (the Qwen2.5-7B
  fp8-dynamic log lists 'quant_fp8': 112 = 4 x 28 layers);
  tensor parallelism: two all-reduces a layer; where FlashInfer's all-reduce + RMSNorm fusion covers the size
  (the TP 2 logs: 'Flashinfer max size: 64 MB'; TP 4: 2 MB, up to 128-292 tokens) the fused kernel replaces the
  norm (+0), above it the custom all-reduce kernel runs before the norm (+1 each, +2 a layer). The logs do not
  bear that term out: the 80-layer TP 2 / TP 4 pairs (Kimi-Dev-72B 18 + 10 / 16 + 12 MiB, Llama-3.3-70B fp8
  20 + 12 / 18 + 14) log equal per-graph sums with 161 such kernels more at TP 4 (docs/inference.md, 'Tensor
  parallelism, read from the code').
"""

import argparse
import statistics
import sys
from dataclasses import dataclass

from gpuplan.core.serving import attention_backend as AB
from gpuplan.core.serving import profile as P
from gpuplan.jobs.validation import serving_memory as V

MiB, GiB = 2**20, 2**30
DENSE_NODES = 6
"""QKV, rotary, o_proj, gate_up, the activation-and-mul, down; each of the spec's norms_per_layer norms adds one."""
QK_NORM_NODES = 2
ATTENTION_NODES_FULL = 3
MOE_EXTRA_NODES = 4
SHARED_EXPERT_NODES = 3
MLA_EXTRA_NODES = 3
MLA_DECODE_EXTRA_NODES = 3
QUANT_NODES = 4
UNFUSED_ALLREDUCE_NODES = 2
FLASHINFER_FUSION_MAX_BYTES = {2: 64 * MiB, 4: 2 * MiB}
"""FlashInfer's all-reduce + RMSNorm fusion size limit by TP in the v0.19.0 logs; other TP sizes: none."""


@dataclass(frozen=True)
class NodeRule:
    """Device memory per kernel node and per instantiated graph, bytes; ``pages``: whole 2 MiB pages per mode."""

    per_node: float
    per_graph: float = 0.0
    pages: bool = True


ONE_CONSTANT = NodeRule(per_node=14.75 * 1024)
"""The per-node cost alone, fitted (grid of 0.25 KiB, mean |error| of the 10 fitted rows)."""
TWO_CONSTANTS = NodeRule(per_node=6.5 * 1024, per_graph=224 * 1024)
"""Per node and per instantiated graph, fitted together (grids of 0.5 KiB and 16 KiB)."""


def layer_nodes(spec, tp: int, quant: bool, mode: str, tokens: int) -> float:
    """Kernel nodes of one decoder layer in a ``mode`` ('piecewise' / 'full') graph of ``tokens`` tokens."""
    n = DENSE_NODES + spec.norms_per_layer + (QK_NORM_NODES if spec.attention.qk_norm != "none" else 0)
    n += ATTENTION_NODES_FULL if mode == "full" else 0
    if spec.moe is not None:
        share = spec.num_moe_layers / spec.num_layers
        n += share * (MOE_EXTRA_NODES + (SHARED_EXPERT_NODES if spec.moe.shared_intermediate_size else 0))
    if spec.attention.kv_lora_rank:
        n += MLA_EXTRA_NODES + (MLA_DECODE_EXTRA_NODES if mode == "full" else 0)
    if quant:
        n += QUANT_NODES
    if tp > 1 and tokens * spec.hidden_size * 2 > FLASHINFER_FUSION_MAX_BYTES.get(tp, 0):
        n += UNFUSED_ALLREDUCE_NODES
    return n


def mode_sample(spec, tp: int, quant: bool, mode: str, tokens: int, layers: int, rule: NodeRule) -> float:
    """One further graph of ``mode``: nodes x per_node + graphs x per_graph, in whole pages, at least 1 MiB."""
    graphs = layers + 1 if mode == "piecewise" else 1
    size = layers * layer_nodes(spec, tp, quant, mode, tokens) * rule.per_node + graphs * rule.per_graph
    return max(round(size / (2 * MiB)) * 2 * MiB if rule.pages else size, MiB)


def graph_bytes_by_nodes(rule: NodeRule):
    """profile.graph_bytes with the per-graph samples of ``rule``, per mode; the first captures unchanged."""

    def estimate(spec, max_num_seqs, tp, layers, act_bytes=2, blas_workspace=0.0, activation_quant=False,
                 max_tokens=None, backend=None, fa_version=3, moe_experts="fused"):
        piecewise, full = P.capture_sizes(spec, max_num_seqs, max_tokens)
        first_pw = 2 * max(piecewise) * act_bytes * P.first_capture_elements_per_token(spec, tp, moe_experts)
        first_pw += blas_workspace
        backend = backend or AB.vllm_attention_backend(spec, act_bytes)[0]
        accumulates = full and (backend == AB.FLASH_ATTN_MLA or backend == AB.FLASH_ATTN and (
            fa_version != 2 or AB.fa2_splits_first_capture(spec, max(full), tp)))
        first_full = P.split_kv_accumulator_bytes(spec, max(full), tp, act_bytes) if accumulates else 0.0
        second = lambda sizes: sorted(sizes)[-2] if len(sizes) > 1 else max(sizes)  # noqa: E731
        pw = mode_sample(spec, tp, activation_quant, "piecewise", second(piecewise), layers, rule)
        fu = mode_sample(spec, tp, activation_quant, "full", second(full), layers, rule) if full else 0.0
        own = pw if first_pw >= first_full else fu  # the larger first capture holds its own graph
        return max(first_pw, first_full) + own + (len(piecewise) - 1) * pw + max(len(full) - 1, 0) * fu

    return estimate


def scored_rows(rule: NodeRule | None) -> dict[str, tuple[str, int, float]]:
    """Every vLLM 0.19 log with a CUDA-graph estimate: id -> (fitted / held out / excluded, tp, signed error %),
    with ``rule``'s per-graph samples (None: the package's model)."""
    original = P.graph_bytes
    P.graph_bytes = graph_bytes_by_nodes(rule) if rule else original
    try:
        rows = {}
        for e in V.memory_logs():
            if "graphs_gib" not in e["logged"] or not e["engine"].startswith("vllm==0.19"):
                continue
            logged = e["logged"]["graphs_gib"]
            error = (V.predicted_memory(e)[0].cuda_graphs / GiB - logged) / logged * 100
            group = ("fitted" if "graphs" in e.get("fitted", ()) else
                     "excluded" if "graphs" in (e.get("excluded") or {}) else "held out")
            rows[e["id"]] = (group, e["tp"], error)
        return rows
    finally:
        P.graph_bytes = original


def summary(rows) -> dict[str, float]:
    """Mean |error| % of each group, the held-out rows with the excluded one, and the held-out TP > 1 rows."""
    pick = lambda keep: [abs(err) for g, tp, err in rows.values() if keep(g, tp)]  # noqa: E731
    groups = {"fitted": pick(lambda g, tp: g == "fitted"), "held out": pick(lambda g, tp: g == "held out"),
              "held out + excluded": pick(lambda g, tp: g != "fitted"),
              "held out, TP > 1": pick(lambda g, tp: g == "held out" and tp > 1)}
    return {name: statistics.mean(v) for name, v in groups.items()}


def fit(per_graph_grid_kib=(0.0,), per_node_grid_kib=None) -> NodeRule:
    """The rule with the least mean |error| on the fitted rows over the grids (KiB)."""
    nodes = per_node_grid_kib or [x * 0.25 for x in range(20, 160)]
    rules = [NodeRule(c * 1024, g * 1024) for g in per_graph_grid_kib for c in nodes]
    return min(rules, key=lambda r: summary(scored_rows(r))["fitted"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="vLLM 0.19 per-graph samples priced by kernel nodes")
    parser.add_argument("--fit", action="store_true", help="refit both rules on the fitted rows (~2 min)")
    args = parser.parse_args(argv)
    one, two = ONE_CONSTANT, TWO_CONSTANTS
    if args.fit:
        one = fit()
        two = fit(tuple(range(0, 257, 16)), [x * 0.5 for x in range(4, 60)])
    for name, rule in (("current (per-layer constants)", None), (f"nodes x {one.per_node / 1024:g} KiB", one),
                       (f"nodes x {two.per_node / 1024:g} KiB + graphs x {two.per_graph / 1024:g} KiB", two)):
        rows = scored_rows(rule)
        print(name + ": " + ", ".join(f"{k} {v:.2f}%" for k, v in summary(rows).items()))
        for row_id, (group, tp, err) in rows.items():
            print(f"  {row_id:48s} {group:9s} tp {tp} {err:+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
