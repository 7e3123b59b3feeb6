"""The four NeMo 2 Mixtral rows' MoE dispatch, read at their containers' tags (issue 37, wave 12 H2; docs/step.md,
"Expert parallelism on the B200 MoE rows, wave 12").

NeMo v2.2.0 (25.02) and v2.3.0 (25.04) perf scripts build ``pretrain_recipe(performance_mode=True)``, whose
``pretrain_performance_optimizations`` adds ``MegatronTokenDropCallback`` (capacity factor 1.0, pad to capacity):
the NCCL ``alltoall`` dispatcher runs drop-and-pad, builds its split sizes on the host from the capacity and never
waits on the device (moe_launch 'static'); the containers' Megatron-Core (core_r0.11 / r0.12 merges) has no combined
1F1B all-to-all overlap. Each row cites file@tag:line in derived.moe_comm / derived.moe_comm.static_splits.
"""

from __future__ import annotations

import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.core.comm import volumes as C
from gpuplan.core.comm.topology import cluster_for
from gpuplan.jobs.validation.published_throughput import moe_launch, predicted_step

ROWS = ("nemo2502-mixtral-8x7b-b200-64g", "nemo2502-mixtral-8x22b-b200-256g",
        "nemo2504-mixtral-8x7b-gb200-64g", "nemo2504-mixtral-8x22b-gb200-256g")


def test_mixtral_rows_run_the_alltoall_dispatcher_drop_and_pad(published_rows):
    for rid in ROWS:
        row = published_rows[rid]
        comm = row["moe_comm"]
        assert (comm["dispatcher"], comm["static_splits"], comm["a2a_overlap"]) == ("alltoall", True, False), rid
        assert moe_launch(comm) == "static", rid
        cite = row["derived"]["moe_comm.static_splits"]
        assert "MegatronTokenDropCallback" in cite and "moe_token_drop.py@v2." in cite, rid
        assert "mixtral.py@v2." in row["derived"]["moe_comm"], rid


def test_mixtral_8x7b_ep8_all_to_all_is_the_same_nvlink_call_on_b200_and_gb200():
    # micro-batch 2 x 4,096 tokens, top-2 of 8 experts over ep 8 inside one NVLink domain (8-GPU HGX node; NVL72):
    # 7/8 of the 2 copies leave the rank: 8,192 x 2 x 7/8 x 4,096 x 2 B = 117,440,512 B at NVLink 5's 900 GB/s per
    # direction x 0.756 (topology catalog: 680.4 GB/s) + 7 peers x 5 us = 0.17261 + 0.035 = 0.20761 ms
    by_hand = 117_440_512 / 680.4e9 + 7 * 5e-6
    calls = []
    for gpu in ("b200", "gb200"):
        cluster = cluster_for(resolve_gpu(gpu))
        up_bw, up_lat = cluster.link(1)
        out_bw, out_lat = cluster.link(cluster.gpus_per_node + 1)
        calls.append(C.expert_all_to_all_time(8192, 4096 * 2.0, 2, 8, min(cluster.gpus_per_node, 8), up_bw, out_bw,
                                              up_lat, out_lat))
    assert calls[0] == pytest.approx(by_hand, rel=1e-9)
    assert calls[1] == pytest.approx(calls[0], rel=1e-12)  # the B200 / GB200 gap (+24 vs +9%) is not the EP exchange


def test_mixtral_8x7b_b200_step_has_no_moe_host_term_and_charges_every_all_to_all(published_rows):
    # drop-and-pad: no dispatcher sync (moe_host 0); no overlap: 2 micro-batches x 32 layers x 4 all-to-alls exposed
    step = predicted_step(published_rows["nemo2502-mixtral-8x7b-b200-64g"])
    assert step.moe_host == 0.0
    assert step.ep_comm == pytest.approx(2 * 32 * 4 * (117_440_512 / 680.4e9 + 7 * 5e-6), rel=1e-6)
