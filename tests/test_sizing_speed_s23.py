"""A first serving-sizing answer made cheaper without moving any answer (session 23, docs/performance.md 'Serving
sizing'): the sizing skips a (GPU type, TP) that a bound read off its prefill alone (core.serving.load.rate_ceiling,
fewest_replicas) shows cannot take fewer GPUs than a smaller TP kept on the same type
(jobs/inference/sizing.size_for_target's cheapest_per_type), and a prefill's NCCL all-reduces are evaluated in a pass
of their own rather than with every decode step's (jobs/inference/decode_table.step_times), so a skipped TP evaluates
no decode step's. Each is held to the exhaustive path: the bound against max_rate over many inputs, the answers
compared with ==, the vectorised pass of a few messages against one scalar evaluation a message, bit for bit."""

from __future__ import annotations

import math
import random

import pytest

from gpuplan.catalog import hardware_entries, load_accelerator
from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.serving import kernels as K
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import step_memo
from gpuplan.core.serving.load import (LoadTarget, first_token_seconds, fewest_replicas, max_rate, rate_ceiling,
                                       replicas_for)


def test_the_ceiling_worked_by_hand():
    """Prefill 20 ms, server hold 2 ms, TTFT p99 500 ms: 22 ms + 20 ms x ln(100 rho) / (1 - rho) = 500 ms at rho ~
    0.8158 (ln 81.58 = 4.4016, / 0.1842 = 23.90, x 20 ms = 478 ms), 40.79 requests/s; 100 requests/s then need at
    least ceil(100 / 40.79) = 3 replicas. Without a TTFT target the ceiling is rho = 1: 1 / 20 ms = 50 requests/s."""
    assert rate_ceiling(0.5, 0.020, 0.002) == pytest.approx(40.79, rel=1e-3)
    assert first_token_seconds(0.020, rate_ceiling(0.5, 0.020, 0.002) * 0.020, 0.002)[1] == pytest.approx(0.5, rel=2e-6)
    assert fewest_replicas(LoadTarget(0.5, 0.05, 100.0), 0.020, 0.002) == 3
    assert rate_ceiling(math.inf, 0.020, 0.002) == pytest.approx(50.0, rel=1e-8)
    assert fewest_replicas(LoadTarget(0.010, 0.05, 1.0), 0.020, 0.002) >= 10**9  # an idle replica misses 10 ms


def _decode(kind: int, base: float, slope: float):
    """Decode-step seconds by batch: linear, with a bump every 7th batch (not monotone), or flat."""
    if kind == 0:
        return lambda b: base + slope * b
    if kind == 1:
        return lambda b: base + slope * b + (3 * slope if b % 7 == 0 else 0.0)
    return lambda b: base


def test_max_rate_never_passes_the_ceiling():
    """3,000 random replicas and targets (prefill 0.1 ms .. 2 s, hold 0 .. 50 ms, TTFT targets from below an idle
    replica's to none, among them the p99 at a random rate: on the boundary; TPOT binding or not; capacities 1 ..
    4,096; decode steps linear, not monotone, flat): wherever max_rate finds a rate it is below rate_ceiling, and its
    replicas_for is at least fewest_replicas, so a TP skipped on that bound could not have been cheaper."""
    rng, found = random.Random(23), 0
    for _ in range(3000):
        prefill, path = 10 ** rng.uniform(-4, 0.3), rng.choice((0.0, rng.uniform(0, 0.05)))
        boundary = first_token_seconds(prefill, rng.uniform(0.01, 0.999), path)[1]
        ttft = rng.choice((math.inf, boundary, boundary * (1 + 1e-9), (path + prefill) * rng.uniform(0.9, 50)))
        decode = _decode(rng.randrange(3), 10 ** rng.uniform(-3.5, -1.5), 10 ** rng.uniform(-7, -4))
        tpot = rng.choice((math.inf, decode(1) * rng.uniform(0.9, 20)))
        target = LoadTarget(ttft, tpot, 10 ** rng.uniform(-1, 4))
        load = max_rate(target, prefill, decode, rng.randint(1, 4096), rng.randint(1, 4096), path)
        if load is not None:
            found += 1
            assert load.rate < rate_ceiling(ttft, prefill, path)
            assert replicas_for(target, load) >= fewest_replicas(target, prefill, path)
    assert found > 1000  # the comparison was made, not skipped


def test_a_search_told_what_is_useless_stops_without_moving_an_answer():
    """max_rate with ``useless`` (a rate threshold: no use for any rate at or below it) against the full search on
    2,000 random replicas and targets: where it answers, the same ReplicaLoad (==); where it gives up, the full
    search found nothing or a rate at or below the threshold; never more decode steps, and fewer in many cases."""
    rng, stopped, fewer = random.Random(2023), 0, 0
    for _ in range(2000):
        prefill, path = 10 ** rng.uniform(-3, 0), rng.uniform(0, 0.01)
        decode = _decode(rng.randrange(3), 10 ** rng.uniform(-3, -1.5), 10 ** rng.uniform(-6, -4))
        target = LoadTarget(rng.choice((math.inf, (path + prefill) * rng.uniform(1, 30))),
                            rng.choice((math.inf, decode(1) * rng.uniform(1, 10))), 10.0)
        output, cap, threshold = rng.randint(1, 2048), rng.randint(1, 2048), rng.uniform(0, 1.2) / prefill
        asked, again = [], []
        full = max_rate(target, prefill, lambda b: again.append(b) or decode(b), output, cap, path)
        told = max_rate(target, prefill, lambda b: asked.append(b) or decode(b), output, cap, path,
                        lambda hi: hi <= threshold)
        if told is not None:
            assert told == full
        else:
            assert full is None or full.rate <= threshold
            stopped += full is not None
        assert len(asked) <= len(again)
        fewer += len(asked) < len(again)
    assert stopped > 200 and fewer > 200  # the early stop was reached, not skipped


ASKS = {  # sizings whose winners are TP 1 on most types (the README's), TP > 1 (70B, 405B), MoE, speculative, priced
    "readme": dict(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms", prompt="2K", output_tokens=512),
    "70b_sglang": dict(model="llama-3.1-70b", rps=8, ttft_p99="1s", tpot="40ms", engine="sglang"),
    "mixtral_fp8": dict(model="mixtral-8x7b", rps=5, ttft_p99="1s", tpot="50ms", quantization="fp8"),
    "eagle": dict(model="llama-3.1-8b", gpu="h100", rps=10, speculative="eagle", ttft_p99="400ms", tpot="30ms"),
    "no_target": dict(model="qwen2.5-1.5b", rps=50),  # no latency target: the ceiling is rho < 1 alone
    "priced_tight": dict(model="llama-3.1-8b", gpu="h100", rps=40, ttft_p99="300ms", tpot="25ms", price=2),
}


def _first_of_each_type(configs):
    seen, firsts = set(), []
    for config in configs:
        if config.gpu.id not in seen:
            seen.add(config.gpu.id)
            firsts.append(config)
    return firsts


@pytest.mark.parametrize("name", sorted(ASKS))
def test_the_pruned_sizing_keeps_each_types_cheapest(name):
    """size_for_target with cheapest_per_type against the full search on the same timed steps: the first configuration
    of each GPU type (all sizing_section, sizing_table and disaggregated_section read) equal (==: GPU, TP, the
    ReplicaLoad's floats, replicas, price) and in the same order, the sections and the table equal; the README's ask
    searches fewer configurations."""
    from gpuplan import InferenceInputs
    from gpuplan.jobs.inference import sizing, sizing_text
    from gpuplan.jobs.inference.resolve import resolve_plan

    inputs = InferenceInputs(**ASKS[name])
    plan = resolve_plan(inputs)
    target = LoadTarget(inputs.ttft_p99 or math.inf, inputs.tpot or math.inf, inputs.rps)
    steps = sizing.replica_steps_by_gpu(plan)
    full = sizing.size_for_target(plan, target, inputs.price, timed=steps)
    pruned = sizing.size_for_target(plan, target, inputs.price, timed=steps, cheapest_per_type=True)
    assert _first_of_each_type(pruned) == _first_of_each_type(full) and full
    asked = plan.gpu.id if "gpu" in inputs.given else None
    assert sizing_text.sizing_table(pruned) == sizing_text.sizing_table(full)
    assert sizing.sizing_section(plan, target, pruned, asked) == sizing.sizing_section(plan, target, full, asked)
    if name == "readme":
        assert len(pruned) < len(full) / 2  # configurations kept: 118 by the full search, 48 pruned (s23)


@pytest.mark.parametrize("name", ["readme", "70b_sglang"])
def test_whole_answers_are_the_full_searchs(name, monkeypatch):
    """estimate_inference's --json (to_json), colocated and --disaggregate, with the pruned search and with the full
    one (size_for_target patched to search every TP), each from empty memos: byte-identical."""
    from gpuplan import InferenceInputs
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.report.render import to_json

    answers = {}
    for disaggregate in (False, True):
        inputs = InferenceInputs(**ASKS[name], disaggregate=disaggregate)
        step_memo.clear()
        answers[disaggregate, "pruned"] = to_json(estimate_inference(inputs))
        search = sizing.size_for_target
        with monkeypatch.context() as patch:
            patch.setattr(sizing, "size_for_target", lambda *a, cheapest_per_type=False, **k: search(*a, **k))
            step_memo.clear()
            answers[disaggregate, "full"] = to_json(estimate_inference(inputs))
        assert answers[disaggregate, "pruned"] == answers[disaggregate, "full"]
    step_memo.clear()


def test_a_few_messages_pass_gives_the_scalar_floats_bit_for_bit():
    """The prefill's all-reduces now come from a vectorised pass of their own (1 .. 3 messages, where they were part
    of a pass over every decode step's): kernels.nccl_all_reduce_values of one, of three and of those three among
    1,024 decode-sized messages give each message the float one scalar collective_seconds gives, for every catalog
    part, TP 2, 4 and 8, P2P on and off (prompt chunks of 512 .. 8,192 tokens x 4,096 .. 8,192 x 2 bytes)."""
    prefills = [512 * 4096 * 2.0, 2048 * 4096 * 2.0, 8192 * 8192 * 2.0]
    decodes = [b * 4096 * 2.0 for b in range(1, 1025)]
    compared = 0
    for part in hardware_entries():
        for p2p in (True, False):
            fabric = K.collective_fabric(load_accelerator(part), p2p)
            for tp in (2, 4, 8):
                scalar = [float(collective_seconds("all_reduce", s, cluster_for(fabric).group(tp))) for s in prefills]
                assert [K.nccl_all_reduce_values([s], tp, fabric)[0] for s in prefills] == scalar, (part, p2p, tp)
                assert K.nccl_all_reduce_values(prefills, tp, fabric) == scalar, (part, p2p, tp)
                assert K.nccl_all_reduce_values(decodes + prefills, tp, fabric)[-3:] == scalar, (part, p2p, tp)
                compared += 3
    assert compared == len(hardware_entries()) * 2 * 3 * 3


@pytest.mark.parametrize("part, tp, p2p", [("h100", 2, True), ("h100", 8, False), ("l40s", 4, True),
                                           ("mi300x", 2, True), ("gb200", 16, True)])
def test_a_prefill_timed_alone_evaluates_no_decode_step(part, tp, p2p):
    """step_times of a TP the sizing then skips: the prefill equals prefill_step with every all-reduce evaluated
    one by one (kernels' table empty), and the decode steps' pass is not made (the table holds no all-reduce
    seconds) until a decode step is timed, which then equals the step timed alone."""
    from gpuplan import InferenceInputs
    from gpuplan.jobs.inference.decode_table import step_times
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.core.serving import kv_cache

    plan = resolve_plan(InferenceInputs(model="llama-3.1-8b", rps=5, prompt="3K", p2p=p2p))
    gpu = load_accelerator(part)
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()
    prefill, decode = step_times(plan, gpu, tp, 300)
    assert [t.allreduces for t in step_memo._TABLES.values()] == [None]
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, plan.setup))
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    assert prefill == R.prefill_step(plan.spec, plan.groups, plan.setup, prompt=plan.prompt, **common).total
    kv_seq = kv_cache.kv_layout(plan.spec, plan.setup.kv_bytes, tp, 1, plan.setup.block_size).bytes_per_sequence(
        plan.decode_context)
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    alone = R.decode_step(plan.spec, plan.groups, plan.setup, kv_seq, batch=77, context=plan.decode_context,
                          **common).total
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    assert decode(77) == alone
    assert [len(t.allreduces or {}) for t in step_memo._TABLES.values()] == [300]
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()


def test_replica_steps_time_a_tp_when_first_read():
    """sizing._replica_steps gives every TP that runs (the KV cache holds a sequence: read off the memory), timing
    none until read: a TP read gives step_times' prefill (==) and its decode steps, timed once; the README's sizing
    times fewer prefills than the (GPU type, TP) it could search (a TP >= the GPUs already kept on its type needs
    none: a replica takes tp GPUs at least)."""
    from gpuplan import InferenceInputs
    from gpuplan.jobs.inference import decode_table as DT
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.resolve import resolve_plan

    plan, gpu = resolve_plan(InferenceInputs(**ASKS["readme"])), load_accelerator("h100")
    step_memo.clear()
    steps = sizing._replica_steps(plan, gpu)
    assert list(steps) == [1, 2, 4, 8] and steps.timed == {}
    prefill, decode, cap = steps[4]
    assert list(steps.timed) == [4] and steps[4][1] is decode and cap == steps.caps[4] >= 1
    assert prefill == DT.step_times(plan, gpu, 4, cap)[0]
    timed = []
    real = DT.step_times
    try:
        DT.step_times = lambda *args: timed.append(args[2]) or real(*args)
        step_memo.clear()
        estimate_inference(InferenceInputs(**ASKS["readme"]))
    finally:
        DT.step_times = real
    searchable = sum(len(s) for s in sizing.replica_steps_by_gpu(plan).values())
    assert 0 < len(timed) < 0.7 * searchable, (len(timed), searchable)  # 76 of 121 timed (session 23)
    step_memo.clear()


def _every_pair(plan, target, price, steps):
    """disaggregated_by_gpu as it was before session 23: every TP's decode pool worked out, then every pair."""
    from gpuplan.core.serving import request_path as RP
    from gpuplan.jobs.inference import sizing as S
    from gpuplan.jobs.inference.serving import price_for

    found = {}
    hold = RP.disaggregated_hold_seconds(plan.setup.runtime, plan.prompt)
    for gpu_id, by_tp in steps.items():
        gpu = load_accelerator(gpu_id)
        price_h, source = price_for(gpu_id, S.asked_price(plan, gpu, price))
        decodes = {tp: pool for tp in by_tp
                   if (pool := S._decode_pool(plan, target, gpu, tp, by_tp[tp], price_h, source)) is not None}
        for tp_p, (prefill, _, _) in by_tp.items():
            for tp_d, decode_pool in decodes.items():
                transfer = S.kv_transfer_seconds(plan, gpu, min(tp_p, tp_d))
                rate = S.prefill_pool_rate(target.ttft_p99, prefill, transfer, hold)
                if not rate:
                    continue
                count = replicas_for(target, S._rated(rate))
                ttft = first_token_seconds(prefill, target.requests_per_s / count * prefill, hold, transfer)[1]
                pools = (S.Pool("prefill", gpu, tp_p, rate, count, price_h, source, ttft, transfer, prefill_s=prefill),
                         decode_pool)
                if gpu_id not in found or S._pools_cost(pools) < S._pools_cost(found[gpu_id]):
                    found[gpu_id] = pools
    return found


@pytest.mark.parametrize("name", sorted(ASKS))
def test_the_disaggregated_pools_are_every_pairs(name):
    """disaggregated_by_gpu (a TP's decode pool timed only for a pair that could replace the pools kept) against every
    TP's decode pool and every pair: the same pools on every GPU type (==, every float of both pools), in the same
    order; the README's ask times fewer decode pools."""
    from gpuplan import InferenceInputs
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan

    inputs = InferenceInputs(**ASKS[name])
    plan = resolve_plan(inputs)
    target = LoadTarget(inputs.ttft_p99 or math.inf, inputs.tpot or math.inf, inputs.rps)
    steps = sizing.replica_steps_by_gpu(plan)
    timed, real = [], sizing._decode_pool
    try:
        sizing._decode_pool = lambda *args: timed.append(args[3]) or real(*args)
        lazy = sizing.disaggregated_by_gpu(plan, target, inputs.price, timed=steps)
    finally:
        sizing._decode_pool = real
    every = _every_pair(plan, target, inputs.price, steps)
    assert list(lazy.items()) == list(every.items()) and lazy
    if name == "readme":
        assert len(timed) < 0.7 * sum(len(s) for s in steps.values()), len(timed)


def test_an_infinite_prefill_is_no_rate_with_or_without_the_early_stop():
    """Review R1 (s23): with an infinite prefill max_rate's upper end is 1 / inf = 0, where the early stop's
    replicas_for divided by it (ZeroDivisionError through size_for_target(..., cheapest_per_type=True)); the search
    answers None either way, as it did before the early stop existed."""
    from gpuplan.core.serving.load import LoadTarget, max_rate, replicas_for
    from gpuplan.jobs.inference.sizing import _rated

    target = LoadTarget(1.0, 0.05, 1000.0)
    useless = lambda hi: replicas_for(target, _rated(hi)) >= 4  # noqa: E731 (the sizing's test, as it builds it)
    decode = lambda batch: 0.01 * batch  # noqa: E731
    assert max_rate(target, float("inf"), decode, 100, 8) is None
    assert max_rate(target, float("inf"), decode, 100, 8, useless=useless) is None
