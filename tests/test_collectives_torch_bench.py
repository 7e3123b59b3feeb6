"""Issue 37 point 1: what stas00's all_reduce_bench.py times across nodes beyond the collective (the
barrier's exit skew and the network's clear-to-send), worked by hand from NCCL's, PyTorch's and
aws-ofi-nccl's code (jobs/validation/collectives.torch_bench_rank_seconds). The 4-node P6-B200 sweep is
held out: nothing here is fitted on it."""

import statistics

import pytest

from gpuplan.core.comm.collectives import chosen
from gpuplan.jobs.validation import collectives as V


def _sweep(sweep_id):
    sweep = next(s for s in V.collective_sweeps() if s["id"] == sweep_id)
    return sweep, sweep["series"][0]


def test_btree_depths_follow_nccl_get_btree():
    # trees.cc ncclGetBtree @v2.27.7-1: 4 nodes 0 <- 2 <- {1, 3}; node 3's lowest bit 1, parent (3^1)|2 = 2
    assert V.nccl_btree_depths(4) == [0, 2, 1, 2]
    assert V.nccl_btree_depths(2) == [0, 1]
    depths = V.nccl_btree_depths(20)
    # 16: (16^16)|32 = 32 is past node 19, so its parent is 0; 8 -> (0|16) = 16 -> 0; 19 -> 18 -> 16 -> 0
    assert (depths[16], depths[8], depths[19]) == (1, 2, 3)
    assert max(depths) == 5  # 15 -> 14 -> 12 -> 8 -> 16 -> 0


def test_one_node_adds_nothing_beyond_the_fitted_call_time():
    sweep, series = _sweep("stas00-allreduce-p6-b200-1node")
    assert V.torch_bench_rank_seconds(V.sweep_links(sweep, series, 8)) == [0.0] * 8


def test_four_nodes_skew_and_clear_to_send_by_hand():
    """A hop = NCCL's tree/LL network step 5.0 us + aws-ofi-nccl's p6-b200 latency 35 us = 40 us; a chain
    hop 0.6 us. Every rank pays one hop (the clear-to-send); node depths [0, 2, 1, 2] leave the barrier
    [2, 0, 1, 0] hops before the deepest; chain positions 7 ... 0 chain hops. Mean 40 x 1.75 + 3.5 x 0.6
    = 72.1 us, most 40 x 3 + 7 x 0.6 = 124.2 us, least 40 us."""
    sweep, series = _sweep("stas00-allreduce-p6-b200-4nodes")
    extra = V.torch_bench_rank_seconds(V.sweep_links(sweep, series, 8))
    assert len(extra) == 32
    assert statistics.mean(extra) * 1e6 == pytest.approx(72.1, abs=0.01)
    assert (max(extra) * 1e6, min(extra) * 1e6) == (pytest.approx(124.2, abs=0.01), pytest.approx(40.0, abs=0.01))


def test_the_benchmark_averages_each_ranks_algbw():
    """timed_allreduce (@744d01e) reduces size / duration over ranks and divides by n: busbw at 1 MiB is
    2 x 31 / 32 x mean(S / (t + 31.4 us + extra_r)), t the tuner plugin's tree/LL128 time."""
    sweep, series = _sweep("stas00-allreduce-p6-b200-4nodes")
    from dataclasses import replace

    size = 2**20
    links = V.sweep_links(sweep, series, 8)
    seconds = chosen("all_reduce", size, replace(links, algorithm="tree", protocol="LL128"))[2]
    extra = V.torch_bench_rank_seconds(links)
    expected = 2 * 31 / 32 * statistics.mean(size / (seconds + 31.4e-6 + e) for e in extra)
    predicted, algorithm = V.model_bus_bandwidth(sweep, series, 8, size)
    assert algorithm == "tree/LL128" and predicted == pytest.approx(expected, rel=1e-9)


def test_held_out_four_node_small_payloads():
    """stas00 network/README.md @744d01e, '4 nodes' column (held out): 256 KiB - 8 MiB measured 1.33 ...
    35.12 GB/s busbw; with the skew and the clear-to-send the model is +12 ... +32% (it was +41 ... +64%);
    128 KiB (0.45 GB/s, 564 us where 256 KiB takes 382 us on the same tree/LL) stays at +88%."""
    cases = [c for c in V.collective_cases() if "p6-b200-4nodes" in c.id and c.measured < 40e9]
    errors = {int(c.id.rsplit("-", 1)[1]): c.predicted / c.measured - 1 for c in cases}
    assert sorted(errors) == [2**k for k in range(17, 24)]
    assert all(0.10 < errors[s] < 0.35 for s in errors if s >= 2**18)
    assert statistics.mean(abs(e) for e in errors.values()) < 0.33
