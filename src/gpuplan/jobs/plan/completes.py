"""Which layouts of a layout search finish a run at all once failures are counted: the budget
(core.economics.reliability.expected_wall_seconds) refuses a count whose failures come faster than a
checkpoint period plus a restart, so the search must not answer with one (wave 6c: `plan
llama-3.1-405b --gpus 1-10000000` picked 8,388,608 GPUs, then refused, although 1,024 completes);
nor, ranking by time, with one that completes slowly (wave 7: the same range then picked 2,097,152
GPUs, 4.35 h failure-free but 7,910 days expected with failures): each row's failure share lets
planner.plan.ranking compare counts with failures."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from gpuplan.errors import InputError, whole_or
from gpuplan.jobs.plan.offer import OFFER_SLOWDOWN, NoCompletion, checking_offer, offer_words
from gpuplan.planner.sorted_runs import run_bounds
from gpuplan.schema.shard_group import fixed_shard_group


class Completing(NamedTuple):
    """The rows of a layout table whose run completes with failures, ascending, and for each its
    on-demand expected wall-clock with failures and checkpoints / failure-free wall-clock."""

    rows: np.ndarray
    slow_share: np.ndarray
    """At the high end of the failure rate's range (the ranking's: planner.plan.ranking)."""
    point_share: np.ndarray
    """At the point failure rate (the answer's "expected wall-clock with failures")."""


def completing_rows(inputs, evaluator, fitting) -> Completing:
    """Rows of ``fitting`` (a LayoutTable with days) where the expected run with failures completes, on-demand
    and on spot, at the budget's point failure rate and both ends of its range
    (jobs.budget.compute.failure_ranges: the answer shows all three), with their failure shares. A row's share is
    what its own budget (jobs.budget.model.scenario) depends on: the GPU count (the failure rate), the checkpoint
    writers (all GPUs with ZeRO >= 1, DeepSpeed MiCS's first group x tp x pp, one replica's tp x pp with ZeRO-0:
    core.economics.checkpoint.checkpoint_writers; the write time and stall follow), and the step where one
    checkpoint per step is the floor of the interval; not the run's length (Daly's expected wall-clock is work x
    a factor of the interval, checkpoint, restart and MTBI). So the budget's failure plans are made once per
    (count, writers) group, on its first row (any row gives the same plans), and every row's expected wall-clock
    follows from them and its own step. Raises InputError naming gpus when no row completes."""
    gpus, writers = fitting["gpus"].astype(np.int64), _writers(inputs, fitting)
    # one int64 per (count, writers): collision-free while writers <= gpus < 2^31 (MAX_GPUS is 10^7: schema.vocabulary)
    group = gpus * 2**32 + writers
    order = np.argsort(group, kind="stable")  # not np.unique: it imports numpy.ma (tests/test_startup.py)
    starts, stops = run_bounds(group[order])  # the groups, in ascending order
    from gpuplan.jobs.budget.evaluation import work_factors

    settings = inputs.budget_settings()
    plans = _table_plans(inputs, evaluator, settings, fitting, order[starts])
    which = np.empty(len(fitting), np.int64)
    which[order] = np.repeat(np.arange(len(starts)), stops - starts)
    steps, done, shares = fitting["step_seconds"], np.ones(len(fitting), bool), []
    evaluations = (work_factors(inputs, evaluator.spec, fitting, settings)  # in-loop evaluation: more work to run
                   if getattr(settings, "eval_interval", None) else 1.0)
    on_demand = np.ones(len(fitting), bool)  # the rows whose on-demand plans (k even) complete
    for k in range(6):  # on-demand and spot at the point rate, then at the low and the high end of its range
        share, finishes = _wall_shares(*_plan_columns(plans, which, k), steps)
        done &= finishes
        on_demand &= finishes if k % 2 == 0 else True
        shares.append(share * evaluations)
    kept = np.flatnonzero(done)
    if not len(kept):
        tokens_per_step = fitting["global_batch"].astype(float) * inputs.seq_len
        granule = (fitting["dp"] * fitting["micro_batch"]).astype(np.int64) * inputs.seq_len
        rate = tokens_per_step / steps  # the batch within OFFER_SLOWDOWN first, the cut-off's where none is (as
        offer = largest_step_tokens(plans, which, rate, granule, slowdown=True)  # solved_no_completion's order)
        raise no_completion(_batch_given(inputs), _asked(inputs, gpus), inputs.gpus is not None,
                            offer or largest_step_tokens(plans, which, rate, granule), aligned=True,
                            spot_only=bool(on_demand.any()))
    return Completing(kept, np.maximum.reduce(shares[0::2])[kept], shares[0][kept])  # the slowest on-demand


def check_offer_pick(inputs, result, best_index) -> None:
    """On an offer's re-run (checking_offer) of a layout search (jobs.plan.search.search_on: `plan`, and `train`'s
    deadline search), the row the search ranks first must run within OFFER_SLOWDOWN of its failure-free time at
    the point failure rate, the test the given count's door puts to its one plan (check_run_completes); else
    no_completion's refusal offering that row's largest batch within it (largest_step_tokens, slowdown). One rule
    on every door (review w11 r4 S2: `plan` asked every completing row to be within it and offered the least over
    them, 8.85e7 for `plan llama-3.1-8b --global-batch-tokens 2e11 --gpus 64 --failure-rate 0.01 --days 400`,
    though 3.18e8 and 1e9 answered within 2x, while it said 'the largest batch'). ``result``: a PlanSearch;
    ``best_index(result, rank_by)``: jobs.plan.search.best_index (passed in: search imports this module)."""
    table = result.table
    if not checking_offer() or not len(table) or "days_with_failures" not in table.columns:
        return
    from gpuplan.jobs.plan.deadline import rank_by_of
    from gpuplan.jobs.plan.schema import PlanInputs

    # `plan` ranks as asked (--rank-by, or the deadline rule); `train`'s deadline search (BudgetInputs) by the deadline
    i = best_index(result, rank_by_of(inputs) if isinstance(inputs, PlanInputs) else "deadline")
    if float(table["days_with_failures"][i]) <= OFFER_SLOWDOWN * float(table["days"][i]):
        return
    plans = _table_plans(inputs, result.evaluator, inputs.budget_settings(), table, np.array([i]))
    rate = float(table["global_batch"][i]) * inputs.seq_len / float(table["step_seconds"][i])
    granule = int(table["dp"][i] * table["micro_batch"][i]) * inputs.seq_len
    offer = largest_step_tokens(plans, np.zeros(1, np.int64), np.array([rate]), granule, slowdown=True)
    raise no_completion(_batch_given(inputs), _asked(inputs, table["gpus"]), inputs.gpus is not None, offer,
                        aligned=True)


def with_completing_shares(inputs, evaluator, fitting):
    """``fitting`` less the rows whose run never completes with failures (completing_rows; the same table,
    not a copy, when every row completes), with its ``failure_share`` column (the ranking's, at the failure
    rate's high end: planner.plan.ranking), and each kept row's share at the point failure rate. `plan`
    (jobs.plan.search._with_days) and `train` (jobs.training.layout.with_failure_shares) weigh rows through
    it. Raises InputError as completing_rows."""
    done = completing_rows(inputs, evaluator, fitting)
    if len(done.rows) < len(fitting):  # else every row completes, in order: no copy of its ~35 columns (12 ms of
        fitting = fitting.take(done.rows)  # the default-range plan's 90,186 rows)
    fitting.columns["failure_share"] = done.slow_share
    return fitting, done.point_share


def _writers(inputs, table) -> np.ndarray:
    """The checkpoint writers of each row of ``table`` (core.economics.checkpoint.checkpoint_writers, by row): every
    GPU with ZeRO >= 1, DeepSpeed MiCS's first group x tp x pp (its writer_group), one replica's tp x pp with ZeRO-0."""
    gpus, mics = table["gpus"].astype(np.int64), _mics_groups(inputs, table)
    model_parallel = table["tp"] * table["pp"]
    return np.maximum(np.where(table["zero"] >= 1, np.where(mics > 0, np.minimum(gpus, mics * model_parallel), gpus),
                               np.minimum(gpus, model_parallel)), 1).astype(np.int64)


def _table_plans(inputs, evaluator, settings, table, firsts: np.ndarray):
    """The budget's six failure plans (jobs.plan.failure_plans.PlanColumns: on-demand and spot at the point failure
    rate, then at the low and the high end of its range, R.failure_rate_range, the ends the answer prints) of each
    (count, writers) group whose first row is in ``firsts``: jobs.budget.model.scenarios with no step floor, over
    the groups at once (group_plan_columns; one scenarios call a group took ~1.0 s of a long-context search). The
    plans read no other column of the row: work is not in them (completing_rows)."""
    from gpuplan.jobs.plan.failure_plans import group_plan_columns

    node = inputs.node_accelerator(evaluator.cluster.gpu)  # --gpus-per-node: the nodes that write checkpoints, as
    # the budget's Failures section and its deadline solve count them (jobs.budget.estimate.failures_for_deadline)
    return group_plan_columns(evaluator.spec, node, inputs.recipe_name, settings,
                              table["gpus"][firsts].astype(float), _writers(inputs, table)[firsts])


def _mics_groups(inputs, table) -> np.ndarray:
    """The DeepSpeed MiCS shard group of each row of ``table``, whose data-parallel ranks (x tp x pp) write the
    checkpoint (core.economics.checkpoint.mics_writer_group); 0 where every rank writes: another framework or no
    group."""
    if getattr(inputs, "framework", None) != "deepspeed":
        return np.zeros(len(table), np.int64)
    if "shard_group" in table.columns:  # --shard-group auto: each row's own (0: plain sharding)
        return table["shard_group"].astype(np.int64)
    return np.full(len(table), fixed_shard_group(getattr(inputs, "shard_group", None)) or 0, np.int64)


def _plans_of(run, settings, gpus: float):
    """The six failure plans (failure_plans.PlanColumns, of one group) of ``run`` (its step_seconds 0: no floor) on
    ``gpus``: jobs.budget.model.scenarios itself, for the given count's door (check_run_completes)."""
    from gpuplan.core.economics.reliability import failure_rate_range
    from gpuplan.jobs.budget.model import scenarios

    found = scenarios(run, settings, gpus, (None, *failure_rate_range(settings.failure_rate)))
    return [tuple(np.array([value]) for value in (p.mtbi, p.restart, p.checkpoint_cost, p.interval))
            for s in found for p in (s.on_demand, s.spot)]


def _plan_columns(plans, which: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """(MTBI, restart, stall, interval) of failure plan ``k`` (of the six) for each row, by its group (``which``
    indexes the groups of ``plans``, failure_plans.PlanColumns)."""
    return tuple(column[which] for column in plans[k])


def _wall_shares(mtbi: np.ndarray, restart: np.ndarray, stall: np.ndarray, interval: np.ndarray,
                 steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected wall-clock with failures / failure-free work, per row, with the checkpoint interval at least
    the row's step (jobs.budget.model.scenario: 'at most one checkpoint per step'), and whether the run
    finishes: core.economics.reliability.expected_wall_seconds (Daly 2006) and its refusal over arrays
    (tests/test_plan_range_failures.py checks every row against its own budget)."""
    from gpuplan.core.economics.reliability import MAX_FAILURE_EXPONENT as most

    interval = np.maximum(interval, steps)
    finishes = np.maximum(restart, interval + stall) / mtbi <= most
    grow = np.expm1(np.minimum((interval + stall) / mtbi, most))  # capped where it does not finish anyway
    return mtbi * np.exp(np.minimum(restart / mtbi, most)) * grow / interval, finishes


def check_run_completes(run, settings, batch_asked: bool | tuple[str, float] | None, granule: int | None = None,
                        slowdown: bool = False, asked: str | None = None) -> None:
    """The given count's door (jobs.budget.compute.compute_budget: `train`/`budget`/`plan` on one count) by
    completing_rows' test: the run on its GPUs completes at all six failure plans, else no_completion's refusal.
    Wave 9 review M1: `budget deepseek-v3 --tp 8 --global-batch-tokens 1e12 --gpus 768` printed 119,729,289 days
    with failures where the search door refused the same count. ``granule``: tokens of one sequence on each of
    the layout's dp x micro-batch slots, the unit the refusal's largest batch is rounded down to (largest_step_tokens);
    ``asked``: --gpus as typed where the run uses fewer (no_completion's ``used``), else its own count."""
    plans = _plans_of(replace(run, step_seconds=0.0), settings, run.gpus)
    which, steps = np.zeros(1, np.int64), np.array([run.step_seconds])
    shares = [_wall_shares(*_plan_columns(plans, which, k), steps) for k in range(6)]  # each plan once
    on_demand_finishes = all(bool(finishes[0]) for _, finishes in shares[0::2])
    for k, (share, finishes) in enumerate(shares):
        if not finishes[0] or (k == 0 and checking_offer() and not share[0] <= OFFER_SLOWDOWN):
            batch = batch_asked if isinstance(batch_asked, tuple) else (  # (field, value) as given, else the run's
                ("global_batch_tokens", whole_or(run.global_batch_tokens)) if batch_asked else None)
            raise no_completion(batch, asked or f"{run.gpus:,.0f}", True, largest_step_tokens(
                plans, which, np.array([run.global_batch_tokens]) / steps, granule, slowdown),
                aligned=granule is not None, spot_only=k % 2 == 1 and on_demand_finishes, used=f"{run.gpus:,.0f}")


def check_plan_completes(inputs, spec, gpu, plan, wall_seconds: float, slowdown: bool = False) -> None:
    """The given count's door of the training estimate (jobs.training.timing.estimate_time, --gpus without
    --days): its chosen ``plan`` running ``wall_seconds`` failure-free completes with the budget's failures
    (``inputs`` with budget fields: jobs.training.layout.with_budget_fields gives a plain job the defaults), as
    the same job's search door requires (layout_for_deadline refuses on completing_rows); else the same refusal. Wave 9 review
    M1: the web's training job answered 92.89 days on --gpus 768 where it refused with no --gpus."""
    from gpuplan.jobs.budget.model import run_facts

    layout = plan.layout
    run = run_facts(spec, gpu, gpus=float(plan.gpus), wall_seconds=wall_seconds,
                    gpu_hours=wall_seconds * plan.gpus / 3600, tokens=inputs.tokens, recipe=inputs.recipe_name,
                    global_batch_tokens=float(plan.global_batch * inputs.seq_len), zero=layout.zero,
                    model_parallel=layout.tp * layout.pp)
    check_run_completes(run, inputs.budget_settings(layout), _batch_given(inputs),
                        layout.dp * layout.micro_batch * inputs.seq_len, slowdown, _asked(inputs, np.array([plan.gpus])))


def solved_no_completion(inputs, spec, gpu, plan, deadline_seconds: float) -> InputError:
    """The refusal of the solved-MFU door (jobs.training.timing._solve_mfu, --gpus and --days) where on ``plan``'s
    GPUs failures come faster than a checkpoint period plus a restart: the given count's refusal
    (check_plan_completes) for the run at the slowest throughput that meets the deadline (its failure-free wall
    the whole ``deadline_seconds``), so it names the global batch given and offers one a step may hold, as every
    other door does (review w10 r3 S3: `budget llama-3.1-405b --global-batch-tokens 1e12 --gpus 1024 --days 400
    --failure-rate 0.01` was told 'gpus: ... fewer GPUs', which cannot help a fixed batch); the door's
    answering_offer then checks the offer. Where that test passes (it weighs six failure plans, the budget one)
    the count's own line. ``inputs``: with the budget's fields (jobs.training.layout.with_budget_fields)."""
    from gpuplan.adapters.resolve import resolve_gpu

    for slowdown in (True, False):  # the batch within OFFER_SLOWDOWN first: the cut-off's never answers here
        try:
            check_plan_completes(inputs, spec, gpu or resolve_gpu(inputs.gpu), plan, deadline_seconds, slowdown)
        except InputError as refusal:  # else (no batch within it) the cut-off's, which names the batch given
            if not slowdown or isinstance(refusal, NoCompletion) and refusal.offered > 0:
                return refusal
    return no_completion(None, f"{plan.gpus:,}", True, 0.0)  # the count's own line, as every door words it


def largest_step_tokens(plans, which: np.ndarray, tokens_per_second: np.ndarray, granule=None,
                        slowdown: bool = False) -> float:
    """The most tokens a step may hold for some row to complete at all six failure plans (each row at its own
    throughput, ``tokens_per_second``): a step is the floor of the checkpoint interval (_wall_shares), so
    max(interval, step) + stall <= MAX_FAILURE_EXPONENT x MTBI bounds it; 0 where no step is short enough (the
    restart or the optimal interval alone outlasts the bound). With a fixed global batch the step and the MTBI
    both scale as 1/GPUs, so the bound hardly moves with the count; it is the remedy the refusal offers.
    ``granule`` (tokens, per row: dp x micro-batch x seq_len): each row's bound rounded down to a multiple of it
    that the fewest significant digits (from three) write exactly (_aligned), so the batch quoted lays out as
    that row's layout does (the same dp and micro-batch, every GPU working) and keeps the rounding's margin below
    the bound (one granule under it was refused again: the bound moves ~1e-7 with the batch); unrounded, 9.9e11 tokens on 768 GPUs was told 8.88e11 (216,796,875 sequences, odd: dp 4 no longer divides
    it, and the layout that does runs slower) and 8.88e11 was refused in turn, told 8.04e11. Review w10 r4 M1: that
    bound is where the expected wall-clock grows as e^50; on an offer's re-run (jobs.plan.offer.checking_offer) the
    step is also held to where the point failure rate's on-demand expected wall-clock is at most OFFER_SLOWDOWN x the
    failure-free one (_within_slowdown), so the refused offer is replaced by one within it. The largest over the
    rows on every door: the re-run checks the row the search picks (check_offer_pick), not every row."""
    from gpuplan.core.economics.reliability import MAX_FAILURE_EXPONENT as most

    best = np.full(len(which), np.inf)
    for k in range(6):
        mtbi, restart, stall, interval = _plan_columns(plans, which, k)
        room = most * mtbi - stall
        fits = (restart <= most * mtbi) & (interval <= room)  # else no step is short enough
        with np.errstate(over="ignore"):  # --failure-rate 1e-300: an MTBI of ~1e300 s bounds no step (inf)
            best = np.minimum(best, np.where(fits, room * tokens_per_second, 0.0))
    ever = best > 0  # rows that complete at some step
    if checking_offer() or slowdown:  # an offer's re-run (or ``slowdown``): the batch offered is held within it
        best = np.minimum(best, _within_slowdown(*_plan_columns(plans, which, 0), room=best / tokens_per_second)
                          * tokens_per_second)
    if granule is None:
        return float(best[ever].max(initial=0.0))
    return largest_aligned(best, ever, granule)


def largest_aligned(best: np.ndarray, ever: np.ndarray, granule) -> float:
    """max over the rows ``ever`` of _aligned(best, granule) (tokens; 0.0 where none is positive), the largest raw
    bounds first: _aligned(b, g) <= b (a multiple of the granule at most b, or 0), so once a raw bound is at most
    the best aligned one no later row beats it. Aligning every row took 122,043 calls, ~1.4 s of CPU, in `train
    deepseek-v3 --tp 8 --failure-rate 3e-5 --global-batch-tokens 1e12` (helper S, s22); the answer is the same."""
    grains, top = np.broadcast_to(granule, best.shape), 0.0
    rows = np.flatnonzero(ever)
    for i in rows[np.argsort(-best[rows], kind="stable")]:
        if not best[i] > top:  # NaN sorts last (and aligns to 0); every row from here adds nothing
            break
        top = max(top, _aligned(float(best[i]), int(grains[i])))
    return top


def _within_slowdown(mtbi, restart, stall, interval, room) -> np.ndarray:
    """The longest step (s, per row) at most ``room`` whose _wall_shares share (expected wall-clock with failures /
    failure-free work) is at most OFFER_SLOWDOWN, by bisection (the share is constant below the checkpoint
    interval, where the step does not floor it, and grows with the step above it: Daly's e^((step + stall)/MTBI));
    0 where even the interval's share is over it."""
    def share(step):
        return _wall_shares(mtbi, restart, stall, interval, step)[0]

    room = np.asarray(room, float)
    low, high = np.minimum(interval, room), room
    ok = (room > 0) & (share(np.maximum(low, 1e-300)) <= OFFER_SLOWDOWN)
    low = np.where(share(np.maximum(high, 1e-300)) <= OFFER_SLOWDOWN, high, low)  # the whole room is within it
    for _ in range(60):  # halves the bracket 60 times: far below the granule the batch is rounded down to
        mid = (low + high) / 2
        good = share(np.maximum(mid, 1e-300)) <= OFFER_SLOWDOWN
        low, high = np.where(good, mid, low), np.where(good, high, mid)
    return np.where(ok, low, 0.0)


def _aligned(tokens: float, granule: int) -> float:
    """The largest multiple of ``granule`` at most ``tokens`` that d significant digits write exactly (a multiple
    of lcm(granule, 10^(e-d+1)), e the exponent of ``tokens``), for the fewest d from 3 that comes within one
    unit of the third digit of the three-digit floor (so never more than two such units under ``tokens``),
    else the largest multiple of ``granule``; 0 where none is positive."""
    if not tokens > 0 or not math.isfinite(tokens):
        return 0.0
    exponent = math.floor(math.log10(tokens))
    third = 10 ** max(0, exponent - 2)
    close = (math.floor(tokens / third) - 1) * third  # one third-digit unit under the three-digit floor
    for digits in range(3, exponent + 2):
        unit = math.lcm(granule, 10 ** (exponent - digits + 1))
        if (shown := math.floor(tokens / unit) * unit) > 0 and shown >= close:
            return float(shown)
    return float(math.floor(tokens / granule) * granule)


def no_completion(batch: tuple[str, float] | None, asked: str | None, gpus_given: bool,
                  step_tokens: float, aligned: bool = False, spot_only: bool = False,
                  used: str | None = None) -> InputError:
    """The one refusal of a run that completes with failures on no count asked or searched (`plan`/`train`'s
    search and the given count's budget, jobs.budget.compute.compute_budget, by the same test): it names the
    global batch where the user gave it and a shorter step would complete (``step_tokens`` > 0, the most a step
    may hold: largest_step_tokens), else --gpus as given (``asked``), else that no count was given. Fewer GPUs
    are offered only where the user chose the counts: with none given the search starts at the smallest count
    that fits (wave 9 review M1: `train deepseek-v3 --tp 8 --global-batch-tokens 1e12` was told 'fewer GPUs').
    ``used``: the GPUs the layout runs on where that is not the count asked (a multiple of its model-parallel size
    below it): named beside it, the refusal's value staying the count the user typed (hostile wave 25: `budget
    deepseek-v3 --gpus 10000000` was refused as 'gpus: got 9,999,872')."""
    where = f"on {asked} GPUs" if asked else "on the GPUs asked"
    if asked and used and used != asked:
        where = f"on the {used} GPUs the layout uses of the {asked} asked"
    what = (f"a GPU count where the run completes with failures: {where} failures come faster than a checkpoint "
            "period plus a restart")
    if spot_only:  # ``spot_only``: the on-demand plans complete, a spot one (its reclaims on top) does not (wave 22)
        what += " on spot capacity (the on-demand run completes; spot reclaims count as failures there)"
    scale = 10.0 ** (math.floor(math.log10(step_tokens)) - 2) if step_tokens > 0 else 1.0
    shown = math.floor(step_tokens / scale) * scale  # three digits rounded down: the bound, never past it
    # ``aligned`` (largest_step_tokens with a granule): already a batch the layout runs, written in full where three
    # digits would change it (rounding it down to three digits would leave the layout's multiple again)
    written = f"{shown:.3g}" if not aligned or shown == step_tokens else next(
        text for d in range(4, 18) if float(text := f"{step_tokens:.{d}g}") == step_tokens)
    if checking_offer():  # an offer's re-run (jobs.plan.offer.answering_offer): only its offer is read; 0 = none
        return NoCompletion("global_batch_tokens", batch[1] if batch else None, what, written)
    shorter = offer_words(written) if step_tokens > 0 else ""
    remedies = ([shorter] if shorter else []) + (["fewer GPUs"] if gpus_given and not (batch and shorter) else [])
    remedies += ["a lower --spot-preemption"] if spot_only else ["a lower --failure-rate"]
    remedies += ["a shorter --restart"]
    advice = f" ({', '.join(remedies[:-1])} or {remedies[-1]})"
    if batch is not None and shorter:
        name, value = batch
        return NoCompletion(name, value, f"{what}, because each step (the least checkpoint interval) outlasts the "
                            f"time between failures; with a fixed global batch no GPU count changes that{advice}", written)
    if gpus_given:
        return InputError("gpus", asked, what + advice)
    return InputError("gpus", None, f"{what}, on every count searched{advice}")


def solved_count_refusal(refusal: InputError, inputs, gpus: float) -> InputError:
    """``refusal`` as the user can act on it where the GPU count was solved, not given (--days and no --gpus): a
    refusal naming gpus quoted a count the user never typed ('gpus: got 105,280', hostile wave 22), so it names the
    days that count was solved from, and offers more days where it offered fewer GPUs. Any other refusal as is."""
    if getattr(inputs, "gpus", None) is not None or refusal.field != "gpus" or getattr(inputs, "days", None) is None:
        return refusal
    from gpuplan.schema.types import MAX_DAYS

    said = refusal.expected.removeprefix("a GPU count where the run completes with failures: ")
    more = "(more days, " if inputs.days < MAX_DAYS else "("  # none past the cap --days takes (review s20b N)
    return refusal.retold("days", whole_or(inputs.days), f"meeting it takes {gpus:,.0f} GPUs (solved: no --gpus given), and "
                          + said.replace("(fewer GPUs, ", more))


def _batch_given(inputs) -> tuple[str, float] | None:
    """(field, value) of the global batch the user gave: --global-batch-tokens or --global-batch, else None."""
    for name in ("global_batch_tokens", "global_batch"):
        value = getattr(inputs, name, None)
        if value is not None:
            return name, whole_or(value)
    return None


def _asked(inputs, searched: np.ndarray) -> str:
    """--gpus as written (plan's CountsAsked: a range as its span, a list as its counts); the span of the counts
    ``searched`` where none was given (`train --global-batch-tokens 1e12` with no --gpus ended in a TypeError
    formatting None, wave 9)."""
    given = (inputs.gpus,) if inputs.gpus else (int(searched.min()), int(searched.max()))
    counts = getattr(inputs, "gpu_counts", None) or given  # plan's list or range; train's one count
    from gpuplan.jobs.plan.schema import CountsAsked  # lazy: the schema loads the field groups

    if isinstance(counts, CountsAsked):
        return str(counts)
    return f"{counts[0]:,}" if len(counts) == 1 else f"{min(counts):,}-{max(counts):,}"
