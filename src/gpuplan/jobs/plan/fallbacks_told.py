"""The note `plan` and `train` give where a GPU count the user asked has no layout at all (for the global batch
asked, the degrees given and the framework's rules) and its rows come from smaller counts (planner.fallback), the
rest of its GPUs idle, and `plan`'s 'GPUs left idle' reason (idle_reason): before wave 15c the answer showed the
idle GPUs ('296 of 1,000') with a reason that also covered 'faster on fewer' and 'none fits', never that no layout
exists on the count asked. One function owns the note's words (fallback_note), one the causes both name
(binding_asks); each job says which of its counts had none (enumerated only, nothing timed:
planner.fallback.has_layout, ~1 ms a count)."""

from __future__ import annotations

import numpy as np

from gpuplan.jobs.plan.deadline import rank_by_of
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
    group = getattr(limits, "shard_group", None)  # HSDP: it must divide dp x cp and split the experts (R1 S3)
    named = [w for w, holds in (("the global batch", exact), ("the degrees given", fixed),
                                (f"the shard group of {group or 0:,}", group is not None)) if holds]
    return ", ".join(named) + (" and " if named else "") + "the framework's rules"


def fallback_note(asked: tuple[int, ...], used: tuple[int, ...], target: float, limits) -> str:
    """One note for ``asked`` counts with no layout, answered by layouts on the smaller ``used`` counts (GPU-hours
    and cost count the GPUs used, not the idle ones: jobs.plan.estimate best_gpu_hours, jobs.training.sections)."""
    exact, fixed = binding_asks(limits)
    batch = f" runs a {target:,.0f}-sequence global batch" if exact else " exists"
    group = getattr(limits, "shard_group", None)  # HSDP: a cause the note names (R1 S7: --shard-group 3 on 64)
    degrees = " with the degrees given" if fixed else ""
    given = degrees + (f" with the shard group of {group:,}" if group else "")
    shown = sorted(asked)  # the first five by name, then how many more (256 odd counts made a 2,496-character note)
    more = f" and {len(shown) - 5:,} more counts" if len(shown) > 5 else ""
    names = " / ".join(f"{c:,}" for c in shown[:5]) + " GPUs" + more
    if not used:  # no smaller count stands in for them: the answer is on the other counts asked (R1 S3)
        return (f"no layout{degrees}{batch} on {names} ({no_layout_causes(limits)} allow none there), and no smaller "
                f"count answers for {'it' if len(asked) == 1 else 'them'}: the answer is on the other counts asked")
    layouts, run = ("the layout", "runs") if len(used) == 1 else ("the layouts", "run")
    where = (f"{used[0]:,} GPUs" if len(used) == 1 else
             f"{len(used):,} smaller counts ({min(used):,} to {max(used):,} GPUs)")
    return (f"no layout{given}{batch} on {names}: {layouts} answering for {'it' if len(asked) == 1 else 'them'} "
            f"{run} on {where}, the rest left idle (GPU-hours and cost count the GPUs used)")


def group_count_note(limits, plan, gpus_given) -> tuple[str, ...]:
    """A note where the shard group given (``limits.shard_group``) is the answer's whole dp x cp (``plan``:
    planner.plan.Plan): one replica, plain sharding, and (no --gpus: ``gpus_given`` None) the group set the GPU
    count, the search keeping only counts whose dp x cp it divides (R1 S7: plan --days 5 --shard-group 65536
    answered 65,536 GPUs at 0.5% MFU without a word)."""
    group = getattr(limits, "shard_group", None)
    if group is None or plan is None or plan.layout.dp * plan.layout.cp != group:  # a group of 1 is refused
        return ()
    why = "set the GPU count: it " if gpus_given is None else ""
    return (f"the shard group of {group:,} {why}is all of the answer's data-parallel ranks (dp x cp = "
            f"{group:,} on {plan.gpus:,} GPUs): one replica, plain sharding, no HSDP; only layouts whose dp x cp it "
            "divides are searched (give a smaller --shard-group for HSDP)",)


def plan_counts_without_layout(given: tuple[int, ...] | None, result: PlanSearch) -> tuple[int, ...]:
    """Of the counts the user gave `plan` (``given``: PlanInputs.gpus, None with none given), those with no layout
    (counts_without_layout under ``result``'s target and limits); () with none given or nothing ranked. Made once
    an answer: plan_fallback_note and the 'GPUs left idle' reason (idle_reason) both read it
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


def idle_reason(inputs, result: PlanSearch, plan, without_layout: tuple[int, ...]) -> str:
    """`plan --full`'s 'GPUs left idle' reason (jobs.plan.estimate.recommendation; ``inputs``: PlanInputs, ``plan``:
    planner.plan.Plan): why ``plan`` leaves GPUs of the count asked (plan.gpus_asked) idle, the one reason that
    holds there: no layout at all (``without_layout``: plan_counts_without_layout, the test the no-layout note
    makes; that note names what answers for it), layouts but none fits in memory, some fit but none is ranked
    (each misses --days, or never completes with failures: jobs.plan.deadline.deadline_rows, jobs.plan.completes),
    or some are ranked and a layout on fewer ranks first. Before wave 16 the line gave them all at once ('faster on
    fewer ..., or none fits / is valid on all of them'); review w16 R3 M1: `plan llama-3-8b --gpus 1349 --days 5.3`
    said 8 layouts on 1,349 'rank behind it' where all 8 (16.4 to 70 days with failures) had been dropped for the
    deadline."""
    asked = plan.gpus_asked
    if asked in without_layout:
        why = f"no layout uses all {asked:,} ({no_layout_causes(result.limits)} allow none): the notes name the " \
              "counts answering for them"
        vpp = inputs.fixed_degrees().get("vpp", 1)
        if vpp > 1 and inputs.profile.interleaved_needs_pp_micro_batches:
            why += (f"; --framework {inputs.framework}'s interleaved schedule (vpp {vpp}) needs at least pp "
                    "micro-batches per step (Megatron-Core schedules.py)")
        return why
    fits = result.all["fits"][result.all["gpus"] == asked]
    if not fits.any():
        return f"{len(fits):,} layouts use all {asked:,} and none fits in memory"
    fit, total = f"{int(fits.sum()):,} layouts on all {asked:,} fit", int(fits.sum())
    ranked = int((result.table["gpus"] == asked).sum())  # what the answer ranked: the rows left after the deadline
    # and the failures (result.all holds every layout searched, result.table the ranked ones)
    verb, what = (("meet", f" the deadline (--days {inputs.days:g}, with failures)") if inputs.days is not None
                  else ("complete", " with failures"))
    kept = f"{'none' if not ranked else f'{ranked:,}'} {verb}{'s' if ranked <= 1 else ''}{what}"
    if not ranked:
        return f"{fit} and {kept}"
    first = "faster" if rank_by_of(inputs) == "time" else "ranked first"
    return f"{first} on fewer: {fit}" + ("" if ranked == total else f", {kept}") + " and rank behind it"
