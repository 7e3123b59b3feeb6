"""Groups that straddle a scale-up domain (issue 37, wave 17; core.comm.group_geometry, Cluster.group).

Hand-worked ring times use NCCL's constants as core.comm.collectives states them (tuning.cc: ring/Simple base
8.4 us, 3.4 us a step on NVLink, 14 us a step on the network) and the catalog's links: H100 SXM NVLink 900 / 2 =
450 GB/s x 0.82 = 369 GB/s, a 400 Gb/s NIC 50 GB/s x 0.9 = 45 GB/s a GPU; GB200 NVLink 1800 / 2 = 900 GB/s x 0.756.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import collective_seconds, options
from gpuplan.core.comm.group_geometry import worst_split
from gpuplan.core.comm.topology import cluster_for

S = 64 * 2**20  # bytes of one reduce-scatter (TP with sequence parallelism)
NVLINK_H100, NIC = 450e9 * 0.82, 45e9
BASE, UP_STEP, NET_STEP = 8.4e-6, 3.4e-6, 14e-6


def _ring_simple(links):
    return float(options("reduce_scatter", S, links)[("ring", "Simple")][0])


def test_tp4_on_six_gpu_domains_rides_the_network_two_plus_two():
    """Ranks 4-7 of tp 4 sit 2 + 2 over two 6-GPU domains: the ring's bus = min(NVLink x 2 / 1, 2 NICs) = 90 GB/s,
    2 NVLink steps and 1 network step; on 8-GPU domains the same group stays on NVLink (3 steps at 369 GB/s)."""
    h100 = load_accelerator("h100-sxm")
    six, eight = cluster_for(h100, 6).for_job(12).group(4, 1), cluster_for(h100, 8).for_job(16).group(4, 1)
    assert (int(six.per_node), float(six.nodes), float(six.net)) == (2, 2.0, 2 * NIC)
    assert (int(eight.per_node), float(eight.nodes)) == (4, 1.0)
    straddling = BASE + 2 * UP_STEP + NET_STEP + 0.75 * S / (2 * NIC)  # 0.588441 ms
    inside = BASE + 3 * UP_STEP + 0.75 * S / NVLINK_H100  # 0.155000 ms
    assert _ring_simple(six) == pytest.approx(straddling, rel=1e-9)
    assert _ring_simple(eight) == pytest.approx(inside, rel=1e-9)
    # NCCL's tuner runs the ring / Simple on both: the straddling group is slower by the network term
    assert float(collective_seconds("reduce_scatter", S, six)) == pytest.approx(straddling, rel=1e-9)
    assert float(collective_seconds("reduce_scatter", S, eight)) == pytest.approx(inside, rel=1e-9)
    assert six.split == "over 6-GPU domains: 2 + 2" and eight.split == ""


def test_tp16_on_hgx_uses_the_network_eight_a_node():
    """tp 16 on 8-GPU HGX nodes: 8 + 8, bus min(369 x 8 / 7, 8 x 45) = 360 GB/s, 14 NVLink steps, 1 network step."""
    links = cluster_for(load_accelerator("h100-sxm")).group(16, 1)
    assert (int(links.per_node), float(links.nodes), float(links.net)) == (8, 2.0, 8 * NIC)
    assert links.split == ""  # an even split: not a straddle
    assert _ring_simple(links) == pytest.approx(BASE + 14 * UP_STEP + NET_STEP + 15 / 16 * S / (8 * NIC), rel=1e-9)


@pytest.mark.parametrize("gpu", ["gb200", "gb300"])
def test_tp16_on_nvl72_stays_on_nvlink(gpu):
    """The NVL72 rack is one domain of 18 4-GPU trays; tp 16 does not divide 72, but the scheduler's segments keep
    whole groups in a rack (4 of them in its 64), so the group is one domain: 15 NVLink steps at 900 x 0.756."""
    part = load_accelerator(gpu)
    cluster = cluster_for(part)
    assert (cluster.gpus_per_node, cluster.host_gpus) == (72, 4)
    links = cluster.group(16, 1)
    assert (int(links.per_node), float(links.nodes), links.split) == (16, 1.0, "")
    line = part.scale_up_bandwidth / 2 * cluster.scale_up_efficiency
    assert _ring_simple(links) == pytest.approx(BASE + 15 * UP_STEP + 15 / 16 * S / line, rel=1e-9)


def test_nvl72_groups_larger_than_a_rack_split_evenly():
    """An expert group of 128 consecutive ranks: 64 + 64 over two racks (the old rule: 72 and 1.78 domains); a data
    group of 16 beside tp 16: 4 a rack over 4 racks (unchanged)."""
    cluster = cluster_for(load_accelerator("gb200"))
    big, data = cluster.group(128, 1), cluster.group(16, 16)
    assert (int(big.per_node), float(big.nodes)) == (64, 2.0)
    assert (int(data.per_node), float(data.nodes)) == (4, 4.0)
    assert worst_split(64, 1, 72, True).domains == 1  # an expert-TP x EP group of 64 sits in one rack


@pytest.mark.parametrize("ranks, stride, domain, world, fewest, domains, members", [
    (8, 1, 6, 24, 2, 2, (6, 2)),     # 0-7: 6 + 2; 8-15: 4 + 4; 16-23: 2 + 6
    (8, 1, 6, None, 2, 2, (6, 2)),   # one communicator of 8: 6 + 2
    (12, 1, 8, 24, 4, 2, (8, 4)),    # 0-11: 8 + 4; 12-23: 4 + 8
    (3, 2, 8, 12, 1, 2, (1, 2)),     # dp 3 beside tp 2, pp 2: {6, 8, 10} is 1 + 2
    (3, 4, 6, 12, 1, 2, (2, 1)),     # dp 3 beside tp 4: {0, 4, 8} 2 + 1, {2, 6, 10} 1 + 2
])
def test_worst_split_by_hand(ranks, stride, domain, world, fewest, domains, members):
    found = worst_split(ranks, stride, domain, False, world)
    assert (found.fewest, found.domains) == (fewest, domains)
    assert sorted(found.members) == sorted(members) and min(found.members) == fewest


@pytest.mark.parametrize("ranks, stride, domain, world", [
    (4, 1, 6, 4),      # a 4-GPU job on a 6-GPU node: its one TP group sits in it
    (3, 2, 8, 6),      # dp 3 beside tp 2 on 6 of a node's 8
    (5, 1, 8, None),   # a 5-rank communicator alone (nccl-tests on one node)
    (4, 1, 6, None),
])
def test_a_job_inside_one_domain_does_not_straddle(ranks, stride, domain, world):
    found = worst_split(ranks, stride, domain, False, world)
    assert (found.fewest, found.domains, found.straddles) == (ranks, 1, False)


def test_even_groups_keep_the_even_rule():
    """Where the groups divide the domains evenly the links are the rule's before wave 17 (domain // stride a
    domain, ranks / that domains), every power-of-two degree and stride on 8-GPU nodes."""
    cluster = cluster_for(load_accelerator("h100-sxm")).for_job(4096)
    for ranks in (1, 2, 4, 8, 16, 64, 512):
        for stride in (1, 2, 4, 8, 16):
            links = cluster.group(ranks, stride)
            per_node = min(max(8 // stride, 1), ranks)
            assert (int(links.per_node), float(links.nodes), links.split) == (per_node, max(ranks / per_node, 1), "")


def test_arrays_agree_with_scalars():
    """The planner's arrays: each layout's group as its scalar one (tp 2 fits a 6-GPU domain, 4 and 8 straddle on
    24 GPUs, tp 4 on a job of 4 does not)."""
    cluster = cluster_for(load_accelerator("h100-sxm"), 6)
    tps, jobs = np.array([2, 4, 8, 6, 12, 4]), np.array([24, 24, 24, 24, 24, 4])
    links = cluster.for_job(jobs).group(tps, 1)
    for i, (tp, job) in enumerate(zip(tps, jobs)):
        one = cluster.for_job(int(job)).group(int(tp), 1)
        assert (int(links.per_node[i]), float(links.nodes[i])) == (int(one.per_node), float(one.nodes))
    assert list(links.per_node) == [2, 2, 2, 6, 6, 4] and list(links.nodes) == [1, 2, 2, 1, 2, 1]
    assert links.split == ""  # arrays carry no label


def test_plan_explain_names_the_straddle():
    """plan --explain's link column: tp 4 on 12 GPUs of 6-GPU nodes (ranks 4-7: 2 + 2, two NICs) and dp 3 beside it
    ({1, 5, 9}: 2 + 1, one NIC); on 8-GPU nodes the same TP groups sit in one node, on NVLink, and cost less."""
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.plan.explain import communication_table
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.planner.plan import evaluate_layout

    layout = ParallelLayout(dp=3, tp=4, zero=1, micro_batch=1, global_batch=48)
    rows = {}
    for node in (6, 8):
        ev = evaluator_for(PlanInputs(model="llama-3.1-8b", gpu="h100", gpus="12", gpus_per_node=node))
        plan = evaluate_layout(ev, layout, "none", float(layout.global_batch))
        rows[node] = {r[1]: r for r in communication_table(plan).rows[:-1]}
    tp6, tp8 = rows[6]["RS + AG (SP)"], rows[8]["RS + AG (SP)"]
    assert tp6[5] == "4 GPUs over 6-GPU domains: 2 + 2, NVLink + 90 GB/s NICs"
    assert tp8[5] == "NVLink (4 GPUs)"
    assert float(tp6[6]) > 2 * float(tp8[6])  # the network term: 90 against 369 GB/s at these sizes
    dp6 = next(r for what, r in rows[6].items() if r[0] == "DP")
    assert dp6[5] == "3 GPUs over 6-GPU domains: 2 + 1, NVLink + 45 GB/s NICs"
