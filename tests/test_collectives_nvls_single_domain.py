"""NCCL's tuner rates NVLS on one NVSwitch domain by its own NVLS graph (core.comm.nvls_tuner), as it rates
NVLS-tree by its heads' NICs; the time keeps the physical NVLS rate. Numbers worked by hand from NCCL 2.26.2:
tuning.cc lines 251, 253, 293 (busBw = nChannels x min(bwIntra, bwInter), algbw = 5/6 x busBw), search.cc lines
918 / 923 (the intra-node speed tables), 975 / 982 (nChannels = min(GPUs, 32)), 1009-1013 (the first speed s
<= maxBw with s x nChannels <= totalBw x GPUs / (GPUs - 1)), 386-417 (a head's link carries nChannels + 1
pulls of s), topo.h SM90_NVLINK_BW 20.6 / SM100_NVLINK_BW 40.0 x 18 NVLinks (8 on H800)."""

from __future__ import annotations

import pytest

from gpuplan.core.comm import collectives as K
from gpuplan.core.comm import nvls_tuner as T
from gpuplan.core.comm.topology import GroupLinks

from helpers import group_links


@pytest.mark.parametrize("gpu, ranks, speed, algbw_gbps", [
    # 8 x H100: 18 x 20.6 = 370.8 GB/s; 60 x 8 > 370.8 x 8/7 = 423.8, start 50; 9 x 50 = 450 > 370.8; 9 x 40 = 360
    ("h100-sxm", 8, 40.0, 8 * 40 * 5 / 6),
    # 5 x H200: 60 x 5 <= 463.5, 6 x 60 = 360 <= 370.8; 6: 7 x 60 = 420 > 370.8, 7 x 50 = 350; 7: 8 x 40 = 320
    ("h200-sxm", 5, 60.0, 5 * 60 * 5 / 6), ("h200-sxm", 6, 50.0, 6 * 50 * 5 / 6), ("h200-sxm", 7, 40.0, 7 * 40 * 5 / 6),
    # 8 x H800: 8 x 20.6 = 164.8; 20 x 8 = 160 <= 188.3 but 9 x 20 = 180 > 164.8; 9 x 15 = 135
    ("h800-sxm", 8, 15.0, 8 * 15 * 5 / 6),
    # B200: 18 x 40 = 720; 5 GPUs 6 x 90 = 540, 7 GPUs 8 x 90 = 720 (fits exactly), 8 GPUs 9 x 90 > 720, 9 x 80 = 720
    ("b200", 5, 90.0, 5 * 90 * 5 / 6), ("b200", 7, 90.0, 7 * 90 * 5 / 6), ("b200", 8, 80.0, 8 * 80 * 5 / 6),
    # one NVL72 rack: 32 channels; 24 x 32 = 768 > 720 x 72/71 = 730.1, start 20; 33 x 20 = 660 <= 720
    ("gb200", 72, 20.0, 32 * 20 * 5 / 6),
])
def test_nccls_single_domain_nvls_estimate(gpu, ranks, speed, algbw_gbps):
    links = group_links(gpu, ranks)
    link = T.nccl_nvlink_gbps(links.arch, links.nvlink_line)
    assert float(T.nvls_search_speed(links.arch, link, ranks, min(ranks, 32))) == speed
    assert float(T.nvls_tuner_algbw(links)) == pytest.approx(algbw_gbps * 1e9, rel=1e-12)
    # the estimate is what the choice reads: NVLS's third entry = 25 us + S / that rate
    found = K.options("all_reduce", 2**33, links)[("nvls", "Simple")]
    assert float(found[2]) == pytest.approx(25e-6 + 2**33 / (algbw_gbps * 1e9), rel=1e-9)


def test_five_b200_run_the_ring_as_measured():
    # 8 GiB on 5 B200 (stas00/ml-engineering@744d01e, NVLS on: 677.8 GB/s busbw, the ring's 677.8).
    # NCCL's NVLS estimate 375 GB/s algbw (24.5 ms at 8 GiB) is under the ring's 680.4 x 5/8 = 425.25
    # (ring/Simple: 8.4 + 8 x 3.4 = 35.6 us + 20.2 ms), so the ring runs; the physical NVLS rate, 850.5 x 5/8 =
    # 531.6 GB/s, had picked NVLS (846 GB/s busbw predicted, +24.8%)
    links = group_links("b200", 5)
    algorithm, protocol, seconds, bus = K.chosen("all_reduce", 2**33, links)
    assert (algorithm, protocol) == ("ring", "Simple")
    assert seconds == pytest.approx(35.6e-6 + 2 * 4 / 5 * 2**33 / 680.4e9, rel=1e-6)
    assert float(K.bus_bandwidth("all_reduce", 2**33, links)) == pytest.approx(2 * 4 / 5 * 2**33 / seconds, rel=1e-9)
    # 6 B200: NCCL's 450 GB/s beats the ring's 680.4 x 6/10 = 408.2: NVLS, as measured (778 GB/s busbw)
    assert K.chosen("all_reduce", 2**33, group_links("b200", 6))[:2] == ("nvls", "Simple")


def test_the_time_keeps_the_physical_rate():
    # 8 x B200, 8 GiB: chosen by NCCL's 533.3 GB/s, timed at 850.5 GB/s of bus: 25 us + 2 x 7/8 x 8 GiB /
    # 850.5e9 + two loops of 24 channels x 8 heads x 128 KiB = 24 MiB at 850.5 x 8/14 = 486 GB/s
    links = group_links("b200", 8)
    algorithm, _, seconds, bus = K.chosen("all_reduce", 2**33, links)
    assert algorithm == "nvls" and bus == pytest.approx(850.5e9)
    assert seconds == pytest.approx(25e-6 + 2 * 7 / 8 * 2**33 / 850.5e9 + 2 * 24 * 2**20 / 486e9, rel=1e-6)


@pytest.mark.parametrize("gpu, ranks, ring_le, nvls_ge", [
    # the switch from ring/LL to NVLS: 8 x H100 10 us = S (1 / 80.57 - 1 / 266.7 GB/s) -> 1.155 MB (physical
    # rate: 1.141 MB); 8 x B200 10 us = S (1 / 161.1 - 1 / 533.3) -> 2.309 MB (physical 2.411 MB). The
    # validated sweeps keep their choices: 1 MiB ring / 2 MiB NVLS on 8 x H200, 2 MiB ring / 4 MiB NVLS on 8 x B200
    ("h100-sxm", 8, 1.150e6, 1.160e6), ("h200-sxm", 8, 2**20, 2**21), ("b200", 8, 2**21, 2**22),
    ("b200", 8, 2.30e6, 2.32e6),
])
def test_where_nvls_takes_over_from_the_ring(gpu, ranks, ring_le, nvls_ge):
    links = group_links(gpu, ranks)
    assert K.chosen("all_reduce", ring_le, links)[:2] == ("ring", "LL")
    assert K.chosen("all_reduce", nvls_ge, links)[:2] == ("nvls", "Simple")


def test_without_nccls_nvlink_figure_the_choice_keeps_the_physical_rate():
    # a GroupLinks without the NVLink line rate (or a generation NCCL runs no NVLS on) has no NCCL estimate
    bare = GroupLinks(8, 8, 1, 680.4e9, 8 * 45e9, arch="blackwell", nvls_gain=1.25)
    assert T.nvls_tuner_algbw(bare) is None
    found = K.options("all_reduce", 2**33, bare)[("nvls", "Simple")]
    assert float(found[2]) == pytest.approx(25e-6 + 2**33 / (850.5e9 * 8 / 14), rel=1e-9)
    assert T.nccl_nvlink_gbps("ampere", 300e9) is None
