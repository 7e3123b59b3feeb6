"""core/comm/collectives.py beyond NCCL's tuner: the NVLS pipeline fill, PAT at one GPU per node, the
NCCL_ALGO / NCCL_PROTO lists a benchmark ran with, and the torch benchmark's per-call host time; each
worked by hand, then the held-out sweeps they move (collective_measurements.yaml)."""

from __future__ import annotations

import statistics

import pytest

from gpuplan.core.comm import collectives as K
from gpuplan.jobs.validation import collectives as V

from helpers import group_links


def test_nvls_on_one_nvl72_rack_pays_two_loops_of_fill():
    # GB200 NVL72, 72 ranks, 512 MiB. NVLS bus = 900 GB/s x 0.756 x 1.25 = 850.5 GB/s; tuner time = 25 us +
    # 2 x 71/72 x 536,870,912 B / 850.5e9 = 1.2700 ms. One loop = 24 channels x 32 heads x 128 KiB = 100,663,296 B,
    # at algbw 850.5 x 72 / 142 = 431.24 GB/s: 0.23342 ms; two of them 0.46685 ms -> 1.73685 ms, busbw
    # 1.97222 x 536,870,912 / 1.73685 ms = 609.6 GB/s (CoreWeave measured 586.1; the tuner's time alone: 833.8).
    links = group_links("gb200", 72)
    assert float(K.nvls_loop_bytes(links, tree=False)) == 100_663_296
    algorithm, protocol, seconds, bus = K.chosen("all_reduce", 2**29, links)
    assert (algorithm, protocol) == ("nvls", "Simple") and bus == pytest.approx(850.5e9)
    assert seconds == pytest.approx(25e-6 + 2 * 71 / 72 * 2**29 / 850.5e9 + 0.46685e-3, rel=1e-4)
    assert float(K.bus_bandwidth("all_reduce", 2**29, links)) == pytest.approx(609.6e9, rel=1e-3)


def test_the_fill_moves_the_time_not_nccls_choice():
    # two racks, 512 MiB: NCCL's tuner estimate for NVLS-tree (32 heads x 45 GB/s x 5/6 = 1,200 GB/s, no fill:
    # 25 + 2 x 14 = 53.0 us + 447.4 us = 0.500 ms) stays the fastest, so it is still chosen although its
    # time (53.0 us + 2 x 143/144 x 512 MiB / 850.5 GB/s + the fill = 1.95 ms) is far above it
    found = K.options("all_reduce", 2**29, group_links("gb200", 144))
    tuner = {key: float(value[2]) for key, value in found.items()}
    assert min(tuner, key=tuner.get) == ("nvls_tree", "Simple")
    assert tuner[("nvls_tree", "Simple")] == pytest.approx(53.0e-6 + 2**29 / (5 / 6 * 32 * 45e9), rel=1e-6)
    assert float(found[("nvls_tree", "Simple")][0]) > tuner[("nvls_tree", "Simple")] + 1.4e-3
    # across domains a loop is 32 channels x 32 heads x 128 KiB = 134,217,728 B, at algbw 850.5 x 144 / 286 =
    # 428.2 GB/s: two loops 0.6269 ms; the tree level's fill 2 x 1 x 32 x 128 KiB / 45 GB/s = 0.1864 ms
    fill = float(found[("nvls_tree", "Simple")][0]) - (53.0e-6 + 2 * 143 / 144 * 2**29 / 850.5e9)
    assert fill == pytest.approx(2 * 134_217_728 / (850.5e9 * 144 / 286) + 2 * 32 * 2**17 / 45e9, rel=1e-3)
    # a payload below one loop fills with what it has: 8 MiB on 8 x H200 (loop 16 x 8 x 128 KiB = 16 MiB)
    h200 = group_links("h200-sxm", 8)
    # (the time less its latency and bytes at the physical rate 369 x 1.30 GB/s of bus: NCCL's estimate, small[2],
    # rates NVLS by its own graph since tests/test_collectives_nvls_single_domain.py)
    small = K.options("all_reduce", 2**23, h200)[("nvls", "Simple")]
    physical = 25e-6 + 2 * 7 / 8 * 2**23 / (369e9 * 1.30)
    assert float(small[0]) - physical == pytest.approx(2 * 2**23 * 2 * 7 / 8 / (369e9 * 1.30), rel=1e-3)


def test_pat_replaces_the_ring_at_one_gpu_per_node():
    # 128 H100 nodes, a data-parallel group beside tp 8 (one member per node, its 400 Gb/s NIC at 45 GB/s),
    # all-gather of 1 MiB. PAT: 8 + log2(128) x 14 / 3.5 + 2.8 x 128 = 394.4 us + 1,048,576 / (0.75 x 45e9) =
    # 31.07 us -> 425.5 us. Ring Simple: 8.4 + 127 x 14 = 1,786.4 us + 127/128 MiB / 45e9 = 23.1 us -> 1,809.5 us.
    links = group_links("h100-sxm", 128, stride=8)
    algorithm, protocol, seconds, _ = K.chosen("all_gather", 2**20, links)
    assert (algorithm, protocol) == ("pat", "Simple") and seconds == pytest.approx(425.5e-6, rel=1e-3)
    ring = K.options("all_gather", 2**20, links)[("ring", "Simple")]
    assert float(ring[0]) == pytest.approx(1809.5e-6, rel=1e-3)
    # 1 GiB: the ring's bandwidth (1 / 0.75 of PAT's) wins again; with 8 GPUs per node PAT is not offered
    assert K.chosen("all_gather", 2**30, links)[0] == "ring"
    assert ("pat", "Simple") not in {k for k, v in K.options("all_gather", 2**20, group_links("h100-sxm", 64)).items()
                                     if float(v[0]) < float("inf")}


def test_nccl_algo_and_proto_lists_restrict_the_choice():
    # GCP's A3 Mega profile: NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, NVLS off (gpu-recipes a3mega run_test.sh)
    links = group_links("h100-sxm", 16, nic_gbit_per_gpu=200, nvls_gain=0.0, algorithm="ring,tree", protocol="Simple")
    assert set(K.options("all_reduce", 2**20, links)) == {("ring", "Simple"), ("tree", "Simple")}
    assert K.chosen("all_reduce", 2**15, links)[:2] == ("tree", "Simple")


def test_torch_bench_call_time_is_fitted_on_the_one_node_sweep_only():
    # the constant is the median of measured - modelled seconds over the one-node sweep's 32 KiB - 2 MiB points
    sweep = next(s for s in V.collective_sweeps() if s["id"] == V.FITTED_SWEEPS[0])
    series = sweep["series"][0]
    gaps = []
    for per_node, size, busbw in V.series_points(sweep, series):
        if size <= 2**21:
            measured = 2 * (per_node - 1) / per_node * size / (busbw * 1e9)
            gaps.append(measured - float(K.collective_seconds("all_reduce", size, V.sweep_links(sweep, series, 8))))
    assert len(gaps) == 7 and statistics.median(gaps) == pytest.approx(V.TORCH_BENCH_CALL_SECONDS, abs=0.5e-6)
    kinds = {c.kind for c in V.collective_cases() if "torch" in c.kind}
    assert {k for k in kinds if "one node" in k} == {k for k in kinds if "(fitted)" in k}


def _mean_error(cases):
    return statistics.mean(abs(c.predicted / c.measured - 1) for c in cases)


def test_held_out_collectives_across_nodes():
    cases = V.collective_cases()
    several = [c for c in cases if "nccl-tests, several nodes, payload >=" in c.kind]
    # 2 racks, 64 H100 over SHARP, the three IB-joined GB200 partitions: within issue 37's 15% (5.9% now)
    kept = [c for c in several if "20racks" not in c.id]
    assert len(kept) == 15 and _mean_error(kept) < 0.08
    assert max(abs(c.predicted / c.measured - 1) for c in kept) < 0.15
    # the 20-rack run is the known miss (docs/step.md: alpha 4.6 ms): 56.5% (+47...+66%) as the tree; run as
    # NVLS-tree, NCCL's choice there (tests/test_collectives_nvls_tree_choice.py), 41.3%, 33.2% with the tree
    # levels' fill: the slope is right (16 GiB +3.2%) and the error falls as the payload grows, the signature
    # of the intercept still missing
    twenty = sorted((c for c in several if "20racks" in c.id), key=lambda c: c.measured)
    errors = [c.predicted / c.measured - 1 for c in twenty]
    assert len(twenty) == 6 and 0.30 < _mean_error(twenty) < 0.36 and abs(errors[-1]) < 0.05
    assert errors == sorted(errors, reverse=True) and {c.algorithm for c in twenty} == {"nvls_tree/Simple"}
    one_node = [c for c in cases if "nccl-tests, one node" in c.kind]
    assert _mean_error(one_node) < 0.04
    four_nodes = [c for c in cases if "torch all_reduce_bench, several nodes, payload >=" in c.kind]
    # under AWS's plugin (its latency and regions; tests/test_collectives_plugins.py) and with the benchmark's
    # barrier skew and clear-to-send (tests/test_collectives_torch_bench.py): 11.6% mean, 11.2% with NVLS-tree's
    # 64 KiB chunk from four nodes (128 / 256 MiB -5.8 / +7.2%), 16 MiB +27.3%,
    # the ring/Simple points at 512 MiB - 16 GiB -20.0 ... -6.8% (NCCL's ring latency with 35 us per net step)
    assert _mean_error(four_nodes) < 0.125


def test_plan_explain_names_each_collectives_bytes_algorithm_link_and_times(capsys):
    from gpuplan.cli import main

    args = ["plan", "llama-3.1-70b", "--tokens", "1T", "--gpu", "h100", "--gpus", "512", "--tp", "8", "--pp", "4",
            "--explain"]
    assert main(args) == 0
    out = capsys.readouterr().out
    table = out[out.index("Communication per step"):].splitlines()
    assert all(word in table[1] for word in ("bytes each", "NCCL algorithm / protocol", "link", "s/step", "exposed s"))
    dp = [line for line in table if line.startswith("DP ")]
    # a data-parallel group beside tp 8 has one member per node: its link names 16 domains and one NIC (45 GB/s)
    assert dp and all("MiB" in line and "ring / Simple" in line and "1/domain x 16 domains" in line for line in dp)
