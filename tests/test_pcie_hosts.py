"""The link model's host tier (core.comm.host_tier): an H100 NVL server of 8 cards as 4 NVLink-bridged pairs
on PCIe Gen5 x16 (catalog h100-nvl.toml devices_per_node 8, domain_size 2, host_link_gbyte_s_bidirectional
128). A group inside a pair rides the bridge, one past it inside the host rides PCIe, one past the host
the network.

Hand-worked figures, ring all-reduce / Simple (core.comm.collectives), S = 256 MiB = 268,435,456 B:
- bridge 600 GB/s both ways -> 300 per direction x 0.8 = 240 GB/s; PCIe Gen5 x16 128 -> 64 x 0.8 = 51.2 GB/s;
  the default NIC 400 Gb/s a GPU -> 50 GB/s x 0.9 = 45 GB/s, 8 a host = 360 GB/s.
- latency (tuning.cc constants): base 8.4 us + steps x 3.4 us (NVLink) or 5.7 us (PCI), 14 us a network step.
- tp 2: 8.4 + 2 x 3.4 = 15.2 us; S x 2 x 1 / 2 / 240e9 = 1.118481 ms -> 1.133681 ms.
- tp 4: 8.4 + 6 x 5.7 = 42.6 us; 1.5 S / 51.2e9 = 7.864320 ms -> 7.906920 ms.
- tp 8: 8.4 + 14 x 5.7 = 88.2 us; 1.75 S / 51.2e9 = 9.175040 ms -> 9.263240 ms.
- dp 16 over 2 hosts: bus min(51.2 x 8 / 7, 360) = 58.514 GB/s; 1.875 S / 58.514e9 = 8.601600 ms; latency
  (8.4 + 28 x 5.7 + 2 x 14) x 1.4 (ring plateau) = 274.4 us -> 8.876000 ms.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.catalog import hardware_entries, load_accelerator
from gpuplan.core.comm import host_tier
from gpuplan.core.comm.collectives import chosen, collective_seconds
from gpuplan.core.comm.topology import DEFAULT_SCALE_UP_EFFICIENCY, DEFAULT_SCALE_UP_LATENCY, cluster_for

S = 256 * 2**20


@pytest.fixture(scope="module")
def nvl():
    return load_accelerator("h100-nvl")


@pytest.fixture(scope="module")
def host(nvl):
    return cluster_for(nvl)


def test_the_catalog_states_the_host_its_pairs_and_their_pcie_link(nvl):
    assert (nvl.devices_per_node, nvl.scale_up_ranks) == (8, 2)
    assert nvl.host_link_bandwidth == pytest.approx(128e9)  # PCIe Gen5 x16, both directions
    assert any("SR675_V3_8xH100_NVL" in s for s in nvl.sources)  # MLPerf Inference v4.1, 8 a node


def test_only_parts_whose_catalog_states_a_host_tier_have_one():
    """Every other part's cluster is the node it was (host_bandwidth 0: Cluster.group / link / span_link, which
    step_comm.link reads, time them as before), so validate rows not on an H100 NVL are unchanged."""
    tiered = sorted(i for i in hardware_entries() if load_accelerator(i).host_link_bandwidth)
    assert tiered == ["h100-nvl"]
    for gpu_id in hardware_entries():
        if gpu_id not in tiered:
            assert cluster_for(load_accelerator(gpu_id)).host_bandwidth == 0, gpu_id


def test_the_default_node_is_the_host_and_a_pair_alone_has_no_tier(nvl, host):
    assert (host.gpus_per_node, host.domain, host.host_bandwidth) == (8, 2, pytest.approx(64e9))
    pair = cluster_for(nvl, 2)
    assert (pair.gpus_per_node, pair.host_bandwidth) == (2, 0.0)


def test_the_host_tier_is_the_pcie_only_parts_link_not_a_copy(host):
    """One rule (review w16 R1 S2): the tier reads topology's DEFAULT_SCALE_UP_EFFICIENCY / _LATENCY, so an H100
    PCIe in a server of 8 (PCIe Gen5 x16, 128 GB/s both directions) and an H100 NVL past its pair time the same hop
    alike: 0.8 x 64 = 51.2 GB/s, 5 us; host_tier keeps no constants of its own."""
    pcie = cluster_for(load_accelerator("h100-pcie"), 8)
    assert float(host.group(4).intra) == pytest.approx(float(pcie.group(4).intra)) == pytest.approx(51.2e9)
    assert host.link(3) == pcie.link(3) == (pytest.approx(DEFAULT_SCALE_UP_EFFICIENCY * 64e9), DEFAULT_SCALE_UP_LATENCY)
    assert not [n for n in vars(host_tier) if n.isupper()]


@pytest.mark.parametrize("ranks, stride, intra, kind", [
    (2, 1, 240e9, "nvlink"),  # tp 2: one pair
    (4, 1, 51.2e9, "pci"),  # tp 4: two pairs
    (8, 1, 51.2e9, "pci"),  # tp 8: the host
    (2, 2, 51.2e9, "pci"),  # a dp pair past tp 2: ranks 0 and 2, two pairs
    (4, 2, 51.2e9, "pci"),
])
def test_a_group_rides_the_bridge_only_inside_a_pair(host, ranks, stride, intra, kind):
    links = host.group(ranks, stride)
    assert links.intra == pytest.approx(intra) and links.intra_kind == kind


@pytest.mark.parametrize("ranks, seconds", [(2, 1.1336810667e-3), (4, 7.90692e-3), (8, 9.26324e-3), (16, 8.876e-3)])
def test_hand_worked_all_reduce_times(host, ranks, seconds):
    algorithm, protocol, modelled, _ = chosen("all_reduce", S, host.group(ranks, 1))
    assert (algorithm, protocol) == ("ring", "Simple")
    assert modelled == pytest.approx(seconds, rel=1e-6)


def test_dp_across_two_hosts_leaves_each_host_once(host):
    links = host.group(16, 1)
    assert (int(links.per_node), float(links.nodes)) == (8, 2.0)
    assert float(links.net) == pytest.approx(8 * 45e9)


def test_layouts_in_bulk_match_one_by_one(host):
    """The planner costs arrays of layouts: a mixed array (tp 2 on the bridge, 4 and 8 on PCIe) reads NCCL's
    per-step latencies per layout (host_tier.intra_latency_us)."""
    tps = np.array([2, 4, 8])
    for size in (2**14, 2**20, S):
        bulk = collective_seconds("reduce_scatter", size, host.group(tps, np.ones(3, dtype=int)))
        one = [float(collective_seconds("reduce_scatter", size, host.group(int(t), 1))) for t in tps]
        assert bulk == pytest.approx(one, rel=1e-12)


def test_point_to_point_links_have_three_tiers(host):
    assert host.link(2) == (pytest.approx(240e9), 5e-6)
    assert host.link(3) == (pytest.approx(51.2e9), 5e-6)
    assert host.link(8) == (pytest.approx(51.2e9), 5e-6)
    assert host.link(9) == (pytest.approx(45e9), 15e-6)


@pytest.fixture(scope="module")
def plans():
    from gpuplan import plan_report

    ask = {"model": "llama-3.1-8b", "gpu": "h100-nvl", "gpus_per_node": 8}
    return {tp: plan_report({**ask, "gpus": 8, "tp": tp}) for tp in (2, 8)} | {
        "two hosts": plan_report({**ask, "gpus": 16})}


def test_the_plan_the_refusal_named_answers(plans):
    """`plan llama-3.1-8b --gpu h100-nvl --gpus 16 --gpus-per-node 8` was refused (no tier between the pair and the
    network); it answers on two hosts, below 100% MFU."""
    answer = plans["two hosts"]
    assert answer.value("best_gpus") == 16 and 0 < answer.value("best_mfu") < 1


def test_tp_8_on_pcie_is_slower_per_gpu_than_tp_2_on_the_bridge(plans):
    """8 GPUs, the same model and batch: tp 8 sends every layer's activations through PCIe at 51.2 GB/s where tp 2
    keeps them on the 240 GB/s bridge."""
    two, eight = plans[2], plans[8]
    assert "tp2 " in two.value("best_layout") and "tp8 " in eight.value("best_layout")
    assert eight.value("best_tokens_per_second") < two.value("best_tokens_per_second")
    assert 0 < eight.value("best_mfu") < two.value("best_mfu") < 1


def test_train_on_a_host_of_8_pays_the_tier_past_the_pair():
    """train --mfu predicted at 8 per node (refused before the host tier): tp 8 puts every layer's TP traffic on the
    host's PCIe, tp 2 on the bridge, so tp 8's communication per step is many times tp 2's and its MFU lower;
    docs/step.md's figures, 54.1% and 16.5% MFU (0.05 pt; 54.2% / 16.7% before wave 17's embedding / output exchanges). Memory has no node size, so no memory case here."""
    from gpuplan import TrainingInputs
    from gpuplan.jobs.training.estimate import estimate_training

    ask = {"model": "llama-3.1-8b", "gpu": "h100-nvl", "gpus": 8, "gpus_per_node": 8, "mfu": "predicted"}
    two, eight = (estimate_training(TrainingInputs(**ask, tp=tp)) for tp in (2, 8))
    assert two.value("mfu") == pytest.approx(0.541, abs=5e-4) and eight.value("mfu") == pytest.approx(0.165, abs=5e-4)
    assert eight.value("class_comm") > 10 * two.value("class_comm") > 0


def test_a_node_past_the_host_is_refused_naming_it(nvl):
    from gpuplan.schema.device_rules import largest_node

    assert largest_node(nvl) == 8


# -- review w16 R1's fixes (w16 MA) --

def test_serving_all_reduce_past_the_pair_takes_the_pcie_rule(nvl):
    """M1: NCCL past the pair is NCCL over PCIe, so kernels.PCIE_NCCL_SLOWDOWN (1.44) applies as on every PCIe-only
    part (tp_span.on_pcie, one rule): tp 4, S, NCCL only -> 1.44 x 7.906920 ms = 11.385965 ms; tp 2 inside the pair
    keeps NCCL's 1.133681 ms (no slowdown)."""
    from gpuplan.core.serving.kernels import tp_allreduce_seconds
    from gpuplan.core.serving.tp_span import on_pcie

    assert (on_pcie(nvl), on_pcie(nvl, 2), on_pcie(nvl, 4), on_pcie(nvl, 8)) == (False, False, True, True)
    assert not on_pcie(load_accelerator("h100"), 8) and on_pcie(load_accelerator("l40s"))
    four = tp_allreduce_seconds(S, 4, None, 5e-6, fabric=nvl, custom_max_bytes=0)
    assert four == pytest.approx(1.44 * 7.90692e-3, rel=1e-6)
    assert tp_allreduce_seconds(S, 2, None, 5e-6, fabric=nvl, custom_max_bytes=0) == pytest.approx(1.1336811e-3, rel=1e-6)


@pytest.fixture(scope="module")
def served():
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    return {tp: estimate_inference(InferenceInputs(model="llama-3-70b", gpu="h100-nvl", tp=tp)) for tp in (2, 4)}


def test_infer_says_the_host_pcie_and_its_slowdown_past_the_pair(served):
    """M2: infer's note for tp 4 names the host's PCIe between the pairs (not the network, no '--pp across nodes'),
    and the all-reduce assumption the 1.44; tp 2 has neither."""
    four = served[4]
    [note] = [n for n in four.notes if n.startswith("tp 4 spans")]
    assert "host's PCIe between the NVLink pairs" in note and "network" not in note and "--pp" not in note
    value = {a.key: a.value for a in four.assumptions}["tp_allreduce"]
    assert "x 1.44" in value
    # an H100 NVL is not a PCIe-only part: its group of 4 crosses PCIe between two bridged pairs (final read a)
    assert "past their NVLink pair" in value and "PCIe-only" not in value
    assert "x 1.44" not in {a.key: a.value for a in served[2].assumptions}["tp_allreduce"]
    assert not [n for n in served[2].notes if n.startswith("tp 2 spans")]
    assert four.value("tpot") < served[2].value("tpot")  # half the weights a GPU still wins at batch 1


def test_no_p2p_names_the_host_path_not_the_pair():
    """Without GPU P2P the ring runs through host memory on any part (kernels.host_path: a PCIe-only part), so
    the 1.44 is said of PCIe-only GPUs, not of GPUs past an NVLink pair an H100 SXM does not have (e0d7ab8d read
    plan.gpu, not the collectives' part, and said the latter at --no-p2p)."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    value = {a.key: a.value for a in estimate_inference(InferenceInputs(
        model="llama-3-8b", gpu="h100", tp=2, p2p=False)).assumptions}["tp_allreduce"]
    assert "x 1.44 on PCIe-only GPUs" in value and "NVLink pair" not in value


def test_infer_past_the_host_names_the_network():
    from gpuplan.jobs.inference.resolve import _span_note

    note = _span_note(16, load_accelerator("h100-nvl"))
    assert "scale-out network" in note and "PCIe between a server's NVLink pairs first" in note


@pytest.mark.parametrize("tp, pp, seconds", [
    (2, 2, 16384 / 51.2e9 + 5e-6),  # stages on two pairs of one host: PCIe
    (1, 2, 5e-6 + 16384 / 300e9),  # both stages in one pair: the bridge (600 GB/s both ways, the caller's link)
    (2, 8, 6 * (16384 / 51.2e9 + 5e-6) + 16384 / 45e9 + 15e-6),  # stage 3 -> 4 leaves the host: the network
])
def test_serving_pp_hops_between_pairs_ride_the_host(nvl, tp, pp, seconds):
    """S1: a serving pipeline hop between two pairs of one host rides its PCIe (51.2 GB/s, 5 us), as training's
    sends do; only a hop past the host of 8 the network (45 GB/s, 15 us). 16 KiB hidden states."""
    from gpuplan.core.serving.pp_hops import pipeline_hop_seconds

    assert pipeline_hop_seconds(16384.0, tp, pp, nvl, 600e9, 5e-6) == pytest.approx(seconds, rel=1e-9)


def test_plan_names_the_server_it_assumed_once(plans):
    """S3: without --gpus-per-node the plan's notes name the server of 8 as 4 NVLink pairs on PCIe once, with the
    flag to change it; given the flag, or on a part of one domain a host, not."""
    from gpuplan.core.comm.host_tier import assumed_host_note

    [line] = assumed_host_note(load_accelerator("h100-nvl"), None)
    assert line.startswith("host: 8 NVIDIA H100 NVL") and "4 NVLink domains of 2" in line
    assert "64 GB/s" in line and "--gpus-per-node" in line
    assert assumed_host_note(load_accelerator("h100-nvl"), 8) == () == assumed_host_note(load_accelerator("h100"), None)
    assert not [n for n in plans[2].notes if n.startswith("host:")]  # --gpus-per-node 8 given


def test_explain_labels_the_host_tier_pcie(plans):
    """M3: plan --explain's link column says 'PCIe host' where the cost was timed on the tier: tp 2 pp 2 dp 2 on a
    host of 8 -- the PP send spans 8 ranks (51 GB/s) and dp 2 at stride 2 is ranks 0 and 2, two pairs; TP stays
    'NVLink (2 GPUs)'."""
    from gpuplan import plan_report

    report = plan_report({"model": "llama-3.1-8b", "gpu": "h100-nvl", "gpus": 8, "gpus_per_node": 8, "tp": 2,
                          "pp": 2, "explain": True})
    [table] = [t for t in report.tables if t.title.startswith("Communication per step")]
    links = {(row[0], row[1]): row[5] for row in table.rows}
    assert links[("TP", "RS + AG (SP)")] == "NVLink (2 GPUs)"
    assert links[("PP", "send/recv")] == "PCIe host (51 GB/s)"
    assert links[("DP", "grad reduce-scatter / all-reduce")] == "PCIe host (2 GPUs)"
