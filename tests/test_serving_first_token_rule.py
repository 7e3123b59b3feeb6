"""One TTFT rule for a colocated replica and a disaggregated prefill pool (core/serving/load.first_token_seconds):
the server's hold before the engine (vLLM's 2 ms tokeniser batch window from 0.10, request_path.api_server_seconds)
is in both. The disaggregated pool's TTFT left it out until 2026-12-06 (jobs/inference/sizing.py summed prefill
+ transfer + wait by hand), while the colocated replica (load.replica_at) counted it."""

from __future__ import annotations

import math

import pytest

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving.load import LoadTarget, first_token_seconds, prefill_pool_rate, queue_wait, replica_at
from gpuplan.jobs.inference import sizing as S
from gpuplan.jobs.inference.resolve import resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs


def test_first_token_seconds_by_hand():
    # 100 ms prefill at rho 0.5, 2 ms hold, 30 ms transfer: mean 0.002 + 0.1 + 0.03 + 0.5 x 0.1 / 0.5 = 0.232 s;
    # p99 0.132 + 0.1 x ln(50) / 0.5 = 0.132 + 0.78240 = 0.91440 s
    mean, p99 = first_token_seconds(0.1, 0.5, 0.002, 0.03)
    assert mean == pytest.approx(0.232, rel=1e-12)
    assert p99 == pytest.approx(0.132 + 0.1 * math.log(50) / 0.5, rel=1e-12)
    assert p99 == pytest.approx(0.91440, abs=1e-5)


def test_colocated_and_prefill_pool_read_the_same_hold():
    load = replica_at(5.0, 0.1, lambda batch: 0.02, 100, path_s=0.002)
    assert (load.ttft_mean, load.ttft_p99) == first_token_seconds(0.1, 0.5, 0.002)
    # the pool's edge: hold + prefill + p99 wait + transfer = the target (bisection to 1e-4 of the rate)
    rate = prefill_pool_rate(0.5, 0.1, 0.05, 0.002)
    assert 0.002 + 0.1 + queue_wait(0.1, rate * 0.1)[1] + 0.05 == pytest.approx(0.5, rel=1e-3)
    assert rate < prefill_pool_rate(0.5, 0.1, 0.05)  # the hold costs rate at the same target


def test_disaggregated_pool_ttft_counts_vllms_tokeniser_hold():
    """Llama-3.1-8B, vLLM 0.29 (default release, >= 0.10: a 2 ms hold), 20 requests/s of 2K + 512, TTFT p99
    500 ms, TPOT 50 ms: the prefill pool's TTFT is first_token_seconds of its prefill step, the load asked
    and its transfer, with the hold of both instances' servers (the proxy sends the text request to the prefill
    instance, then to the decode instance, which tokenises it again: toy_proxy_server.py@v0.11.0:149-225;
    review w9 r1 S1): it exceeds prefill + transfer + p99 wait by 2 x 2 ms (abs 1e-9; by 0 before 2026-12-06,
    by 2 ms before S1), plus each server's tokenising of the 2,048-token prompt, 2 x 2.867 ms (review w11 r3 M2):
    9.734 ms."""
    plan = resolve_plan(InferenceInputs(model="llama-3.1-8b", prompt=2048, output_tokens=512, search=False))
    assert RP.api_server_seconds(plan.setup.runtime.release) == 0.002
    assert RP.disaggregated_hold_seconds(plan.setup.runtime) == 0.004
    target = LoadTarget(ttft_p99=0.5, tpot=0.05, requests_per_s=20)
    options = S.disaggregated_by_gpu(plan, target)
    assert options
    for prefill_pool, _ in options.values():
        prefill_s = S._replica_steps(plan, prefill_pool.gpu)[prefill_pool.tp][0]
        rho = target.requests_per_s / prefill_pool.instances * prefill_s
        without = prefill_s + prefill_pool.transfer_s + queue_wait(prefill_s, rho)[1]
        assert prefill_pool.latency_s - without == pytest.approx(2 * (0.002 + 2048 * 1.4e-6), abs=1e-9)
        assert prefill_pool.latency_s <= target.ttft_p99 * (1 + 1e-9)


def test_disaggregated_hold_is_both_servers_at_the_endpoint_asked():
    """vLLM 0.11.0's chat endpoint: each instance's server holds 2 ms + the 11 ms parse, 26 ms in all; the
    completions endpoint 4 ms; SGLang with no prompt 0 (no tokeniser window); vLLM 0.9.1 (no window) 0."""
    from gpuplan.core.serving.setup import Runtime
    assert RP.disaggregated_hold_seconds(Runtime(version=(0, 11, 0), endpoint="chat")) == pytest.approx(0.026)
    assert RP.disaggregated_hold_seconds(Runtime(version=(0, 11, 0))) == pytest.approx(0.004)
    assert RP.disaggregated_hold_seconds(Runtime(engine="sglang", version=(0, 5, 6), endpoint="chat")) == 0.0
    assert RP.disaggregated_hold_seconds(Runtime(version=(0, 9, 1), endpoint="chat")) == 0.0


def test_disaggregated_sglang_hold_is_its_tokenising_once(capsys):
    """SGLang's prefill-mode server tokenises as any server does (tokenizer_manager.py@v0.5.6:524-525, 663, no
    branch on disaggregation_mode) and its load balancer posts to the prefill and decode servers at once
    (mini_lb asyncio.gather): the disaggregated hold is server_hold_seconds once, 8,000 x 1.4 us = 11.2 ms (0 on
    the parent, review w11 r3 M1), the same hold as the replicas' line of the same run (CLI, both lines)."""
    from gpuplan.cli import main
    from gpuplan.core.serving.setup import Runtime
    sglang = Runtime(engine="sglang", version=(0, 5, 6))
    assert RP.disaggregated_hold_seconds(sglang, 8000) == pytest.approx(11.2e-3, rel=1e-12)
    assert RP.disaggregated_hold_seconds(sglang, 8000) == RP.server_hold_seconds(sglang, 8000)
    main(["infer", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--engine", "sglang==0.5.6", "--quantization", "bf16",
          "--prompt", "8000", "--output-tokens", "1000", "--rps", "2", "--ttft-p99", "2s", "--tpot", "50ms",
          "--disaggregate", "--full"])
    out = capsys.readouterr().out
    holds = [line.split("server hold ")[1].split(" ms")[0] for line in out.splitlines() if "server hold 1" in line]
    assert holds == ["11.2", "11.2"], out
