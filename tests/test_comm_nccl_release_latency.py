"""NVLS-tree's network step is the latency of the NCCL releases the measured rows ran: 14 us in tuning.cc's
hwLat[NET][NVLS_TREE][Simple] from v2.26.2-1 to v2.28.7-1 (20.9 only from v2.28.9-1), hand-worked on the
validated 4 x 8 P6-B200 sweep (AWS's ofi plugin reports 35 us of NIC latency, added once per step and again
for Simple's flush: tuning.cc @v2.27.7-1 lines 333-335) and on one NVL72 rack pair."""

from __future__ import annotations

import pytest

from gpuplan.core.comm import collectives as K

from helpers import group_links


def test_nvls_tree_network_step_is_the_2_26_to_2_28_7_constant():
    assert K.HW_US["net"]["nvls_tree"] == (0.0, 0.0, 14.0)


def test_four_p6_b200_nodes_nvls_tree_latency_by_hand():
    # tuning.cc NVLS_TREE: latency = hwLat[NVLINK][NVLS_TREE][Simple] 25 + 2 x log2i(4 nodes) x interLat, interLat =
    # 14 + 35 + 35 = 84 us: 25 + 2 x 2 x 84 = 361 us (20.9 would give 388.6). NCCL's rate: 8 heads x 45 GB/s,
    # halved beyond two nodes, x 5/6 = 150 GB/s of algbw (nvls_tree_tuner_algbw). 128 MiB: 361 us + 894.8 us.
    links = group_links("b200", 32, net_latency_us=35.0)
    tuner = float(K.options("all_reduce", 2**27, links)[("nvls_tree", "Simple")][2])
    assert tuner == pytest.approx(361e-6 + 2**27 / (8 * 45e9 / 2 * 5 / 6), rel=1e-9)


def test_two_nvl72_racks_nvls_tree_latency_by_hand():
    # one tree level on InfiniBand (no plugin latency): 25 + 2 x 1 x 14 = 53 us; NCCL's rate 32 heads x 45 GB/s x
    # 5/6 = 1,200 GB/s (two domains: not halved). 1 GiB: 53 us + 894.8 us.
    tuner = float(K.options("all_reduce", 2**30, group_links("gb200", 144))[("nvls_tree", "Simple")][2])
    assert tuner == pytest.approx(53e-6 + 2**30 / (32 * 45e9 * 5 / 6), rel=1e-9)


def test_every_measured_sweep_ran_a_release_with_the_modelled_nvls_tree_step():
    # collective_measurements.yaml states each sweep's NCCL as its source prints it (null where it does not);
    # the constants above hold up to v2.28.7-1, so a sweep measured on 2.28.9 or later would need 20.9 us
    from gpuplan.jobs.validation.collectives import collective_sweeps

    sweeps = collective_sweeps()
    assert all("nccl" in sweep for sweep in sweeps)
    stated = {sweep["id"]: tuple(int(part) for part in sweep["nccl"].split(".")) for sweep in sweeps if sweep["nccl"]}
    p2p_only = {s["id"] for s in sweeps if all(x["collective"] == "all_to_all" for x in s["series"])}  # no NVLS-tree
    assert stated and max(v for k, v in stated.items() if k not in p2p_only) <= (2, 28, 7)
    assert stated["coreweave-gb200-nvl72-20racks"] == (2, 26, 2)
    assert stated["stas00-allreduce-p6-b200-4nodes"] == (2, 27, 7)
    assert stated["nccl1801-gb200-3-partitions-ib"] == (2, 27, 3)
    assert {sweep["id"] for sweep in sweeps if not sweep["nccl"]} == {
        "stas00-h200-gpu-count-8gib", "a3mega-h100-2nodes-tcpxo", "coreweave-h100-64-sharp",
        "deepep303-h20-alltoall-1node", "oci-gb200-alltoall-nvl72"}  # all-to-all: NCCL's p2p path, no NVLS-tree step
