"""Issue 39: the ring's three protocols share one _ring_parts (the work that does not depend on the
protocol), and latencies that are equal in both branches of a mask are not masked. The numbers are
NCCL's latency formula by hand, and a batch of layouts must give exactly what each layout gives alone."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.topology import cluster_for

H100 = cluster_for(load_accelerator("h100-sxm"))


def _latency_us(kind, links, proto):
    seconds, bus = K._ring(kind, 0, links, proto)
    return float(seconds) * 1e6


def test_ring_latency_by_hand_on_two_nodes():
    # tuning.cc, 16 ranks on 2 HGX nodes: nsteps = 2 x 15 = 30, of them 2 x (2 - 1) = 2 across the network.
    # LL: intra max(0.6, net overhead 1.0) = 1.0, inter 2.7 -> 6.6 + 28 x 1.0 + 2 x 2.7 = 40.0 us
    # LL128: intra max(1.9, 1.0) = 1.9, inter 4.0 -> 14.0 + 28 x 1.9 + 2 x 4.0 = 75.2 us
    # Simple: intra max(3.4, 3 x 1.0) = 3.4, inter 14.0 -> (8.4 + 28 x 3.4 + 2 x 14.0) x 1.4 (plateau) = 184.24 us
    links = H100.group(16)
    assert [_latency_us("all_reduce", links, p) for p in range(3)] == pytest.approx([40.0, 75.2, 184.24])
    # one GPU per node (16 nodes): every step is a network step at the tree's network latency (LL 5.0, Simple 14.0)
    spread = H100.group(16, 8)
    assert _latency_us("all_reduce", spread, 0) == pytest.approx(6.6 + 30 * 5.0)
    assert _latency_us("all_gather", spread, 2) == pytest.approx(8.4 + 15 * 14.0)


def test_shared_parts_and_a_batch_give_each_layouts_own_number():
    ranks = np.array([2, 8, 16, 16, 64, 512, 1024, 8])
    stride = np.array([1, 1, 1, 8, 2, 8, 1, 4])
    sizes = np.array([8, 2**15, 2**20, 2**24, 2**27, 2**30, 2**33, 3e5])
    for cluster in (H100, cluster_for(load_accelerator("gb200"), net_latency_us=35.0)):
        batch = cluster.group(ranks, stride)
        for kind in K.KINDS:
            together = K.collective_seconds(kind, sizes, batch)
            parts = K._ring_parts(kind, sizes, batch)
            for proto in range(3):
                shared, alone = K._ring(kind, sizes, batch, proto, parts), K._ring(kind, sizes, batch, proto)
                assert all(np.array_equal(a, b) for a, b in zip(shared, alone))
            for i in range(len(ranks)):
                one = K.collective_seconds(kind, sizes[i], cluster.group(int(ranks[i]), int(stride[i])))
                assert float(one) == float(together[i])  # exactly, not approximately
