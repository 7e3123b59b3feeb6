"""Every NeMo / Megatron-Bridge MoE row states the CUDA graphs its recipe ran, read at the row's own tag (issue 37;
docs/step.md, "The skill run against the preset rows", its graph-reading part).

A missing moe_comm.cuda_graph is read by the validation as "router graphed" (published_throughput.moe_router_graphs),
so a row without a reading silently takes the profiled layout's graphs. The readings pinned here (file@tag:line in
each row's derived.cuda_graph):

- NeMo 25.11 (Megatron-Bridge v0.2.2, scripts/performance/configs/qwen3/workload_base_configs.py) and 26.02 (v0.3.0,
  configs/qwen/qwen3_workload_base_configs.py, config_variant 'v2'): the preset's cuda_graph_impl / cuda_graph_scope;
  the Qwen3-235B H100 FP8-CS presets and the 26.02 B200 one set none (Megatron-Core's default 'none' stays); the GB200
  235B presets and 26.02's GB300 235B V2 add 'attn'; the Qwen3-30B Blackwell presets graph moe_router +
  moe_preprocess.
- NeMo 25.09 (v0.1.0rc4, the perf_matrix YAMLs' cuda_graphs -> enable_cuda_graph, helpers.py L114-120): true for
  Qwen3-30B on 8 GB200 / 8 B200 and Qwen3-235B on 64 GB200 (Megatron-Core's per-layer graphs, scope 'full': the
  whole layer, recorded as local:attn,moe_router,moe_preprocess,experts), false for the DeepSeek-V3 GB200 / B200,
  Qwen3-235B B200 / H100 and Qwen3-30B H100 entries.
- The four NeMo 2 Mixtral rows (NeMo v2.2.0 / v2.3.0 perf scripts): per-layer graphs (enable_cuda_graph, recorded as
  local:...) on the two 8x7B rows, none on the two 8x22B rows; drop-and-pad (tests/test_ep_mixtral_token_drop.py).
"""

from __future__ import annotations

import pytest

from gpuplan.jobs.validation.published_throughput import (
    cuda_graph_scope, moe_launch, moe_router_graphs, published_throughput_rows)
from gpuplan.jobs.validation.throughput import run_spec

VOCABULARY = {"full_iteration", "none", "te:moe_router,moe_preprocess", "te:attn,moe_router,moe_preprocess",
              "local:attn,moe_router,moe_preprocess,experts"}
LOCAL = "local:attn,moe_router,moe_preprocess,experts"
TE = "te:moe_router,moe_preprocess"
TE_ATTN = "te:attn,moe_router,moe_preprocess"

READ_IN_WAVE_5 = {  # row: the reading at its tag (derived.cuda_graph gives file@tag:line)
    "mbridge-25.11-qwen3-30b-a3b-gb300-8g-mxfp8": TE,
    "mbridge-25.11-qwen3-235b-a22b-gb300-256g-bf16": TE,
    "mbridge-25.11-qwen3-30b-a3b-gb200-8g-mxfp8": TE,
    "mbridge-25.11-qwen3-235b-a22b-gb200-256g-bf16": TE_ATTN,
    "mbridge-25.11-qwen3-30b-a3b-b200-8g-mxfp8": TE,
    "mbridge-25.11-qwen3-235b-a22b-h100-sxm-256g-fp8cs": "none",
    "mbridge-26.02-qwen3-30b-a3b-gb300-8g-mxfp8": TE,
    "mbridge-26.02-qwen3-30b-a3b-gb200-8g-mxfp8": TE,
    "mbridge-26.02-qwen3-30b-a3b-b300-8g-mxfp8": TE,
    "mbridge-26.02-qwen3-30b-a3b-b200-8g-mxfp8": TE,
    "mbridge-26.02-qwen3-235b-a22b-gb300-256g-mxfp8": TE_ATTN,
    "mbridge-26.02-qwen3-235b-a22b-gb200-256g-mxfp8": TE_ATTN,
    "mbridge-26.02-qwen3-235b-a22b-b200-256g-mxfp8": "none",
    "mbridge-26.02-qwen3-235b-a22b-h100-sxm-256g-fp8cs": "none",
    "mbridge-25.09-deepseek-v3-gb200-256g-fp8cs": "none",
    "mbridge-25.09-deepseek-v3-gb200-256g-mxfp8": "none",
    "mbridge-25.09-deepseek-v3-b200-256g-fp8cs": "none",
    "mbridge-25.09-deepseek-v3-b200-256g-mxfp8": "none",
    "mbridge-25.09-qwen3-30b-a3b-gb200-8g-fp8cs": LOCAL,
    "mbridge-25.09-qwen3-30b-a3b-gb200-8g-mxfp8": LOCAL,
    "mbridge-25.09-qwen3-30b-a3b-b200-8g-fp8cs": LOCAL,
    "mbridge-25.09-qwen3-30b-a3b-h100-sxm-16g-fp8cs": "none",
    "mbridge-25.09-qwen3-235b-a22b-gb200-64g-fp8cs": LOCAL,
    "mbridge-25.09-qwen3-235b-a22b-gb200-64g-mxfp8": LOCAL,
    "mbridge-25.09-qwen3-235b-a22b-b200-64g-fp8cs": "none",
    "mbridge-25.09-qwen3-235b-a22b-b200-64g-mxfp8": "none",
    "mbridge-25.09-qwen3-235b-a22b-h100-sxm-256g-fp8cs": "none",
}
NEMO2_ROWS = {"nemo2502-mixtral-8x7b-b200-64g": True, "nemo2502-mixtral-8x22b-b200-256g": False,
              "nemo2504-mixtral-8x7b-gb200-64g": True, "nemo2504-mixtral-8x22b-gb200-256g": False}  # per-layer graphs?


def _citation(derived):
    """derived.cuda_graph, or the derived entry it points to ('... per derived.gb300_specific', the 26.06+ GB300 rows)."""
    cite = derived["cuda_graph"]
    return derived[cite.split("per derived.")[1]] if "per derived." in cite else cite


def _megatron_moe_rows():
    return {r["id"]: r for r in published_throughput_rows()
            if not r["family"].startswith("torchtitan") and run_spec(r["model"]).moe is not None}


def test_every_megatron_moe_row_states_its_cuda_graphs():
    rows = _megatron_moe_rows()
    stated = {i for i, r in rows.items() if (r.get("moe_comm") or {}).get("cuda_graph")}
    # 105 read before this wave's pass + the 27 read here + the 4 NeMo 2 Mixtral rows (wave 12): every row
    assert (len(rows), len(stated)) == (136, 136)
    for i in stated:
        assert rows[i]["moe_comm"]["cuda_graph"] in VOCABULARY, i
        assert "@" in _citation(rows[i]["derived"]), i  # full_iteration rows cite their perf recipe too
    for i, per_layer in NEMO2_ROWS.items():
        assert rows[i]["moe_comm"]["cuda_graph"] == (LOCAL if per_layer else "none"), i
        assert "@v2." in rows[i]["derived"]["cuda_graph"], i


def test_wave_5_readings_at_their_tags():
    rows = _megatron_moe_rows()
    for rid, reading in READ_IN_WAVE_5.items():
        row = rows[rid]
        assert row["moe_comm"]["cuda_graph"] == reading, rid
        cite = row["derived"]["cuda_graph"]
        tag = {"25.11": "@v0.2.2", "26.02": "@v0.3.0", "25.09": "@v0.1.0rc4"}[rid.split("-")[1]]
        assert tag in cite, rid
        if reading == "none":
            assert ("sets no cuda_graph_impl" in cite) or ("cuda_graphs: false" in cite), rid
        elif reading == LOCAL:
            assert "cuda_graphs: true" in cite and "enable_cuda_graph" in cite, rid
        else:
            assert "cuda_graph_impl='transformer_engine'" in cite, rid


def test_per_layer_graphs_read_as_router_graphed_on_drop_and_pad_rows():
    # Megatron-Core's per-layer graph covers the router; the model has no per-layer mode, so it reads the row's
    # router as graphed (as te:moe_router); every such row is drop-and-pad (moe_launch static: no MoE host term)
    rows = _megatron_moe_rows()
    local = [r for r in rows.values() if (r.get("moe_comm") or {}).get("cuda_graph") == LOCAL]
    assert len(local) == 7  # the 5 25.09 perf_matrix rows + the 2 NeMo 2 Mixtral 8x7B rows
    for row in local:
        comm = row["moe_comm"]
        assert comm["static_splits"] and moe_launch(comm) == "static"
        assert moe_router_graphs(comm) and cuda_graph_scope(comm) == "moe-router"


def test_nemo2_readings():
    rows = _megatron_moe_rows()
    for rid, graphed in NEMO2_ROWS.items():
        cite = rows[rid]["derived"]["cuda_graph"]
        assert ("per-layer CUDA graphs" in cite) == graphed, rid
        assert moe_launch(rows[rid]["moe_comm"]) == "static"  # drop-and-pad: tests/test_ep_mixtral_token_drop.py


def test_ungraphed_router_costs_the_b200_row_its_ops():
    # 26.02 Qwen3-235B on 256 B200 (preset B200_FP8_MX_V2: pp 8, no VP, no overlap, alltoall, 16 local experts, no
    # graphs), host-bound: each MoE layer and micro-batch issues the router + alltoall preprocessing's 43 ops
    # (ungraphed_router_seconds, 43 x 7.5466 us = 324.5 us) forward and x 1.4544 of them backward = 796.5 us; the
    # step has 256 micro-batches (8,192 / 32 DP) of 94 / 8 = 11.75 MoE layers a stage (12 slots with the embedding /
    # loss slots) and the pipeline's 7 fill / drain slots: between 256 x 11.75 x 796.5 us = 2.396 s and
    # 263 x 12 x 796.5 us = 2.514 s (+1% for the transfers timed beside them); 2.529 s at the time of writing
    from gpuplan.core.time.moe_host import ungraphed_router_seconds
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s
    row = _megatron_moe_rows()["mbridge-26.02-qwen3-235b-a22b-b200-256g-mxfp8"]
    assert not moe_router_graphs(row["moe_comm"])
    assert (row["layout"]["pp"], row["layout"]["vpp"], row["layout"]["global_batch"], row["gpus"]) == (8, 1, 8192, 256)
    per_layer = ungraphed_router_seconds("alltoall", False) * (1 + 1.4544)
    assert per_layer == pytest.approx(796.5e-6, rel=1e-3)
    tokens_per_gpu = 8192 * 4096 / 256
    grown = tokens_per_gpu / predict_tokens_per_gpu_s(row) - tokens_per_gpu / predict_tokens_per_gpu_s(
        row, moe_router_graphs=True)
    assert 256 * 11.75 * per_layer <= grown <= 263 * 12 * per_layer * 1.01
