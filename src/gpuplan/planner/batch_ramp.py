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

from gpuplan.planner.plan import PLATEAU_SHARE, Plan, evaluate_layout, ranking, row_layout, slow_end_seconds_per_token

RANKED_CANDIDATES = 16
"""Candidates (by steady ranked time) whose ramp is timed in the first pass; rows past them hold factor 1 as a
lower bound only (a ramp factor is >= 1 where a smaller batch is slower per token: more bubble and per-step
communication per token), and settle_ramp times the rows the final ranking puts first until every one it leads
with is timed (each timing is one step-model evaluation per distinct phase batch: ~1-3 ms)."""
SETTLE_BATCH = 8
"""Rows settle_ramp times per pass: the untimed ones among the ranking's first max(lead, this) (a pass re-ranks
the whole table, ~0.1-1 ms; timing a few more rows than needed only makes more factors exact)."""


def phase_refused(limits, layout, run_batch: int) -> bool:
    """Whether the framework's pipeline schedule refuses ``run_batch`` sequences a step on ``layout``: the
    search's own rules for the steady batch (planner.space.SpaceLimits; Megatron-Core's interleaved schedule
    raises ValueError below pp micro-batches a step, schedules.py@core_v0.18.0 L1068-1076,
    framework_rules.interleaved_runs; torch.distributed.pipelining's, framework_rules.torch_pipeline_runs)."""
    from gpuplan.planner.framework_rules import interleaved_runs, rules_for, torch_pipeline_runs

    if limits is None or layout.pp == 1:
        return False
    micro = run_batch // (layout.dp * layout.micro_batch)
    needs_pp = layout.vpp > 1 and (limits.interleaved_needs_pp_micro_batches or limits.combined_1f1b)
    if needs_pp and not interleaved_runs(layout.pp, layout.vpp, micro, limits.combined_1f1b):
        return True
    return bool(rules_for(limits.framework).torch_pipelining and not torch_pipeline_runs(layout.pp, layout.vpp, micro))


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


@dataclass(frozen=True)
class RowStep:
    """What ramp_timing reads of a Plan, taken from a search table's row (its step_seconds, s, at global_batch
    sequences of seq_len tokens), so ranking times only the phases (~1-3 ms each), not the steady step again."""

    layout: object
    recompute: str
    gpus_asked: int
    step_seconds: float
    global_batch: int
    seq_len: int


def runnable_batch(plan: Plan, global_batch: float) -> int:
    """``global_batch`` sequences as ``plan``'s layout can run them: a whole number of micro-batches per
    data-parallel rank, at least one, the nearest (Python's round(): halves to even, so on dp 8 mb 1 12 -> 16 and
    20 -> 16; the planner's own rounding of the steady batch, planner.space: B = dp x round(target / dp)). This
    rounding is the tool's choice, not Megatron's: at core_v0.18.0 a batch schedule (--step-batch-size-schedule,
    StepBatchsizeNumMicroBatchesCalculator) asserts at runtime that the current batch divides into micro_batch x
    dp (megatron/core/num_microbatches_calculator.py@core_v0.18.0 L580-587, L551-554) and refuses
    --decrease-batch-size-if-needed beside a schedule (L264-268); --rampup-batch-size is deprecated there and not
    passed on to the calculator (L100-113). A user of core_v0.18 gives schedule batches that divide; the rounded
    batch is the one such a user would state for this layout."""
    per_step = plan.layout.dp * plan.layout.micro_batch
    return max(1, round(global_batch / per_step)) * per_step


def phase_seconds_per_token(ev, plan: Plan, global_batch: float) -> float:
    """Seconds per token of ``plan``'s layout run at ``global_batch`` sequences (runnable_batch)."""
    batch = runnable_batch(plan, global_batch)
    phase = evaluate_layout(ev, replace(plan.layout, global_batch=batch), plan.recompute, batch, plan.gpus_asked)
    return phase.step_seconds / (batch * plan.seq_len)


EXACT_BATCHES = 12
"""Distinct runnable batches a ramp's steps may hold and each be timed (one step-model evaluation each, ~1-3 ms);
past this many (a linear phase on a small dp x micro-batch: DeepSeek-V3's 3,072-15,360 on dp128 holds 97) this many
are timed, spread evenly in 1/b, and the rest interpolated linearly in 1/b: seconds per token is a fixed cost per
token plus per-step costs (bubble, gradient sync) shared by b sequences, ~A + B / b. Measured against timing every
batch: llama-3.1-70b 1T:64-1024 on dp64 pp4 vpp20 (16 batches) x1.12131 both; llama-3.2-1b 8-512 on dp8 (64)
x1.00486 both; at 8 the first read x1.12478 (+0.3%); tests/test_batch_ramp_input.py holds it within 0.5%."""


def ramp_timing(ev, plan: Plan, tokens: float, phases: list[tuple[float, float]]) -> RampTiming:
    """The ramp ``phases`` ((tokens, global batch in sequences), in order; the rest of ``tokens`` at the plan's
    batch) on ``plan``'s layout: the time factor over the plan's batch throughout, and each phase's batch run.
    Each distinct runnable batch is timed once (up to EXACT_BATCHES; past that, interpolated in 1/b)."""
    steady = plan.step_seconds / (plan.global_batch * plan.seq_len)
    runs = ramp_runs(plan, phases)
    share: dict[int, float] = {}
    for (phase_tokens, _), run in zip(phases, runs):
        share[run] = share.get(run, 0.0) + phase_tokens
    per_token = _seconds_per_token(ev, plan, sorted(share))
    if plan.global_batch in per_token:  # a phase rounded up to the steady batch is the steady step itself, not a
        per_token[plan.global_batch] = steady  # re-timing that can differ in its last bit (x1.0000000000000002)
    # the factor as 1 + each phase's extra time over the steady step's: exactly 1 where every phase runs the steady
    # step (phases past ``tokens`` are refused by the schema; the rest of the run is steady)
    extra = sum(share[run] * (per_token[run] / steady - 1.0) for run in share)
    return ramp_at(1.0 + extra / tokens, plan, phases, runs)


def ramp_at(factor: float, plan: Plan, phases: list[tuple[float, float]], runs=None) -> RampTiming:
    """The RampTiming of ``phases`` on ``plan``'s layout at a time ``factor`` worked out already (ramp_timing's, or a
    search table's row's: jobs.training.batch_ramp.ramp_on): each phase's batch asked, and run (``runs``, or
    ramp_runs where None)."""
    return RampTiming(factor, tuple(b for _, b in phases), ramp_runs(plan, phases) if runs is None else runs)


def ramp_runs(plan: Plan, phases: list[tuple[float, float]]) -> tuple[int, ...]:
    """Each phase's batch as ``plan``'s layout runs it (runnable_batch), in order."""
    return tuple(runnable_batch(plan, b) for _, b in phases)


def _seconds_per_token(ev, plan: Plan, batches: list[int]) -> dict[int, float]:
    """phase_seconds_per_token at each runnable batch (ascending): each timed, or past EXACT_BATCHES, that many timed
    evenly in 1/b (the ends included) and the rest interpolated linearly in 1/b."""
    if len(batches) <= EXACT_BATCHES:
        return {b: phase_seconds_per_token(ev, plan, b) for b in batches}
    inverse = np.array([1.0 / b for b in batches])  # descending
    targets = np.linspace(inverse[0], inverse[-1], EXACT_BATCHES)
    picked = sorted({int(np.argmin(np.abs(inverse - t))) for t in targets} | {0, len(batches) - 1})
    timed = np.array([phase_seconds_per_token(ev, plan, batches[i]) for i in picked])
    xs = inverse[picked][::-1]  # ascending for np.interp
    return dict(zip(batches, np.interp(inverse, xs, timed[::-1]).tolist()))


def with_ramp_factors(ev, fitting, tokens: float, phases: list[tuple[float, float]], *, typed: str,
                      gpus_asked: int | None = None, order=None, lead: int = 1, limits=None, on_factors=None):
    """``fitting`` (a LayoutTable of timed rows) with a ``ramp_factor`` column: each of the first rows by steady
    ranked time (slow_end_seconds_per_token, x failure_share where present) timed through its ramp, until a row's
    steady time passes the best ramp-inclusive one by more than PLATEAU_SHARE (within it the fewest GPUs win) or
    RANKED_CANDIDATES are timed; then settle_ramp, so the rows the final ranking (``order``: table -> row indices
    best first; by time where None) leads with are all timed. ``lead``: how many leading rows must be timed (plan's
    top-N table). ``limits``: the search's SpaceLimits; a row one of whose phases the framework's pipeline schedule
    refuses (phase_refused) is dropped. ``on_factors``: a callable the caller re-derives its columns in after each
    change (plan's days x factor). ``gpus_asked``: the count the rows stand for; ``fitting`` unchanged without
    phases. ``typed``: the ramp as the user gave it (schema.batch_ramp_field.typed_text), which the refusal quotes
    (InputError naming batch_ramp where no row runs the ramp), not the LINEAR_STEPS steps ``phases`` holds."""
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
        factors[i] = _row_factor(ev, fitting, int(i), tokens, phases, gpus_asked, limits)
        best = min(best, steady[i] * factors[i])
    return settle_ramp(ev, fitting, factors, tokens, phases, typed=typed, gpus_asked=gpus_asked, order=order,
                       lead=lead, limits=limits, on_factors=on_factors)


def settle_ramp(ev, fitting, factors: np.ndarray, tokens: float, phases, *, typed: str, gpus_asked: int | None,
                order, lead: int, limits, on_factors):
    """Review w16 R6 M1: an untimed row's factor 1 is a lower bound, not a value. Best first: rank with the
    timed factors and 1 elsewhere; while the ranking's first ``lead`` rows hold an untimed one, time the untimed
    rows among its first max(lead, SETTLE_BATCH) and rank again. Factors only raise a row's time, cost and
    days, and only push it out of a deadline, so a leader that is timed is the ranking's true leader. Rows the
    framework refuses (factor inf) are dropped as they are found; none left: InputError naming batch_ramp, quoting
    the ``typed`` ramp (with_ramp_factors' parameters)."""
    rank = order if order is not None else (lambda t: ranking(t, "time"))
    while True:
        refused = np.isinf(factors)
        if refused.all():
            from gpuplan.errors import InputError

            raise InputError("batch_ramp", typed, "no layout searched runs every phase: a "
                             "phase leaves fewer micro-batches a step than the framework's pipeline schedule needs "
                             "(Megatron-Core's interleaved schedule at least pp, schedules.py@core_v0.18.0 L1068-1076; "
                             "planner.batch_ramp.phase_refused); give a larger phase batch, a smaller --pp or --vpp 1")
        if refused.any():  # not ranked at all (--rank-by gpus would put a refused row with fewer GPUs first)
            kept = np.flatnonzero(~refused)
            fitting, factors = fitting.take(kept), factors[kept]
        fitting.columns["ramp_factor"] = np.where(np.isnan(factors), 1.0, factors)
        if on_factors is not None:
            on_factors(fitting)
        leading = rank(fitting)[: max(lead, SETTLE_BATCH)]
        if not np.isnan(factors[leading[: max(lead, 1)]]).any():
            fitting.columns["ramp_timed"] = ~np.isnan(factors)  # the rest hold factor 1, a lower bound (plan marks)
            return fitting
        for i in leading:
            if np.isnan(factors[i]):
                factors[i] = _row_factor(ev, fitting, int(i), tokens, phases, gpus_asked, limits)


def _row_factor(ev, fitting, i: int, tokens: float, phases, gpus_asked: int | None, limits=None) -> float:
    """ramp_timing's factor of row ``i`` of a search table; inf where a phase's batch is one the framework's
    pipeline schedule refuses on the row's layout (phase_refused)."""
    layout, recompute = row_layout(fitting, i)
    plan = RowStep(layout, recompute, gpus_asked or layout.world, float(fitting["step_seconds"][i]),
                   layout.global_batch, ev.memory.seq_len)  # the row's own step: no steady re-evaluation
    timing = ramp_timing(ev, plan, tokens, phases)
    return np.inf if any(phase_refused(limits, plan.layout, run) for run in set(timing.run)) else timing.factor
