"""A plan's deadline (--days, or the article's week with neither --gpus nor --days): the GPU counts it
searches (the common cluster sizes, then the counts between the two that bracket the answer), and the
rows that meet it, in the deadline rule's order (planner.plan.deadline_order)."""

from __future__ import annotations

import numpy as np

from gpuplan.core.units import SECONDS_PER_DAY, format_duration, plural
from gpuplan.errors import InputError, whole_or
from gpuplan.jobs.budget.evaluation import beyond_training
from gpuplan.planner.plan import count_first_rows, deadline_counts_between, deadline_order
from gpuplan.planner.search import LayoutTable
from gpuplan.planner.space import DEADLINE_COUNTS_MAX, range_counts


def deadline_of(inputs) -> float | None:
    """The deadline in days: --days, or with neither --gpus nor --days the article's 7 days (as
    `gpuplan train`): the smallest cluster that trains it in a week, not the largest searched."""
    if inputs.days is not None or inputs.gpus is not None:
        return inputs.days
    from gpuplan.jobs.training.schema import DEFAULT_DAYS

    return DEFAULT_DAYS


def rank_by_of(inputs) -> str:
    """--rank-by as given; with a deadline and no --rank-by, the deadline rule."""
    return inputs.rank_by if "rank_by" in inputs.given or deadline_of(inputs) is None else "deadline"


def _searches_for_deadline(inputs) -> bool:
    """Whether the counts are the deadline's own (no --gpus; the deadline rule ranks)."""
    return inputs.gpus is None and rank_by_of(inputs) == "deadline"


def deadline_counts(inputs, gpus_per_node: int) -> tuple[int, ...]:
    """The GPU counts searched first: --gpus, or for a deadline (--days, or the article's default week
    with neither) the common cluster sizes up to DEADLINE_COUNTS_MAX; then deadline_counts_between
    (jobs.plan.search.search_on: `plan` and `train --mfu predicted` search a deadline there alike)."""
    if not _searches_for_deadline(inputs):  # --gpus, or an explicit --rank-by: the counts asked / the default's
        return inputs.gpu_counts
    return range_counts(gpus_per_node, DEADLINE_COUNTS_MAX)


def counts_between(inputs, fitting: LayoutTable, counts, gpus_per_node: int) -> tuple[int, ...]:
    """The counts to search next for a deadline answered on the common sizes (deadline_counts): those
    between the smallest count whose rows meet it with failures (``fitting``'s days_with_failures) and the
    searched count below it (planner.plan.deadline_counts_between); () with --gpus or --rank-by, when no
    row meets it, or when the smallest searched count does."""
    deadline = deadline_of(inputs)
    if deadline is None or not _searches_for_deadline(inputs) or not len(fitting):
        return ()
    # a count answers a deadline when its first layout (`--gpus N`'s) meets it, the rule deadline_order applies, and
    # that is not monotone in the count: a common size where only a later row meets it may have a count below it whose
    # first row does, and one above it. So every gap from the one below the smallest count any row of which meets it
    # up to the smallest count whose first row does is searched (review R2 M1: llama-3.1-8b 15T h100 --days 2
    # bracketed below 16,384, where only a later row met 2 days, found none and answered 24,576; 17,408's first meets)
    met = fitting["days_with_failures"] <= deadline
    if not met.any():
        return ()
    any_row, first_row = int(fitting["gpus"][met].min()), fitting["gpus"][met & count_first_rows(fitting)]
    tops = [c for c in counts if any_row <= c <= (int(first_row.min()) if len(first_row) else any_row)] or [any_row]
    return tuple(sorted({c for top in tops for c in deadline_counts_between(counts, top, gpus_per_node)}))


def deadline_rows(inputs, fitting: LayoutTable, counts) -> tuple[LayoutTable, str]:
    """With a deadline (deadline_of), the rows that meet it with failures and checkpoints (each row's own
    days_with_failures, the column the table prints: jobs.plan.completes), in the deadline rule's order
    (planner.plan.deadline_order: fewest GPUs whose first layout by time meets it), and no note; with none, ``fitting`` as is.
    When no row meets the article's default week, the count fastest with failures and a note saying so;
    a --days no row meets is refused with what the fastest layout needs."""
    deadline = deadline_of(inputs)
    if deadline is None:
        return fitting, ""
    fitting.columns["time_first"] = count_first_rows(fitting)  # before the cut: ranking("deadline") reads it
    meets, missed = deadline_order(fitting, fitting["days_with_failures"], deadline, cost=fitting["cost"]), ""
    if not len(meets):
        quickest = int(np.argmin(fitting["days_with_failures"]))  # fastest as the deadline measures it
        quickest_s = fitting["days"][quickest] * SECONDS_PER_DAY  # '0.0 days' at 1,500 s before
        besides = beyond_training(inputs)  # days_with_failures weighs the evaluations (completes.work_factors)
        fastest = (f"the fastest layout needs {format_duration(quickest_s)} before {besides}, "
                   f"{format_duration(fitting['days_with_failures'][quickest] * SECONDS_PER_DAY)} with them, "
                   f"on {plural(int(fitting['gpus'][quickest]), 'GPU')}")
        if inputs.days is not None:  # a deadline the user gave: refused, with what would be needed
            raise InputError("days", whole_or(deadline), f"no searched GPU count meets it with {besides}: {fastest}")
        # the article's default week, not asked for: answer with the fastest layout and say so
        missed = (f"no GPU count up to {max(counts):,} trains it in the article's default {deadline:g} days; "
                  f"{fastest}, shown here: give --days or --gpus for another answer")
        meets = np.flatnonzero(fitting["gpus"] == fitting["gpus"][quickest])
        fitting.columns["time_first"] = np.zeros(len(fitting), dtype=bool)  # the fastest count's cheapest, as before
    return fitting.take(meets), missed
