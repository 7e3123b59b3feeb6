"""A first serving-sizing answer made cheaper without moving any answer (session 22, docs/performance.md 'Serving
sizing'): the rate search skips the decode steps of a rate whose TTFT alone fails (core.serving.load.max_rate), a
sizing decode step hands kernels its own NCCL all-reduces from one vectorised pass instead of every batch's up to
the KV cap being put in kernels' table up front (jobs/inference/decode_table.py), the prefill's all-reduces join
that pass, and step_time's constants are found by the identity of their inputs (core/serving/identity_memo.py).
Each faster path is held to the exhaustive one on hand-picked cases: the same floats, compared with ==."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.serving import kernels as K
from gpuplan.core.serving import kv_cache
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import step_memo
from gpuplan.core.serving.identity_memo import by_identity
from gpuplan.core.serving.load import LoadTarget, max_rate, replica_at
from helpers import bisected_rate, scalar_collective_evaluations


def _plan(**given):
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    return resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", rps=5, **given))


@pytest.fixture(scope="module")
def plans():
    return {"plain": _plan(), "no_p2p": _plan(p2p=False), "chunked": _plan(prompt="2K", prefill_tokens=512, p2p=False),
            "draft": _plan(speculative="draft", draft_model="llama-3.2-1b", p2p=False)}


def test_the_vectorised_pass_gives_the_scalar_floats_bit_for_bit():
    """kernels.nccl_all_reduce_values and one scalar collective_seconds per message agree exactly (==, not
    approx): which of the two filled kernels' table first cannot move an answer. Every catalog part, TP 2, 4 and 8,
    P2P on and off, over 8 sizes: hidden states of 896 .. 8,192 x 0.5 .. 4 bytes a token, 1 .. 65,536 tokens (the
    sizes a sizing's decode steps and prefills ask, powers of two among them: log2's floor in collective_seconds;
    ~2.5 s CPU, a scalar evaluation ~1.3 ms)."""
    from gpuplan.catalog import hardware_entries

    sizes = [896 * 2.0, 2048 * 0.5 * 3, 5120 * 1.0 * 64, 7168 * 2.0 * 333, 8192 * 2.0 * 512, 4096 * 4.0 * 1000,
             8192 * 1.0 * 4099, 4096 * 2.0 * 65536]
    compared = 0
    for part in hardware_entries():
        for p2p in (True, False):
            fabric = K.collective_fabric(load_accelerator(part), p2p)
            for tp in (2, 4, 8):
                links = cluster_for(fabric).group(tp)
                assert K.nccl_all_reduce_values(sizes, tp, fabric) == [
                    float(collective_seconds("all_reduce", s, links)) for s in sizes], (part, p2p, tp)
                compared += len(sizes)
    assert compared == len(hardware_entries()) * 2 * 3 * 8


def _unprimed_decode(plan, gpu, tp, batch):
    """The decode step at ``batch`` timed alone, every all-reduce evaluated one by one (kernels' table empty)."""
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, plan.setup))
    kv_seq = kv_cache.kv_layout(plan.spec, plan.setup.kv_bytes, tp, 1, plan.setup.block_size).bytes_per_sequence(
        plan.decode_context)
    return R.decode_step(plan.spec, plan.groups, plan.setup, kv_seq, batch=batch, context=plan.decode_context,
                         **common).total


@pytest.mark.parametrize("which, tp, part", [("plain", 2, "h100"), ("no_p2p", 4, "h100"), ("draft", 2, "h100"),
                                             ("chunked", 8, "h100"), ("plain", 4, "l40s"), ("no_p2p", 2, "l40s"),
                                             ("plain", 8, "a100-pcie-80gb"), ("draft", 4, "mi300x")])
def test_the_sizers_steps_are_the_exhaustive_ones(plans, monkeypatch, which, tp, part):
    """jobs/inference/decode_table.step_times (the sizer's: all-reduces handed over one batch at a time from one
    vectorised pass) against each step timed alone with every all-reduce evaluated one by one: equal floats at
    batches 1, 2, 7, 33, 64, 129, 255 and the cap 300, with no scalar evaluation on the sizer's side (the prefill's
    included), on NVLink (h100), PCIe-only parts (l40s, a100-pcie-80gb: kernels.collective_fabric, tp_span.on_pcie;
    TP 8 past the PCIe switch) and Infinity Fabric (mi300x)."""
    from gpuplan.jobs.inference.decode_table import step_times

    plan, gpu, batches = plans[which], load_accelerator(part), (1, 2, 7, 33, 64, 129, 255, 300)
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()
    calls = scalar_collective_evaluations(monkeypatch)
    prefill, decode = step_times(plan, gpu, tp, 300)
    fast = [decode(b) for b in batches]
    assert calls == []  # nothing evaluated alone: the decode steps' and the prefill's in the one pass
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, plan.setup))
    assert prefill == R.prefill_step(plan.spec, plan.groups, plan.setup, prompt=plan.prompt, **common).total
    assert len(calls) >= 1  # the prefill alone: its all-reduces one by one
    assert fast == [_unprimed_decode(plan, gpu, tp, b) for b in batches]
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()


def test_a_first_answer_hands_kernels_the_batches_it_times_only(plans):
    """Without P2P every all-reduce is NCCL's: timing 3 batches of a cap of 512 leaves kernels' table with those 3
    decode messages and the prefill's one (2,048 tokens x 4,096 x 2 bytes), where priming put all 512 there."""
    from gpuplan.jobs.inference.decode_table import step_times

    plan, gpu = plans["no_p2p"], load_accelerator("h100")
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()
    _, decode = step_times(plan, gpu, 2, 512)
    for batch in (1, 100, 512):
        decode(batch)
    fabric = K.collective_fabric(gpu, False)
    held = sorted(m for (m, tp, part) in K._NCCL_ALL_REDUCE_SECONDS if tp == 2 and part == fabric)
    assert held == [4096.0 * 2 * b for b in (1, 100, 512)] + [plan.prompt * 4096.0 * 2]
    assert plan.prompt > 512  # the prefill's message is no decode step's
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()


def test_the_prefill_messages_are_the_chunks_the_scheduler_runs(plans):
    """A 2,048-token prompt at --prefill-tokens 512: four 512-token chunks (request_path.prefill_chunk_runs), one
    message of 512 x 4,096 x 2 bytes; without chunking the prompt's 2,048 tokens in one forward."""
    gpu = load_accelerator("h100")
    chunked, plain = plans["chunked"], plans["plain"]
    assert R.prefill_allreduce_messages(chunked.spec, chunked.setup, gpu, 2048) == (512 * 4096 * 2.0,)
    assert R.prefill_allreduce_messages(plain.spec, plain.setup, gpu, 2048) == (2048 * 4096 * 2.0,)


def linear_decode(batch: int) -> float:
    """A decode step of 10 ms + 0.1 ms per sequence."""
    return 0.010 + 0.0001 * batch


def max_rate_every_probe_timed(target, prefill_s, decode_s, output, capacity, path_s=0.0):
    """max_rate as it was before session 22: every probe runs the fixed point, whatever its TTFT."""
    def ok(rate):
        load = replica_at(rate, prefill_s, decode_s, output, capacity, path_s)
        return load if load and load.meets(target) and load.in_flight <= capacity else None

    return bisected_rate(ok, prefill_s)


@pytest.mark.parametrize("ttft, tpot, capacity", [(0.5, 0.05, 256), (0.06, 0.05, 256), (0.03, 1.0, 64),
                                                  (0.5, 0.0125, 32), (0.021, 0.05, 256), (0.019, 0.05, 256)])
def test_skipping_the_decode_steps_of_a_failing_ttft_changes_no_answer(ttft, tpot, capacity):
    """The TTFT (server hold 2 ms + prefill 20 ms + M/M/1 wait) reads no decode step, so max_rate rules a rate out on
    it before the fixed point: the same ReplicaLoad (==) as the search that times every probe, for targets where the
    TTFT binds (60 ms, 30 ms, 21 ms: just below an idle replica's 22 ms + wait), the TPOT, the capacity, or nothing
    meets them (19 ms: under an idle replica's 22 ms), and fewer decode steps asked where the TTFT binds."""
    asked, again = [], []
    target = LoadTarget(ttft_p99=ttft, tpot=tpot, requests_per_s=20)

    def counted(into):
        return lambda batch: into.append(batch) or linear_decode(batch)

    fast = max_rate(target, 0.020, counted(asked), 200, capacity, 0.002)
    every = max_rate_every_probe_timed(target, 0.020, counted(again), 200, capacity, 0.002)
    assert fast == every
    assert (fast is None) == (ttft < 0.022)
    assert len(asked) <= len(again)
    if ttft <= 0.06:
        assert len(asked) < len(again)


def test_identity_memo_answers_what_the_function_answers():
    """by_identity returns the wrapped function's answer: by the arguments' ids while the same objects come back,
    through the function (by value) for equal objects that are not the same, and afresh after cache_clear."""
    from functools import lru_cache

    calls = []

    @lru_cache(maxsize=8)
    def area(shape, scale):
        calls.append((shape, scale))
        return shape[0] * shape[1] * scale

    memo = by_identity(area, limit=2)
    shape = (3, 4)
    assert memo(shape, 2) == 24 and memo(shape, 2) == 24
    assert calls == [((3, 4), 2)] and area.cache_info().hits == 0  # the second never reached the lru_cache
    assert memo(tuple([3, 4]), 2) == 24 and area.cache_info().hits == 1  # equal, not the same: by value
    assert memo((5, 5), 1) == 25  # a third entry past limit 2 empties the table first
    assert len(memo.by_id) == 1
    memo.cache_clear()
    assert memo.by_id == {} and area.cache_info().currsize == 0
    assert memo(shape, 2) == 24 and len(calls) == 3
    # by_value=1: the first argument by value, so 1,000 made twice (two int objects) is one entry (outside_layers'
    # row bytes, int(...) at each call)
    scaled = by_identity(lru_cache(maxsize=8)(lambda scale, shape: shape[0] * shape[1] * scale), limit=4, by_value=1)
    one, other = int("1000"), int("1000")
    assert one is not other and scaled(one, shape) == scaled(other, shape) == 12_000
    assert len(scaled.by_id) == 1 and scaled.cache_info().misses == 1 and scaled.cache_info().hits == 0


def test_step_constants_are_found_by_identity_and_cleared_with_the_lru(plans):
    """roofline._step_constants: the same tuple for the same objects, and cache_clear (tests/conftest.py's, after a
    monkeypatch) empties the identity table too, so no constant made before a patch is read after it."""
    plan, gpu = plans["plain"], load_accelerator("h100")
    args = (plan.spec, plan.setup, 2, 1, 0, 2, gpu)
    first = R._step_constants(*args)
    assert R._step_constants(*args) is first
    assert R._step_constants(*args) == R._step_constants_of(*args)
    R._step_constants.cache_clear()
    assert R._step_constants.by_id == {} and R._step_constants.cache_info().currsize == 0


def test_the_all_reduce_seconds_kept_across_answers_are_bounded(plans, monkeypatch):
    """step_memo.ALLREDUCES_LIMIT bounds the all-reduce seconds the decode tables keep over all of them (review s22
    R3 M1: one --max-num-seqs 65536 answer kept 3.6 M, 554 MB). With the limit at 1,000, three tables (TP 2, 4, 8)
    of a cap of 600 hold 600 each (the decode messages of 4,096 x 2 bytes x the batch; the prefill's has its own pass
    since session 23): the second drops the first's, the third the second's, so 600 are held. A dropped table's next
    step works its 600 decode messages out again (the same floats as the step timed alone). No batch's messages are kept (worked out again from the batch)."""
    from gpuplan.jobs.inference.decode_table import step_times

    plan, gpu = plans["plain"], load_accelerator("h100")
    monkeypatch.setattr(step_memo, "ALLREDUCES_LIMIT", 1000)
    decodes = {}
    for tp in (2, 4, 8):
        decodes[tp] = step_times(plan, gpu, tp, 600)[1]
        decodes[tp](600)
        assert step_memo.held_allreduces() == 600
    tables = list(step_memo._TABLES.values())
    assert [t.allreduces is not None for t in tables] == [False, False, True]
    assert [len(t.allreduces or {}) for t in tables] == [0, 0, 600]
    assert not any(hasattr(t, "messages") for t in tables)
    again = decodes[2](300)  # tp 2's seconds dropped: one pass again, tp 8's dropped
    assert [len(t.allreduces or {}) for t in tables] == [600, 0, 0] and step_memo.held_allreduces() == 600
    assert again == _unprimed_decode(plan, gpu, 2, 300)


def test_the_default_limit_holds_a_large_cap_answer(plans):
    """Six tables of a 65,536-sequence cap (TP 2, 4, 8 on h100 and a100) each hold 65,536 all-reduce seconds while
    their answer runs (the 3,840-token prefill's message is batch 3,840's); over all of them at most step_memo.ALLREDUCES_LIMIT (200,000: three tables) stay held."""
    from gpuplan.jobs.inference.decode_table import step_times

    plan = plans["plain"]
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()
    for part in ("h100", "a100"):
        for tp in (2, 4, 8):
            step_times(plan, load_accelerator(part), tp, 65536)[1](65536)
    held = [len(t.allreduces or {}) for t in step_memo._TABLES.values()]
    assert held == [0, 0, 0, 65536, 65536, 65536] and step_memo.held_allreduces() == 3 * 65536 <= 200_000
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    step_memo.clear()


@pytest.fixture(scope="module")
def unpatched(plans):
    """The decode step at batch 512 (TP 1, h100) and the all-gather of 3 rows of 4,096 bytes over TP 2, set up
    before the test's monkeypatch: the memos hold the spec's GEMM FLOPs and the part's all-gathers by row."""
    from gpuplan.core.serving import outside_layers as OL

    gpu = load_accelerator("h100")
    return _unprimed_decode(plans["plain"], gpu, 1, 512), OL._all_gather_seconds(3, 4096, 2, gpu)


def test_a_patched_gemm_flops_or_all_gather_is_read(plans, unpatched, monkeypatch):
    """tests/conftest.py's serving_memos_follow_patches empties roofline._gemm_flops_of and
    outside_layers._gathers_of (roofline.clear_memos) as it does _step_constants: gemm_flops_per_token at 100x
    moves the compute-bound step at batch 512 (review s22 R3 N1: 0.097 -> 1.058 s; here more than 5x), and a
    patched _gathers_by_row (7 s a row count) is what _all_gather_seconds reads."""
    import numpy as np

    from gpuplan.core.serving import outside_layers as OL

    step, gather = unpatched
    real = R.gemm_flops_per_token
    monkeypatch.setattr(R, "gemm_flops_per_token", lambda spec: 100 * real(spec))
    monkeypatch.setattr(OL, "_gathers_by_row", lambda *args: np.full(OL._GATHER_ROWS, 7.0))
    gpu = load_accelerator("h100")
    assert _unprimed_decode(plans["plain"], gpu, 1, 512) > 5 * step
    assert OL._all_gather_seconds(3, 4096, 2, gpu) == 7.0 != gather
