"""The tree/LL128 slot window on a network with a measured round trip (core/comm/net_window.py), AWS's
P6 channel rule, and the round trip fitted on dstack's 2 x P6-B200 nccl-tests rows. Numbers worked by
hand from NCCL's calcCollChunking (src/enqueue.cc @v2.27.7-1 lines 2037-2043) and aws-ofi-nccl v1.18.0."""

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import NCCL_COLLECTIVE_CTAS, chosen
from gpuplan.core.comm.net_window import NCCL_STEPS, tree_ll128_chunk, tree_ll128_window_algbw
from gpuplan.core.comm.topology import cluster_for
from gpuplan.jobs.validation import collectives as vc

MIB = 2**20


def _p6_links(rtt_us=39.9):
    """4 x 8 B200 with 8 x 400 Gb/s NICs a node, the plugin's 35 us, the measured round trip."""
    cluster = cluster_for(load_accelerator("b200"), gpus_per_node=8, net_latency_us=35.0, net_round_trip_us=rtt_us)
    return cluster.group(32)


@pytest.mark.parametrize("size, channels, chunk", [
    # 576,000 -> 288,000 -> 144,000 -> 72,000 (first loop stops at <= 131,072), then while
    # size // (channels x chunk) < 3.8 x 16 / 8 = 7.6: -> 36,000 -> 18,000; 9 grains of 1,920 B
    (1 * MIB, 16, 17_280),
    (4 * MIB, 32, 17_280),      # 4 MiB // (32 x 36,000) = 3 < 7.6 -> 18,000
    (8 * MIB, 24, 34_560),      # 8 MiB // (24 x 36,000) = 9 >= 7.6: stays 36,000 = 18 grains + 1,440
    (16 * MIB, 24, 71_040),     # 16 MiB // (24 x 72,000) = 9: 72,000 -> 37 grains
    (16 * MIB, 32, 34_560),     # 16 MiB // (32 x 72,000) = 7 < 7.6 -> 36,000
])
def test_tree_ll128_chunk_by_hand(size, channels, chunk):
    assert float(tree_ll128_chunk(size, channels, 4, 8)) == chunk


def test_chunk_keeps_the_whole_step_for_large_payloads():
    """1 GiB // (16 x 576,000) = 116 >= 3.8 x 64 / 8 = 30.4: no halving; 576,000 = 300 grains."""
    assert float(tree_ll128_chunk(2**30, 16, 4, 8)) == 576_000


def test_window_rate_by_hand():
    """16 channels x 8 slots x 17,280 B / 39.9 us = 55.4 GB/s at 1 MiB."""
    links = _p6_links()
    window = float(tree_ll128_window_algbw(MIB, links, 16))
    assert window == pytest.approx(16 * NCCL_STEPS * 17_280 / 39.9e-6, rel=1e-9)
    assert window == pytest.approx(55.4e9, rel=2e-3)


def test_no_window_without_a_stated_round_trip_or_on_one_domain():
    assert np.isinf(tree_ll128_window_algbw(MIB, _p6_links(0.0), 16))
    one_node = cluster_for(load_accelerator("b200"), gpus_per_node=8, net_round_trip_us=39.9).group(8)
    assert np.isinf(tree_ll128_window_algbw(MIB, one_node, 16))


def test_window_slows_tree_ll128_only_where_stated():
    """The time grows by bytes / window - bytes / physical rate; NCCL's estimate (the choice) does not move.
    An InfiniBand cluster (no round trip stated) is unchanged: the step-time model's clusters state none."""
    forced = dict(algorithm="tree", protocol="LL128")
    plain = replace(_p6_links(0.0), **forced)
    windowed = replace(_p6_links(), **forced)
    _, _, slow, _ = chosen("all_reduce", MIB, windowed)
    _, _, fast, bus = chosen("all_reduce", MIB, plain)
    physical = bus * 32 / 62  # algbw
    expected = fast - MIB / physical + MIB / (16 * NCCL_STEPS * 17_280 / 39.9e-6)
    assert physical > 55.4e9  # the window binds here
    assert slow == pytest.approx(expected, rel=1e-9)
    # tree/LL (one step a channel) and ring/LL128 (whole steps) are untouched
    for algorithm, protocol in (("tree", "LL"), ("ring", "LL128")):
        a = chosen("all_reduce", 256 * 1024, replace(_p6_links(), algorithm=algorithm, protocol=protocol))
        b = chosen("all_reduce", 256 * 1024, replace(_p6_links(0.0), algorithm=algorithm, protocol=protocol))
        assert a[2] == b[2]
    # NCCL_COLLECTIVE_CTAS is the channel count without a plugin's setting
    assert NCCL_COLLECTIVE_CTAS == 16 and windowed.tree_channels == 0


@pytest.mark.parametrize("size, channels", [(2 * MIB, 0), (4 * MIB, 32), (8 * MIB, 24), (16 * MIB, 24),
                                            (32 * MIB, 32), (64 * MIB, 0)])
def test_ofi_p6_channel_rule(size, channels):
    """calculateBestNChannelTree: the largest chunk among 16 / 24 / 32, the most channels on a tie, 4-32 MiB
    only. 32 MiB: every count ends at 72,000 B (16 ch: 576,000 halves while 32 MiB // (16 x chunk) < 30.4 down
    to 72,000, then 32 MiB // 1,152,000 = 29 >= 7.6; 24 ch 19; 32 ch 14): a tie, so 32."""
    assert vc.ofi_p6_tree_channels(size, _p6_links()) == channels


def test_round_trip_fit_from_the_named_rows():
    """Median of 50.58, 54.55, 54.59, 55.60, 56.27, 57.14 us = 55.095; (55.095 - 6.8) / 2 - 7 x 0.6 = 19.9475 us a
    hop; two hops 39.895 us; the sweep states 39.9."""
    assert vc.efa_round_trip_fit() == pytest.approx(39.895, abs=1e-6)
    sweep = next(s for s in vc.collective_sweeps() if s["id"] == "stas00-allreduce-p6-b200-4nodes")
    assert sweep["network"]["net_round_trip_us"] == pytest.approx(vc.efa_round_trip_fit(), abs=0.05)
    assert "dstack" in sweep["round_trip_source"]


def test_four_node_sweep_4mib_point_by_hand():
    """The 4 MiB point runs tree/LL128 on 32 channels (the plugin's rule): window 32 x 8 x 17,280 B / 39.9 us
    = 110.9 GB/s; the model's time is its latency + 4 MiB at that rate, then the benchmark's per-rank extras."""
    sweep = next(s for s in vc.collective_sweeps() if s["id"] == "stas00-allreduce-p6-b200-4nodes")
    series = sweep["series"][0]
    busbw, label = vc.model_bus_bandwidth(sweep, series, 8, 4 * MIB)
    assert label == "tree/LL128"
    links = replace(vc.sweep_links(sweep, series, 8), algorithm="tree", protocol="LL128", tree_channels=32)
    _, _, seconds, _ = chosen("all_reduce", 4 * MIB, links)
    free = replace(links, net_round_trip_us=0.0)
    _, _, base, bus = chosen("all_reduce", 4 * MIB, free)
    window = 32 * 8 * 17_280 / 39.9e-6
    assert window == pytest.approx(110.87e9, rel=1e-3)
    assert seconds == pytest.approx(base - 4 * MIB / (bus * 32 / 62) + 4 * MIB / window, rel=1e-9)
    extra = vc.torch_bench_rank_seconds(links)
    algbw = sum(4 * MIB / (seconds + vc.TORCH_BENCH_CALL_SECONDS + e) for e in extra) / len(extra)
    assert busbw == pytest.approx(algbw * 62 / 32, rel=1e-9)
