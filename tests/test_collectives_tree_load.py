"""The tree all-reduce runs at its busiest domain's NICs (collectives.tree_busiest_domain_load), from NCCL's own
trees (src/graph/trees.cc @v2.27.7-1 ncclGetBtree / ncclGetDtree, transcribed below), with hand-worked times."""

from __future__ import annotations

import pytest

from gpuplan.core.comm import collectives as K
from gpuplan.jobs.validation import collectives as V


def _btree(nranks: int, rank: int) -> tuple[int, list[int]]:
    """(parent or -1, children) of ``rank`` in ncclGetBtree (trees.cc @v2.27.7-1 lines 31-62)."""
    bit = 1
    while bit < nranks and not bit & rank:
        bit <<= 1
    if rank == 0:
        return -1, [bit >> 1] if nranks > 1 else []
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    low = bit >> 1
    down0 = -1 if low == 0 else rank - low
    down1 = -1 if low == 0 else rank + low
    while down1 >= nranks:
        down1 = -1 if low == 0 else rank + low
        low >>= 1
    return up, [d for d in (down0, down1) if d != -1]


def _dtree(nranks: int, rank: int) -> list[tuple[int, list[int]]]:
    """Both trees of ncclGetDtree (lines 87-110): the btree, then its mirror (even) or shift by one (odd)."""
    first = _btree(nranks, rank)
    if nranks % 2:
        up, down = _btree(nranks, (rank - 1 + nranks) % nranks)
        second = (-1 if up == -1 else (up + 1) % nranks, [(d + 1) % nranks for d in down])
    else:
        up, down = _btree(nranks, nranks - 1 - rank)
        second = (-1 if up == -1 else nranks - 1 - up, [nranks - 1 - d for d in down])
    return [first, second]


def _loads(nodes: int) -> list[float]:
    """Per domain, payload bytes its NICs send: each tree carries S / 2, (children + parent) x S / 2."""
    return [sum((len(down) + (up != -1)) / 2 for up, down in _dtree(nodes, r)) for r in range(nodes)]


def test_the_transcribed_tree_is_nccls_illustration():
    # trees.cc's drawing for 14 ranks: 0 -> 8, 8 -> {4, 12}, 12 -> {10, 13}, 2 -> {1, 3}, 13 a leaf under 12
    assert _btree(14, 0) == (-1, [8]) and _btree(14, 8) == (0, [4, 12]) and _btree(14, 12) == (8, [10, 13])
    assert _btree(14, 2) == (4, [1, 3]) and _btree(14, 13) == (12, [])
    # the depths the validation's barrier skew uses (nccl_btree_depths) follow the same parents
    assert V.nccl_btree_depths(4) == [0, 2, 1, 2]


def test_four_domains_load_two_of_them_with_2_s():
    # 4 domains: tree 0 = 0 <- 2 <- {1, 3}, its mirror 3 <- 1 <- {2, 0}: domains 1 and 2 are inside one tree (1.5 S)
    # and a leaf of the other (0.5 S); domains 0 and 3 root one tree with one child (0.5 S) and are a leaf of the other
    assert _loads(4) == [1.0, 2.0, 2.0, 1.0]
    assert _loads(3) == [1.5, 1.0, 1.5] and _loads(2) == [1.0, 1.0]


@pytest.mark.parametrize("nodes", list(range(2, 130)) + [255, 256, 257, 1000])
def test_the_busiest_domain_load_is_nccls(nodes):
    assert float(K.tree_busiest_domain_load(nodes)) == max(_loads(nodes))


def test_tree_ll128_on_four_p6_nodes_by_hand():
    # 4 x P6-B200 (links of the 4-node torch sweep: net 8 x 50 x 0.9 = 360 GB/s a node, NVLink ring 680.4 GB/s, the
    # plugin's 35 us): algbw 0.92 x min(360 / 2, 680.4 / 2) x 120/128 x 0.9 (treeCorrectionFactor, LL128, log2(8 MiB
    # / 64) = 17) = 139.73 GB/s; latency 14 + 2 (7 x 1.25 + 2 x (8.5 + 35)) = 205.5 us; 8 MiB: 205.5 + 60.03 us
    sweep = next(s for s in V.collective_sweeps() if s["id"] == "stas00-allreduce-p6-b200-4nodes")
    links = V.sweep_links(sweep, sweep["series"][0], 8)
    seconds = float(K.options("all_reduce", 2**23, links)[("tree", "LL128")][0])
    assert seconds == pytest.approx(205.5e-6 + 2**23 / 139.73e9, rel=1e-4)


def test_ring_and_tree_of_nccl_1801_ask_the_same_of_a_nic():
    # NVIDIA/nccl#1801 (3 GB200 partitions, 8 GPUs each, one 400 Gb/s NIC per GPU, 16 GiB): the ring's busbw is its
    # per-GPU NIC rate, 393.66 / 8 = 49.2 GB/s; the tree's busiest partition moves 1.5 x algbw, 1.5 x 485.68 x 24/46
    # / 8 = 47.5 GB/s per NIC. Counted at the mean, 4/3 S, the tree would need only 42.2: 14% under the ring's.
    ring, tree = 393.66 / 8, 485.68 * 24 / 46
    assert tree * 1.5 / 8 == pytest.approx(ring, rel=0.04)
    assert tree * 4 / 3 / 8 < 0.87 * ring
