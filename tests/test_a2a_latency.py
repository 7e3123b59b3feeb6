"""NCCL's all-to-all as its p2p scheduler runs it (core/comm/p2p_schedule.py, NVIDIA/nccl@v2.27.7-1), and the
measured all-to-all latency floor it is checked against (collective_measurements.yaml, deepseek-ai/DeepEP#303).

Every case is worked by hand from the cited NCCL lines; nothing here is fitted."""

import pytest

from gpuplan.core.comm import p2p_schedule as S


def test_eight_gpus_in_a_node_run_all_peers_at_once():
    # one node: p2pnChannelsPerPeer 32 halved while x 8 ranks > 32 channels: 4 (enqueue.cc L1042). 128 B per
    # peer: min(4, ceil(128 / 64 KiB)) = 1 part; 1 MiB: min(4, 16) = 4 parts, 8 rounds x 4 on 32 channels,
    # one work per channel: one batch either way
    assert S.parts_per_peer(128 / 8, 8, 1) == 1
    assert S.parts_per_peer(1 << 20, 8, 1) == 4
    assert S.sequential_batches(8, 8, 1, 128 / 8) == 1
    assert S.sequential_batches(8, 8, 1, 1 << 20) == 1


def test_sixty_four_ranks_of_an_nvl72_rack_share_one_batch():
    # 64 rounds x 1 part (nChannelsMin halves to 1) on 32 channels: 2 works a channel, one batch of <= 8.
    # 40 MB per peer: parts double while a part exceeds 32 x 512 KiB = 16 MiB: 1 -> 2 -> 4 (10 MB each)
    assert S.parts_per_peer(7e6, 64, 1) == 1
    assert S.parts_per_peer(40e6, 64, 1) == 4
    assert S.sequential_batches(64, 64, 1, 7e6) == 1
    assert S.sequential_batches(64, 64, 1, 40e6) == 1


def test_across_nodes_the_local_rounds_of_a_node_delta_share_a_channel():
    # network peers start at 2 channels, halved while 2 x ranks > 4 x 32 (paths.cc L817-827): 2 up to 64 ranks, 1
    # beyond. 8 nodes x 8 GPUs, 7 MB per peer: 2 parts (a part may not exceed the 128 KiB net chunk); bases =
    # 8 node deltas x ceil(8 / 8), each with its 8 local rounds, on channels d and d + 16: one batch
    assert S.channels_per_peer(64, 8) == 2
    assert S.channels_per_peer(128, 16) == 1
    assert S.parts_per_peer(7e6, 64, 8) == 2
    assert S.sequential_batches(64, 8, 8, 7e6) == 1
    # 16 ranks on two nodes: nChannelsMin stays 2 (2 x 16 = 32, not > 32); 1 MB -> 2 parts
    assert S.parts_per_peer(1e6, 16, 2) == 2
    # a second batch only past 32 channels' worth of node deltas: 33 nodes x 8 GPUs, 1 part each
    assert S.sequential_batches(264, 8, 33, 7e6) == 2
    assert S.sequential_batches(256, 8, 32, 7e6) == 1


def test_works_on_arrays_of_layouts():
    import numpy as np

    got = S.sequential_batches(np.array([8, 64, 264]), np.array([8, 8, 8]), np.array([1, 8, 33]), 7e6)
    assert list(got) == [1, 1, 2]


def test_the_h20_all_to_all_floor_against_the_model():
    """8 H20 in one node, 128 B a rank: nccl-tests measures 10.59 us (DeepEP#303, held out). The model's all-to-all
    (core.comm.volumes.all_to_all_time, wave 15) runs the 8 pairs at once: one 5 us step (one batch) + NCCL's fixed
    call cost, its tuner's ring LL base latency 6.6 us (tuning.cc@v2.27.7-1 baseLat), + 112 B / 369 GB/s = 11.60 us:
    busbw 0.913 of the measured. One 5 us latency per peer, as the MoE exchange still charges, was 7 x 5 = 35 us:
    0.30 (the kind's -69.2% before)."""
    from gpuplan.jobs.validation import collectives as V

    sweep = next(s for s in V.collective_sweeps() if s["id"] == "deepep303-h20-alltoall-1node")
    modelled = V.all_to_all_bus_bandwidth(sweep, sweep["series"][0], 8, 128)
    # one batch of 5 us (8 rounds x 1 part on 32 channels), worked by hand, not read back from the model's schedule
    assert S.sequential_batches(8, 8, 1, 16) == 1
    by_hand = 7 / 8 * 128 / (7 / 8 * 128 / 369e9 + 5e-6 + 6.6e-6)  # H20 450 x 0.82
    assert modelled == pytest.approx(by_hand, rel=1e-9)
    measured = 7 / 8 * 128 / 10.59e-6
    assert modelled / measured == pytest.approx(0.913, abs=0.002)
    per_peer = 7 / 8 * 128 / (7 / 8 * 128 / 369e9 + 7 * 5e-6)
    assert per_peer / measured == pytest.approx(0.30, abs=0.01)


def test_all_to_all_sweeps_are_scored_inside_one_node_only():
    from gpuplan.jobs.validation import collectives as V

    sweep = dict(next(s for s in V.collective_sweeps() if s["id"] == "deepep303-h20-alltoall-1node"), nodes=2)
    with pytest.raises(ValueError, match="nodes: 1"):
        V.all_to_all_bus_bandwidth(sweep, sweep["series"][0], 8, 128)
