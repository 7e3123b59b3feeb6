"""Plain 1F1B (vpp 1) with the blocking exchanges Megatron-Core runs (core.time.pipeline_schedule.
critical_path_transfers), and the FP8 weight casts charged on the stage that paces the step.

The event simulation replays forward_backward_pipelining_without_interleaving
(pipeline_parallel/schedules.py@core_v0.15.0 L1949-2270) rank by rank: warm-up pp - rank - 1 times
recv_forward, forward, send_forward; recv_forward once before the steady state; then forward,
send_forward_recv_backward, backward, send_backward_recv_forward (send_backward on the last
iteration); cool-down recv_backward, backward, send_backward. The first rank has no previous and the
last no next neighbour (those halves are no-ops). Every exchange is one batch_isend_irecv that
_communicate waits on (p2p_communication.py@core_v0.15.0 L353-355, L390-398): a message moves once
both ranks have posted it (an activation is MBs, beyond NCCL's staging buffers, so the send waits for
the receive) and takes ``p2p``; the rank's next forward or backward starts when all of the exchange's
messages have moved.
"""

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import volumes as C
from gpuplan.core.comm.step_comm import link
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import megatron_ops as MO
from gpuplan.core.time import megatron_ops_step as MS
from gpuplan.core.time.pipeline_schedule import critical_path_transfers, exposed_p2p_seconds
from gpuplan.core.time.step import StepSettings, step_time


def _programs(pp, m):
    """Each rank's ops: ('F' | 'B', micro-batch) or ('X', messages), a message (kind, micro-batch, sender)."""
    programs = []
    for r in range(pp):
        warm = min(pp - r - 1, m)
        ops = []

        def exchange(*messages):
            kept = tuple(x for x in messages if x is not None)
            if kept:
                ops.append(("X", kept))

        recv_f = lambda j: None if r == 0 else ("act", j, r - 1)  # noqa: E731
        send_f = lambda j: None if r == pp - 1 else ("act", j, r)  # noqa: E731
        recv_b = lambda j: None if r == pp - 1 else ("grad", j, r + 1)  # noqa: E731
        send_b = lambda j: None if r == 0 else ("grad", j, r)  # noqa: E731
        for i in range(warm):
            exchange(recv_f(i)), ops.append(("F", i)), exchange(send_f(i))
        if m > warm:
            exchange(recv_f(warm))
        for i in range(m - warm):
            ops.append(("F", warm + i)), exchange(send_f(warm + i), recv_b(i)), ops.append(("B", i))
            exchange(send_b(i), None if i == m - warm - 1 else recv_f(warm + i + 1))
        for i in range(m - warm, m):
            exchange(recv_b(i)), ops.append(("B", i)), exchange(send_b(i))
        programs.append(ops)
    return programs


def blocking_seconds(pp, m, p2p, forward=1.0, backward=2.0, last_stage_factor=1.0):
    """Makespan of one step on ``pp`` ranks (module docstring); the last stage's forward and backward
    ``last_stage_factor`` times the others'."""
    programs, now, pc, posted = _programs(pp, m), [0.0] * pp, [0] * pp, {}
    while any(pc[r] < len(programs[r]) for r in range(pp)):
        moved = False
        for r in range(pp):
            while pc[r] < len(programs[r]):
                kind, what = programs[r][pc[r]]
                if kind != "X":
                    scale = last_stage_factor if r == pp - 1 else 1.0
                    now[r] += scale * (forward if kind == "F" else backward)
                else:
                    for message in what:
                        posted.setdefault((message, r), now[r])
                    peers = [(message, message[2] + (1 if message[0] == "act" else -1)) for message in what]
                    peers = [(message, peer if message[2] == r else message[2]) for message, peer in peers]
                    if any((message, peer) not in posted for message, peer in peers):
                        break
                    now[r] = max(max(posted[message, r], posted[message, peer]) + p2p for message, peer in peers)
                pc[r], moved = pc[r] + 1, True
        assert moved, "the schedule deadlocked"
    return max(now)


def _exposed(pp, m, p2p, **kw):
    return blocking_seconds(pp, m, p2p, **kw) - blocking_seconds(pp, m, 0.0, **kw)


def test_hand_counts():
    # pp 2: one exchange a micro-batch, m - 1 in the steady state + the first send + the last backward's
    assert critical_path_transfers(2, 1, 8) == 9
    # pp >= 3: 2 (pp - 1) + 2 (m - 1) - 1 = 2 (m + pp) - 5; one micro-batch: the plain fill and drain
    assert critical_path_transfers(3, 1, 2) == 5
    assert critical_path_transfers(4, 1, 8) == 6 + 14 - 1 == 19
    assert critical_path_transfers(8, 1, 1) == 14
    # DeepSeek-V3 on 256 B200, tp 1 pp 16 vpp 1, 128 micro-batches: 283 (the non-blocking count was
    # 30 + 2 floor(15 x 127 / 16) = 268); interleaving is not this schedule: 2 (pp vpp - 1)
    assert critical_path_transfers(16, 1, 128) == 30 + 254 - 1 == 283
    assert critical_path_transfers(4, 2, 8) == 14
    assert critical_path_transfers(1, 1, 8) == 0


@pytest.mark.parametrize("forward,backward", [(1.0, 2.0), (1.0, 3.0)])
def test_blocking_counts_replay_megatron_order(forward, backward):
    """The closed form against the replay (transfers of 0.01 forward, exact to 1e-6)."""
    p2p = 0.01
    for pp in (2, 3, 4, 5, 8, 16):
        for m in (1, 2, 3, 5, 8, 17, 33):
            assert _exposed(pp, m, p2p, forward=forward, backward=backward) == pytest.approx(
                exposed_p2p_seconds(pp, 1, m, p2p), abs=1e-6), (pp, m)


def test_count_holds_for_transfers_up_to_half_a_forward():
    """pp 8, m 16 (2 x 24 - 5 = 43): 43 t at t = 0.2 and 0.5 forwards, not a small-t slope only."""
    for p2p in (0.2, 0.5):
        assert _exposed(8, 16, p2p) == pytest.approx(43 * p2p, abs=1e-9)


def test_a_slower_last_stage_hides_transfers_the_count_keeps():
    """What the count does not credit (its docstring): the last stage 1.3 x slower, its slack per
    micro-batch (0.9) far above a transfer (0.01) leaves 2 (pp - 1) + m - 1 on the critical path:
    pp 8, m 32: 45, not 75."""
    assert critical_path_transfers(8, 1, 32) == 75
    assert _exposed(8, 32, 0.01, last_stage_factor=1.3) == pytest.approx(45 * 0.01, abs=1e-6)


def test_step_charges_the_blocking_count():
    """Llama 3 8B on 32 H100, tp 1 pp 4 vpp 1, dp 8, 8 micro-batches of 1 x 4,096: every stage
    boundary leaves the node (stride dp = 8), 4,096 x 4,096 x 2 B = 33.6 MB at 45 GB/s + 15 us
    = 0.761 ms a transfer; 19 of them exposed (the non-blocking count was 16)."""
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    cluster = cluster_for(gpu)
    step = step_time(spec, cluster, StepSettings(seq_len=4096), dp=8, pp=4, vpp=1, micro_batch=1, micro_batches=8)
    one = C.p2p_time(4096 * 4096 * 2.0, *link(cluster, 32))
    assert one == pytest.approx(33.554e6 / 45e9 + 15e-6, rel=1e-3)
    assert step.pp_comm == pytest.approx(19 * one, rel=1e-9)


def test_fp8_weight_casts_on_the_stage_that_paces_the_step(monkeypatch):
    """Llama 3 8B, FP8 with Megatron's op list on H100, pp 4 with a recipe layout of 7 / 7 / 7 / 11 layers:
    the last stage (11 layers and the LM head) sets t_mb, so the once-a-step weight casts are its 11 layers'
    (current scaling, 6 B a weight: core.time.megatron_ops_step), not the first stage's 7; with 11 / 7 the
    first stage paces and it is 11 again."""
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    cluster = cluster_for(gpu)
    settings = StepSettings(seq_len=4096, dtype="fp8", megatron_ops=MO.default_ops(spec))
    layout = dict(dp=2, pp=4, vpp=1, micro_batch=1, micro_batches=8)
    casts_11 = MS.weight_cast_seconds(spec, "current", False, gpu.memory_bandwidth, 1, 11)
    assert casts_11 == pytest.approx(11 / 32 * MS.weight_cast_seconds(spec, "current", False, gpu.memory_bandwidth,
                                                                       1, 32), rel=1e-9)
    for split in ((7, 11), (11, 7)):
        charged = step_time(spec, cluster, settings, stage_layers=split, **layout).compute
        monkeypatch.setattr(MS, "weight_cast_seconds", lambda *a, **k: 0.0)
        uncharged = step_time(spec, cluster, settings, stage_layers=split, **layout).compute
        monkeypatch.undo()
        assert charged - uncharged == pytest.approx(casts_11, rel=1e-9), split
