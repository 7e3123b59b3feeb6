"""NCCL's all-to-all at small payloads, one batch of latency and a fixed call cost (issue 37, wave 15 A1):
core.comm.volumes.all_to_all_time = (n-1)/n x bytes / bandwidth + one link latency per sequential p2p batch (core.comm.p2p_schedule, one batch up to
256 ranks) + NCCL's fixed call cost, its tuner's ring base latency for the protocol the pairs run: LL 6.6 us up to
32 channels x 16 KiB a peer in one NVLink domain, Simple 8.4 us beyond (src/graph/tuning.cc@v2.27.7-1 L134-137
baseLat; src/enqueue.cc L783, L822-836). The MoE token exchange of a training step keeps one latency a peer
(volumes.dispatch_per_peer_seconds). Every number below is worked by hand from those lines; nothing is fitted to
DeepEP#303's nccl-tests points (8 H20), but the pairing of 6.6 us with the catalog's 5 us step was chosen with their
floor known, so their kind is labelled so (docs/step.md)."""

import pytest

from gpuplan.core.comm import p2p_schedule as S
from gpuplan.core.comm import volumes as C

H20_NVLINK = 369e9  # 450 GB/s x 0.82 (catalog h20: the link Cluster.link(1) hands the sweep)
NVL72_LINK = 680.4e9  # GB200: 900 GB/s x 0.756 (test_a2a_large_payload's figure)


def test_eight_ranks_at_128_bytes_by_hand():
    # 128 B a rank, 16 B a peer: LL (16 <= 32 x 16 KiB); one batch (8 rounds x 1 part on 32 channels).
    # 112 B / 369 GB/s = 0.30 ns + 5 us + 6.6 us = 11.6003 us
    assert S.p2p_uses_ll(16, 8, 1)
    assert S.call_seconds(16, 8, 1) == pytest.approx(6.6e-6)
    assert C.all_to_all_time(128, 8, H20_NVLINK, 5e-6) == pytest.approx(112 / 369e9 + 5e-6 + 6.6e-6, rel=1e-12)
    assert C.all_to_all_time(128, 8, H20_NVLINK, 5e-6) == pytest.approx(11.6003e-6, abs=1e-10)


def test_eight_ranks_at_4_kib_by_hand():
    # 4,096 B a rank, 512 B a peer: still LL and one batch; 3,584 B / 369 GB/s = 9.71 ns: 11.6097 us. Against
    # DeepEP#303's 11.13 us measured, busbw -4.1% (was 7 x 5 us a peer: 35.01 us, -68.2%)
    t = C.all_to_all_time(4096, 8, H20_NVLINK, 5e-6)
    assert t == pytest.approx(3584 / 369e9 + 11.6e-6, rel=1e-12)
    assert (11.13e-6 / t - 1) == pytest.approx(-0.041, abs=0.001)


def test_sixty_four_ranks_inside_one_nvl72_domain_by_hand():
    # 64 ranks of a GB200 NVL72, 4 KiB a peer (256 KiB a rank): LL (4 KiB <= 32 x 16 KiB = 512 KiB), 64 rounds x
    # 1 part on 32 channels = 2 works a channel, one batch. 258,048 B / 680.4 GB/s = 0.37926 us + 5 + 6.6 us
    # = 11.979 us, where 63 latencies a peer charged 315.4 us
    assert S.sequential_batches(64, 64, 1, 4096) == 1
    t = C.all_to_all_time(64 * 4096, 64, NVL72_LINK, 5e-6)
    assert t == pytest.approx(258048 / 680.4e9 + 5e-6 + 6.6e-6, rel=1e-12)
    assert t == pytest.approx(11.979e-6, abs=1e-9)
    # the protocol turns at 512 KiB a peer: Simple's 8.4 us from one byte more (enqueue.cc L822, L835)
    assert S.call_seconds(512 * 1024, 64, 1) == pytest.approx(6.6e-6)
    assert S.call_seconds(512 * 1024 + 1, 64, 1) == pytest.approx(8.4e-6)
    # over two domains a network peer starts on 2 channels (paths.cc L817-827), so p2pnChannelsPerPeer is 2: the
    # NVLink peers run LL up to 2 x 16 KiB = 32 KiB a peer; a network peer never runs LL (no LL buffer on p2p net
    # connections unless NCCL_ALLOC_P2P_NET_LL_BUFFERS, default 0: net.cc L787, init.cc L658), so such a call pays
    # Simple's 8.4 us
    assert S.p2p_uses_ll(32 * 1024, 16, 2) and not S.p2p_uses_ll(32 * 1024 + 1, 16, 2)
    assert not S.p2p_uses_ll(16, 16, 2, network_peer=True)
    assert S.call_seconds(16, 16, 2) == pytest.approx(8.4e-6)


def test_a_group_of_one_costs_nothing():
    assert C.all_to_all_time(1 << 20, 1, NVL72_LINK, 5e-6) == 0.0


def test_the_moe_exchange_keeps_one_latency_a_peer():
    # Qwen3-30B-A3B-like exchange, ep 8 in one 8-GPU domain: 1,024 tokens x top-8 x 7/8 x 8,192 B = 58.72 MB at
    # 360 GB/s = 163.1 us, + 7 x 5 us = 198.1 us: unchanged by wave 15 (the step rows do not move)
    parts = C.dispatch_per_peer_seconds(8, 1, 5e-6, 15e-6)
    assert parts == pytest.approx((35e-6, 0.0))
    moe = C.expert_all_to_all_time(1024, 8192, 8, 8, 8, 360e9, 45e9, 5e-6, 15e-6)
    assert moe == pytest.approx(1024 * 8 * 7 / 8 * 8192 / 360e9 + 35e-6, rel=1e-12)
    assert moe == pytest.approx(198.1e-6, abs=0.1e-6)
    # across two nodes: 7 NVLink peers and 1 remote node (ep 16, 8 a domain)
    assert C.dispatch_per_peer_seconds(8, 2, 5e-6, 15e-6) == pytest.approx((35e-6, 15e-6))


@pytest.fixture(scope="module")
def all_to_all_cases():
    from gpuplan.jobs.validation import collectives as V

    return [c for c in V.collective_cases() if c.algorithm == "p2p/all-to-all"]


def test_the_small_payload_kind_is_within_30_percent(all_to_all_cases):
    # issue 37's acceptance: 'nccl-tests all-to-all, one node, payload < 16 MiB' (DeepEP#303, 6 points) within 30%;
    # it was 69.2% (bias -69.2%). Its label says the model's form was chosen with this floor known
    small = [c for c in all_to_all_cases if "< 16 MiB" in c.kind]
    assert len(small) == 6
    assert all("the model's form chosen with this floor known" in c.kind for c in small)
    errors = [c.predicted / c.measured - 1 for c in small]
    assert max(abs(e) for e in errors) <= 0.30
    # every point slower in the model: its fastest time, 128 B, is 112 B / 369 GB/s + 5 + 6.6 us = 11.6003 us,
    # above the slowest measured, 11.13 us at 4 KiB
    assert max(errors) < 0


def test_the_large_payload_kind_stays_within_15_percent(all_to_all_cases):
    # 'payload >= 16 MiB' (14 points), issue 37's 15% bar; per-point arithmetic in tests/test_a2a_large_payload.py
    large = [c.predicted / c.measured - 1 for c in all_to_all_cases if ">= 16 MiB" in c.kind]
    assert len(large) == 14
    assert sum(abs(e) for e in large) / 14 <= 0.15
