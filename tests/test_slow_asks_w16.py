"""Slow serving asks (w16 B2): a speculative sizing without GPU P2P.

`infer llama-3.1-8b --rps 5 --speculative draft --draft-model llama-3.2-1b --no-p2p` took ~10-12 s (~3-4 s with
P2P): the sizer primes the NCCL all-reduces of the target's decode steps for every batch it may ask
(then core.serving.roofline.prime_decode_allreduces, one vectorised pass; since the twenty-second session
jobs/inference/decode_table.py's pass per (GPU type, TP)), but not those of the proposer's draft steps
(decode_step's plain setup: the draft's hidden size, one token a sequence), so each draft all-reduce NCCL takes was
evaluated alone (~0.5 ms each; 17,017 of them in that ask). Without P2P every all-reduce is NCCL's
(kernels.custom_allreduce_limit: no custom kernel), so the ask paid for all of them. The guard counts the scalar
evaluations, not seconds (docs/performance.md, 'Slow asks')."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.serving import kernels as K
from gpuplan.core.serving import kv_cache
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import step_memo
from helpers import scalar_collective_evaluations


def _plan(**given):
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    return resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", rps=5, **given))


@pytest.fixture(scope="module")
def plans():
    return {"draft": _plan(speculative="draft", draft_model="llama-3.2-1b", p2p=False),
            "eagle": _plan(speculative="eagle", p2p=False),
            "draft_p2p": _plan(speculative="draft", draft_model="llama-3.2-1b")}


@pytest.mark.parametrize("which, tp", [("draft", 2), ("eagle", 4), ("draft_p2p", 8)])
def test_the_sizers_decode_steps_find_every_all_reduce_primed(plans, monkeypatch, which, tp):
    """Every batch 1..64 the rate search may ask on 2-8 H100s: not one all-reduce of the target's verify step or of
    the proposer's draft steps (llama-3.2-1b: 2,048 x 2 bytes a token; EAGLE's head: the target's 4,096) is
    evaluated alone. Before w16 B2 the draft's were: 64 scalar evaluations here, one a batch. With P2P the custom
    kernel takes the small messages (8 MiB on H100 with vLLM), so NCCL's are the large ones only: primed too."""
    from gpuplan.jobs.inference.sizing import _step_times

    plan, gpu = plans[which], load_accelerator("h100")
    assert plan.setup.speculation.draft is not None  # a proposer with steps of its own (decode_step's draft branch)
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    _, decode = _step_times(plan, gpu, tp, 64)
    calls = scalar_collective_evaluations(monkeypatch)
    steps = [decode(batch) for batch in range(1, 65)]
    assert calls == []
    assert all(later >= earlier for earlier, later in zip(steps, steps[1:]))
    K._NCCL_ALL_REDUCE_SECONDS.clear()


@pytest.mark.parametrize("which", ["draft", "eagle"])
def test_primed_draft_steps_time_what_the_unprimed_ones_did(plans, monkeypatch, which):
    """The primed decode step is the step each batch timed alone, with its all-reduces evaluated one by one (the
    code before w16 B2 for the draft's): the same seconds to 1e-12 (the vectorised pass and the scalar one run
    the same numpy arithmetic; tests/test_serving_sizing_search.py holds the table itself to 1e-12), and the
    draft's share is there: with --no-p2p the draft all-reduces are NCCL's through host memory."""
    from gpuplan.jobs.inference.sizing import _step_times

    plan, gpu, tp = plans[which], load_accelerator("h100"), 2
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    _, primed = _step_times(plan, gpu, tp, 64)
    batches = (1, 3, 17, 64)
    got = [primed(b) for b in batches]
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    calls = scalar_collective_evaluations(monkeypatch)
    common = dict(tp=tp, pp=1, **R.gpu_keywords(gpu, plan.setup))
    kv_seq = kv_cache.kv_layout(plan.spec, plan.setup.kv_bytes, tp, 1, plan.setup.block_size).bytes_per_sequence(
        plan.decode_context)
    alone = [R.decode_step(plan.spec, plan.groups, plan.setup, kv_seq, batch=b, context=plan.decode_context,
                           **common).total for b in batches]
    assert len(calls) >= 2 * len(batches)  # unprimed: the verify step's and the draft's, one by one
    assert got == pytest.approx(alone, rel=1e-12)
    K._NCCL_ALL_REDUCE_SECONDS.clear()


def test_a_sizers_decode_steps_work_out_the_proposer_once(plans):
    """What a speculative decode step needs of its proposer and of the links without P2P does not depend on the
    batch: roofline.draft_parts (the draft's plain setup, parameter groups and KV share) and kernels.host_path (the
    part as its collectives see it without P2P) are worked out once for the 64 batches of one (GPU, TP), where each
    was rebuilt at every step (79,143 dataclasses.replace calls in the 8B ask's profile; w16 B2)."""
    from gpuplan.jobs.inference.sizing import _step_times

    plan, gpu = plans["draft"], load_accelerator("h100")
    step_memo.clear()  # the decode steps of earlier tests are kept across answers (core.serving.step_memo)
    _, decode = _step_times(plan, gpu, 2, 64)
    R.draft_parts.cache_clear()
    K.host_path.cache_clear()
    for batch in range(1, 65):
        decode(batch)
    drafts, paths = R.draft_parts.cache_info(), K.host_path.cache_info()
    assert (drafts.misses, drafts.hits) == (1, 63)
    assert paths.misses == 1 and paths.hits == 2 * 64 - 1  # the verify step's all-reduces and the draft's
    plain, draft_groups, share = R.draft_parts(plan.spec, plan.groups, plan.setup, 2, 1)
    assert plain.speculation is None and plain.lora is None and plain.fmt == plan.setup.fmt
    assert 0 < share < 1  # llama-3.2-1b's cache beside llama-3.1-8b's: a share of the KV pool
