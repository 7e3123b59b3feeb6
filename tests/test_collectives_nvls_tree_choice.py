"""NCCL's tuner rates NVLS-tree by its heads' NICs (core.comm.collectives.nvls_tree_tuner_algbw), while the time
keeps NVLS-tree's physical rate and pays its tree levels' fill (nvls_tree_levels_fill): numbers worked by hand
from NCCL 2.26.2's tuning.cc (lines 252-253, 293, 339-340), search.cc (lines 975, 1013) and the NVLS-tree kernel
(src/device/all_reduce.h), on the catalog's GB200 NVL72 (NVLink 900 GB/s x 0.756 = 680.4 GB/s, NVLS gain
1.25, one 400 Gb/s NIC per GPU at 0.9 = 45 GB/s) and HGX H100 nodes (8 NICs, 45 GB/s each)."""

from __future__ import annotations

import pytest

from gpuplan.core.comm import collectives as K

from helpers import group_links


def test_nccls_nvls_tree_estimate_is_heads_times_their_nics():
    # 32 heads (min(72, NCCL_MAX_NVLS_ARITY)) x 45 GB/s, halved beyond two domains, x 5/6 (bus -> algbw)
    assert float(K.nvls_tree_tuner_algbw(group_links("gb200", 1440))) == pytest.approx(32 * 45e9 / 2 * 5 / 6)  # 600 GB/s
    assert float(K.nvls_tree_tuner_algbw(group_links("gb200", 144))) == pytest.approx(32 * 45e9 * 5 / 6)  # 1,200 GB/s
    # HGX H100: 8 heads, each its GPU's NIC: 150 GB/s beyond two nodes
    assert float(K.nvls_tree_tuner_algbw(group_links("h100-sxm", 32))) == pytest.approx(8 * 45e9 / 2 * 5 / 6)


def test_twenty_nvl72_racks_run_nvls_tree_as_nccl_would():
    # 1,440 GB200 in 20 racks, 512 MiB, 2.26.2's protocols across racks (LL, Simple: no LL128 over Grace's NICs).
    # NCCL's estimates: NVLS-tree 25 + 2 x log2i(20) x 14 = 137.0 us + 536,870,912 / 600e9 = 894.8 us -> 1.032 ms;
    # tree/Simple 8.4 + 2 x (71 x 4.0 + 4 x 14) = 688.4 us + 536,870,912 / (0.92 x 680.4 / 2 = 312.98 GB/s)
    # = 1,715.3 us -> 2.404 ms. NVLS-tree is chosen (the model's own physical rate for it, 212.8 GB/s of algbw,
    # had given 3.35 ms against the tree's 2.40, so the tree ran).
    links = group_links("gb200", 1440, protocol="LL,Simple")
    found = K.options("all_reduce", 2**29, links)
    assert float(found[("nvls_tree", "Simple")][2]) == pytest.approx(137.0e-6 + 2**29 / 600e9, rel=1e-6)
    assert float(found[("tree", "Simple")][2]) == pytest.approx(688.4e-6 + 2**29 / (0.92 * 680.4e9 / 2), rel=1e-6)
    algorithm, protocol, seconds, bus = K.chosen("all_reduce", 2**29, links)
    assert (algorithm, protocol) == ("nvls_tree", "Simple")
    # the time: NVLS's 850.5 GB/s halved beyond two domains = 425.25 GB/s of bus bandwidth; 137.0 us +
    # 2 x 1439/1440 x 536,870,912 / 425.25e9 = 2,523.2 us + two loops of 32 channels x 32 heads x 64 KiB
    # = 67,108,864 B at 425.25 x 1440 / 2878 = 212.77 GB/s (630.8 us) -> 3.291 ms, and the tree levels' fill: each
    # channel's first 64 KiB chunk 5 levels up and down (ncclGetBtree on 20 nodes), a head's 45 GB/s NIC shared by
    # its 32 channels: 2 x 5 x 32 x 65,536 / 45e9 = 466.0 us -> 3.757 ms (CoreWeave measured 7.108 ms)
    assert bus == pytest.approx(425.25e9)
    assert float(K.nvls_tree_levels_fill(2**29, links)) == pytest.approx(2 * 5 * 32 * 65536 / 45e9, rel=1e-9)
    assert seconds == pytest.approx(137.0e-6 + 2 * 1439 / 1440 * 2**29 / 425.25e9 + 2 * 2**26 / (425.25e9 * 1440 / 2878)
                                    + 466.03e-6, rel=1e-5)


def test_the_tree_levels_fill_by_domains_and_payload():
    # two NVL72 racks (one level, 128 KiB chunks below four domains): 2 x 1 x 32 x 131,072 / 45e9 = 186.4 us;
    # one rack has no tree (0); 4 x 8 B200 (two levels, 8 heads, 32 channels, 64 KiB): 2 x 2 x 32 x 65,536 /
    # 45e9 = 186.4 us; a 16 MiB payload on 20 racks is below a loop (64 MiB): its chunk is 16 MiB / (32 x 32)
    # = 16 KiB, 2 x 5 x 32 x 16,384 / 45e9 = 116.5 us
    assert float(K.nvls_tree_levels_fill(2**29, group_links("gb200", 144))) == pytest.approx(186.41e-6, rel=1e-4)
    assert float(K.nvls_tree_levels_fill(2**29, group_links("gb200", 72))) == 0.0
    assert float(K.nvls_tree_levels_fill(2**29, group_links("b200", 32))) == pytest.approx(186.41e-6, rel=1e-4)
    assert float(K.nvls_tree_levels_fill(2**24, group_links("gb200", 1440))) == pytest.approx(116.51e-6, rel=1e-4)


def test_hgx_h100_beyond_two_nodes_keeps_the_ring_at_large_payloads():
    # 4 x 8 H100, 4 GiB: the ring's bus bandwidth is the node's 8 NICs, 360 GB/s (algbw 360 x 32 / 62 = 185.8),
    # above NCCL's NVLS-tree estimate 150 GB/s: NVIDIA/nccl#1221, NVLS on or off the same beyond two nodes
    assert K.chosen("all_reduce", 2**32, group_links("h100-sxm", 32))[:2] == ("ring", "Simple")
    # on two nodes NVLS-tree (NCCL: 8 x 45 x 5/6 = 300 GB/s) beats the ring (360 x 16 / 30 = 192 GB/s)
    assert K.chosen("all_reduce", 2**32, group_links("h100-sxm", 16))[:2] == ("nvls_tree", "Simple")
