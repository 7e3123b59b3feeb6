"""The router and dispatcher preprocessing without CUDA graphs, and the DeepEP quantisation padding (issue 37).

Hand numbers: core.time.host's carry-over from its two probes (CPU 2.465 / 9.257 us, GPU host 6.21 / 16.44 us,
c = 0.5 us): k = (16.44 x 1.965 - 6.21 x 8.757) / (1.965 - 8.757) = 3.2503 us, r = (6.21 - k) / 1.965 = 1.50621,
so one forward op (704 us / 210 on the CPU) costs r x (3.35238 - 0.5) + k = 7.5466 us on the GPU host.
"""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.time import moe_host as M
from gpuplan.core.time import moe_layer as L
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation.published_throughput import flex_backend, moe_router_graphs, predict_tokens_per_gpu_s

US = 1e-6
OP = 7.5466 * US


def test_ungraphed_router_ops_by_hand():
    # pre-MLP norm 1 + gating 4 + random logits 5 + view 1 + top-k 9 + aux scores 6 + aux loss 12 + bias call 1
    assert M.ROUTER_PYTHON_OPS == 1 + 4 + 5 + 1 + 9 + 6 + 12 + 1 == 39
    # flex: 39 + 11 views - 8 replay ops = 42; alltoall: 39 + 18 - 14 = 43
    assert M.forward_op_seconds() == pytest.approx(OP, rel=1e-4)
    assert M.ungraphed_router_seconds("flex", False) == pytest.approx(42 * OP, rel=1e-4)  # 316.96 us
    assert M.ungraphed_router_seconds("alltoall", False) == pytest.approx(43 * OP, rel=1e-4)  # 324.50 us
    assert M.ungraphed_router_seconds("flex", True) == 0.0 == M.ungraphed_router_seconds("alltoall", True)


def test_exposed_host_adds_the_ungraphed_router_only_where_the_host_binds():
    # GPU forward 1 ms: the host (2.938 ms + after-sync) binds, so the router's 316.96 us show in full
    graphed = M.exposed_host_seconds("flex", 8, "tensorwise", 1e-3)
    eager = M.exposed_host_seconds("flex", 8, "tensorwise", 1e-3, router_graphs=False)
    assert eager - graphed == pytest.approx(42 * OP, rel=1e-4)
    # GPU forward 10 ms: the host hides behind it either way
    assert M.exposed_host_seconds("flex", 8, "tensorwise", 10e-3, router_graphs=False) == 0.0


def test_published_rows_carry_their_recipes_cuda_graph_scope(published_rows):
    rows = published_rows
    read = {i: r["moe_comm"]["cuda_graph"] for i, r in rows.items() if (r.get("moe_comm") or {}).get("cuda_graph")}
    # 21 full-iteration rows before + 80 read at their tags (2 of them full-iteration) + the 4 16-expert combined-1F1B
    # rows of 25.11 / 26.02 read without graphs (docs/step.md, "The skill run against the preset rows") + the 27
    # Qwen3 25.11 / 26.02 and 25.09 perf_matrix rows read in wave 5 (tests/test_moe_graph_readings.py): every
    # Megatron-Bridge MoE row (132) + the 4 NeMo 2 Mixtral rows, read at v2.2.0 / v2.3.0 in wave 12 (drop-and-pad:
    # tests/test_ep_mixtral_token_drop.py)
    assert len(read) == 136
    assert set(read.values()) == {"full_iteration", "none", "te:moe_router,moe_preprocess",
                                  "te:attn,moe_router,moe_preprocess", "local:attn,moe_router,moe_preprocess,experts"}
    assert all("cuda_graph" in rows[i]["derived"] for i in read)
    # each partial / no-graph reading cites the preset or recipe file@tag:line it was read from
    assert all("@" in rows[i]["derived"]["cuda_graph"] for i, v in read.items() if v != "full_iteration")
    # the 16-H100 FP8-CS rows' preset sets no graphs (qwen3_workload_base_configs.py QWEN3_30B_A3B_..._H100_FP8_CS_V1)
    for tag in ("26.02.01", "26.04", "26.04.01", "26.06"):
        row = rows[f"mbridge-{tag}-qwen3-30b-a3b-h100-sxm-16g-fp8cs"]
        assert row["moe_comm"]["cuda_graph"] == "none" and not moe_router_graphs(row["moe_comm"])
    # the profiled BF16 layout graphs moe_router + moe_preprocess; absent (not read) is taken as that
    skill = rows["mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"]["moe_comm"]
    assert skill["cuda_graph"] == "te:moe_router,moe_preprocess" and moe_router_graphs(skill)
    assert moe_router_graphs({}) and moe_router_graphs({"cuda_graph": "full_iteration"})
    assert flex_backend(rows["mbridge-26.04.01-deepseek-v3-b200-256g-mxfp8"]["moe_comm"]) == "deepep"
    assert flex_backend(rows["mbridge-25.09-deepseek-v3-h100-sxm-1024g-fp8cs"]["moe_comm"]) == "deepep"
    assert flex_backend(skill) == "hybridep"


def test_fp8cs_16_h100_step_grows_by_the_router_ops(published_rows):
    # mbridge-26.04 Qwen3-30B-A3B, 16 H100, EP 16, GBS 1,024, MBS 1: 64 micro-batches x 48 MoE layers, each
    # already host-bound forward and backward, so the step grows by 64 x 48 x 42 ops x 7.5466 us = 0.9738 s in
    # the forward and 1.4544 x that in the backward, whose counted host is the forward's Python x 1.4544
    # (core.time.moe_host.backward_host_seconds): 2.3900 s
    row = published_rows["mbridge-26.04-qwen3-30b-a3b-h100-sxm-16g-fp8cs"]
    tokens_per_gpu = 1024 * 4096 / 16
    graphed = tokens_per_gpu / predict_tokens_per_gpu_s(row, moe_router_graphs=True)
    eager = tokens_per_gpu / predict_tokens_per_gpu_s(row)
    assert eager - graphed == pytest.approx(64 * 48 * 42 * OP * (1 + 1.4544), rel=1e-3)
    # toward the measurement (8,901 tokens/s/GPU: 29.45 s a step): the graphed step is short of it by more than
    # the 2.39 s charged, and the eager one within 3% of it (+12.3% -> +8.3% in tokens/s with the forward's ops
    # alone, -1.5% with the counted backward, at the time of writing)
    measured = tokens_per_gpu / row["measured"]["tokens_per_s_per_gpu"]
    assert row["measured"]["tokens_per_s_per_gpu"] == 8901
    assert graphed < measured
    assert eager == pytest.approx(measured, rel=0.03)


def test_deepep_pads_hybridep_does_not():
    # DeepEP leaves the expert counts unaligned (no router padding in the rows' recipes), so Fp8Padding /
    # Fp8Unpadding copy the routed rows 2 + 2 times; HybridEP pads in its dispatch kernel. Qwen3-30B-A3B,
    # 4,096 tokens, top-8, hidden 2,048 on 8 TB/s at 0.89: one copy 7.84 us + 268.4 MB / 7.12 TB/s = 45.54 us,
    # 2 x 45.54 = 91.08 us each way per layer; 48 layers x 182.16 us = 8.744 ms (8 local experts each way)
    spec = load_model("qwen3-30b-a3b")
    flex = StepSettings(seq_len=4096, dtype="fp8", moe_launch="eager", expert_tp=1, ep_dispatcher="flex")
    deepep = replace(flex, flex_backend="deepep")
    assert L.pads_for_quantization(deepep, "tensorwise") and not L.pads_for_quantization(flex, "tensorwise")
    assert not L.pads_for_quantization(deepep, None)  # BF16: no padding
    hybrid = L.stage_expert_kernel_seconds(spec, flex, 16, spec.num_layers, "tensorwise", 4096, 8e12)
    padded = L.stage_expert_kernel_seconds(spec, deepep, 16, spec.num_layers, "tensorwise", 4096, 8e12)
    assert padded - hybrid == pytest.approx(48 * 182.16 * US, rel=1e-3)
