"""How long a training run takes: the FLOPs, the MFU (given, a range, predicted from the layout,
or solved) and the compute budget with its low / high ends, and the layout it stands on.

A deadline (``--days`` without ``--gpus``) is met after every allowance the answer adds: the
GPU count is the smallest whose wall-clock with the communication allowance — and, in the
budget (`gpuplan train`), with failures and checkpoints — is within it; with ``--mfu predicted``
`plan`'s own deadline search answers it, failures and checkpoints included for every door
(jobs.training.layout.layout_for_deadline). The article's own
figure, GPU-days / days, is kept beside it as the compute-only count. A solved MFU (GPUs and days
given) above 100% or above the best published MFU of its class is refused, naming the GPUs or
days that would be needed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpuplan.core.model import flops as F
from gpuplan.core.model.finetune import peft_counts_experts
from gpuplan.core.economics.gpu_time import ComputeBudget, solve_compute_budget
from gpuplan.core.economics.io import nodes_for
from gpuplan.core.model.spec import params_for_6nd
from gpuplan.core.units import SECONDS_PER_DAY, format_duration, format_percent
from gpuplan.errors import InputError, NoLayoutFits, whole_or
from gpuplan.jobs.budget.evaluation import beyond_training
from gpuplan.jobs.plan.offer import offers_answering_batch
from gpuplan.jobs.training.mfu_refusal import check_solved_mfu
from gpuplan.jobs.training.schema import DEFAULT_DAYS, DEFAULT_MFU, TrainingInputs
from gpuplan.schema.vocabulary import MAX_GPUS

if TYPE_CHECKING:  # the planner (numpy) is imported where a layout is searched
    from gpuplan.planner.plan import Plan

WORKING_GPU_ROUNDS = 12
"""gpus_within's rounds that step to the working GPUs the MFU limit needs (failures grow with the count), before it
steps by count: the 12 rounds of its former ``minimal_rounds`` default, which no caller changed (review w12 r3 S5)."""
COUNT_ROUNDS = 6
"""gpus_within's further rounds, each one GPU count up or to the count the limit needs (the former range's + 6)."""


@dataclass(frozen=True)
class Flops:
    """The FLOP counts of one run (FLOPs), and which one sets the time."""

    n_6nd: float
    six_nd: float
    exact: float
    used: float
    hardware_ratio: float


@dataclass(frozen=True)
class TimeEstimate:
    """The expected compute budget and, when known, the low / high ones (MFU band)."""

    expected: ComputeBudget
    fast: ComputeBudget | None
    """At the high end of the MFU band: fewer GPU-days."""
    slow: ComputeBudget | None
    band_source: str = ""
    mode: str = "article"
    """'article' (MFU given or default), 'predicted' (from the layout), 'solved' (MFU solved)."""
    deadline_days: float | None = None
    """The deadline the GPU count was solved for (days given, GPUs not)."""
    compute_only_gpus: float | None = None
    """The article's GPUs for the deadline: GPU-days / days, before any allowance."""
    deadline_wall_seconds: float | None = None
    """Wall-clock after every allowance the answer adds, on the GPUs solved (within the deadline)."""
    deadline_allowances: str = ""
    """What that wall-clock includes ('communication allowance', '... and failures')."""
    deadline_search: object = field(default=None, compare=False, repr=False)
    """The deadline's jobs.plan.search.PlanSearch the layout was chosen from (predicted mode, no --gpus), which
    --shard-group auto's line ranks as `plan` does (jobs.plan.shard_group_told.training_shard_group_line)."""
    ramp: object = None
    """--batch-ramp's planner.batch_ramp.RampTiming on the layout (predicted mode): the MFU is the steady one / its
    factor, so GPU-days, wall-clock and cost follow (jobs.training.batch_ramp)."""

    @property
    def deadline_note(self) -> str:
        """Set when the article's default week is met on no searched GPU count (--mfu predicted answers the fastest
        layout, as `plan` does: jobs.plan.deadline.deadline_rows): says so. The search's own note
        (PlanSearch.missed_default_deadline), read from ``deadline_search``, not stored beside it."""
        return self.deadline_search.missed_default_deadline if self.deadline_search is not None else ""


AfterAllowances = Callable[[int, "Plan", float], float]
"""(GPUs, their layout, failure-free wall-clock s) -> the wall-clock once the answer's further
allowances (failures, checkpoints: the budget) are added, s."""


def count_flops(spec, inputs: TrainingInputs, recompute: str) -> Flops:
    n_6nd = params_for_6nd(spec)
    per_token = F.training_flops_per_token(spec, inputs.seq_len, inputs.attention_flops,  # type: ignore[arg-type]
                                           recompute, inputs.finetune, inputs.lora_rank,
                                           peft_experts=peft_counts_experts(inputs))
    six_nd, exact = F.flops_6nd(n_6nd, inputs.tokens), per_token.model * inputs.tokens
    used = six_nd if inputs.flops_method == "6nd" and inputs.finetune == "full" else exact
    return Flops(n_6nd, six_nd, exact, used, per_token.hardware / per_token.model)


def _budgets(flops: float, peak: float, gpus, seconds, mfu: float, band: tuple[float, float] | None,
             source: str, mode: str) -> TimeEstimate:
    expected = solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=mfu)
    if band is None:
        return TimeEstimate(expected, None, None, "", mode)
    low, high = band
    return TimeEstimate(expected, solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=high),
                        solve_compute_budget(flops, peak, gpus=gpus, wall_seconds=seconds, mfu=low), source, mode)


@offers_answering_batch  # the batch a no-completion refusal offers answers on this door (wave 10 review M1)
def estimate_time(inputs: TrainingInputs, spec, peak: float, gpu=None, after_allowances: AfterAllowances | None = None,
                  allowance: float = 0.0) -> tuple[TimeEstimate, Plan, TrainingInputs, Flops]:
    """The compute budget and the layout it stands on (inputs adjusted in predicted mode).
    ``allowance``: the communication allowance the answer adds (article mode);
    ``after_allowances``: the budget's failures and checkpoints, when the answer adds them."""
    from gpuplan.catalog import prediction_band
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.training.batch_ramp import ramp_on
    from gpuplan.jobs.training.layout import layout_for_deadline, layout_for_gpus, with_budget_fields

    gpus, days = inputs.gpus, inputs.days
    if gpus is None and days is None:
        days = DEFAULT_DAYS  # the article: "to finish in 7 days"
    if inputs.time_predicted:
        # one evaluator for the search and the ramp's phases (it reads none of the fields replaced below), from the
        # budget's inputs built once (layout_for_gpus / _for_deadline take them as they are)
        searched = with_budget_fields(inputs)
        ev = evaluator_for(searched)
        plan, found = ((layout_for_gpus(searched, gpus, evaluator=ev), None) if gpus is not None else
                       layout_for_deadline(searched, evaluator=ev))
        inputs = inputs.replace(comm_allowance=0.0, flops_method="exact", attention_flops="full")
        flops = count_flops(spec, inputs, plan.recompute)
        error, source = prediction_band(inputs.dtype, moe=spec.moe is not None)
        ramp = ramp_on(inputs, plan, ev)  # --batch-ramp: the run's MFU is the steady one / the ramp's time factor
        mfu = plan.mfu / (ramp.factor if ramp is not None else 1.0)
        band = (mfu / (1 + error), min(1.0, mfu / max(1e-9, 1 - error)))
        estimate = replace(_budgets(flops.used, peak, plan.gpus, None, mfu, band, source, "predicted"), ramp=ramp)
        if gpus is not None:  # the search door (layout_for_deadline) refuses a run failures never let finish
            _check_completes(inputs, spec, gpu, plan, estimate, 0.0)  # the step model has communication in it
        return replace(estimate, deadline_search=found), plan, inputs, flops
    if gpus is not None and days is not None:
        return _solve_mfu(inputs, spec, gpu, peak, gpus, days, allowance, after_allowances)
    mfu = inputs.mfu_value or DEFAULT_MFU
    flops = count_flops(spec, inputs, inputs.recompute_mode)
    _check_hfu(inputs, mfu, flops)
    if gpus is not None:  # the time on the GPUs the layout computes on (as --mfu predicted's)
        plan = layout_for_gpus(inputs, gpus)
        estimate = _budgets(flops.used, peak, plan.gpus, None, mfu, inputs.mfu_band, "--mfu range", "article")
        _check_completes(inputs, spec, gpu, plan, estimate, allowance)
        return estimate, plan, inputs, flops
    return _for_deadline(inputs, flops, peak, mfu, days, allowance, after_allowances)


def _check_completes(inputs: TrainingInputs, spec, gpu, plan: Plan, estimate: TimeEstimate, allowance: float) -> None:
    """--gpus given: the chosen layout's run completes with the budget's failures (jobs.plan.completes, the search
    door's test), else the search door's refusal (wave 9 review M1); at the step the budget's Failures section counts,
    with the communication ``allowance`` (wave 10 review M1: without it `train llama-3.1-8b --global-batch-tokens
    2e11 --gpus 64 --failure-rate 0.01` offered 2.70336e10, which the budget refused at 1.2x the step)."""
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.jobs.plan.completes import check_plan_completes
    from gpuplan.jobs.training.layout import with_budget_fields

    check_plan_completes(with_budget_fields(inputs), spec, gpu or resolve_gpu(inputs.gpu), plan,
                         estimate.expected.wall_seconds * (1.0 + allowance))


def _check_hfu(inputs: TrainingInputs, mfu: float, flops: Flops) -> None:
    """Refuse a given MFU whose HFU (MFU x hardware / model FLOPs: --recompute full runs the forward
    twice) passes the dense peak (wave 7 invariant sweep, issue 39: --mfu 0.9 --recompute full printed
    'HFU 118%' and no note; --mfu 140% alone was already refused)."""
    top = max(inputs.mfu_band or (mfu,)) * flops.hardware_ratio
    if top > 1 + 1e-9:
        raise InputError("mfu", inputs.mfu, f"with --recompute {inputs.recompute_mode} the GPUs run "
                         f"{flops.hardware_ratio:.3g}x the model's FLOPs: an HFU of {top:.1%}, above the dense "
                         f"peak; at most {1 / flops.hardware_ratio:.1%}")


def _solve_mfu(inputs: TrainingInputs, spec, gpu, peak: float, gpus: int, days: float, allowance: float,
               after_allowances: AfterAllowances | None) -> tuple[TimeEstimate, Plan, TrainingInputs, Flops]:
    """GPUs and days given: the MFU that finishes in ``days`` after the communication allowance
    (and ``after_allowances``: failures stretch a run by a share that hardly depends on its length,
    so two rounds settle the compute time), then bounded by check_solved_mfu."""
    from gpuplan.jobs.plan.completes import solved_count_refusal, solved_no_completion
    from gpuplan.jobs.training.layout import layout_for_gpus, with_budget_fields

    flops = count_flops(spec, inputs, inputs.recompute_mode)
    deadline = days * SECONDS_PER_DAY

    def solved_on(count: int) -> tuple[Plan, float, ComputeBudget]:
        plan = layout_for_gpus(inputs, count)
        work = deadline  # failure-free wall-clock with the communication allowance
        for _ in range(3 if after_allowances is not None else 0):
            work *= deadline / after_allowances(count, plan, work)
            if not work > 0:  # an infinite wall-clock: failures faster than a checkpoint period and a restart
                raise solved_count_refusal(solved_no_completion(with_budget_fields(inputs), spec, gpu, plan, deadline),
                                           inputs, plan.gpus)  # names the batch, or the days a solved count took
        return plan, work, solve_compute_budget(flops.used, peak, gpus=plan.gpus, wall_seconds=work / (1.0 + allowance))

    def gpus_within(limit: float) -> int:
        """The fewest GPUs whose solved MFU (exact FLOPs) is within ``limit``, each count solved as if given. Not
        monotone (70B, 200 H100, 20 days: 1,360-1,367 meet, 1,368-1,375 idle GPUs and miss), so a step goes to the
        working GPUs the limit needs (failures grow with the count) or one up; after WORKING_GPU_ROUNDS, by count."""
        count = math.ceil(solved.gpus * solved.mfu * flops.exact / flops.used / limit - 1e-9)
        for round_ in range(WORKING_GPU_ROUNDS + COUNT_ROUNDS):
            if count > MAX_GPUS:  # past what --gpus takes: not laid out (--days 0.001 on 8 GPUs asked ~10^20 GPUs of
                break  # the planner, an OverflowError, wave 9); mfu_refusal.needed_words: no count up to MAX_GPUS does
            try:
                mfu = (on := solved_on(count)[2]).mfu * flops.exact / flops.used
            except InputError:
                break
            if mfu <= limit:
                break
            count = max(count + 1, math.ceil((on.gpus if round_ < WORKING_GPU_ROUNDS else count) * mfu / limit - 1e-9))
        return count

    plan, work, solved = solved_on(gpus)
    check_solved_mfu(solved, flops, inputs, spec, gpu, deadline, gpus_within)
    met = work if after_allowances is None else after_allowances(gpus, plan, work)
    what = "communication allowance" + (f", {beyond_training(inputs)}" if after_allowances is not None else "")
    return TimeEstimate(solved, None, None, mode="solved", deadline_days=days, deadline_wall_seconds=met,
                        deadline_allowances=what), plan, inputs, flops


def _for_deadline(inputs: TrainingInputs, flops: Flops, peak: float, mfu: float, days: float, allowance: float,
                  after_allowances: AfterAllowances | None) -> tuple[TimeEstimate, Plan, TrainingInputs, Flops]:
    """Article mode with a deadline: the fewest GPUs (whole nodes past one node) whose wall-clock on
    the GPUs their layout computes on, after the communication allowance (and ``after_allowances``),
    is within ``days``. The count is settled on the failure model first (with the layout fields the
    user fixed, else ZeRO-1 without model parallelism), then checked on its own layout — one layout
    search in the usual case; a count whose layout leaves GPUs idle is settled again from the GPUs
    it uses (1,349 A100s ran the article's 7B on 1,344 and missed the week by 0.4%)."""
    layout_for_gpus = _searched_once()
    deadline = days * SECONDS_PER_DAY
    article = solve_compute_budget(flops.used, peak, wall_seconds=deadline, mfu=mfu)
    gpu_seconds = article.gpu_seconds * (1.0 + allowance)  # compute + communication allowance

    def wall(count: int, layout) -> float:
        work = gpu_seconds / _working(count, layout)  # the GPUs the layout leaves idle do no work
        return work if after_allowances is None else after_allowances(count, layout, work)

    node = _node_size(inputs)

    def settle(count: int, layout) -> int:
        """The fewest GPUs (whole nodes past one) from ``count`` up meeting the deadline with
        ``layout``'s checkpoints (the failure share grows slowly with the count: two or three rounds)."""
        for _ in range(8):
            raw = count * wall(count, layout) / deadline
            if not raw <= MAX_GPUS:  # grown by failures past any count laid out: the iterate is no requirement
                return _fastest_within(lambda n: wall(n, layout), least, node, deadline, days, allowance,
                                       beyond_training(inputs))
            needed = _nodes(_whole(raw, mfu, days), node)
            if needed <= count:
                break
            count = needed
        return count

    least = _nodes(_whole(gpu_seconds / deadline, mfu, days), node)  # failure-free: no fewer GPUs meet it
    count = settle(least, _LayoutGuess.of(inputs))
    count, plan = _first_fitting(layout_for_gpus, inputs, count)
    most = 0
    for _ in range(12):  # checked on the count's own layout (one round, two where its checkpoints differ)
        if wall(count, plan) <= deadline * (1 + 1e-12):
            break
        # from the GPUs its layout computes on; where that did not grow (the planner weighs an odd count
        # against its multiples of 64 and 256, jobs/plan/search.py; a fixed batch caps dp), the next multiple of 64
        stuck, most = plan.gpus <= most, max(most, plan.gpus)
        count = max(_nodes(count + 1, node), settle(plan.gpus, _all_working(plan)),
                    _nodes(_nodes(count + 1, 64), node) if stuck else 0)
        plan = layout_for_gpus(inputs, count)
    else:
        raise InputError("days", whole_or(days), f"no GPU count meets it with the {format_percent(allowance)} "
                         f"communication allowance, failures and checkpoints (tried up to {count:,}: more GPUs fail more often); give more "
                         "days or fewer tokens")
    count, plan = plan.gpus, _all_working(plan)  # those its layout computes on meet the deadline alone
    fewer_count = count - (node if count > node else 1)
    if fewer_count >= 1 and wall(fewer_count, plan) <= deadline:  # one node (GPU) fewer might do: on its own layout
        fewer_count, fewer = _first_fitting(layout_for_gpus, inputs, fewer_count)  # a model too big for it: count
        if wall(fewer_count, fewer) <= deadline:
            count, plan = fewer.gpus, _all_working(fewer)
    estimate = _budgets(flops.used, peak, plan.gpus, None, mfu, inputs.mfu_band, "--mfu range", "article")
    what = "communication allowance" + (f", {beyond_training(inputs)}" if after_allowances is not None else "")
    return (TimeEstimate(estimate.expected, estimate.fast, estimate.slow, estimate.band_source, "article", days,
                         article.gpus, wall(count, plan), what), plan, inputs, flops)


@dataclass(frozen=True)
class _Degrees:
    zero: int
    tp: int
    pp: int


@dataclass(frozen=True)
class _LayoutGuess:
    """What the failure model reads of a Plan (global batch, ZeRO stage, tp x pp), before a layout
    is searched: the user's degrees, else ZeRO-1 without model parallelism."""

    global_batch: int
    layout: _Degrees

    @staticmethod
    def of(inputs: TrainingInputs) -> _LayoutGuess:
        fixed = inputs.fixed_degrees()
        degrees = _Degrees(fixed.get("zero", 1), fixed.get("tp", 1), fixed.get("pp", 1))
        return _LayoutGuess(max(1, round(inputs.target_batch(inputs.seq_len))), degrees)


def _searched_once() -> Callable[[TrainingInputs, int], Plan]:
    """jobs.training.layout.layout_for_gpus, each GPU count searched once per answer."""
    from gpuplan.jobs.training.layout import layout_for_gpus

    searched: dict[int, Plan] = {}

    def layout(inputs: TrainingInputs, count: int) -> Plan:
        if count not in searched:
            searched[count] = layout_for_gpus(inputs, count)
        return searched[count]

    return layout


def _first_fitting(layout_for_gpus, inputs: TrainingInputs, count: int) -> tuple[int, Plan]:
    """(count, its layout), or where no layout fits on so few GPUs (the deadline needs fewer GPUs than the
    model's memory does) the smallest larger common cluster size where one fits: `budget --params 7B
    --tokens 1e9 --days 1w` needed 1 A100 and was refused 'gpus: got 1; no layout fits' (wave 6c), though
    --gpus was not given and 2 GPUs meet the week."""
    from gpuplan.planner.plan import larger_counts

    try:
        return count, layout_for_gpus(inputs, count)
    except NoLayoutFits as first:  # from the smallest larger size where a layout fits, which its message names:
        # each count below it is refused too, each refusal searching every larger size for that hint (A8 w14:
        # `train qwen3-30b-a3b --gpu tpu-v5e --tokens 1e9 --days 1e4` took 4.7 s on 12 such searches)
        at, refused = count, first
        while refused.enough is None and (larger := larger_counts(at)) and larger[-1] <= MAX_GPUS:
            at = larger[-1]  # none fits up to 64x: the sizes past it too (A8 w14: `train llama-3.1-405b
            try:  # --gpu l4 --tokens 1e9 --days 1000`, 1 GPU for the time, was refused 'gpus: got 1'; plan: 448)
                return at, layout_for_gpus(inputs, at)
            except NoLayoutFits as again:
                refused = again
            except InputError:  # no layout at all on that size (a rule): the first refusal stands
                break
        for larger in (c for c in larger_counts(at) if refused.enough is not None and c >= refused.enough):
            try:
                return larger, layout_for_gpus(inputs, larger)
            except NoLayoutFits:
                continue
        raise first from None


def _all_working(plan: Plan) -> Plan:
    """``plan`` as the answer on the GPUs its layout computes on (none of them idle)."""
    return replace(plan, gpus_asked=plan.gpus)


def _node_size(inputs: TrainingInputs) -> int:
    """GPUs per node, the unit a cluster is rented in: --gpus-per-node, else the catalog's devices_per_node (8 on
    HGX, 4 on a GB200 / GB300 compute tray), else the scale-up domain. Not the NVL72 domain of 72: rounding a GB200
    answer up to whole racks took the bare 7B question from 168 to 216 GPUs (5.42 days against 7)."""
    from gpuplan.adapters.resolve import resolve_gpu

    gpu = resolve_gpu(inputs.gpu)
    return inputs.gpus_per_node or gpu.devices_per_node or gpu.scale_up_ranks


def _nodes(gpus: int, node: int) -> int:
    """``gpus`` up to whole nodes once past one node (clusters are rented and laid out by the node:
    the planner weighs an odd count against its multiples of the node, jobs/plan/search.py)."""
    return gpus if gpus <= node else nodes_for(gpus, node) * node


def _working(count: int, layout) -> int:
    """GPUs of ``count`` that compute under ``layout`` (a Plan leaves ``idle_gpus`` of its count idle:
    1,349 A100s run the article's 7B on 1,344; a guessed layout idles none)."""
    return max(1, count - getattr(layout, "idle_gpus", 0))


def _fastest_within(wall: Callable[[int], float], start: int, node: int, deadline: float, days: float,
                    allowance: float, beyond: str) -> int:
    """The fewest GPUs from ``start`` (the failure-free count: none fewer meets it) up to MAX_GPUS whose ``wall``
    meets ``deadline``, on a grid of 2^(1/8) steps (whole nodes), where settle's iterate count x wall / deadline
    outgrew MAX_GPUS; where none does, the refusal says so with the fastest count on the grid (from start / 64;
    on settle's guessed layout, so about). Review w9 S3: the iterate was printed as the GPUs needed (405B on
    15T tokens: 15,482,691 for 2 days, 22,307,644,047,868 for 3, 41,363,034 for 10)."""
    counts = sorted({_nodes(min(MAX_GPUS, math.ceil(start * 2 ** (k / 8 - 6))), node) for k in range(280)})
    counts = [n for n in counts if n <= MAX_GPUS]
    walls = [wall(n) for n in counts]
    meets = [n for n, w in zip(counts, walls) if w <= deadline and n >= start]
    if meets:
        return meets[0]
    best = min(range(len(walls)), key=walls.__getitem__)
    fastest = (f"the fastest is about {format_duration(walls[best])} on {counts[best]:,} GPUs"
               if math.isfinite(walls[best]) else "on every count failures come faster than a checkpoint period plus a "
               "restart")
    raise InputError("days", whole_or(days), f"no GPU count up to {MAX_GPUS:,} meets it with the "
                     f"{format_percent(allowance)} communication allowance, {beyond} (more GPUs fail more often; {fastest}); give more days or fewer tokens")


def _whole(gpus: float, mfu: float, days: float) -> int:
    if not math.isfinite(gpus):  # failures faster than a checkpoint period and a restart at every count
        raise InputError("days", whole_or(days), "no GPU count finishes in time: on the GPUs it would take, failures "
                         "come faster than a checkpoint period plus a restart; give more days or fewer tokens")
    needed = max(1, math.ceil(gpus - 1e-9))
    if needed > MAX_GPUS:
        shown = f"{needed:,}" if needed < 1e15 else f"{needed:.3g}"  # 1e-300 days printed 300 digits
        raise InputError("days", whole_or(days), f"the budget needs {shown} GPUs at {format_percent(mfu)} MFU before "
                         f"failures, more than the {MAX_GPUS:,} the planner lays out; give more days, fewer tokens or "
                         "--gpus")
    return needed
