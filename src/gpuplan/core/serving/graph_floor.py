"""The small-kernel floor of a CUDA-graph step (GPU time beyond its kernels' roofline): the rate a kernel, fitted
once on vLLM V1 rows with their out-of-layer kernels counted (GRAPH_KERNEL_S), and the kernels a layer each engine
runs. Moved out of kernels.py in wave 17 (review w17 ME). Units: kernels, seconds.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.serving.outside_kernels import VLLM_V1_OUTSIDE, total
from gpuplan.core.serving.releases import EngineRelease

VLLM_GRAPHS_SINCE = (0, 2, 6)
"""The first vLLM release that replays CUDA graphs (vllm PR 1926, 'Optimize model execution with CUDA graph')."""

GRAPH_FIT_LAYERS = 32
"""Decoder layers of Llama-3.1-8B, the model of the floor's fit rows."""
GRAPH_KERNELS_DENSE = 11
"""Kernels a dense (Llama) layer runs on a graph step (VLLM_GRAPH_LAYER_S's docstring names them)."""
GRAPH_FIT_LAYER_S = 50e-6
"""The fitted floor a dense layer, as fitted: GPU time per decoder layer of a vLLM step that replays a CUDA graph,
beyond its kernels' roofline, by grid (5 us steps) on vllm PR 23197's four Llama-3.1-8B TP 1 H100 rows (vLLM 0.10 V1
benchmark_latency, batch 1-16: 18.4% mean at 0 us -> 1.4% at 50 us); held out: its Llama-3.3-70B TP 4 rows (same PR
and machine), vllm PR 2192's four V0 0.2.7 A100 rows and the vLLM 0.23 L4 TPOT (docs/inference.md section 7). Those
rows' steps also ran vLLM's own kernels outside the layers (outside_kernels.VLLM_V1_OUTSIDE: input copies, embedding,
final norm, LM head, sampler), so the fitted 32 x 50 us = 1.6 ms a step covers 352 layer kernels and those 23:
GRAPH_KERNEL_S is the rate the same fit gives a kernel (review w17 ME S1)."""

VLLM_OUTSIDE_KERNELS = total(VLLM_V1_OUTSIDE, 1)
"""vLLM 0.10.1 V1's kernels outside the layers on the fit rows' steps (TP 1, batch 1): 23."""

GRAPH_KERNEL_S = GRAPH_FIT_LAYER_S * GRAPH_FIT_LAYERS / (GRAPH_FIT_LAYERS * GRAPH_KERNELS_DENSE + VLLM_OUTSIDE_KERNELS)
"""The small-kernel floor a kernel, seconds: 1.6 ms / (32 x 11 + 23) = 1.6 ms / 375 = 4.267 us. A replayed graph has
no launch cost, but each small kernel takes a few us whatever few bytes it moves (their roofline time at batch 1 is
well under 1 us). The fit rows are unchanged by construction (32 x 11 + 23 kernels x 4.267 us = 1.6 ms); every
graphed engine pays its own count outside the layers at this rate (outside_layers). GPU time, not host time."""

VLLM_GRAPH_LAYER_S = GRAPH_KERNEL_S * GRAPH_KERNELS_DENSE
"""A dense (Llama) layer's floor, 11 x 4.267 = 46.93 us: a Llama layer runs 11 kernels (vLLM 0.19: 8 in the graph
pieces, fused add + RMSNorm twice, QKV, rotary, o_proj, gate_up, SiLU-and-mul, down, and the cache write, attention
and split-KV combine between them; scripts/graph_nodes_check.py)."""

GRAPH_KERNELS_MOE_EXTRA = 4
"""An MoE block's kernels beyond a dense MLP's three (gate_up, activation, down): router GEMM, top-k,
align, w13, activation, w2, sum = 7 (SGLang 0.5.3 qwen3_moe.py L164-166, fused_moe.py
fused_experts_impl L466-598: moe_align_block_size, invoke_fused_moe_kernel twice, silu_and_mul,
moe_sum_reduce; topk.py fused_topk L458 topk_softmax with the renormalisation inside; vLLM's
fused_moe path runs the same seven). Checked, held out, against vLLM benchmark_moe's batch-1 time of that call at
the Triton default config (BLOCK_SIZE_M 16, N 32, K 64), router GEMM aside (six kernels): Qwen3-30B-A3B's shape
39.61 us on a B200 (vllm PR 31448) against 36.70 modelled (top-8 experts at 0.85 of HBM + 6 x GRAPH_KERNEL_S),
109.21 us on an A100 PCIe 40GB (vllm PR 19049) against 82.72: recorded, not applied (docs/inference.md 5o)."""
GRAPH_KERNELS_QK_NORM = {"vllm": 2, "sglang": 1}
"""Per-head RMSNorm on q and on k, kernels on a graph step's critical path. vLLM runs them one after
the other (qwen3_moe.py@v0.19.0 L349 q_norm, L353 k_norm; its q/k-norm + RoPE fusion,
enable_qk_norm_rope_fusion, is off by default, config/compilation.py@v0.19.0:135): 2. SGLang under
graph capture puts k_norm on a second stream beside q_norm (qwen3_moe.py@sglang 0.5.3 _apply_qk_norm
L382-390, alt_stream made for CUDA at L665; qwen3.py L137-145 the same): the two overlap and the
stream fork / join are graph edges, not kernels, so 1 (the same in 0.5.6's file, qwen3_moe.py@v0.5.6:369-389). Counting SGLang's two
serially instead gives Qwen3-235B-A22B 17 kernels (77.3 us a layer) and the held-out B200 TPOT kind
-6.2% instead of -10.4% (docs/inference.md section 7); the count follows the code."""


def graph_kernels_per_layer(spec: ModelSpec, engine: str) -> float:
    """Mean kernels a layer of ``engine``'s CUDA-graph step runs, all-reduces aside (timed on their own):
    GRAPH_KERNELS_DENSE, + GRAPH_KERNELS_MOE_EXTRA on MoE layers, + GRAPH_KERNELS_QK_NORM[engine] where
    q and k are normed per head (2, serially, for an engine whose code was not read). MLA and sliding-window
    layers are counted as standard attention (not read)."""
    moe = spec.num_moe_layers / spec.num_layers if spec.moe is not None else 0.0
    qk = GRAPH_KERNELS_QK_NORM.get(engine, 2) if spec.attention.qk_norm != "none" else 0
    return GRAPH_KERNELS_DENSE + GRAPH_KERNELS_MOE_EXTRA * moe + qk


def graph_layer_seconds_of(release: EngineRelease, spec: ModelSpec) -> float:
    """A graph step's per-layer kernel floor (setup.Efficiency.graph_layer_s when not given):
    GRAPH_KERNEL_S x ``spec``'s kernels a layer (graph_kernels_per_layer: 4.267 us a kernel) for vLLM from 0.2.6, whose V0 replays one full graph per
    decode batch (worker/model_runner.py@v0.2.7 CUDAGraphRunner L550-590 captures the whole model
    forward, chosen at L193-196) running the same small kernels a layer as V1's piecewise graphs
    (llama.py@v0.2.7 L76-78, L151-156, L204-216), and for SGLang, whose decode graph
    (cuda_graph_runner) replays the same kernels a layer (sglang 0.5.3 llama.py L94-102, L188-198,
    L253-275: fused add + RMSNorm twice, QKV, rotary, attention with its cache write, o_proj,
    gate_up, SiLU-and-mul, down). Fitted on vLLM V1; held out: V0's PR 2192 rows (10.3% -> 4.5% mean)
    and SGLang's cookbook rows (docs/inference.md section 7; SGLang took 0 until 2026-12-05, for lack
    of a row). TensorRT-LLM returns 0: it fuses the norm, RoPE and cache write into its attention
    plugin (fewer kernels), and no row of its graph steps (1.0+) checks it; vLLM before 0.2.6 and
    TensorRT engines before 1.0 run eagerly (graph_max_tokens_of 0), so the term never applies."""
    graphs = (release.engine == "vllm" and release.version >= VLLM_GRAPHS_SINCE) or release.engine == "sglang"
    if not graphs:
        return 0.0
    return GRAPH_KERNEL_S * graph_kernels_per_layer(spec, release.engine)
