"""A batch-size ramp on one layout: runs that start with a smaller global batch and grow it
(DeepSeek-V3: 3,072 -> 15,360 sequences over the first 469B tokens; Llama 3 405B: 4M -> 8M -> 16M
tokens) keep their layout, so the early steps carry fewer micro-batches per pipeline and a larger
share of bubble and communication. The ramp's time is the sum over its phases of tokens x seconds
per token at that phase's batch, the same step model on the same layout (planner.plan.evaluate_layout);
its factor is that time over the same tokens at the steady batch throughout:

    factor = (sum_i T_i s(B_i) + (T - sum_i T_i) s(B)) / (T s(B)),   s(b) = step(b) / (b x seq_len)

with T the run's tokens, T_i and B_i each phase's tokens and batch, B the steady batch. The user's
--batch-ramp (schema.batch_ramp_field), `train`/`budget`/`plan` and the validation rows with a stated ramp
(jobs.validation.gpu_hours) all come through here. Ranking: with_ramp_factors puts each candidate's factor in
a ``ramp_factor`` column that planner.plan.slow_end_seconds_per_token multiplies in, so a layout whose early
small batch runs one micro-batch per pipeline (a long bubble) loses to one that does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpuplan.planner.plan import PLATEAU_SHARE, Plan, evaluate_layout, row_layout, slow_end_seconds_per_token

RANKED_CANDIDATES = 16
"""Candidates (by steady ranked time) whose ramp is timed for the ranking; the rest keep factor 1. A ramp factor
is >= 1 where a smaller batch is slower per token (more bubble and per-step communication per token), so a row
slower at steady state than the best ramp-inclusive time cannot win: the timing stops there or at this many rows
(each is one step-model evaluation per phase: ~1-3 ms)."""


@dataclass(frozen=True)
class RampTiming:
    """The ramp on one layout: its time factor and, per phase, the batch asked and the batch run (sequences)."""

    factor: float
    asked: tuple[float, ...]
    run: tuple[int, ...]

    @property
    def rounded(self) -> tuple[tuple[float, int], ...]:
        """(asked, run) of the phases whose batch is not a whole number of dp x micro-batch sequences."""
        return tuple((a, r) for a, r in zip(self.asked, self.run) if abs(a - r) > 1e-9)


def runnable_batch(plan: Plan, global_batch: float) -> int:
    """``global_batch`` sequences as ``plan``'s layout can run them: a whole number of micro-batches per
    data-parallel rank, at least one, the nearest (the planner's own rounding of the steady batch,
    planner.space: B = dp x round(target / dp)). Megatron-Core asserts that a ramp's batch divides into
    micro_batch x dp (megatron/core/num_microbatches_calculator.py@core_v0.18.0 L381-388), or with
    decrease_batch_size_if_needed rounds it down to a multiple (L299-301, L368-372)."""
    per_step = plan.layout.dp * plan.layout.micro_batch
    return max(1, round(global_batch / per_step)) * per_step


def phase_seconds_per_token(ev, plan: Plan, global_batch: float) -> float:
    """Seconds per token of ``plan``'s layout run at ``global_batch`` sequences (runnable_batch)."""
    batch = runnable_batch(plan, global_batch)
    phase = evaluate_layout(ev, replace(plan.layout, global_batch=batch), plan.recompute, batch, plan.gpus_asked)
    return phase.step_seconds / (batch * plan.seq_len)


def ramp_timing(ev, plan: Plan, tokens: float, phases: list[tuple[float, float]]) -> RampTiming:
    """The ramp ``phases`` ((tokens, global batch in sequences), in order; the rest of ``tokens`` at the plan's
    batch) on ``plan``'s layout: the time factor over the plan's batch throughout, and each phase's batch run."""
    steady = plan.step_seconds / (plan.global_batch * plan.seq_len)
    seconds, done = 0.0, 0.0
    for phase_tokens, batch in phases:
        seconds += phase_tokens * phase_seconds_per_token(ev, plan, batch)
        done += phase_tokens
    seconds += max(0.0, tokens - done) * steady
    return RampTiming(seconds / (tokens * steady), tuple(b for _, b in phases),
                      tuple(runnable_batch(plan, b) for _, b in phases))


def ramp_time_factor(ev, plan: Plan, tokens: float, phases: list[tuple[float, float]]) -> float:
    """Time of a run with the batch ``phases`` over the same run at the plan's batch throughout (ramp_timing)."""
    return ramp_timing(ev, plan, tokens, phases).factor if phases else 1.0


def with_ramp_factors(ev, fitting, tokens: float, phases: list[tuple[float, float]], gpus_asked: int | None = None,
                      also: np.ndarray | None = None):
    """``fitting`` (a LayoutTable of timed rows) with a ``ramp_factor`` column: each of the first rows by steady
    ranked time (slow_end_seconds_per_token, x failure_share where present) timed through its ramp, until a row's
    steady time passes the best ramp-inclusive one by more than PLATEAU_SHARE (within it the fewest GPUs win) or
    RANKED_CANDIDATES are timed; the rest keep 1 (their steady time, which no ramp shortens). ``also``: further
    rows in another ranking's order (a deadline's: fewest GPUs, then cheapest), whose first RANKED_CANDIDATES are
    timed too. ``gpus_asked``: the count the rows stand for (their Plans'); ``fitting`` unchanged without phases."""
    if not phases or not len(fitting):
        return fitting
    fitting.columns.pop("ramp_factor", None)  # a table weighed again: its steady time first
    steady = slow_end_seconds_per_token(fitting)
    if "failure_share" in fitting.columns:
        steady = steady * fitting["failure_share"]
    factors = np.full(len(fitting), np.nan)
    best = np.inf
    for count, i in enumerate(np.argsort(steady, kind="stable")):
        if count >= RANKED_CANDIDATES or steady[i] > best * (1 + PLATEAU_SHARE):  # the plateau's fewest-GPU rule
            break
        factors[i] = _row_factor(ev, fitting, int(i), tokens, phases, gpus_asked)
        best = min(best, steady[i] * factors[i])
    for i in (also if also is not None else ())[:RANKED_CANDIDATES]:
        if np.isnan(factors[i]):
            factors[i] = _row_factor(ev, fitting, int(i), tokens, phases, gpus_asked)
    fitting.columns["ramp_factor"] = np.where(np.isnan(factors), 1.0, factors)
    return fitting


def _row_factor(ev, fitting, i: int, tokens: float, phases, gpus_asked: int | None) -> float:
    """ramp_time_factor of row ``i`` of a search table."""
    layout, recompute = row_layout(fitting, i)
    plan = evaluate_layout(ev, layout, recompute, float(layout.batch), gpus_asked or layout.world)
    return ramp_time_factor(ev, plan, tokens, phases)
