"""The note `plan` and `train` give where a GPU count the user asked has no layout at all (for the global batch
asked, the degrees given and the framework's rules) and its rows come from smaller counts (planner.fallback), the
rest of its GPUs idle: before wave 15c the answer showed the idle GPUs ('296 of 1,000') with a reason that also
covered 'faster on fewer' and 'none fits' (jobs.plan.estimate._why_idle), never that no layout exists on the count
asked. One function owns the words (fallback_note); each job says which of its counts had none (enumerated only,
nothing timed: planner.fallback.has_layout, ~1 ms a count)."""

from __future__ import annotations

import numpy as np

from gpuplan.jobs.plan.search import PlanSearch, max_tp
from gpuplan.planner.fallback import has_layout


def counts_without_layout(ev, counts, target: float, max_tp: int, limits) -> tuple[int, ...]:
    """Of ``counts`` (GPUs asked), those on which no layout exists for ``target`` sequences a step (an exact
    --global-batch: dp divides it) under ``limits`` (degrees given, framework rules): enumerated, not searched."""
    return tuple(c for c in counts if not has_layout(ev, c, target, max_tp, limits))


def binding_asks(limits) -> tuple[bool, bool]:
    """(the global batch is exact: dp divides it, degrees are given) under ``limits`` (planner.space.SpaceLimits,
    or None): the asks besides the framework's rules that can leave a count with no layout. The no-layout note
    (fallback_note) and plan's 'GPUs left idle' reason (no_layout_causes) name the same ones from here (review w16
    R3 S3: the reason named 'the global batch' where the note, rightly, did not)."""
    return (limits is not None and bool(limits.exact_batch)), (limits is not None and bool(limits.fixed))


def no_layout_causes(limits) -> str:
    """What allows no layout on a count, in words, from binding_asks: 'the global batch, the degrees given and the
    framework's rules', down to 'the framework's rules' where neither ask binds."""
    exact, fixed = binding_asks(limits)
    named = [w for w, holds in (("the global batch", exact), ("the degrees given", fixed)) if holds]
    return ", ".join(named) + (" and " if named else "") + "the framework's rules"


def fallback_note(asked: tuple[int, ...], used: tuple[int, ...], target: float, limits) -> str:
    """One note for ``asked`` counts with no layout, answered by layouts on the smaller ``used`` counts (GPU-hours
    and cost count the GPUs used, not the idle ones: jobs.plan.estimate best_gpu_hours, jobs.training.sections)."""
    exact, fixed = binding_asks(limits)
    batch = f" runs a {target:,.0f}-sequence global batch" if exact else " exists"
    given = " with the degrees given" if fixed else ""
    shown = sorted(asked)  # the first five by name, then how many more (256 odd counts made a 2,496-character note)
    more = f" and {len(shown) - 5:,} more counts" if len(shown) > 5 else ""
    names = " / ".join(f"{c:,}" for c in shown[:5]) + " GPUs" + more
    layouts, run = ("the layout", "runs") if len(used) == 1 else ("the layouts", "run")
    where = (f"{used[0]:,} GPUs" if len(used) == 1 else
             f"{len(used):,} smaller counts ({min(used):,} to {max(used):,} GPUs)") if used else "smaller counts"
    return (f"no layout{given}{batch} on {names}: {layouts} answering for {'it' if len(asked) == 1 else 'them'} "
            f"{run} on {where}, the rest left idle (GPU-hours and cost count the GPUs used)")


def plan_counts_without_layout(given: tuple[int, ...] | None, result: PlanSearch) -> tuple[int, ...]:
    """Of the counts the user gave `plan` (``given``: PlanInputs.gpus, None with none given), those with no layout
    (counts_without_layout under ``result``'s target and limits); () with none given or nothing ranked. Made once
    an answer: plan_fallback_note and the 'GPUs left idle' reason (jobs.plan.estimate._why_idle) both read it
    (review w16 R3 S5)."""
    if not given or not len(result.table):
        return ()
    ev = result.evaluator
    return counts_without_layout(ev, tuple(given), result.target_batch, max_tp(ev), result.limits)


def plan_fallback_note(none: tuple[int, ...], result: PlanSearch) -> tuple[str, ...]:
    """`plan`'s note (fallback_note) for the counts given with no layout (``none``: plan_counts_without_layout),
    their fallback rows those of ``result.table`` standing for them (``gpus_asked``); () where every count given
    has one."""
    if not none or not len(result.table):
        return ()
    rows = np.isin(result.table["gpus_asked"], none)
    used = tuple(int(c) for c in np.unique(result.table["gpus"][rows]))
    return (fallback_note(none, used, result.target_batch, result.limits),)
