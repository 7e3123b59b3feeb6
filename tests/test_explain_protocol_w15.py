"""`plan --explain`'s algorithm / protocol column for the rows NCCL runs as send / recv pairs (issue 37: per
collective the bytes, algorithm / protocol, link, time, exposed time; wave 15 W2).

The column printed 'all-to-all' / 'send/recv' there. NCCL runs the 'alltoall' dispatcher's all-to-all and a PP or
CP send as p2p pairs whose protocol addP2pToPlan picks per peer (NVIDIA/nccl@v2.27.7-1 enqueue.cc L822, L835-836):
LL while the peer's bytes are at most p2pnChannelsPerPeer x NCCL_P2P_LL_THRESHOLD (16 KiB, L783), else Simple; a
network peer Simple (no LL buffer on p2p net connections by default: core.comm.p2p_schedule.p2p_uses_ll).
p2pnChannelsPerPeer (graph/paths.cc L798-867): 32 inside one NVLink domain (2 x 18 H100 links, capped at 32 p2p
channels), 2 once a network peer is in the communicator, halved to 1 while 2 x ranks > 4 x 32, and 2 for a PCIe
peer (L809-815). The 'flex' dispatcher runs DeepEP's or HybridEP's own kernels: no NCCL protocol. The time column
is not touched (the rows' seconds are step_comm's)."""

from __future__ import annotations

import pytest

from gpuplan.core.comm.collective_cost import CollectiveCost, DirectLinks
from gpuplan.jobs.plan.explain import _algorithm

KIB = 1024


def _row(parallelism, collective, bytes_per_call, ranks, per_domain):
    return CollectiveCost(parallelism, collective, 4.0, float(bytes_per_call), ranks, 1.0, 1.0,
                          links=DirectLinks(ranks, per_domain, 369e9, 45e9))


@pytest.mark.parametrize("ranks, per_domain, per_peer_limit, pcie, protocol", [
    # 8 ranks in one NVLink domain: 32 channels a peer x 16 KiB = 512 KiB a peer, 8 x 512 KiB = 4 MiB a call
    (8, 8, 512 * KIB, False, "LL"),
    # 16 ranks over 2 domains: its network peers set 2 channels a peer, 2 x 16 KiB = 32 KiB for the NVLink peers
    (16, 8, 32 * KIB, False, "LL in-domain, Simple across domains"),
    # 128 ranks over 16 domains: 2 x 128 > 4 x 32, halved to 1 channel a peer: 16 KiB
    (128, 8, 16 * KIB, False, "LL in-domain, Simple across domains"),
    # 4 PCIe peers in one node (an L40S box): 2 channels a peer (paths.cc L814), 32 KiB
    (4, 4, 32 * KIB, True, "LL"),
])
def test_the_all_to_all_runs_ll_up_to_channels_x_16_kib_a_peer(ranks, per_domain, per_peer_limit, pcie, protocol):
    # a peer's bytes: the call's routed bytes spread evenly over the ep ranks
    at_limit = _row("EP", "all-to-all", per_peer_limit * ranks, ranks, per_domain)
    past_limit = _row("EP", "all-to-all", (per_peer_limit + 1) * ranks, ranks, per_domain)
    assert _algorithm(at_limit, pcie) == f"p2p / {protocol}"
    assert _algorithm(past_limit, pcie) == "p2p / Simple"


def test_an_all_to_all_with_one_rank_a_domain_is_all_network_peers_so_simple():
    # etp 8 on 8-GPU domains: 1 expert rank a domain, every peer across the network, even at 1 KiB a peer
    assert _algorithm(_row("EP", "all-to-all", 16 * KIB, 16, 1)) == "p2p / Simple"


def test_a_pipeline_or_cp_send_is_one_peer_with_the_whole_call():
    # inside a domain (2 ranks, both there): 32 channels x 16 KiB = 512 KiB for the one peer
    assert _algorithm(_row("PP", "send/recv", 512 * KIB, 2, 2)) == "p2p / LL"
    assert _algorithm(_row("CP", "K/V ring send/recv", 512 * KIB + 1, 2, 2)) == "p2p / Simple"
    # across domains (1 of the 2 ranks a domain): a network peer, Simple at any size
    assert _algorithm(_row("PP", "send/recv", 1 * KIB, 2, 1)) == "p2p / Simple"


@pytest.mark.parametrize("backend, kernels", [("deepep", "DeepEP"), ("hybridep", "HybridEP")])
def test_the_flex_dispatcher_names_its_backends_kernels_not_an_nccl_protocol(backend, kernels):
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.plan.explain import communication_table
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.planner.plan import evaluate_layout

    ev = evaluator_for(PlanInputs(model="qwen3-30b-a3b", gpu="h100", gpus="16", framework="megatron",
                                  ep_dispatcher="flex", flex_backend=backend))
    plan = evaluate_layout(ev, ParallelLayout(dp=16, ep=8, zero=1, micro_batch=1, global_batch=256), "none", 256.0)
    (ep,) = [r for r in communication_table(plan).rows if r[0] == "EP"]
    assert ep[1] == f"all-to-all ({kernels})" and ep[4] == f"{kernels} kernels"
    # the time columns are the step's own EP seconds, as before
    (cost,) = [c for c in plan.step.collectives if c.parallelism == "EP"]
    assert ep[-2:] == (f"{float(cost.total):.3f}", f"{float(cost.exposed):.3f}")


def test_the_form_chosen_knowing_label_is_the_sweeps_own_flag():
    """validation.collectives.case_kind reads ``form_chosen_knowing`` off the sweep as it reads ``fitted``: one sweep
    in collective_measurements.yaml carries it (DeepEP#303's 8 H20), and an all-to-all point < 16 MiB of a sweep
    without it is plainly held out."""
    from gpuplan.jobs.validation import collectives as V

    flagged = [s["id"] for s in V.collective_sweeps() if s.get("form_chosen_knowing")]
    assert flagged == ["deepep303-h20-alltoall-1node"]
    plain = {"id": "a", "nodes": 1}
    assert V.case_kind(plain, 4096, "all_to_all").endswith("payload < 16 MiB (held out)")
    assert V.case_kind({**plain, "form_chosen_knowing": True}, 4096, "all_to_all").endswith(
        f"payload < 16 MiB ({V.FORM_CHOSEN_KNOWING})")
    # a fitted point stays 'fitted' under the flag
    assert V.case_kind({**plain, "form_chosen_knowing": True, "fitted": [4096]}, 4096).endswith("(fitted)")
    with pytest.raises(ValueError, match="sweep a: form_chosen_knowing must be true or false"):
        V.case_kind({**plain, "form_chosen_knowing": "yes"}, 4096, "all_to_all")
