"""Groups that straddle a scale-up domain (issue 37, wave 17; core.comm.group_geometry, Cluster.group).

Hand-worked ring times use NCCL's constants as core.comm.collectives states them (tuning.cc: ring/Simple base
8.4 us, 3.4 us a step on NVLink, 14 us a step on the network) and the catalog's links: H100 SXM NVLink 900 / 2 =
450 GB/s x 0.82 = 369 GB/s, a 400 Gb/s NIC 50 GB/s x 0.9 = 45 GB/s a GPU; GB200 NVLink 1800 / 2 = 900 GB/s x 0.756.
"""

from __future__ import annotations

import json
import re

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
    """The NVL72 rack is one domain of 18 4-GPU trays; tp 16 does not divide 72, but in a job larger than a rack
    the model takes the scheduler's whole-tray segments (--segment 16: 64 GPUs a rack), which hold whole groups (4 of
    them in its 64), so the group is one domain: 15 NVLink steps at 900 x 0.756."""
    part = load_accelerator(gpu)
    cluster = cluster_for(part).for_job(1024)
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
    # a group of 64 fits one --segment 16 segment (16 trays = 64 GPUs of a rack, NVIDIA's value for jobs of 128 GPUs
    # or more), so it sits in one rack; a job of up to 72 GPUs is taken as one rack's (a job that fits a block is
    # placed in it), though NVIDIA's --segment 4 for 32-64-GPU jobs would let one spread (not modelled)
    assert worst_split(64, 1, 72, True, 256).domains == 1


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


def test_tp_rows_keyed_on_the_job_size_equal_every_row(monkeypatch):
    """Review S3: rows of one (tp, bytes) whose jobs differ straddle differently on 6-GPU nodes (tp 4 on a job of 4
    sits in one node; on 12 or 24 ranks 4-7 are 2 + 2), so the TP key holds the job's size: grouped equals every row
    costed alone, and a key without it is refused (seconds_by_rows' ValueError), not answered from a first row."""
    from gpuplan.catalog import load_model
    from gpuplan.core import row_groups as R
    from gpuplan.core.comm.dp_costs import seconds_by_rows
    from gpuplan.core.comm.step_comm import _tp_cost
    from gpuplan.core.time.step import StepSettings

    spec, settings = load_model("llama-3.1-8b"), StepSettings(seq_len=8192)
    cluster = cluster_for(load_accelerator("h100-sxm"), 6)
    jobs = np.tile(np.array([4.0, 12.0, 24.0, 48.0]), 24)  # 96 rows: past GROUP_MIN_ROWS
    tp, act_bytes = np.full(96, 4.0), np.full(96, 8192 * spec.hidden_size * 2.0)
    ones = np.ones(96)
    on_job = cluster.for_job(jobs)
    links = on_job.group(tp, 1)
    assert list(links.per_node[:4]) == [4, 2, 2, 2] and list(links.nodes[:4]) == [1, 2, 2, 2]
    grouped = _tp_cost(spec, on_job, settings, tp, ones, ones, act_bytes)
    for row in range(4):
        alone = _tp_cost(spec, cluster.for_job(jobs[row]), settings, tp[row], 1.0, 1.0, act_bytes[row])
        assert float(alone.total) == float(grouped.total[row]), row
    assert float(grouped.total[1]) > 2 * float(grouped.total[0])  # the network term (0.588 against 0.155 ms at 64 MiB)
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**9)
    every_row = _tp_cost(spec, on_job, settings, tp, ones, ones, act_bytes)
    assert np.array_equal(every_row.total, grouped.total) and np.array_equal(every_row.exposed, grouped.exposed)
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 64)
    with pytest.raises(ValueError, match="varies inside a group"):
        seconds_by_rows("reduce_scatter", act_bytes, links, R.group_rows(tp, act_bytes))


def test_a_gpu_range_on_six_gpu_nodes_grouped_equals_every_row(run_json, monkeypatch):
    """Review S3's case: plan over 4-48 GPUs of 6-GPU nodes at tp 4 (jobs of 4, 8, 16, 32 and 48 share each TP
    key's other columns): the search with the row grouping gives the answer it gives with every row costed."""
    from gpuplan.core import row_groups as R

    args = ("plan", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "4-48", "--gpus-per-node", "6", "--tp", "4")
    def answer():  # the search's own timing ('in 35 ms', '18,383 layouts/s') aside
        return re.sub(r"\d[\d,.]* (ms|layouts/s)", r"\1", json.dumps(run_json(*args)))
    grouped = answer()
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**9)
    assert answer() == grouped


def test_cp_ring_and_pipeline_sends_follow_the_straddle():
    """Review S4: tp 2 cp 2 on 48 GPUs of 6-GPU nodes: CP group {4, 6} sits in nodes 0 and 1, so the ring is timed
    on the network (45 GB/s a GPU), not NVLink; on 8-GPU nodes every CP group of 2 x 2 stays in one. A pipeline
    of 3 stages at stride 4 (tp 4, dp 1, 12 GPUs): stages {1, 5, 9}: 1 + 2, its sends on the network too, where
    the rule on spans (12 > 6) said so as well; pp 2 at stride 2 on 4 GPUs of a 6-GPU node stays on NVLink."""
    from gpuplan.core.comm.step_comm import placed_span, send_links

    h100 = load_accelerator("h100-sxm")
    six, eight = cluster_for(h100, 6).for_job(48), cluster_for(h100, 8).for_job(48)
    assert int(placed_span(six, 2, 2)) == 7 and int(placed_span(eight, 2, 2)) == 4
    assert float(send_links(six, placed_span(six, 2, 2)).per_domain) == 1.0
    assert float(send_links(eight, placed_span(eight, 2, 2)).per_domain) == 2.0
    small = cluster_for(h100, 6)
    assert int(placed_span(small.for_job(12), 3, 4)) == 7 and int(placed_span(small.for_job(4), 2, 2)) == 4


def test_arrays_broadcast_and_fractional_rows_stand_alone():
    """Review S6 / N7: a job array beside scalar degrees broadcasts (tp 4 on jobs of 12 and 24: 2 + 2 each); a
    fractional row keeps the even rule without undoing the straddle of the whole rows beside it."""
    cluster = cluster_for(load_accelerator("h100-sxm"), 6)
    both = cluster.for_job(np.array([12, 24])).group(4, 1)
    assert list(both.per_node) == [2, 2] and list(both.nodes) == [2, 2]
    mixed = cluster.for_job(24).group(np.array([4, 1.5]), 1)
    assert list(mixed.per_node) == [2, 1.5] and list(mixed.nodes) == [2, 1]


def test_nvl72_spread_names_its_segments_and_ascend_fills_by_rank():
    """Review S2 / N9: an expert group of 128 on GB200 is labelled with the placement the model assumes; the
    Ascend 910C's 384-NPU supernode of 8-NPU hosts has no scheduler source, so no segment rule (host_gpus 0)."""
    gb200 = cluster_for(load_accelerator("gb200")).for_job(256)
    assert gb200.group(128, 1).split == "as 64 + 64 over 72-GPU domains in whole-host segments (Slurm topology/block)"
    assert gb200.group(16, 1).split == ""
    assert cluster_for(load_accelerator("ascend-910c")).host_gpus == 0
    assert cluster_for(load_accelerator("tpu-v4")).host_gpus == 4


def test_a_straddling_groups_chain_is_its_fullest_domain():
    """Review N8: tp 8 on 24 GPUs of 6-GPU nodes, ranks 0-7 sit 6 + 2: the NIC share is the 2's (per_node 2) but the
    tree's chain inside a domain is the 6's, 5 NVLink steps up and 5 down, not 1 (LL128, no chunk fill: the latency
    differs by 2 x (5 - 1) intra steps, the bandwidth not at all); dp 3 at stride 4 ({0, 4, 8}: 2 + 1) has 3 ranks on
    2 nodes, so the ring keeps its own network latency (NCCL's ppn = 3 / 2 > 1), not the tree's."""
    from dataclasses import replace

    from gpuplan.core.comm import collectives as K

    cluster = cluster_for(load_accelerator("h100-sxm"), 6)
    links = cluster.for_job(24).group(8, 1)
    assert (int(links.per_node), int(links.most), float(links.nodes)) == (2, 6, 2.0)
    size, proto = 2**20, 1
    chained = float(K._tree(size, links, proto)[0])
    short = float(K._tree(size, replace(links, most=None), proto)[0])  # the chain read from per_node (2)
    step = float(K.intra_us(K.HW_US, links, "tree", proto)) * 1e-6
    assert chained - short == pytest.approx(2 * (5 - 1) * step, rel=1e-9)
    dp = cluster.for_job(12).group(3, 4)
    assert (int(dp.per_node), int(dp.most), float(dp.nodes)) == (1, 2, 2.0)
    assert not bool(K._ring_parts("all_reduce", size, dp)[1])  # not the ppn = 1 case
    assert cluster_for(load_accelerator("h100-sxm"), 8).for_job(16).group(4, 1).most is None  # even: per_node
