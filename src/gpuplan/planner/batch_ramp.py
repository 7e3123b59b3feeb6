"""A batch-size ramp on one layout: runs that start with a smaller global batch and grow it
(DeepSeek-V3: 3,072 -> 15,360 sequences over the first 469B tokens; Llama 3 405B: 4M -> 8M -> 16M
tokens) keep their layout, so the early steps carry fewer micro-batches per pipeline and a larger
share of bubble and communication. The ramp's time is the sum over its phases of tokens x seconds
per token at that phase's batch, the same step model on the same layout (planner.plan.evaluate_layout).
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.planner.plan import Plan, evaluate_layout


def phase_seconds_per_token(ev, plan: Plan, global_batch: float) -> float:
    """Seconds per token of ``plan``'s layout run at ``global_batch`` sequences (whole micro-batches
    per data-parallel rank, at least one)."""
    lay = plan.layout
    per_step = lay.dp * lay.micro_batch
    batch = max(1, round(global_batch / per_step)) * per_step
    phase = evaluate_layout(ev, replace(lay, global_batch=batch), plan.recompute, batch, plan.gpus_asked)
    return phase.step_seconds / (batch * plan.seq_len)


def ramp_time_factor(ev, plan: Plan, tokens: float, phases: list[tuple[float, float]]) -> float:
    """Time of a run with the batch ``phases`` ((tokens, global batch in sequences), in order; the
    rest of ``tokens`` at the plan's batch) over the same run at the plan's batch throughout."""
    steady = plan.step_seconds / (plan.global_batch * plan.seq_len)
    seconds, done = 0.0, 0.0
    for phase_tokens, batch in phases:
        seconds += phase_tokens * phase_seconds_per_token(ev, plan, batch)
        done += phase_tokens
    seconds += max(0.0, tokens - done) * steady
    return seconds / (tokens * steady)
