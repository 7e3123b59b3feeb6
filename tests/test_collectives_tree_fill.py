"""tree/Simple's chain fill (core.comm.collectives.tree_chain_fill): numbers worked by hand from NCCL's
constants (DEFAULT_BUFFSIZE 4 MiB / NCCL_STEPS 8 = 512 KiB per chunk, 16 channels), and what NCCL
2.26.2 allows on the CoreWeave GB200 multi-rack sweeps (no LL128 across racks)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.core.comm import collectives
from gpuplan.core.comm.collectives import TREE_SIMPLE_CHUNK_BYTES, options, tree_chain_fill
from gpuplan.core.comm.topology import GroupLinks
from gpuplan.jobs.validation.collectives import collective_sweeps, model_bus_bandwidth, sweep_links, tcpxo_fit

MiB = 2**20


def _nvl72(racks: int) -> GroupLinks:
    """72 GPUs per NVLink domain, 640 GB/s of NVLink per GPU, one 45 GB/s NIC per GPU."""
    return GroupLinks(72 * racks, 72, racks, 640e9, 72 * 45e9, arch="blackwell", nvls_gain=1.25)


def test_chunk_is_one_step_of_the_default_simple_buffer():
    assert TREE_SIMPLE_CHUNK_BYTES == 512 * 1024  # 4 MiB / 8 steps


@pytest.mark.parametrize("racks, expected_us", [
    # 2 x (71 NVLink hops x 524288 B x 16 / 640 GB/s = 13.1072 us + levels x 524288 B / 45 GB/s = 11.6508 us;
    # a channel's network share min(72 x 45 / 16, 72 x 45 / 72) = 45 GB/s)
    (20, 2 * (71 * 524288 * 16 / 640e9 + 5 * 524288 / 45e9) * 1e6),   # ceil(log2 20) = 5 levels: 1977.7 us
    (2, 2 * (71 * 524288 * 16 / 640e9 + 1 * 524288 / 45e9) * 1e6),    # one level: 1884.5 us
])
def test_fill_across_nvl72_racks_by_hand(racks, expected_us):
    fill = float(tree_chain_fill(512 * MiB, _nvl72(racks)))
    assert fill * 1e6 == pytest.approx(expected_us, rel=1e-9)  # exact arithmetic on the same inputs


def test_fill_uses_the_payloads_share_below_a_chunk_per_channel():
    # 1 MiB / 16 channels = 64 KiB per chunk: an eighth of the 512 KiB fill
    links = _nvl72(20)
    assert float(tree_chain_fill(MiB, links)) == pytest.approx(float(tree_chain_fill(512 * MiB, links)) / 8, rel=1e-9)


def test_no_fill_inside_one_domain_or_where_a_profile_states_its_own():
    assert float(tree_chain_fill(512 * MiB, _nvl72(1))) == 0.0
    assert float(tree_chain_fill(512 * MiB, replace(_nvl72(20), net_stages=8.5, net_stage_bytes=16 * MiB))) == 0.0


def test_fill_is_time_only_the_tuner_estimate_keeps_nccl_latency_model():
    links = _nvl72(20)
    seconds, _, tuner = options("all_reduce", 512 * MiB, links)[("tree", "Simple")]
    assert float(seconds) - float(tuner) == pytest.approx(float(tree_chain_fill(512 * MiB, links)), rel=1e-9)
    seconds, _, tuner = options("all_reduce", 512 * MiB, links)[("tree", "LL128")]  # LL128 chunks shrink
    assert float(seconds) == float(tuner)


def test_fill_matches_the_tcpxo_fill_fitted_on_its_named_rows(monkeypatch):
    """Cross-check on a curve where tree/Simple ran (GCP A3 Mega, 2 x 8 H100): under the profile's
    NCCL_BUFFSIZE=8 MiB a chunk is 1 MiB; the formula, not fitted, gives 0.8229 ms (worked below), the fill
    fitted on the 1 - 8 GiB rows 0.8645 ms (net_stages x 16 MiB at the tree's algbw). The two are
    independent estimates 4.8% apart: tolerance 6% (the gap plus a point for the fit's refits)."""
    sweep = next(s for s in collective_sweeps() if s["id"] == "a3mega-h100-2nodes-tcpxo")
    links = sweep_links(sweep, sweep["series"][0], 8)
    _, stages = tcpxo_fit()
    unstaged = replace(links, net_stages=0.0)
    _, _, _, bus = collectives.chosen("all_reduce", 8 << 30, unstaged)
    fitted = stages * links.net_stage_bytes / (bus * 16 / 30)
    monkeypatch.setattr(collectives, "TREE_SIMPLE_CHUNK_BYTES", (8 << 20) / 8)
    # by hand: chunk min(8 GiB / 16 channels, 8 MiB / 8 steps) = 1 MiB; NVLink per direction
    # 900 / 2 GB/s x ring_efficiency 0.82 = 369 GB/s (catalog/hardware/h100-sxm.toml); network 8 GPUs x
    # 200 Gb/s (gpudirect-tcpxo profile) / 8 x 0.90 (topology.DEFAULT_SCALE_OUT_EFFICIENCY) = 180 GB/s a
    # node, a channel's share min(180 / 16, 180 / 8) = 11.25 GB/s; 2 nodes: ceil(log2 2) = 1 level.
    # fill = 2 x (7 hops x 1 MiB x 16 / 369 GB/s + 1 x 1 MiB / 11.25 GB/s) = 0.82295 ms (exact arithmetic)
    by_hand = 2 * (7 * 2**20 * 16 / (450e9 * 0.82) + 1 * 2**20 / (8 * 200e9 / 8 * 0.90 / 16))
    assert float(tree_chain_fill(8 << 30, unstaged)) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(fitted, rel=0.06)  # fitted: 8.533 stages (tcpxo_fit) -> 0.8645 ms


@pytest.mark.parametrize("sweep_id", ["coreweave-gb200-nvl72-2racks", "coreweave-gb200-nvl72-20racks"])
def test_gb200_racks_under_nccl_2_26_2_run_no_ll128(sweep_id):
    sweep = next(s for s in collective_sweeps() if s["id"] == sweep_id)
    assert "2.26.2" in sweep["source"]
    series = sweep["series"][0]
    for payload, _ in series["points"]:
        _, label = model_bus_bandwidth(sweep, series, 72, payload)
        assert not label.endswith("LL128"), (payload, label)


def test_nvls_tree_loop_uses_64_kib_chunks_from_four_domains():
    """enqueue.cc @v2.26.2-1 caps NVLS-tree chunks at 64 KiB when nNodes >= 4: 32 channels x 8 heads x
    64 KiB = 16 MiB on 4 B200 nodes, x 128 KiB = 32 MiB on 2 or 3; NVLS on one domain keeps 128 KiB."""
    def hgx(nodes):
        return GroupLinks(8 * nodes, 8, nodes, 680e9, 8 * 45e9, arch="blackwell", nvls_gain=1.25)
    assert float(collectives.nvls_loop_bytes(hgx(4), tree=True)) == 32 * 8 * 64 * 1024
    assert float(collectives.nvls_loop_bytes(hgx(3), tree=True)) == 32 * 8 * 128 * 1024
    assert float(collectives.nvls_loop_bytes(hgx(2), tree=True)) == 32 * 8 * 128 * 1024
    assert float(collectives.nvls_loop_bytes(hgx(1), tree=False)) == 24 * 8 * 128 * 1024
