"""core/comm/collectives.py (NCCL's algorithms and protocols by size) on core/comm/topology.py's group links,
by hand and against the measured sweeps of collective_measurements.yaml (all held out)."""

from __future__ import annotations

import statistics

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.topology import cluster_for
from gpuplan.jobs.validation.collectives import collective_cases


def _links(gpu, ranks, per_node=None, **network):
    return cluster_for(load_accelerator(gpu), gpus_per_node=per_node, **network).group(ranks)


def test_ring_on_one_node_by_hand():
    # 8 x H200, NVLS off: ring bus = 450 GB/s x 0.82 = 369 GB/s; Simple latency 8.4 + 14 x 3.4 = 56 us.
    # 16 GiB: 1.75 x 17,179,869,184 B / 369e9 = 81.477 ms + 0.056 ms -> busbw 368.75 GB/s (measured 367.2)
    links = _links("h200-sxm", 8, nvls_gain=0.0)
    assert K.chosen("all_reduce", 2**34, links)[:2] == ("ring", "Simple")
    assert float(K.bus_bandwidth("all_reduce", 2**34, links)) == pytest.approx(368.75e9, rel=1e-3)


def test_nccl_switches_from_ring_ll_to_nvls_between_1_and_2_mib():
    # stas00/ml-engineering (8x H200, NCCL_DEBUG TUNING): 'Algo RING proto LL' up to 1 MiB, NVLS from 2 MiB.
    # 1 MiB: ring LL 6.6 + 14 x 0.6 = 15.0 us + 1.75 MiB / 141 GB/s = 13.0 us -> 28.0 us; NVLS 25 us + 1.75 MiB /
    # (369 x 1.30) GB/s = 3.8 us -> 28.8 us. 2 MiB: ring LL 41.0 us, NVLS 32.7 us.
    links = _links("h200-sxm", 8)
    assert K.chosen("all_reduce", 2**20, links)[:2] == ("ring", "LL")
    assert K.chosen("all_reduce", 2**21, links)[:2] == ("nvls", "Simple")
    assert K.chosen("all_reduce", 2**20, links)[2] == pytest.approx(28.0e-6, rel=0.01)


def test_tree_across_three_domains_is_faster_than_nccl_thinks():
    # NVIDIA/nccl#1801: 3 GB200 partitions of 8 GPUs joined by IB, NVLS off. Ring bus = min(680 x 8/7, 8 x 45) =
    # 360 GB/s (measured 393.7); tree: the busiest partition's NICs carry 1.5 S (collectives.tree_busiest_domain_load),
    # 0.92 x min(360 / 1.5, 680.4 / 2) = 220.8 GB/s algbw -> bus x 46/24 = 423.2, 421.3 with the latency and the
    # chain fill (measured 485.7), yet NCCL's tuner takes 2 S per domain beyond two (0.92 x 180 = 165.6 -> bus 317)
    # and runs the ring.
    free = _links("gb200", 24, per_node=8, nvls_gain=0.0)
    assert K.chosen("all_reduce", 2**34, free)[0] == "ring"
    tree = _links("gb200", 24, per_node=8, nvls_gain=0.0, algorithm="tree")
    assert float(K.bus_bandwidth("all_reduce", 2**34, tree)) == pytest.approx(421.3e9, rel=0.002)


def test_group_links_share_the_nics_of_a_node():
    cluster = cluster_for(load_accelerator("h100"))
    across = cluster.group(8, 8)  # dp 8 beside tp 8: one member per node, its own 400 Gb/s NIC
    assert (across.per_node, across.nodes) == (1, 8) and across.net == pytest.approx(50e9 * 0.9)
    whole = cluster.group(64, 1)  # 64 ranks on 8 nodes: 8 members per node share the node's 8 NICs
    assert (whole.per_node, whole.nodes) == (8, 8) and whole.net == pytest.approx(8 * 50e9 * 0.9)


def test_large_payloads_land_on_the_measured_plateau():
    # nccl-tests at >= 4 GiB on one H200 / B200 node, one NVL72 rack, 64 H100 with SHARP and IB-joined GB200
    # partitions: within 10% each and 5% mean (every sweep held out)
    cases = [c for c in collective_cases() if "nccl-tests" in c.kind and int(c.id.rsplit("-", 1)[1]) >= 2**32
             and "20racks" not in c.id and "tcpxo" not in c.id and "2racks" not in c.id]
    errors = [abs(c.predicted / c.measured - 1) for c in cases]
    assert len(cases) >= 25
    # the worst: 5 GPUs of a node, where NCCL keeps the ring on B200 (AWS tuner) and NVLS gains only 1.14x on H200
    assert max(errors) < 0.26 and statistics.mean(errors) < 0.045


def test_every_case_names_what_nccl_ran():
    cases = collective_cases()
    assert {c.algorithm.split("/")[0] for c in cases} >= {"ring", "nvls", "nvls_tree", "tree", "collnet"}
    assert all(c.measured > 0 and c.predicted > 0 for c in cases)
