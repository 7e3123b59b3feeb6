"""NVLS-tree's physical rate follows the tree's busiest-domain load (review w10 r1 SHOULD-FIX 3): it crosses
domains on the same ncclGetDtree (connect.cc @v2.27.7-1 L268-295) as the tree, so bus = min(NVLS bus, 2 net) /
tree_busiest_domain_load(k): S on two domains, 1.5 S on three, 2 S from four."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import chosen, nvls_tree_tuner_algbw
from gpuplan.core.comm.topology import cluster_for


@pytest.mark.parametrize("gpus, bus_gb_s", [(16, 720.0), (24, 480.0), (32, 360.0)])
def test_b200_nvls_tree_bus_by_domain_count(gpus, bus_gb_s):
    """8-GPU B200 nodes, 8 NICs x 45 GB/s = 360 GB/s a node, NVLS bus 850.5 GB/s, 16 GiB forced NVLS-tree:
    2 nodes min(850.5, 720) / 1 = 720; 3 nodes 720 / 1.5 = 480 (the parent: 360, 2 S assumed); 4 nodes 720 / 2
    = 360 (unchanged)."""
    group = cluster_for(load_accelerator("b200"), algorithm="nvls_tree").group(gpus)
    assert group.net == pytest.approx(360e9, rel=1e-9)
    assert chosen("all_reduce", 2**34, group)[3] == pytest.approx(bus_gb_s * 1e9, rel=1e-9)


def test_the_tuner_keeps_nccls_own_half_beyond_two():
    """NCCL's tuner estimate (tuning.cc @v2.26.2-1 L252: bwInter / 2 beyond two nodes) is left as NCCL has it:
    8 heads x 45 GB/s / 2 x 5/6 = 150 GB/s on three nodes as on four."""
    cluster = cluster_for(load_accelerator("b200"), algorithm="nvls_tree")
    three, four = (float(nvls_tree_tuner_algbw(cluster.group(n))) for n in (24, 32))
    assert three == four == pytest.approx(150e9, rel=1e-9)
