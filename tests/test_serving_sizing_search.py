"""The serving sizer's rate search: the early stop once the sequences in flight pass the KV
capacity, and the vectorised NCCL all-reduce table it reads, change no answer (core/serving/load.py,
core/serving/kernels.py nccl_all_reduce_seconds / nccl_all_reduce_values)."""

from __future__ import annotations

import math

import pytest

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.serving import kernels as K
from gpuplan.core.serving.load import LoadTarget, max_rate, replica_at
from helpers import bisected_rate


def linear_decode(batch: int) -> float:
    """A decode step of 10 ms + 0.1 ms per sequence (never faster with more sequences)."""
    return 0.010 + 0.0001 * batch


def test_fixed_point_worked_by_hand():
    # rate 10/s, prefill 20 ms: rho = 0.2; M/M/1 mean wait 0.2 x 0.02 / 0.8 = 5 ms, TTFT mean 25 ms.
    # Fixed point B = 10 x (0.025 + 100 x (0.010 + 0.0001 ceil(B)) / 0.8) = 0.25 + 12.5 + 0.125 ceil(B);
    # ceil(B) = 15 gives B = 14.625 (ceil 15: consistent), tpot = (0.010 + 0.0015) / 0.8 = 14.375 ms.
    load = replica_at(10.0, 0.020, linear_decode, 100)
    assert load.in_flight == pytest.approx(14.625, rel=1e-6)
    assert load.tpot == pytest.approx(0.014375, rel=1e-9)
    assert load.ttft_mean == pytest.approx(0.025, rel=1e-9)


def test_a_limit_below_the_fixed_point_stops_the_search_and_one_above_changes_nothing():
    free = replica_at(10.0, 0.020, linear_decode, 100)
    assert replica_at(10.0, 0.020, linear_decode, 100, max_in_flight=14.0) is None  # 14.625 > 14
    assert replica_at(10.0, 0.020, linear_decode, 100, max_in_flight=15.0) == free


def max_rate_without_the_stop(target, prefill_s, decode_s, output, capacity):
    """max_rate's bisection with the capacity checked only on the fixed point reached, not as a stop."""
    def unlimited_ok(rate):
        load = replica_at(rate, prefill_s, decode_s, output)
        return load if load and load.meets(target) and load.in_flight <= capacity else None

    return bisected_rate(unlimited_ok, prefill_s)


def test_max_rate_with_the_capacity_stop_equals_the_answer_without_it():
    target = LoadTarget(ttft_p99=0.5, tpot=0.05, requests_per_s=20)
    for capacity in (4, 32, 256):
        limited = max_rate(target, 0.020, linear_decode, 200, capacity)
        assert limited == max_rate_without_the_stop(target, 0.020, linear_decode, 200, capacity)
        assert limited.in_flight <= capacity


@pytest.fixture(scope="module")
def llama_8b_plan():
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    return resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", search=False))


@pytest.mark.parametrize("tp", [1, 2])
def test_the_sizers_decode_never_gets_faster_with_more_sequences(llama_8b_plan, tp):
    """The stop's assumption (replica_at: 'a decode step never gets faster with more sequences') on the decode
    the sizer really searches with (jobs/inference/sizing._step_times, Llama-3.1-8B on H100): decode(batch) is
    non-decreasing over every batch 1..cap the search may ask, and max_rate with the stop gives what the same
    bisection without it gives, for targets the KV capacity, the TPOT and the TTFT each bind."""
    from gpuplan.jobs.inference.serving import evaluate
    from gpuplan.jobs.inference.sizing import _step_times, scheduled_sequences

    plan, gpu = llama_8b_plan, load_accelerator("h100")
    # vLLM 0.19's `vllm serve` default on an 80 GB H100: 1,024 sequences at once, 8,192 batched tokens
    # (vllm/engine/arg_utils.py: GPUs of 70 GiB or more, OPENAI_API_SERVER), min(1,024, 8,192) = 1,024
    assert scheduled_sequences(plan, gpu) == 1024
    cap = min(evaluate(plan, gpu, tp, 1, 1).max_sequences, scheduled_sequences(plan, gpu))
    assert 8 < cap <= 1024  # the KV cache's sequences, at most what vLLM schedules at once
    prefill, decode = _step_times(plan, gpu, tp, cap)
    steps = [decode(batch) for batch in range(1, cap + 1)]
    assert all(later >= earlier for earlier, later in zip(steps, steps[1:]))
    assert steps[-1] > steps[0]
    for target in (LoadTarget(ttft_p99=10.0, tpot=1.0, requests_per_s=50),  # loose: the capacity binds
                   LoadTarget(ttft_p99=10.0, tpot=1.2 * steps[15], requests_per_s=50),  # TPOT near batch 16's step
                   LoadTarget(ttft_p99=3 * prefill, tpot=1.0, requests_per_s=50)):  # TTFT: the prompt queue binds
        for capacity in (8, cap):
            found = max_rate(target, prefill, decode, plan.output, capacity)
            assert found is not None and found.in_flight <= capacity
            assert found == max_rate_without_the_stop(target, prefill, decode, plan.output, capacity)


@pytest.mark.parametrize("gpu,tp", [("h100", 2), ("h100", 8), ("a100-80gb", 4)])
def test_primed_all_reduce_table_holds_the_scalar_answers(gpu, tp):
    fabric = load_accelerator(gpu)
    sizes = [4096.0 * 2 * b for b in (1, 7, 64, 333, 1024, 4096)]  # 8 KiB .. 32 MiB hidden states
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    for size, seconds in zip(sizes, K.nccl_all_reduce_values(sizes, tp, fabric)):  # the sizing's pass, handed over
        K.remember_nccl_all_reduce(size, tp, fabric, seconds)
    links = cluster_for(fabric).group(tp)
    for size in sizes:
        scalar = float(collective_seconds("all_reduce", size, links))
        assert K._NCCL_ALL_REDUCE_SECONDS[(size, tp, fabric)] == pytest.approx(scalar, rel=1e-12)
        assert K.nccl_all_reduce_seconds(size, tp, fabric) == pytest.approx(scalar, rel=1e-12)
    assert math.isfinite(K.nccl_all_reduce_seconds(sizes[-1], tp, fabric))


def test_the_table_is_bounded():
    fabric = load_accelerator("h100")
    K._NCCL_ALL_REDUCE_SECONDS.clear()
    K._remember({(float(i), 2, fabric): 1.0 for i in range(K._NCCL_CACHE_LIMIT)})
    K._remember({(-1.0, 2, fabric): 2.0})  # one past the limit starts the table afresh
    assert len(K._NCCL_ALL_REDUCE_SECONDS) == 1
    K._NCCL_ALL_REDUCE_SECONDS.clear()


def test_the_sizer_schedules_what_the_memory_split_profiles():
    """The sizing's sequences per replica are vLLM's own default for the GPU (the memory split's figure), not a
    fixed 256: 1,024 on an 80 GB H100 and 256 on a 24 GB RTX 3090 (vLLM 0.9+: 70 GiB and above get 1,024), the
    user's --max-num-seqs where given, and min(default, --prefill-tokens) from 0.19 (512 tokens: 512)."""
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs
    from gpuplan.jobs.inference.sizing import scheduled_sequences

    def seqs(gpu, **given):
        plan = resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", search=False, **given))
        return scheduled_sequences(plan, load_accelerator(gpu))

    assert (seqs("h100"), seqs("rtx-3090")) == (1024, 256)
    assert seqs("h100", max_num_seqs=64) == 64
    assert seqs("h100", prefill_tokens=512) == 512


def test_the_configurations_table_leaves_out_gpus_vllm_would_not_start_on(run_cli):
    """`infer --max-num-seqs 4096` on vLLM: the catalog configurations table (jobs/inference/serving.
    search_configurations) leaves out every GPU type whose default token budget is below 4,096 (2,048 below 70 GiB
    and on A100s, vllm/engine/arg_utils.py; SchedulerConfig refuses max_num_batched_tokens < max_num_seqs), as the
    --rps sizing does: the A100 80GB and the L4 are listed without the flag and left out with it; H100 SXM (8,192
    tokens) stays."""
    import json

    def listed(*flags):
        code, out, _ = run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--json", *flags)
        assert code == 0
        tables = json.loads(out)["tables"]
        (rows,) = [v for k, v in tables.items() if k.startswith("catalog configurations")]
        return {row["gpu"] for row in rows}

    plain, many = listed(), listed("--max-num-seqs", "4096")
    assert {"a100-sxm4-80gb", "l4", "h100-sxm"} <= plain
    assert "h100-sxm" in many and not {"a100-sxm4-80gb", "l4"} & many
