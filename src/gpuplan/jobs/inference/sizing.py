"""Sizing from a target: for every catalog GPU type and TP degree, the requests per second one
replica sustains within the p99 TTFT and TPOT targets (core/serving/load.py) and its KV cache,
the replicas the aggregate rate needs, and what they cost; the cheapest wins (the fewest GPUs
when no price is known)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.hardware import Accelerator
from gpuplan.core.units import NO_PRICE_TEXT, format_usd
from gpuplan.core.serving.load import (
    LoadTarget,
    ReplicaLoad,
    decode_pool_rate,
    fewest_replicas,
    first_token_seconds,
    max_rate,
    prefill_pool_rate,
    replica_at,
    replicas_for,
)
from gpuplan.errors import InputError
from gpuplan.jobs.inference.decode_table import ReplicaSteps
from gpuplan.jobs.inference.decode_table import step_times as _step_times  # tests name sizing._step_times
from gpuplan.jobs.inference.resolve import Plan, plan_on_gpu
from gpuplan.jobs.inference.serving import (max_sequences_at, price_for, scheduler_refusal, search_tps, serves,
                                              serving_gpus)
from gpuplan.jobs.inference.sizing_text import TP_SEARCH, disagg_gpu_lines, launch_line, rate_text
from gpuplan.jobs.inference.sizing_text import ms_text as _ms, placement as _placement, ttft_terms as _ttft_terms
from gpuplan.report.model import Line, Section

DEFAULT_MAX_NUM_SEQS = 256
"""Sequences one replica schedules at once where neither the user nor a read engine default says (vLLM's
max_num_seqs before 0.9 and below 70 GiB; vLLM itself is read per release: scheduled_sequences)."""


def scheduled_sequences(plan: Plan, gpu: Accelerator) -> int:
    """Sequences one replica schedules at once on ``gpu``: --max-num-seqs, else vLLM's own default for the
    release and GPU (core.serving.setup.Runtime.batch_limits, the figure the memory split profiles: 1,024 for
    `vllm serve` 0.9+ on GPUs of 70 GiB or more, 256 below, capped by the token budget from 0.19), else
    DEFAULT_MAX_NUM_SEQS. The sizing took 256 for vLLM on every GPU while its memory split took 1,024."""
    runtime = plan.setup.runtime
    if runtime.max_num_seqs is not None:
        return runtime.max_num_seqs
    if runtime.engine == "vllm":
        return runtime.batch_limits(gpu.memory_bytes, gpu.name, plan.spec.max_position_embeddings)[1]
    return DEFAULT_MAX_NUM_SEQS


@dataclass(frozen=True)
class SizedConfig:
    gpu: Accelerator
    tp: int
    replica: ReplicaLoad
    replicas: int
    price: float | None
    price_source: str
    steps: tuple | None = field(default=None, compare=False, repr=False)
    """_tp_steps of (gpu, tp) as size_for_target timed them: (prefill seconds, decode step(batch), cap), so the
    answer's load line (_at_load) does not time the prefill again."""

    @property
    def gpus(self) -> int:
        return self.replicas * self.tp

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.price is None else self.price * self.gpus


def _tp_steps(plan: Plan, gpu: Accelerator, tp: int):
    """(prefill step, decode step(batch), cap) of one replica at ``tp`` on ``gpu``, cap the sequences it
    schedules at once (its KV cache's and scheduled_sequences, the fewer); None where tp does not divide
    the heads or not one sequence fits. An FP8 plan is timed as ``gpu`` runs it (resolve.plan_on_gpu)."""
    plan = plan_on_gpu(plan, gpu)
    cap = _tp_cap(plan, gpu, tp)
    return (*_step_times(plan, gpu, tp, cap), cap) if cap else None


def _tp_cap(plan: Plan, gpu: Accelerator, tp: int) -> int:
    """_tp_steps' cap (0 where it is None), read off the memory alone: nothing timed."""
    try:  # its KV capacity only: evaluate's three timed prefills were not read (_step_times times one; wave 9:
        sequences = max_sequences_at(plan, gpu, tp)  # --prompt 8M --disaggregate timed 263 x 3 of ~2,000 chunks)
    except InputError:  # tp does not divide the heads
        return 0
    return max(0, min(sequences, scheduled_sequences(plan, gpu)))


def _replica_steps(plan: Plan, gpu: Accelerator) -> ReplicaSteps:
    """_tp_steps of each TP of search_tps(gpu) (within one node, or one GB200 / GB300 NVL72 domain) that runs, by TP,
    each timed when first read (decode_table.ReplicaSteps: size_for_target skips some unread); an FP8 plan taken as
    ``gpu`` runs it once (resolve.plan_on_gpu)."""
    plan = plan_on_gpu(plan, gpu)
    return ReplicaSteps(plan, gpu, {tp: cap for tp in search_tps(gpu) if (cap := _tp_cap(plan, gpu, tp))})


def refused_gpus(plan: Plan) -> list[str]:
    """The catalog GPU types that would run the plan but where vLLM refuses the user's
    --max-num-seqs (scheduler_refusal), by default token budget: 'a10, l4 (2,048 tokens)'."""
    from gpuplan.catalog import hardware_entries, load_accelerator

    by_budget: dict[int, list[str]] = {}
    for gpu in (load_accelerator(gpu_id) for gpu_id in hardware_entries()):
        if serves(plan, gpu) and (tokens := scheduler_refusal(plan, gpu)) is not None:
            by_budget.setdefault(tokens, []).append(gpu.id)
    return [f"{', '.join(ids)} ({tokens:,} tokens)" for tokens, ids in sorted(by_budget.items())]


def replica_steps_by_gpu(plan: Plan) -> dict[str, dict]:
    """_replica_steps of every GPU type that serves the plan (serving_gpus), by catalog id: each (GPU, TP) timed at most
    once for both size_for_target and disaggregated_by_gpu (each timed every (GPU, TP) prefill itself), when first
    read."""
    return {gpu.id: _replica_steps(plan, gpu) for gpu in serving_gpus(plan)}


def asked_price(plan: Plan, gpu, price: float | None) -> float | None:
    """The user's --price (USD per GPU-hour) on the GPU type asked (plan.gpu), None (the price catalog's) on every
    other type the sizing tries: it priced an A100 40GB PCIe at an H100's $2 (hostile w16 X4), where the search
    without --rps prices the other types from the catalog (alternatives.search_table)."""
    return price if gpu.id == plan.gpu.id else None


def size_for_target(plan: Plan, target: LoadTarget, price: float | None = None, *,
                    timed: dict[str, dict] | None = None, cheapest_per_type: bool = False) -> list[SizedConfig]:
    """Every (GPU type, TP) that meets the target, cheapest first; GPU types where vLLM would refuse
    the user's --max-num-seqs (scheduler_refusal) are left out. ``timed``: replica_steps_by_gpu, if already timed.
    ``cheapest_per_type``: a TP is not searched, or its rate search stops, where it cannot take fewer GPUs than a
    smaller TP kept on its type (load.fewest_replicas from its prefill; max_rate's ``useless`` at the search's upper
    end; replicas_for never rises as the rate rises, so a rate below that end needs as many replicas at least): one
    price a type, so never cheaper; on a tie the smaller TP sorts first. Each type's first configuration, all an
    answer reads (sizing_section, sizing_table, disaggregated_section), is the same."""
    found, hold = [], RP.server_hold_seconds(plan.setup.runtime, plan.prompt)
    for gpu in serving_gpus(plan):
        fewest = None  # GPUs of the smallest configuration kept on this type
        cost, source = price_for(gpu.id, asked_price(plan, gpu, price))
        prune = cheapest_per_type and (cost is None or cost >= 0)  # cost x GPUs grows with the GPUs
        steps = timed[gpu.id] if timed else _replica_steps(plan, gpu)
        for tp in steps:  # a replica takes tp GPUs at least: where tp >= fewest no prefill is timed
            if prune and fewest is not None and tp >= fewest:
                continue
            prefill, decode, cap = steps[tp]
            if prune and fewest is not None and tp * fewest_replicas(target, prefill, hold) >= fewest:
                continue
            useless = (lambda hi, tp=tp, kept=fewest: tp * replicas_for(target, _rated(hi)) >= kept) if (
                prune and fewest is not None) else None
            replica = max_rate(target, prefill, decode, plan.output, cap, hold, useless)
            if replica is None:
                continue
            found.append(SizedConfig(gpu, tp, replica, replicas_for(target, replica), cost, source,
                                     (prefill, decode, cap)))
            fewest = found[-1].gpus if fewest is None else min(fewest, found[-1].gpus)
    return sorted(found, key=lambda c: (c.cost_per_hour is None, c.cost_per_hour or 0.0, c.gpus))


DEFAULT_NIC_BYTES_PER_S = 100e9 / 8
"""KV transfer link per GPU where the catalog names no scale-out network: 100 Gb/s Ethernet (a
gpuplan assumption for PCIe cards and cloud instances without RDMA)."""


@dataclass(frozen=True)
class Pool:
    """Identical instances of one role in a disaggregated deployment."""

    role: str
    gpu: Accelerator
    tp: int
    rate_per_instance: float
    instances: int
    price: float | None
    price_source: str
    latency_s: float
    """At the load asked (the target's rate over the instances): prefill: p99 TTFT incl. KV
    transfer; decode: TPOT at the batch in flight."""
    transfer_s: float = 0.0
    in_flight: float = 0.0
    prefill_s: float = 0.0
    """Prefill role: seconds of one prompt's prefill on an instance (a term of latency_s)."""

    @property
    def gpus(self) -> int:
        return self.instances * self.tp

    @property
    def cost_per_hour(self) -> float | None:
        return None if self.price is None else self.price * self.gpus


def kv_transfer_seconds(plan: Plan, gpu: Accelerator, tp: int) -> float:
    """One prompt's KV cache (every layer, every KV head) sent between instances whose narrower
    side has ``tp`` GPUs, each sending its shard over its own NIC (Splitwise, Patel et al. 2024,
    Sec. 4: per-layer transfer over InfiniBand)."""
    whole = K.kv_layout(plan.spec, plan.setup.kv_bytes, 1, 1, 1).bytes_per_token * plan.prompt
    return whole / (tp * (gpu.scale_out_bandwidth or DEFAULT_NIC_BYTES_PER_S))


def _pools_cost(pools: tuple[Pool, Pool]) -> tuple:
    """Sort key: priced before unpriced, then USD/h, then GPUs."""
    hourly = [p.cost_per_hour for p in pools]
    return (None in hourly, sum(h or 0.0 for h in hourly), sum(p.gpus for p in pools))


def disaggregated_by_gpu(plan: Plan, target: LoadTarget, price: float | None = None, *,
                         timed: dict[str, dict] | None = None) -> dict[str, tuple[Pool, Pool]]:
    """Per GPU type (catalog id), the cheapest prefill pool + decode pool on that type (a homogeneous
    cluster, each phase with its own TP, as in DistServe) that meet the targets together; types
    where nothing does are left out. The KV transfer runs over min(tp_prefill, tp_decode) NICs.
    ``timed``: replica_steps_by_gpu, if already timed. A TP's decode pool is timed only for a pair that could replace
    the pools kept (the same pools kept as when every TP's was: one that could not is never kept)."""
    found: dict[str, tuple[Pool, Pool]] = {}
    hold = RP.disaggregated_hold_seconds(plan.setup.runtime, plan.prompt)  # the servers on the critical path
    for gpu in serving_gpus(plan):
        price_h, source = price_for(gpu.id, asked_price(plan, gpu, price))
        steps = timed[gpu.id] if timed else _replica_steps(plan, gpu)
        decodes: dict = {}  # tp -> its decode pool (None: none meets the TPOT)
        for tp_p in steps:
            prefill = steps[tp_p][0]
            for tp_d in steps:
                transfer = kv_transfer_seconds(plan, gpu, min(tp_p, tp_d))
                rate = prefill_pool_rate(target.ttft_p99, prefill, transfer, hold)
                if not rate:
                    continue
                count = replicas_for(target, _rated(rate))  # the p99 at the load asked, each at its share
                ttft = first_token_seconds(prefill, target.requests_per_s / count * prefill, hold, transfer)[1]
                prefill_pool = Pool("prefill", gpu, tp_p, rate, count, price_h, source, ttft, transfer,
                                    prefill_s=prefill)  # with one decode instance on tp_d, the least it costs (cost x
                # GPUs grows with the GPUs): where that is no cheaper than the pools kept, none on tp_d replaces them
                kept = found.get(gpu.id)
                if kept and (price_h is None or price_h >= 0) and _pools_cost(
                        (prefill_pool, Pool("decode", gpu, tp_d, 0.0, 1, price_h, source, 0.0))) >= _pools_cost(kept):
                    continue
                if tp_d not in decodes:
                    decodes[tp_d] = _decode_pool(plan, target, gpu, tp_d, steps[tp_d], price_h, source)
                pools = (prefill_pool, decodes[tp_d])
                if pools[1] is not None and (kept is None or _pools_cost(pools) < _pools_cost(kept)):
                    found[gpu.id] = pools
    return found


def _decode_pool(plan: Plan, target: LoadTarget, gpu, tp: int, steps: tuple, price_h, source: str) -> Pool | None:
    """The decode pool of tp ``tp`` on ``gpu`` (``steps``: _tp_steps), None where none meets the TPOT."""
    _, decode, cap = steps
    if not (rated := decode_pool_rate(target.tpot, decode, plan.output, cap)):
        return None
    count = replicas_for(target, _rated(rated[0]))
    return Pool("decode", gpu, tp, rated[0], count, price_h, source,
                _decode_step_at(target.requests_per_s / count, decode, plan.output, cap), in_flight=rated[1])


def _decode_step_at(rate: float, decode, output: int, cap: int) -> float:
    """TPOT of a decode-only instance at ``rate`` requests/s: the step at the batch in flight, B =
    rate x output x step(B) (Little's law), by fixed point from batch 1 (grows to the smallest
    solution), within the KV capacity ``cap``."""
    batch = 1
    for _ in range(64):
        grown = min(cap, max(1, math.ceil(rate * output * decode(batch) - 1e-9)))
        if grown <= batch:
            break
        batch = grown
    return decode(batch)


def _rated(rate: float) -> ReplicaLoad:
    return ReplicaLoad(rate, 0.0, 0.0, 0.0, 0.0, 0.0)


def disaggregated_section(plan: Plan, target: LoadTarget, options: dict[str, tuple[Pool, Pool]],
                          colocated: list[SizedConfig], asked_gpu: str | None = None) -> Section:
    """Prefill and decode pools against the target, and what colocated replicas would cost.
    ``options``: disaggregated_by_gpu. The pools are on ``asked_gpu`` (a --gpu the user gave) when
    some there meet the target, with the cheapest on any type named beside them when it differs;
    else (or without a GPU asked) the cheapest on any type, a line saying none on the GPU asked does."""
    # (pools share a GPU type; the colocated answer may use another)
    title = (f"Disaggregated prefill / decode for {target.requests_per_s:g} requests/s of {plan.prompt:,} + "
             f"{plan.output:,} tokens (TTFT p99 {_ms(target.ttft_p99)}, TPOT {_ms(target.tpot)})")
    if not options:
        return Section(title, (Line("disagg_config", "configuration", None, text="no prefill or no decode "
                                    "instance meets the target on one scale-up domain: relax the targets"),))
    cheapest = min(options.values(), key=_pools_cost)
    pools = options.get(asked_gpu, cheapest)
    lines = _disagg_pool_lines(plan, target, pools, chosen_config(colocated, asked_gpu))
    beside = disagg_gpu_lines(asked_gpu, pools, cheapest)
    where = 0 if beside and beside[0].key == "disagg_other_gpu" else 2  # the pools' GPU first, else after them
    widest = max(pools, key=lambda p: p.tp)  # said once an answer: sizing_text.launch_said_once
    launch = launch_line("disagg_multi_node", plan.setup.runtime.release, widest.gpu, widest.tp)
    return Section(title, (*lines[:where], *beside, *lines[where:], *launch))


def _disagg_pool_lines(plan: Plan, target: LoadTarget, pools: tuple[Pool, Pool],
                       colocated: SizedConfig | None) -> tuple:
    prefill, decode = pools
    costs = [p.cost_per_hour for p in pools]
    total = None if None in costs else sum(costs)
    tokens_per_hour = target.requests_per_s * (plan.prompt + plan.output) * 3600
    together = colocated.cost_per_hour if colocated is not None else None
    return (
        Line("disagg_prefill", "prefill pool", {"gpu": prefill.gpu.id, "tp": prefill.tp,
                                               "instances": prefill.instances},
             text=_placement(prefill.instances, prefill.tp, prefill.gpu, prefill.gpus),
             formula=f"{rate_text(prefill.rate_per_instance)} requests/s each: server hold + prefill + M/M/1 wait p99 + KV transfer "
                     "within the TTFT target"),
        Line("disagg_decode", "decode pool", {"gpu": decode.gpu.id, "tp": decode.tp, "instances": decode.instances},
             text=_placement(decode.instances, decode.tp, decode.gpu, decode.gpus),
             formula=f"{rate_text(decode.rate_per_instance)} requests/s each at {decode.in_flight:,.0f} sequences in "
                     "flight (Little's law), decode steps never interrupted by prompts"),
        Line("disagg_ttft_p99", "TTFT p99", prefill.latency_s, "s", f"{_ms(prefill.latency_s)} (target "
             f"{_ms(target.ttft_p99)})", f"at {rate_text(target.requests_per_s / prefill.instances)} requests/s an "
             "instance (the load asked): " + _ttft_terms(
                 RP.disaggregated_hold_seconds(plan.setup.runtime, plan.prompt), prefill.prefill_s,
                 target.requests_per_s / prefill.instances * prefill.prefill_s, prefill.transfer_s)
             + " (KV transfer: prompt KV / (tp x NIC bandwidth); server hold: " + (
                 "the prefill and then the decode instance's server" if plan.setup.runtime.engine == "vllm" else
                 "the prefill and the decode servers tokenise at once, counted once") + ")"),
        Line("disagg_tpot", "time per output token", decode.latency_s, "s",
             f"{_ms(decode.latency_s)} (target {_ms(target.tpot)})", "decode step at the batch in flight at "
             f"{rate_text(target.requests_per_s / decode.instances)} requests/s an instance (the load asked)"),
        Line("disagg_cost_per_hour", "cost", total, "USD/h", NO_PRICE_TEXT if total is None else
             f"{format_usd(total, 2)}/h" + ("" if together is None else f" (colocated: {format_usd(together, 2)}/h)"),
             prefill.price_source if prefill.price_source == decode.price_source  # one GPU type: one price
             else f"{prefill.price_source}; {decode.price_source}"),
        Line("disagg_cost_per_million_tokens", "cost per million tokens", None if total is None else
             total / tokens_per_hour * 1e6, "USD",
             "n/a" if total is None else format_usd(total / tokens_per_hour * 1e6, 3), "prompt + output tokens served"),
    )


def chosen_config(configs: list[SizedConfig], asked_gpu: str | None = None) -> SizedConfig | None:
    """The configuration the sizing answers (``configs`` cheapest first): the cheapest on ``asked_gpu`` (a --gpu the
    user gave), else the cheapest on any GPU type; None where none meets the target."""
    return next((c for c in configs if c.gpu.id == asked_gpu), configs[0] if configs else None)


def sizing_section(plan: Plan, target: LoadTarget, configs: list[SizedConfig], asked_gpu: str | None = None) -> Section:
    """The chosen configuration (chosen_config) against the target; with a GPU asked, the cheapest elsewhere is
    named beside it when it differs."""
    ttft = "no limit" if target.ttft_p99 == float("inf") else _ms(target.ttft_p99)
    tpot = "no limit" if target.tpot == float("inf") else _ms(target.tpot)
    title = (f"Sizing for {target.requests_per_s:g} requests/s of {plan.prompt:,} + {plan.output:,} tokens "
             f"(TTFT p99 {ttft}, TPOT {tpot})")
    refused = refused_gpus(plan)
    left_out = (Line("sized_gpus_refused", "GPU types left out (vLLM would not start)", "; ".join(refused), "",
                     f"{'; '.join(refused)}: default max_num_batched_tokens < max_num_seqs "
                     f"{plan.setup.runtime.max_num_seqs:,}", "vLLM SchedulerConfig refuses max_num_batched_tokens "
                     "< max_num_seqs at start-up; give --prefill-tokens to size them"),) if refused else ()
    if not configs:
        return Section(title, (Line("sized_config", "configuration", None, text="none meets the target on one "
                                    "scale-up domain per replica: relax the latency targets, shorten prompts or "
                                    "quantise"),
                               *left_out))
    best = chosen_config(configs, asked_gpu)
    on_asked = best.gpu.id == asked_gpu
    r, (load, prefill_s) = best.replica, _at_load(plan, target, best)
    elsewhere = _elsewhere_line(best, configs[0])
    tokens_per_hour = target.requests_per_s * (plan.prompt + plan.output) * 3600
    per_million = None if best.cost_per_hour is None else best.cost_per_hour / tokens_per_hour * 1e6
    return Section(title, (
        # its own key where the answer is on another GPU: a translated label (by key) must not hide it
        Line("sized_config" if on_asked or not asked_gpu else "sized_config_other_gpu",
             "cheapest configuration on the GPU asked" if on_asked else (
            f"none on {asked_gpu} meets the target; cheapest on any GPU type" if asked_gpu else "cheapest configuration"),
             {"gpu": best.gpu.id, "tp": best.tp, "replicas": best.replicas},  # unpriced: ranked by GPUs, the text says
             text=_placement(best.replicas, best.tp, best.gpu, best.gpus) + UNPRICED_PICK * (best.cost_per_hour is None),
             formula="replicas = ceil(rate / rate one replica sustains within the targets)"),
        *launch_line("sized_multi_node", plan.setup.runtime.release, best.gpu, best.tp),
        *elsewhere,
        # the load asked beside the latencies: the table's row for this configuration gives them at the rate
        # a replica sustains (265 ms beside 454 ms for one B200, wave 7 invariant sweep, issue 39)
        Line("sized_rate_per_replica", "requests/s per replica (the most within the targets)", r.rate, "requests/s",
             rate_text(r.rate),
             f"{r.in_flight:,.1f} in flight, prefill {r.prefill_utilisation:.0%} of GPU time"),
        Line("sized_ttft_p99", "TTFT p99", load.ttft_p99, "s",
             f"{_ms(load.ttft_p99)} at {rate_text(load.rate)} requests/s a replica (target {ttft})",
             "at the load asked: "
             + _ttft_terms(RP.server_hold_seconds(plan.setup.runtime, plan.prompt), prefill_s, load.prefill_utilisation)
             + " (docs/inference.md)"),
        Line("sized_tpot", "time per output token", load.tpot, "s", f"{_ms(load.tpot)} at that load (target {tpot})",
             f"at {rate_text(load.rate)} requests/s a replica: decode step at the batch in flight / (1 - prefill share)"),
        Line("sized_cost_per_hour", "cost", best.cost_per_hour, "USD/h",
             NO_PRICE_TEXT if best.cost_per_hour is None else f"{format_usd(best.cost_per_hour, 2)}/h", best.price_source),
        Line("sized_cost_per_million_tokens", "cost per million tokens", per_million, "USD",
             "n/a" if per_million is None else format_usd(per_million, 3), "prompt + output tokens served"),
        *left_out,
    ))


UNPRICED_PICK = " (the fewest GPUs: no price to rank by)"
"""Said after a configuration with no catalog price: the sizing ranks those by GPUs (size_for_target's sort). In the
display text, not the label, which is translated by its key (zh 'sized_config': the cheapest configuration)."""


def _at_load(plan: Plan, target: LoadTarget, config: SizedConfig) -> tuple[ReplicaLoad, float]:
    """One replica of ``config`` at the load asked, the target's rate over its replicas (its
    ``replica`` is at the most it sustains within the target, the table's 'req/s per replica'), and its
    prefill seconds (a term of the TTFT)."""
    prefill, decode, cap = config.steps or _tp_steps(plan, config.gpu, config.tp)
    return replica_at(target.requests_per_s / config.replicas, prefill, decode, plan.output, cap,
                      RP.server_hold_seconds(plan.setup.runtime, plan.prompt)) or config.replica, prefill


def _elsewhere_line(best: SizedConfig, cheapest: SizedConfig) -> tuple:
    """The cheapest configuration on any type where the answer ``best`` (chosen_config: on the GPU asked) is another
    one (where none on the GPU asked meets the target the answer is the cheapest, and its own label says so)."""
    if best is cheapest:
        return ()
    text = _placement(cheapest.replicas, cheapest.tp, cheapest.gpu, cheapest.gpus) + (
        "" if cheapest.cost_per_hour is None else f", {format_usd(cheapest.cost_per_hour, 2)}/h")
    return (Line("sized_config_any_gpu", "cheapest on any GPU type", None, text=text, formula=TP_SEARCH),)
