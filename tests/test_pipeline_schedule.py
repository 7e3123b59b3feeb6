"""Stage-to-stage transfers on the critical path of Megatron-Core's pipeline schedules
(core.time.pipeline_schedule: critical_path_transfers, paired_step_transfers, exposed_p2p_seconds).

The closed forms are checked against an event simulation that replays the order of
pipeline_parallel/schedules.py@core_v0.15.0: virtual micro-batches in get_schedule_table's order
(groups of pp micro-batches, chunk by chunk), warm-up 2 (pp - rank - 1) + (vpp - 1) pp forwards
interleaved (L730-734; +1 under the combined 1F1B schedule), pp - rank - 1 without interleaving
(vpp 1 is Megatron's forward_backward_pipelining_without_interleaving, L2069-2072: its
send_forward_recv_backward and send_backward_recv_forward, L2206 / L2236, sit between the two steps),
then forward k + warm-up with backward k (as two steps, or as one combined step), then the cool-down
backwards. A virtual chunk's forward needs the previous
virtual stage's forward of the same micro-batch, its backward the next one's backward; outputs
leave at the end of the step that made them (``early``: that much before the end of a combined
step) and arrive ``p2p`` later on the other rank. Sends here do not block the sender: true of the
interleaved schedule (overlap_p2p_comm); without interleaving Megatron's exchanges block, which
tests/test_pp_blocking_w13.py replays (the count critical_path_transfers keeps for vpp 1), and the
non-blocking replay of that order is a lower bound (test_plain_1f1b_nonblocking_replay_is_a_lower_bound).
"""

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import volumes as C
from gpuplan.core.comm.step_comm import link
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.pipeline_schedule import critical_path_transfers, exposed_p2p_seconds, paired_step_transfers
from gpuplan.core.time.step import StepSettings, step_time


def _programs(pp, vpp, m, combined):
    order = [(mb, c) for g in range(0, m, pp) for c in range(vpp) for mb in range(g, min(g + pp, m))]
    fwd, bwd = order, [(mb, vpp - 1 - c) for mb, c in order]
    total, programs = len(order), []
    for rank in range(pp):
        warm = pp - rank - 1 if vpp == 1 else 2 * (pp - rank - 1) + (vpp - 1) * pp
        warm = min(warm + combined, total)
        ops = [(("F",) + fwd[k],) for k in range(warm)]
        for k in range(total - warm):
            pair = (("F",) + fwd[k + warm], ("B",) + bwd[k])
            ops += [pair] if combined else [pair[:1], pair[1:]]
        programs.append(ops + [(("B",) + bwd[k],) for k in range(total - warm, total)])
    return programs


def simulated_seconds(pp, vpp, m, p2p, combined, forward=1.0, backward=2.0, paired=3.0, early=0.0):
    """Makespan of one step on ``pp`` ranks (module docstring)."""
    def needs(kind, mb, c, rank):
        if kind == "F":
            return ("F", mb, c, rank - 1) if rank else (("F", mb, c - 1, pp - 1) if c else None)
        if rank < pp - 1:
            return ("B", mb, c, rank + 1)
        return ("B", mb, c + 1, 0) if c < vpp - 1 else ("F", mb, c, rank)

    programs, ready, end, pc = _programs(pp, vpp, m, combined), {}, [0.0] * pp, [0] * pp
    while any(pc[r] < len(programs[r]) for r in range(pp)):
        moved = False
        for r in range(pp):
            while pc[r] < len(programs[r]):
                op, start = programs[r][pc[r]], end[r]
                deps = [needs(*item, r) for item in op]
                if any(d is not None and d not in ready for d in deps):
                    break
                for d in deps:
                    if d is not None:
                        start = max(start, ready[d] + (p2p if d[3] != r else 0.0))
                end[r] = start + (paired if len(op) == 2 else forward if op[0][0] == "F" else backward)
                for item in op:
                    ready[item + (r,)] = end[r] - (early if len(op) == 2 else 0.0)
                pc[r], moved = pc[r] + 1, True
        assert moved, "the schedule deadlocked"
    return max(end)


def test_hand_counts():
    # pp 2 x vpp 24 (Qwen3-30B-A3B's 48 layers one per chunk): 47 boundaries there and back
    assert critical_path_transfers(2, 24, 32) == 94
    assert critical_path_transfers(1, 1, 8) == 0
    # plain 1F1B, blocking exchanges: m + 1 at pp 2, else 2 (pp - 1) + 2 (m - 1) - 1 (m >= 2)
    assert critical_path_transfers(8, 1, 1) == 14
    assert critical_path_transfers(2, 1, 8) == 9
    assert critical_path_transfers(4, 1, 8) == 6 + 14 - 1 == 19
    assert critical_path_transfers(8, 1, 16) == 14 + 30 - 1 == 43
    assert critical_path_transfers(16, 1, 64) == 30 + 126 - 1 == 155
    assert paired_step_transfers(2, 24, 32) == 32 * 24 - 48 + 2 - 2 == 720
    assert paired_step_transfers(1, 1, 64) == 0
    # clamped at 0 where the count formula goes negative (layouts Megatron refuses)
    assert paired_step_transfers(2, 1, 1) == 0 and paired_step_transfers(8, 4, 4) == 0
    # 1 ms transfers: 94 ms fill / drain; combined 1F1B without slack 814 ms, with 0.4 ms slack
    # 94 + 720 x 0.6 = 526 ms, with 1 ms or more only the fill / drain
    assert exposed_p2p_seconds(2, 24, 32, 1e-3) == pytest.approx(0.094)
    assert exposed_p2p_seconds(2, 24, 32, 1e-3, combined_1f1b=True) == pytest.approx(0.814)
    assert exposed_p2p_seconds(2, 24, 32, 1e-3, True, 0.4e-3) == pytest.approx(0.526)
    assert exposed_p2p_seconds(2, 24, 32, 1e-3, True, 2e-3) == pytest.approx(0.094)


@pytest.mark.parametrize("pp,vpp,m", [(2, 24, 32), (2, 12, 16), (8, 4, 16), (4, 12, 8), (8, 2, 24), (2, 2, 2)])
def test_interleaved_counts_replay_megatron_order(pp, vpp, m):
    p2p = 0.1
    for combined in (False, True):
        extra = simulated_seconds(pp, vpp, m, p2p, combined) - simulated_seconds(pp, vpp, m, 0.0, combined)
        assert extra == pytest.approx(exposed_p2p_seconds(pp, vpp, m, p2p, combined), abs=1e-6)
    # outputs leaving 0.05 before the paired step ends hide half of each 0.1 transfer there
    early = simulated_seconds(pp, vpp, m, p2p, True, early=0.05) - simulated_seconds(pp, vpp, m, 0.0, True, early=0.05)
    assert early == pytest.approx(exposed_p2p_seconds(pp, vpp, m, p2p, True, 0.05), abs=1e-6)


@pytest.mark.parametrize("forward,backward", [(1.0, 2.0), (1.0, 1.0), (1.0, 3.0)])
def test_plain_1f1b_nonblocking_replay_is_a_lower_bound(forward, backward):
    """Were the sends not to block, the steady state would keep 2 floor((pp - 1)(m - 1) / pp) transfers on
    the critical path besides the 2 (pp - 1) fill / drain (pp 8, m 16: 14 + 26 = 40); Megatron's blocking
    exchanges keep 43 (2 (m + pp) - 5: tests/test_pp_blocking_w13.py): never fewer, every pp 2-8, m 1-20."""
    p2p = 0.01
    for pp in range(2, 9):
        for m in range(1, 21):
            extra = (simulated_seconds(pp, 1, m, p2p, False, forward, backward)
                     - simulated_seconds(pp, 1, m, 0.0, False, forward, backward))
            nonblocking = 2 * (pp - 1) + 2 * ((pp - 1) * (m - 1) // pp)
            assert extra == pytest.approx(nonblocking * p2p, abs=1e-6), (pp, m)
            assert critical_path_transfers(pp, 1, m) >= nonblocking, (pp, m)
    assert critical_path_transfers(8, 1, 16) == 43 and 2 * 7 + 2 * (7 * 15 // 8) == 40


def test_counts_do_not_depend_on_step_durations():
    for forward, backward, paired in ((1.0, 1.5, 2.0), (1.0, 2.0, 2.5)):
        base = simulated_seconds(8, 4, 16, 0.0, True, forward, backward, paired)
        assert simulated_seconds(8, 4, 16, 0.2, True, forward, backward, paired) - base == pytest.approx(
            exposed_p2p_seconds(8, 4, 16, 0.2, True), abs=1e-6)


def test_step_charges_the_interleaved_fill_and_drain():
    """Llama 3 8B on 16 H100, tp 1 pp 2 vpp 4, 8 micro-batches of 1 x 4,096: the stage boundary
    leaves the node (8 GPUs a node), 4,096 x 4,096 x 2 B = 33.6 MB at the catalog's 45 GB/s
    + 15 us = 0.76 ms a transfer; 2 x (2 x 4 - 1) = 14 of them exposed (not 2 x (2 - 1) = 2)."""
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    cluster = cluster_for(gpu)
    step = step_time(spec, cluster, StepSettings(seq_len=4096), dp=8, pp=2, vpp=4, micro_batch=1, micro_batches=8)
    one = C.p2p_time(4096 * 4096 * 2.0, *link(cluster, 16))
    assert one == pytest.approx(33.554e6 / 45e9 + 15e-6, rel=1e-3)
    assert step.pp_comm == pytest.approx(14 * one, rel=1e-9)


def test_combined_1f1b_step_waits_on_transfers_the_attention_wgrad_does_not_hide():
    """Qwen3-30B-A3B FP8 on 16 H100, tp 1 pp 2 vpp 12 ep 8, 32 micro-batches of 1 x 4,096 under the
    combined 1F1B schedule: a transfer is 4,096 x 2,048 x 2 B = 16.8 MB at 45 GB/s + 15 us = 0.388 ms;
    the delayed attention weight gradients of one layer are 4,096 tokens x 2 x 18,874,368 weights
    (q 2,048 x 4,096, k and v 2,048 x 512, o 4,096 x 2,048) = 154.6 GFLOP at 1,978.9 TFLOP/s x 0.567
    (FP8 GEMM efficiency at width 2,048) = 0.138 ms. Fill / drain 2 x 23 = 46 transfers, paired steps
    32 x 12 - 24 + 2 - 2 = 360 waiting 0.388 - 0.138 = 0.250 ms each."""
    spec, gpu = load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm")
    cluster = cluster_for(gpu)
    layout = dict(dp=8, pp=2, vpp=12, ep=8, micro_batch=1, micro_batches=32)
    on = step_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8", ep_a2a_overlap=True, expert_tp=1), **layout)
    off = step_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8", expert_tp=1), **layout)
    one = 4096 * 2048 * 2.0 / 45e9 + 15e-6
    slack = 4096 * 2 * 18_874_368 / (1978.9e12 * 0.5672)
    assert slack == pytest.approx(0.1378e-3, rel=1e-3)
    assert off.pp_comm == pytest.approx(46 * one, rel=1e-6)
    assert on.pp_comm == pytest.approx(46 * one + 360 * (one - slack), rel=1e-3)


def test_paired_send_slack_is_the_smaller_of_the_two_outputs_leads():
    """The backward's gradient leaves before the delayed attention wgrad (0.26 ms here); the forward's
    output once its last combine is done beside the 2.0 ms pre-dispatch backward: with a 0.5 ms
    all-to-all 1.5 ms early (the wgrad binds), with a 2.3 ms one (Qwen3-235B, ep 32 across nodes)
    not early at all."""
    from gpuplan.core.comm.moe_overlap import MoeLayerPhases, paired_send_slack

    phases = MoeLayerPhases(pre_dispatch_forward=1.0e-3, pre_dispatch_backward=2.0e-3, mlp_forward=1.5e-3,
                            mlp_backward=3.0e-3, attention_weight_grad=0.26e-3)
    assert paired_send_slack(phases, 0.5e-3) == pytest.approx(0.26e-3)
    assert paired_send_slack(phases, 1.9e-3) == pytest.approx(0.1e-3)
    assert paired_send_slack(phases, 2.3e-3) == 0.0


def test_combined_1f1b_pp2_vpp2_m4_traced_by_hand():
    """pp 2, vpp 2, 4 micro-batches, combined 1F1B, forward 1, backward 2, paired step 3, transfer t.
    Order (groups of pp): F (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1) (3,1), B with the chunk reversed.
    Warm-up 2 (pp - rank - 1) + (vpp - 1) pp + 1: rank 0 five forwards, three paired steps, five
    backwards; rank 1 three forwards, five paired steps, three backwards. Step ends, worked by hand:
      r0 F00 1, F10 2; r1 F00 2+t, F10 3+t; r0 F01 3+2t, F11 4+2t, F20 5+2t; r1 F01 4+3t;
      r1 [F11 B01] 7+3t; r0 [F30 B01] 10+4t; r1 [F20 B11] 10+3t; r0 [F21 B11] 13+4t;
      r1 [F30 B00] 13+5t; r0 [F31 B00] 16+6t; r1 [F21 B10] 16+5t; r1 [F31 B21] 19+7t;
      r0 B10 18+6t, B21 21+8t; r1 B31 21+7t; r0 B31 23+8t; r1 B20 23+9t, B30 25+9t;
      r0 B20 25+10t, B30 27+10t.
    27 + 10 t: on the critical path the fill r0 F00 -> r1 -> r0 F01 -> r1 (3 = pp vpp - 1 transfers),
    the paired steps r0 [F30 B01], r1 [F30 B00], r0 [F31 B00], r1 [F31 B21] each waiting on one (4),
    the drain r1 B31 -> r0 -> r1 B30 -> r0 (3)."""
    t = 1e-3
    assert simulated_seconds(2, 2, 4, 0.0, True) == pytest.approx(27.0, abs=1e-9)
    assert simulated_seconds(2, 2, 4, t, True) == pytest.approx(27.0 + 10 * t, abs=1e-9)
    assert critical_path_transfers(2, 2, 4) == 3 + 3
    assert paired_step_transfers(2, 2, 4) == 4
    assert exposed_p2p_seconds(2, 2, 4, t, True) == pytest.approx(10 * t, rel=1e-12)


@pytest.mark.parametrize("pp,vpp,m", [(2, 1, 1), (4, 2, 2), (4, 4, 3), (8, 4, 4)])
def test_no_paired_step_no_paired_transfer(pp, vpp, m):
    """Where the last rank's warm-up ((vpp - 1) pp + 1 forwards, or pp - rank - 1 + 1 at vpp 1) covers
    all m x vpp virtual micro-batches there is no paired step (m = 1 at vpp 1; m < pp interleaved, layouts
    Megatron refuses: test_combined_1f1b_rules): (8, 4, 4) 25 >= 16, (4, 4, 3) 13 >= 12, (4, 2, 2) 5 >= 4,
    (2, 1, 1) 1 >= 1. The count is 0 there (m vpp - pp vpp + pp - 2 would be -10, -1, -2, -1) and the
    replayed schedule's exposed transfers are the plain fill / drain only: 2 (pp vpp - 1) = 62, 30, 14,
    and 2 (pp - 1) = 2 at vpp 1."""
    t = 1e-3
    replayed = simulated_seconds(pp, vpp, m, t, True) - simulated_seconds(pp, vpp, m, 0.0, True)
    fill_drain = 2 * (pp * vpp - 1) if vpp > 1 else 2 * (pp - 1)
    assert paired_step_transfers(pp, vpp, m) == 0
    assert replayed == pytest.approx(fill_drain * t, abs=1e-9)
    assert exposed_p2p_seconds(pp, vpp, m, t, True) == pytest.approx(fill_drain * t, rel=1e-12)


def test_combined_count_is_never_negative():
    """The clamp holds everywhere (a count below 0 would credit the combined schedule with time it
    does not save), so the combined schedule never charges less than the plain one.

    Worked by hand on the grid pp 1-16, vpp {1, 2, 4, 12}, m 1-32 (2,048 cells) from the docstring's
    count m vpp - pp vpp + pp - 2 (pipeline_schedule.paired_step_transfers), clamped at 0, and 0 at pp 1:
    - pp 1: all 4 x 32 = 128 cells are 0;
    - pp >= 2 the count is <= 0 iff m <= pp - (pp - 2) / vpp, i.e. m <= floor(((vpp - 1) pp + 2) / vpp):
      vpp 1: m <= 2, 2 cells for each of 15 pp = 30;
      vpp 2: floor((pp + 2) / 2) for pp 2..16 = 2,2,3,3,4,4,5,5,6,6,7,7,8,8,9 = 79;
      vpp 4: floor((3 pp + 2) / 4) = 2,2,3,4,5,5,6,7,8,8,9,10,11,11,12 = 103;
      vpp 12: floor((11 pp + 2) / 12) = 2,2,3,4,5,6,7,8,9,10,11,12,13,13,14 = 119;
      so 128 + 30 + 79 + 103 + 119 = 459 cells are 0 and 2,048 - 459 = 1,589 are positive;
    - the largest count is at pp 2, vpp 12, m 32: 32 x 12 - 2 x 12 + 2 - 2 = 360 (the count falls by
      vpp - 1 >= 0 per pp and rises with m and with vpp once m >= pp).
    Exact integers (tolerance 0); the seconds: each counted transfer adds exactly t = 1 ms (abs 1e-12 s)."""
    t = 1e-3
    counts = {}
    for pp in range(1, 17):
        for vpp in (1, 2, 4, 12):
            for m in range(1, 33):
                counts[pp, vpp, m] = int(paired_step_transfers(pp, vpp, m))
                extra = exposed_p2p_seconds(pp, vpp, m, t, True) - exposed_p2p_seconds(pp, vpp, m, t)
                assert extra == pytest.approx(counts[pp, vpp, m] * t, abs=1e-12), (pp, vpp, m)
    assert min(counts.values()) == 0
    assert sum(c == 0 for c in counts.values()) == 459
    assert max(counts.values()) == counts[2, 12, 32] == 360
    # clamped cells by hand: 12 - 192 + 14 = -166 -> 0; 6 - 8 + 2 = 0; one above: 8 - 8 + 2 = 2; vpp 1: 32 - 2 + 0 = 30
    assert (counts[16, 12, 1], counts[4, 2, 3], counts[4, 2, 4], counts[2, 1, 32]) == (0, 0, 2, 30)


def test_pp_line_is_not_combined_without_expert_parallelism():
    """Qwen3-30B-A3B on 16 H100, pp 2 vpp 12, ep 1 (no all-to-all to pair): --ep-a2a-overlap leaves
    the PP line as it is without it: fill / drain 2 x 23 = 46 transfers of 0.388 ms (17.8 ms), not
    the combined schedule's 46 + 360 (it charged 107.9 ms)."""
    spec, gpu = load_model("qwen3-30b-a3b"), load_accelerator("h100-sxm")
    cluster = cluster_for(gpu)
    layout = dict(dp=8, pp=2, vpp=12, ep=1, micro_batch=1, micro_batches=32)
    # one transfer as in the test above: 4,096 x 2,048 x 2 B across nodes (dp 8 fills the node) at a 400 Gb/s NIC
    # x 0.90 = 45 GB/s + 15 us (core/comm/topology.py DEFAULT_NIC_GBIT_PER_GPU, DEFAULT_SCALE_OUT_EFFICIENCY,
    # DEFAULT_SCALE_OUT_LATENCY) = 0.3878 ms; 46 = 2 x (pp x vpp - 1); 46 x 0.3878 ms = 17.84 ms
    on = step_time(spec, cluster, StepSettings(seq_len=4096, dtype="fp8", ep_a2a_overlap=True, expert_tp=1), **layout)
    one = 4096 * 2048 * 2.0 / 45e9 + 15e-6
    assert on.pp_comm == pytest.approx(46 * one, rel=1e-6)
    assert on.pp_comm == pytest.approx(17.84e-3, rel=1e-3)
