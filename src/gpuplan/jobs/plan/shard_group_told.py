"""The line `plan --shard-group auto` adds to its recommendation, and `train` / `budget` to their layout section
(training_shard_group_line: plan's line of the same search): which shard group the ranking chose (or plain
sharding), what the best layout of the other kind predicts with the percent (and the ranking's own measure, which
placed it below), why there is none where none is left, and the groups the variant cap left out
(planner.shard_group_search)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuplan.jobs.plan.ranked_columns import with_ranked_columns
from gpuplan.planner.plan import PLATEAU_SHARE, layout_text, ranking, row_layout
from gpuplan.planner.shard_group_search import capped_groups, node_groups
from gpuplan.planner.space import RECOMPUTE_MODES
from gpuplan.report.model import Line
from gpuplan.schema.shard_group import searches_shard_groups

ARTICLE_DAYS = ("plan's search of this ask on the GPUs the layout stands for: days are the modelled step's "
                "(tokens / tokens per second), not the --mfu wall-clock")
"""The line's formula in `train` / `budget` where a given MFU (not the step model) sets their wall-clock."""

MFU_DAYS = "; days here are the step model's, not the MFU's wall-clock above"
"""What the line's text adds there, so the default text view says it too (ARTICLE_DAYS is --full's)."""


def training_shard_group_line(inputs, plan, found=None) -> tuple[Line, ...]:
    """`train`'s and `budget`'s line under --shard-group auto: plan's (shard_group_line) over plan's own search of
    the same ask, so the three cannot disagree. ``found``: the deadline search `train --mfu predicted` chose
    ``plan`` from without --gpus (jobs.training.layout.layout_for_deadline: `plan` runs the same search and ranks
    it by the deadline rule); else `plan --gpus N` on the count ``plan`` stands for (N = plan.gpus_asked, no
    --days), ranked by time as jobs.training.layout.layout_for_gpus ranks it. ``plan``'s row is the answer; where
    plan ranks another first the line names that one and says the answer keeps its own (train and plan weigh the
    same counts at a given MFU too: planner.plan.best_plan). At a given MFU the text says its days are the step
    model's (the wall-clock above is the MFU's). () without auto, without a searched plan, or where plan's search holds no row of ``plan``'s layout."""
    if plan is None or not searches_shard_groups(getattr(inputs, "shard_group", None)):
        return ()
    rank_by = "deadline" if found is not None else "time"
    if found is None:
        from gpuplan.jobs.plan import search as plan_search  # plan's door: a patched search is seen

        found = plan_search.search(plan_ask(inputs, plan.gpus_asked))
    told = searched_shard_group_line(found, rank_by, plan, "by its own layout search")
    if inputs.time_predicted:
        return told
    return tuple(replace(line, text=line.text + MFU_DAYS, formula=ARTICLE_DAYS) for line in told)


def plan_ask(inputs, gpus: int):
    """The PlanInputs of `plan --gpus gpus` with the fields ``inputs`` (train's or budget's) gave that plan takes
    (not --days: the count is given; not --mfu, --comm-allowance, --flops-method, --attention-flops, --contingency
    or --step-time, which no layout search reads)."""
    from gpuplan.jobs.plan.schema import PlanInputs  # lazy: `train` loads plan's schema only under auto

    taken = set(PlanInputs.model_fields) - {"gpus", "days"}
    return PlanInputs(**{k: v for k, v in inputs.given_values().items() if k in taken}, gpus=gpus)


def searched_shard_group_line(result, rank_by: str, plan=None, kept: str = "") -> tuple[Line, ...]:
    """shard_group_line over the PlanSearch ``result`` ranked by ``rank_by`` as `plan` ranks it (with_ranked_columns,
    planner.plan.ranking); ``plan`` (a planner.plan.Plan): its row first, () where the search holds none; where plan
    ranks another first, the line names it and says the answer keeps its own (``kept``: why)."""
    table = with_ranked_columns(result.table)
    order = plans = ranking(table, rank_by, table["cost"])
    if plan is not None and len(order):
        same = _rows_of(table, plan)[order]
        if not same.any():
            return ()
        first = order[np.argmax(same)]
        order = np.concatenate(([first], order[order != first]))
    layout_of = (result.evaluator.step.expert_tp, result.evaluator.shard_group)  # as plan_report's
    return shard_group_line(table, order, layout_of, rank_by, result, plans, kept)


def _rows_of(table, plan) -> np.ndarray:
    """Which rows of ``table`` (an auto search's: a shard_group column) run ``plan``'s layout and recompute mode."""
    layout = plan.layout
    same = (table["recompute"] == RECOMPUTE_MODES.index(plan.recompute)) & (table["gpus"] == layout.world)
    same &= table["shard_group"] == (layout.shard_group or 0)
    for name in ("dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "global_batch"):
        same &= table[name] == getattr(layout, name)
    return same


def shard_group_line(table, order: np.ndarray, layout_of=(), rank_by: str = "time", result=None,
                     plans: np.ndarray | None = None, kept: str = "") -> tuple[Line, ...]:
    """One Line (key shard_group_auto, value: the group chosen, 0 for plain sharding) where ``table`` (the ranked
    rows: days and ranked_days / ranked_cost columns) carries the auto search's ``shard_group`` column, ``order``
    its ranking by ``rank_by`` (best first); () otherwise. ``result``: the PlanSearch (its evaluator names the
    node and the model, its ``all`` the groups the cap cut). The other kind's percent is its failure-free days over
    the answer's less 1 (days = tokens / tokens per second), said so, with the measure the ranking compared
    (_ranked_words): the two can differ in sign (the ranking takes each layout's ± and failures). ``plans``: plan's
    own order where ``order`` moved `train`'s row first (training_shard_group_line): the line then names plan's
    first and that the answer keeps its own (``kept``: why)."""
    if "shard_group" not in table.columns or not len(order):
        return ()
    plans = order if plans is None else plans
    best = int(order[0])
    groups = table["shard_group"][order]
    chosen = int(groups[0])
    other = order[groups == 0] if chosen else order[groups > 0]
    if chosen:
        data = int(table["dp"][best] * table["cp"][best])
        head = f"{chosen:,} (HSDP, {data // chosen:,} replicas of dp x cp {data:,})"
        kind = "best plain sharding"
    else:
        head = ("none (plain sharding: every data-parallel rank shards)" if table["zero"][best] >= 1 else
                "none (the answer runs ZeRO 0: nothing sharded)")
        kind = "best HSDP"
    cut = _capped_words(result)
    first = int(plans[0])
    if not len(other):
        why = (f"no layout here runs one ({_no_variant_reason(table, best, result)})" if not chosen else
               "no plain layout is left among the ranked rows")
        return _line(chosen, f"{head}; {why}{_kept_words(table, first, best, -1, layout_of, kept)}{cut}")
    i = int(other[0])
    days, mine = float(table["days"][i]), float(table["days"][best])
    below = bool(np.flatnonzero(plans == best)[0] < np.flatnonzero(plans == i)[0])  # plan's own order
    return _line(chosen, f"{head}; {kind}: {int(table['gpus'][i]):,} GPUs "
                 f"{layout_text(*row_layout(table, i, *layout_of))}, {table['step_seconds'][i]:.3g} s a step, "
                 f"{days:.2f} days ({days / mine - 1:+.1%} failure-free; "
                 f"{_ranked_words(table, i, best, rank_by, below)})"
                 f"{_kept_words(table, first, best, i, layout_of, kept)}{cut}")


def _kept_words(table, first: int, best: int, i: int, layout_of, kept: str) -> str:
    """'; plan ranks it first / first X; the layout above is kept: ``kept``' where plan's first row ``first`` is
    not the answer ``best`` ('it': the other kind's row ``i`` just named); '' otherwise."""
    if first == best:
        return ""
    named = "it first" if first == i else (f"first {int(table['gpus'][first]):,} GPUs "
                                           f"{layout_text(*row_layout(table, first, *layout_of))}, "
                                           f"{float(table['days'][first]):.2f} days")
    return f"; plan ranks {named}; the layout above is kept{': ' + kept if kept else ''}"


def _ranked_words(table, i: int, best: int, rank_by: str, below: bool = True) -> str:
    """What the ranking compared between row ``i`` (ranked below) and the answer ``best`` (planner.plan.ranking):
    by GPUs (gpus, deadline) the count where it differs; by cost the cost with failures; else (and on a tie of
    counts) the ranked days, the slow end (step x (1 + ±)) with failures at the failure rate's high end, and where
    those are fewer on more GPUs asked and plan's own order (``below``: ``i`` after ``best`` there) put ``i``
    below, the plateau rule that did it (planner.plan._fewest_on_plateau: it compares gpus_asked, so two rows
    standing for one count asked are never reordered by it)."""
    more = int(table["gpus"][i]) - int(table["gpus"][best])
    if rank_by in ("gpus", "deadline") and more:
        return f"ranked by GPUs: {more:+,} GPUs"
    if rank_by in ("cost", "deadline") and "ranked_cost" in table.columns and np.isfinite(table["ranked_cost"][best]):
        return f"ranked cost with failures {table['ranked_cost'][i] / table['ranked_cost'][best] - 1:+.1%}"
    if "ranked_days" not in table.columns:
        return "ranked below"
    ratio = table["ranked_days"][i] / table["ranked_days"][best] - 1
    asked = table["gpus_asked"] if "gpus_asked" in table.columns else table["gpus"]
    plateau = (f" on {more:+,} GPUs: the fewest GPUs within {PLATEAU_SHARE:.0%} rank first"
               if ratio < 0 and below and int(asked[i]) > int(asked[best]) else "")
    return f"ranked days (slow end, failures) {ratio:+.1%}{plateau}"


def _no_variant_reason(table, best: int, result) -> str:
    """Why no HSDP variant is among the ranked rows, read from the answer's layout: no whole-node group below its
    dp x cp (node_groups), DeepSpeed's MiCS with experts (core.parallel.MICS_NO_EXPERTS), or experts split within no
    group; else none fitted or could rank first (the pruned search varies only those: RankBound)."""
    from gpuplan.core.parallel import MICS_NO_EXPERTS

    data, ep = int(table["dp"][best] * table["cp"][best]), int(table["ep"][best])
    node = result.evaluator.cluster.gpus_per_node if result is not None else None
    framework = getattr(getattr(result, "limits", None), "framework", None)
    if node is not None and not node_groups(data, node):
        return (f"the answer's dp x cp {data:,} has no group of whole {node}-GPU nodes below it, a node times a power "
                "of two dividing it")
    if framework == "deepspeed" and ep > 1:
        return MICS_NO_EXPERTS.split(":")[0].format(ep=f" (the answer's ep {ep})")
    if result is not None and result.evaluator.spec.moe is not None and ep > 1:
        return f"the answer's ep {ep} splits within no whole-node group of its dp x cp {data:,}"
    return ("no variant fitted, or none could rank first at its count, at a ZeRO stage the framework runs a group "
            "with; --exhaustive varies every row")


def _capped_words(result) -> str:
    """'; groups ... left out (cap ...)' where the variant cap cut groups in ``result``'s search, else ''."""
    if result is None:
        return ""
    from gpuplan.planner.shard_group_search import MAX_SHARD_GROUP_VARIANTS

    left, bound_only = capped_groups(result.all, result.evaluator.cluster.gpus_per_node)
    words = ([f"groups {_listed(left)} left out"] if left else []) + (
        [f"groups {_listed(bound_only)} varied only where they could rank first"] if bound_only else [])
    return f"; {', '.join(words)} (cap {MAX_SHARD_GROUP_VARIANTS:,} variants)" if words else ""


def _listed(groups: tuple[int, ...]) -> str:
    return ", ".join(f"{g:,}" for g in groups)


def _line(chosen: int, text: str) -> tuple[Line, ...]:
    return (Line("shard_group_auto", "shard group chosen (--shard-group auto)", chosen, text=text),)
