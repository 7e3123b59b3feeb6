"""The layout a training estimate stands on: the planner's best for the GPUs (or the user's own
degrees), or — to meet a deadline with a predicted MFU — the fewest GPUs whose best layout meets
it, found by `plan`'s own deadline search (jobs.plan.search.search_on). The memory verdict, and in
predicted mode the step time and MFU, come from this one Plan. Both measure a layout with the budget's
failures and checkpoints (a plain TrainingInputs takes the budget's defaults, as estimate_budget does),
so with `--mfu predicted` `train`, `plan`, the web API and the Python API answer one count for one ask. Not
with a fixed MFU: `estimate_training` and /api/training solve the count with the communication allowance
only (7B, 2T tokens, A100, 7 days, MFU 0.4: 1,336 GPUs), `gpuplan train`, `estimate_budget` and /api/budget
with failures as well (1,352); README.md gives both."""

from __future__ import annotations

import numpy as np

from gpuplan.errors import InputError
from gpuplan.jobs.budget.fields import BudgetFields
from gpuplan.jobs.budget.schema import BudgetInputs
from gpuplan.jobs.calibrated_plan import check_calibrated_plan
from gpuplan.jobs.plan.completes import completing_rows, with_completing_shares
from gpuplan.jobs.plan.fallbacks_told import counts_without_layout, fallback_note
from gpuplan.jobs.plan.ramp_days import drop_evaluation_shares, evaluation_beside_ramp, hold_evaluation_shares
from gpuplan.jobs.plan.search import (PlanSearch, best_index, chosen_plan, evaluator_for, idle_told, max_tp, search_on,
                                      space_limits)
from gpuplan.jobs.training.schema import TrainingInputs
from gpuplan.planner.batch_ramp import with_ramp_factors
from gpuplan.planner.plan import Plan, best_plan, slow_end_seconds_per_token
from gpuplan.planner.search import Evaluator, LayoutTable
from gpuplan.planner.space import SpaceLimits, is_common_size
from gpuplan.schema.batch_ramp_field import typed_text


def with_budget_fields(inputs):
    """``inputs`` with the budget's fields: as given (BudgetInputs, PlanInputs), or a plain TrainingInputs (the
    Python API's estimate_training, the web API's training job) with the budget's defaults (as
    jobs.budget.estimate takes it), so every door weighs a layout's failures and checkpoints alike."""
    return inputs if isinstance(inputs, BudgetFields) else BudgetInputs(**inputs.given_values())


def layout_for_gpus(inputs: TrainingInputs, gpus: int, rank_by: str = "time",
                    evaluator: Evaluator | None = None) -> Plan:
    """The planner's best layout on ``gpus`` GPUs with the degrees the user fixed, ranked with each row's
    failure share as `plan --gpus` ranks them (with_failure_shares), so the two answer the same count and
    layout. ``evaluator``: evaluator_for(with_budget_fields(inputs)) where the caller holds it (built here else)."""
    inputs = with_budget_fields(inputs)
    ev, target, limits = _search_terms(inputs, evaluator)
    weigh = with_failure_shares(inputs, ev, gpus, rank_by == "time")
    plan, _ = best_plan(ev, gpus, target, max_tp(ev), limits, rank_by, weigh)
    check_calibrated_plan(inputs.calibration, plan, inputs.dtype, ev.cluster.gpu)  # MFU <= 100%, states held
    return plan


def no_layout_note(inputs: TrainingInputs, plan: Plan) -> tuple[str, ...]:
    """plan's words (jobs.plan.fallbacks_told.fallback_note) where the --gpus given has no layout at all and
    ``plan`` (layout_for_gpus's answer) runs on fewer, the rest idle; idle by choice (faster on fewer, or none fits
    on all) at a given MFU, idle_by_choice_note; () otherwise. The search's terms are built again (_search_terms: 0.5 ms warm, llama-3.1-8b, 7-sequence
    batch on 1,000 A100s; only an answer leaving GPUs of a count given idle asks), not carried on the Plan."""
    if not idle_told(plan, inputs.gpus):
        return ()
    ev, target, limits = _search_terms(with_budget_fields(inputs))
    none = counts_without_layout(ev, (inputs.gpus,), target, max_tp(ev), limits)
    if none:
        return (fallback_note(none, (plan.gpus,), target, limits),)
    return () if inputs.time_predicted else (idle_by_choice_note(plan),)


def one_rank_zero_note(plan: Plan) -> tuple[str, ...]:
    """Where the layout runs ZeRO 1-3 (given by --zero: the search picks them only where dp x cp > 1,
    planner.space.enumerate_layouts) on dp x cp = 1: the stage shards over one rank, so it saves no memory and adds
    no collective (ZeRO, arXiv:1910.02054 section 5: each stage partitions over the N_d data-parallel ranks; `gpuplan
    memory` counts it so too); () otherwise. s24 (helper PL2): `train llama-3.1-8b --gpus 8 --tp 8 --zero 1` was
    refused 'no layout can use these GPU counts' while `memory` with the same degrees answered."""
    lay = plan.layout
    if lay.zero == 0 or lay.state_shards > 1:  # core.parallel: the ranks ZeRO shards over
        return ()
    return (f"ZeRO-{lay.zero} on dp x cp = 1 shards over one rank: no memory saved and no collective added (`gpuplan "
            "memory` sizes it as ZeRO-0); ZeRO needs dp x cp > 1 to save memory",)


def idle_by_choice_note(plan: Plan) -> str:
    """Why an answer timed by a given MFU leaves GPUs of a count given idle where layouts use them all: the count
    is the planner's choice, ranked as `plan` ranks the ask (its step model, with failures: planner.plan.best_plan
    weighs the same counts at a given MFU), while the wall-clock is the MFU's on the GPUs used."""
    used, asked = plan.gpus, plan.gpus_asked
    band = (", faster than the best of them by more than the two layouts' ± model combined (planner.idle_rule: a "
            "common size is left idle only so)") if is_common_size(asked) else ""
    return (f"{asked - used:,} of the {asked:,} GPUs asked left idle by choice: the planner ranks {plan.text()} on "
            f"{used:,} first (its step model with failures, as `plan` ranks this ask), ahead of any layout on all "
            f"{asked:,} that fits{band}; the wall-clock is the given MFU's on the {used:,} GPUs used (docs/training.md, "
            "'Any GPU count'); --dp / --tp / --pp fix a layout on all of them")


def _search_terms(inputs: BudgetFields, evaluator: Evaluator | None = None) -> tuple[Evaluator, float, SpaceLimits]:
    """What layout_for_gpus searches ``inputs`` (with_budget_fields's) with: the evaluator (``evaluator`` where
    given), the sequences a step asked for and the degrees' and framework's limits; no_layout_note enumerates with
    the same."""
    ev = evaluator if evaluator is not None else evaluator_for(inputs)
    return ev, inputs.target_batch(inputs.seq_len), space_limits(inputs)


def with_failure_shares(inputs, ev, gpus: int, first_only: bool = False):
    """The weighing step best_plan ranks `train`'s rows through: plan's (jobs.plan.search._with_days) — the rows
    whose run completes with failures, each with its failure_share at the failure rate's high end
    (jobs.plan.completes.with_completing_shares, the one implementation), all standing for the ``gpus`` asked
    (gpus_asked: the plateau rule keeps their time order, planner.plan._fewest_on_plateau); ``first_only``
    (ranking by time, where best_plan takes the first row only): just the rows that could come first. Where no row
    completes the rows stay unweighed: the budget's Failures section then says why (commit 875dd94's open
    point: train weighed the counts below an irregular N without the share)."""
    phases = inputs.ramp_phases()  # --batch-ramp: the candidates ranked with their ramp (planner.batch_ramp)
    limits = space_limits(inputs) if phases else None  # a phase the framework's schedule refuses: row dropped
    ramp_text = typed_text(inputs.batch_ramp or ())  # what a refusal quotes

    def weigh(fitting: LayoutTable) -> LayoutTable:
        try:
            fitting = _could_win(inputs, ev, fitting, gpus) if first_only and not phases else fitting
            kept, _ = with_completing_shares(inputs, ev, fitting)
        except InputError:
            kept = fitting  # no row completes: unweighed (the Failures section says why)
        else:
            kept.columns["gpus_asked"] = np.full(len(kept), gpus, dtype=np.int64)
        if not phases or not len(kept):
            return kept
        hold_evaluation_shares(inputs, ev, kept)  # the evaluations beside the ramp, as plan's rows (jobs.plan.ramp_days)
        kept = with_ramp_factors(ev, kept, inputs.tokens, phases, typed=ramp_text, gpus_asked=gpus, limits=limits,
                                 on_factors=evaluation_beside_ramp)
        drop_evaluation_shares(kept)
        return kept

    return weigh


def layout_for_deadline(inputs: TrainingInputs, evaluator: Evaluator | None = None) -> tuple[Plan, PlanSearch]:
    """The fewest GPUs whose layouts train ``inputs.tokens`` within the deadline (--days, or the article's 7 days
    with neither --gpus nor --days: jobs.plan.deadline.deadline_of) with the budget's failures and checkpoints,
    and the cheapest layout there: `plan --days`'s answer, from the same search (jobs.plan.search.search_on:
    the common cluster sizes, then the counts between the two that bracket the answer; each row's own days
    with failures; planner.plan.deadline_order), and its note when the article's week is met on no count (the
    fastest layout is answered: the search's missed_default_deadline). A --days no count meets is refused as `plan`
    refuses it. ``evaluator``: as layout_for_gpus's. Returns the plan and the search (--shard-group auto's line
    ranks it: jobs.plan.shard_group_told.training_shard_group_line)."""
    inputs = with_budget_fields(inputs)
    found = search_on(inputs, evaluator if evaluator is not None else evaluator_for(inputs))
    plan = chosen_plan(found, best_index(found, "deadline"))
    check_calibrated_plan(inputs.calibration, plan, inputs.dtype, found.evaluator.cluster.gpu)
    return plan, found


def _could_win(inputs, ev, fitting: LayoutTable, gpus: int) -> LayoutTable:
    """The rows of ``fitting`` that ranking with failure shares could put first: a share is >= 1 (failures
    only add time), so a row slower before it than the fastest row is after it cannot win; only these need
    their share (completing_rows: 4.7 ms for the 10,590 rows of `gpuplan train`'s default search). All rows
    where the fastest does not complete. Where the fastest runs on fewer than the ``gpus`` asked, the rows on all of
    them that could be their best too: a row leaving GPUs idle must beat that one beyond the band (idle_rule)."""
    seconds = slow_end_seconds_per_token(fitting)
    near = np.zeros(len(fitting), dtype=bool)
    whole = fitting["gpus"] == gpus
    for rows in (np.ones(len(fitting), dtype=bool),) + ((whole,) if whole.any() and not whole.all() else ()):
        fastest = int(np.flatnonzero(rows)[np.argmin(seconds[rows])])
        if near[fastest]:
            continue  # the fastest row overall is on all of them: its bound holds their best too
        try:
            share = float(completing_rows(inputs, ev, fitting.take(np.array([fastest]))).slow_share[0])
        except InputError:  # the fastest never completes with failures: every row is weighed
            return fitting
        near |= rows & (seconds <= seconds[fastest] * share * (1 + 1e-12))
    return fitting.take(np.flatnonzero(near)) if not near.all() else fitting
