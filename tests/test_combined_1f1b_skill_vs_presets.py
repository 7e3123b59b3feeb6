"""The EP-overlap skill run against the 16-local-expert presets under Megatron-Core's combined 1F1B schedule
(issue 37; docs/step.md, "The skill run against the preset rows: what differs").

Hand numbers:
- per MoE layer pair measured = step / (micro-batches x layers per stage), step = global batch x 4,096 / GPUs /
  tokens/s/GPU: the skill 1,024 x 4,096 / 16 / 13,011 = 20.147 s over 64 x 48 pairs = 6.558 ms; Qwen3-235B on 256
  B300 (26.02) 8,192 x 4,096 / 256 / 2,691 = 48.71 s over 256 x 12 (96 slots / pp 8: the embedding and loss
  slots) = 15.86 ms; Qwen3-30B on 16 H100 (26.02) 1,024 x 4,096 / 16 / 5,113 = 51.27 s over 128 x 24 = 16.69 ms;
  Qwen3-235B on 64 B200 (25.11) 1,024 x 4,096 / 64 / 3,269 = 20.05 s over 128 x 12 = 13.05 ms.
- the counted host (core.time.moe_host, forward + backward of one MoE layer and micro-batch): the skill's layout
  (HybridEP 'flex', 8 local experts, BF16, router graphed) against the presets' (16 local experts, no graphs,
  alltoall MXFP8 / DeepEP FP8-CS): the difference is the 8 more experts' launches and the ungraphed router and
  preprocessing, 1.2-1.9 ms; the measured pairs differ by 6.5-10.1 ms.
"""

from __future__ import annotations

import pytest

from gpuplan.core.time.moe_host import backward_host_seconds, layer_host_seconds, ungraphed_router_seconds
from gpuplan.jobs.validation.published_throughput import moe_router_graphs

SKILL = "mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"
SIXTEEN_EXPERT_ROWS = {  # row: (global batch, GPUs, micro-batches, layers per stage, measured ms a pair)
    "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8": (1024, 64, 128, 12, 13.05),
    "mbridge-26.02-qwen3-235b-a22b-b300-256g-mxfp8": (8192, 256, 256, 12, 15.86),
    "mbridge-26.02-qwen3-30b-a3b-h100-sxm-16g-fp8cs": (1024, 16, 128, 24, 16.69),
}


def test_b300_row_reads_its_v030_preset_field_by_field(published_rows):
    # QWEN3_235B_A22B_PRETRAIN_CONFIG_B300_FP8_MX_V2 (= FP8_CS_V2, qwen3_workload_base_configs.py@v0.3.0 L235-242, from
    # FP8_CS_V1 L121-130): tp 1 (default), pp 8, vpp 4, ep 8, etp 1, micro-batch 1 (default), GBS 8,192,
    # moe_a2a_overlap True, no flex backend (alltoall), no cuda_graph_impl, no recompute
    row = published_rows["mbridge-26.02-qwen3-235b-a22b-b300-256g-mxfp8"]
    layout = row["layout"]
    assert (layout["tp"], layout["pp"], layout["vpp"], layout["cp"], layout["ep"]) == (1, 8, 4, 1, 8)
    assert layout["etp"] in (None, 1)  # None: Megatron-Core's default, tp (1)
    assert (layout["micro_batch"], layout["global_batch"], row["gpus"]) == (1, 8192, 256)
    assert row["moe_comm"] == {"dispatcher": "alltoall", "backend": None, "a2a_overlap": True, "cuda_graph": "none"}
    assert set(row["recipe_recompute"].values()) == {None}
    assert row["precision"] == "mxfp8"


def test_the_16_expert_combined_rows_run_their_router_ungraphed(published_rows):
    rows = published_rows
    ids = list(SIXTEEN_EXPERT_ROWS) + ["mbridge-25.11-qwen3-30b-a3b-h100-sxm-16g-fp8cs"]
    for rid in ids:
        assert rows[rid]["moe_comm"]["cuda_graph"] == "none" and not moe_router_graphs(rows[rid]["moe_comm"])
        cite = rows[rid]["derived"]["cuda_graph"]
        assert "sets no cuda_graph_impl" in cite and ("@v0.2.2" in cite or "@v0.3.0" in cite)
    assert moe_router_graphs(rows[SKILL]["moe_comm"])  # te:moe_router,moe_preprocess


@pytest.mark.parametrize("rid", list(SIXTEEN_EXPERT_ROWS))
def test_measured_pair_by_hand(rid, published_rows):
    global_batch, gpus, micro_batches, layers, pair_ms = SIXTEEN_EXPERT_ROWS[rid]
    row = published_rows[rid]
    assert (row["layout"]["global_batch"], row["gpus"]) == (global_batch, gpus)
    step = global_batch * 4096 / gpus / row["measured"]["tokens_per_s_per_gpu"]
    assert step / (micro_batches * layers) * 1e3 == pytest.approx(pair_ms, abs=0.01)


def test_counted_host_difference_is_a_fraction_of_the_measured_one(published_rows):
    skill_row = published_rows[SKILL]
    skill_pair_ms = 1024 * 4096 / 16 / skill_row["measured"]["tokens_per_s_per_gpu"] / (64 * 48) * 1e3
    assert skill_pair_ms == pytest.approx(6.558, abs=0.005)

    def counted(dispatcher, local_experts, recipe, graphs):
        return layer_host_seconds(dispatcher, local_experts, recipe, False, graphs) \
            + backward_host_seconds(dispatcher, local_experts, recipe, False, graphs)

    skill = counted("flex", 8, None, True)
    presets = [counted("alltoall", 16, "mxfp8", False), counted("flex", 16, "tensorwise", False)]
    # the ungraphed router and preprocessing alone: forward (43 alltoall ops) + its backward at x 1.454
    assert ungraphed_router_seconds("alltoall", False) == pytest.approx(43 * 7.5466e-6, rel=1e-3)
    for preset, measured_ms in zip(presets, (SIXTEEN_EXPERT_ROWS["mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"][4],
                                             SIXTEEN_EXPERT_ROWS["mbridge-26.02-qwen3-30b-a3b-h100-sxm-16g-fp8cs"][4])):
        counted_gap_ms = (preset - skill) * 1e3
        measured_gap_ms = measured_ms - skill_pair_ms
        assert 1.0 < counted_gap_ms < 2.0  # 1.24 (alltoall MXFP8) / 1.77 ms (DeepEP FP8-CS) at the time of writing
        assert measured_gap_ms > 6.0  # 6.49 / 10.13 ms
        assert counted_gap_ms < 0.3 * measured_gap_ms
