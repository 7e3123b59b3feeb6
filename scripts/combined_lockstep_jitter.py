#!/usr/bin/env python3
"""How much per-step jitter costs Megatron-Core's combined 1F1B schedule against the plain interleaved one
(issue 37 diagnostic for docs/step.md, 'Why combined 1F1B was slow at 25.11 / 26.02'; nothing enters the model).

The order replayed is pipeline_parallel/schedules.py@cba6b0ed0f (NeMo 25.11's Megatron-Core): virtual micro-batches
in get_schedule_table's order (groups of pp micro-batches, chunk by chunk), warm-up 2 (pp - rank - 1) + (vpp - 1) pp
forwards, +1 under the combined schedule (get_pp_rank_microbatches L699-745), then forward k + warm-up with
backward k, as two steps (plain, overlap_p2p_comm: the forward's output leaves after the forward,
pp_post_forward L1592-1643) or as one step whose two outputs leave at its end (combined:
TransformerModelChunkSchedulePlan.run, models/common/model_chunk_schedule_plan.py@cba6b0ed0f L404-500, post_forward /
post_backward after the last layer), then the cool-down backwards. A chunk's forward needs the previous virtual
stage's forward of the same micro-batch, its backward the next one's backward (tests/test_pipeline_schedule.py
replays the same order for the transfer counts). Every step's duration is drawn from a normal distribution with the
given coefficient of variation (forward 1, backward 2, a paired step 3: no overlap saving, so that only the
dependencies differ), transfers take no time.

With no jitter both schedules end together (the +1 warm-up keeps the combined steady state free of waits); with
jitter the combined schedule, whose neighbours wait for each other's whole paired step, loses more (printed:
makespan over the ideal m x vpp x 3, mean of 5 seeds).

    python scripts/combined_lockstep_jitter.py
"""

from __future__ import annotations

import random


def _order(pp: int, vpp: int, m: int) -> list[tuple[int, int]]:
    return [(mb, c) for g in range(0, m, pp) for c in range(vpp) for mb in range(g, min(g + pp, m))]


def _programs(pp: int, vpp: int, m: int, combined: bool) -> list[list[tuple]]:
    order = _order(pp, vpp, m)
    backward = [(mb, vpp - 1 - c) for mb, c in order]
    programs = []
    for rank in range(pp):
        warm = min(2 * (pp - rank - 1) + (vpp - 1) * pp + combined, len(order))
        ops = [(("F",) + order[k],) for k in range(warm)]
        for k in range(len(order) - warm):
            step = (("F",) + order[k + warm], ("B",) + backward[k])
            ops += [step] if combined else [step[:1], step[1:]]
        programs.append(ops + [(("B",) + backward[k],) for k in range(len(order) - warm, len(order))])
    return programs


def _producer(kind: str, mb: int, chunk: int, rank: int, pp: int, vpp: int):
    """The (kind, micro-batch, chunk, rank) whose output ``kind`` on ``rank`` waits for; None at the pipeline's ends."""
    if kind == "F":
        if rank > 0:
            return "F", mb, chunk, rank - 1
        return ("F", mb, chunk - 1, pp - 1) if chunk > 0 else None
    if rank == pp - 1:  # the last virtual stage's backward needs its own forward (done earlier on this rank)
        return ("B", mb, chunk + 1, 0) if chunk < vpp - 1 else None
    return "B", mb, chunk, rank + 1


def makespan(pp: int, vpp: int, m: int, combined: bool, cv: float, seed: int) -> float:
    """Seconds (forward = 1) until the last rank ends one step."""
    draw = random.Random(seed)
    programs = _programs(pp, vpp, m, combined)
    done: dict[tuple, float] = {}  # (kind, micro-batch, chunk, rank) -> when its output is ready
    clock, nxt = [0.0] * pp, [0] * pp
    remaining = sum(len(p) for p in programs)
    while remaining:
        progressed = False
        for rank, program in enumerate(programs):
            while nxt[rank] < len(program):
                step = program[nxt[rank]]
                waits = [w for w in (_producer(*item, rank, pp, vpp) for item in step) if w is not None]
                if not all(w in done for w in waits):
                    break
                mean = 3.0 if len(step) == 2 else (1.0 if step[0][0] == "F" else 2.0)
                begin = max([clock[rank]] + [done[w] for w in waits])
                clock[rank] = begin + max(0.0, draw.gauss(mean, cv * mean))
                done.update({item + (rank,): clock[rank] for item in step})
                nxt[rank] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise RuntimeError("the schedule deadlocked")
    return max(clock)


def main() -> int:
    print("layout (rows)                      cv    plain  combined")
    for pp, vpp, m, rows in ((2, 12, 128, "Qwen3-30B 16 H100 26.02"), (8, 4, 256, "Qwen3-235B 256 B300 26.02"),
                             (8, 4, 128, "Qwen3-235B 64 B200 25.11 preset")):
        for cv in (0.0, 0.1, 0.2, 0.3):
            ideal = m * vpp * 3.0
            plain = sum(makespan(pp, vpp, m, False, cv, s) for s in range(5)) / 5 / ideal
            combined = sum(makespan(pp, vpp, m, True, cv, s) for s in range(5)) / 5 / ideal
            print(f"pp {pp} vpp {vpp:2d} m {m:3d} ({rows:30s}) {cv:4.1f}  {plain:6.3f}  {combined:6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
