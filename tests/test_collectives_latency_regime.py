"""Issue 37 point 1: the latency regime of the GPUDirect-TCPXO network path (fitted on named rows of the
A3 Mega log, the rest held out) and NVLS-tree beyond two domains (NCCL's tuner halves it)."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import NVLS_TREE_BEYOND_TWO, chosen, tree_chain_fill
from gpuplan.core.comm.topology import NETWORK_PROFILES, cluster_for, network_profile
from gpuplan.errors import InputError
from gpuplan.jobs.validation.collectives import collective_sweeps, model_bus_bandwidth, tcpxo_fit


def _a3mega():
    sweep = next(s for s in collective_sweeps() if s["id"] == "a3mega-h100-2nodes-tcpxo")
    return sweep, sweep["series"][0]


def test_tcpxo_profile_holds_the_constants_its_named_rows_give():
    """The catalog's two fitted figures are what tcpxo_fit works out from the rows the yaml names."""
    latency_us, stages = tcpxo_fit()
    profile = NETWORK_PROFILES["gpudirect-tcpxo"]
    assert profile["net_latency_us"] == pytest.approx(latency_us, abs=0.05)
    assert profile["net_stages"] == pytest.approx(stages, abs=0.05)


def test_tcpxo_latency_floor_matches_the_unscored_small_rows():
    """8 B all-reduce on 2 x 8 H100 over TCPXO: NCCL's tree/Simple latency 8.4 + 2 x (7 x 4.0 + 14 +
    2 x 8.4) = 125.6 us (tuning.cc constants), the log's 8 B - 16 KiB median 124.8 us."""
    sweep, series = _a3mega()
    from gpuplan.jobs.validation.collectives import sweep_links
    links = sweep_links(sweep, series, 8)
    algorithm, protocol, seconds, _ = chosen("all_reduce", 8, links)
    assert (algorithm, protocol) == ("tree", "Simple")
    assert seconds * 1e6 == pytest.approx(8.4 + 2 * (7 * 4.0 + 14 + 2 * 8.4), rel=0.01)


def test_tcpxo_fill_is_fixed_above_the_stage_and_unpipelined_below():
    """Above 16 MiB the fill is one constant (8.5 x 16 MiB at the algbw): t(1 GiB) - t(512 MiB) is
    bytes / algbw alone; below it the time grows (1 + 8.5) times as fast as the bandwidth alone."""
    sweep, series = _a3mega()
    from gpuplan.jobs.validation.collectives import sweep_links
    links = sweep_links(sweep, series, 8)
    bare = replace(links, net_stages=0.0)
    def extra(size):  # the profile's fill stands in for tree/Simple's chain fill (tree_chain_fill), not beside it
        algorithm, _, seconds, _ = chosen("all_reduce", size, bare)
        chain = float(tree_chain_fill(size, bare)) if algorithm == "tree" else 0.0
        return chosen("all_reduce", size, links)[2] - (seconds - chain)
    _, _, _, bus = chosen("all_reduce", 2**30, links)
    algbw = bus * 16 / 30
    assert extra(2**30) == pytest.approx(8.5 * 16 * 2**20 / algbw, rel=1e-6)
    assert extra(2**29) == pytest.approx(extra(2**30), rel=1e-6)
    assert extra(8 * 2**20) == pytest.approx(extra(2**30) / 2, rel=0.01)  # 8 of 16 MiB staged
    assert extra(8 * 2**20) > 0


@pytest.mark.parametrize("payload,low,high", [(1048576, 0.85, 1.15), (4194304, 0.85, 1.15),
                                              (67108864, 0.75, 1.1), (536870912, 0.85, 1.1)])
def test_tcpxo_held_out_points_within_band(payload, low, high):
    """Held-out points (not in latency_rows nor fitted): 1 MiB 9.68, 4 MiB 21.57, 64 MiB 99.74, 512 MiB
    263.69 GB/s busbw (the log); before the profile the model gave +93%, +184%, +111%, +14%."""
    sweep, series = _a3mega()
    assert payload not in sweep["fitted"]
    measured = dict(series["points"])[payload]
    predicted, _ = model_bus_bandwidth(sweep, series, 8, payload)
    assert low <= predicted / 1e9 / measured <= high


def test_nvls_tree_beyond_two_domains_runs_at_half_nvls():
    """GB200 NVL72, 20 racks, NVLS-tree forced: bus = min(NVLS bus x 0.5, 72 NICs x 45 GB/s); at 16 GiB
    coreweave measured 405.74 GB/s (the 2-rack run 810.41: ratio 0.50)."""
    gpu = load_accelerator("gb200")
    cluster = cluster_for(gpu, algorithm="nvls_tree")
    two, twenty = cluster.group(144), cluster.group(1440)
    nvls_bus = two.intra * two.nvls_gain
    assert chosen("all_reduce", 2**34, twenty)[3] == pytest.approx(nvls_bus * NVLS_TREE_BEYOND_TWO, rel=1e-9)
    assert chosen("all_reduce", 2**34, two)[3] == pytest.approx(nvls_bus, rel=1e-9)
    _, _, seconds, _ = chosen("all_reduce", 2**34, twenty)
    busbw = 2 * 1439 / 1440 * 2**34 / seconds / 1e9
    assert busbw == pytest.approx(405.74, rel=0.05)


def test_h100_beyond_two_nodes_prefers_the_ring_as_nccl_1221_reports():
    """8x H100 nodes with 8 x 400G NICs: beyond two nodes NVLS-tree (480 / 2 = 240 GB/s busbw) loses to
    the ring (8 x 45 = 360), so NVLS on or off changes nothing (NVIDIA/nccl#1221); on two nodes the
    NVLS-tree wins."""
    cluster = cluster_for(load_accelerator("h100-sxm"))
    assert chosen("all_reduce", 2**33, cluster.group(32))[0] == "ring"
    assert chosen("all_reduce", 2**33, cluster.group(16))[0] == "nvls_tree"


def test_network_profile_names_the_valid_choices_on_a_bad_name():
    with pytest.raises(InputError) as caught:
        network_profile("tcpx-typo")
    # named as collective_measurements.yaml spells it: network: {profile: ...}
    assert caught.value.field == "network.profile" and "gpudirect-tcpxo" in str(caught.value)


def test_network_profile_builds_a_cluster_that_pays_the_fill():
    """cluster_for with the profile's fields: a 2 x 8 H100 group pays the staging fill, one node none."""
    fields = network_profile("gpudirect-tcpxo")
    cluster = cluster_for(load_accelerator("h100-sxm"), nic_gbit_per_gpu=fields.pop("nic_gbit_per_gpu"),
                          **fields)
    # the profile's nic_gbit_per_gpu 200 Gbit/s / 8 = 25 GB/s a GPU (core/comm/topology.py NETWORK_PROFILES)
    assert cluster.scale_out_bandwidth == pytest.approx(25e9)
    two_nodes, one_node = cluster.group(16), cluster.group(8)
    assert two_nodes.net_stages == 8.5 and two_nodes.net_latency_us == 8.4
    bare = replace(one_node, net_stages=0.0)
    assert chosen("all_reduce", 2**24, one_node)[2] == chosen("all_reduce", 2**24, bare)[2]
