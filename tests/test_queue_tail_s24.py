"""M/D/1 waiting-time tail (core/serving/queue_tail.py) and the sizing's note that compares it with the answer's
M/M/1 (jobs/inference/sizing_md1.py; docs/inference.md §5b). Helper MQ, session 24."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpuplan.core.serving import queue_tail as Q
from gpuplan.core.serving.load import MD1, LoadTarget, first_token_seconds, max_rate, queue_wait, rate_ceiling


def test_the_worked_case_by_hand():
    # rho 0.1, D 1, t 1.05: floor(t / D) = 1, x_0 = 0.105, x_1 = 0.1 x 0.05 = 0.005:
    # P(W <= t) = 0.9 (e^0.105 - 0.005 e^0.005) = 0.995117, so P(W > t) = 0.004883
    by_hand = 1 - 0.9 * (math.exp(0.105) - 0.005 * math.exp(0.005))
    assert Q.md1_wait_tail(1.05, 1.0, 0.1) == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(0.004883, abs=1e-6)
    # the same in seconds: D = 0.39 s scales t with it
    assert Q.md1_wait_tail(1.05 * 0.39, 0.39, 0.1) == pytest.approx(by_hand, rel=1e-9)


@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.1, 0.5, 0.9])
def test_below_one_service_time(rho):
    # P(W > 0) = rho: an arrival waits iff it finds the server busy (PASTA), rho of the time
    assert Q.md1_wait_tail(0.0, 1.0, rho) == pytest.approx(rho, rel=1e-12)
    # 0 <= t < D: only k = 0 in the sum, P(W > t) = 1 - (1 - rho) e^{rho t / D}, not rho: the tail falls from rho
    for t in (0.25, 0.5, 0.99):
        assert Q.md1_wait_tail(t, 1.0, rho) == pytest.approx(1 - (1 - rho) * math.exp(rho * t), rel=1e-9)


def test_a_light_load_waits_only_for_the_prompt_in_service():
    # rho -> 0: P(W > t) = rho (1 - t / D) + O(rho^2) for t < D (the residual of the one prompt found, uniform on
    # (0, D)), and next to nothing past D (two prompts ahead: O(rho^2))
    rho = 1e-6
    for t in (0.1, 0.5, 0.9):
        assert Q.md1_wait_tail(t, 1.0, rho) / rho == pytest.approx(1 - t, rel=1e-5)
    assert Q.md1_wait_tail(1.5, 1.0, rho) < 1e-11


def test_p99_is_zero_up_to_rho_one_percent_and_solves_the_tail():
    assert Q.md1_wait_p99(1.0, 0.01) == 0.0 and Q.md1_wait_p99(1.0, 0.0) == 0.0
    for rho in (0.05, 0.1, 0.3, 0.5, 0.8, 0.9, 0.99):
        t = Q.md1_wait_p99(2.0, rho)
        assert Q.md1_wait_tail(t, 2.0, rho) == pytest.approx(0.01, rel=1e-6)


@pytest.mark.parametrize("rho", [0.3, 0.5, 0.8, 0.9, 0.95])
def test_the_exact_sum_and_the_asymptote_agree_where_both_hold(rho):
    u = Q.decay_root(rho)
    assert rho * math.expm1(u) == pytest.approx(u, rel=1e-12)
    for t in (3.0, 5.0, 8.0, 10.0):
        exact, magnitude = Q._exact(t, rho)
        assert magnitude < Q.STABLE_MAGNITUDE
        # the further roots of the characteristic equation decay faster: 1e-3 from 3 D, 1e-6 from 10 D (rho >= 0.5)
        assert exact == pytest.approx(Q.asymptote(t, rho), rel=1e-3 if t < 10 or rho < 0.5 else 1e-6)


def test_past_the_stable_sum_the_asymptote_is_read():
    # rho 0.9 at t = 40 D: the terms reach ~1e19, the plain sum reads nonsense; md1_wait_tail stays a probability
    assert Q._exact(40.0, 0.9)[1] > 1e12
    tail = Q.md1_wait_tail(40.0, 1.0, 0.9)
    assert tail == pytest.approx(Q.asymptote(40.0, 0.9), rel=1e-12) and 0 < tail < Q.md1_wait_tail(20.0, 1.0, 0.9)
    assert Q.md1_wait_tail(1e6, 1.0, 0.999) < 1e-300 or Q.md1_wait_tail(1e6, 1.0, 0.999) == 0.0


def test_heavy_traffic_halves_the_mm1_p99():
    # Kingman: the tail's exponent is 2 (1 - rho) / (rho (1 + c_s^2) D): c_s = 0 for M/D/1, 1 for M/M/1, so near
    # rho = 1 the M/D/1 p99 is half M/M/1's ln(100 rho) / (1 - rho) D; below it, never above M/M/1's
    mm1 = lambda rho: math.log(100 * rho) / (1 - rho)  # noqa: E731
    assert Q.md1_wait_p99(1.0, 0.999) / mm1(0.999) == pytest.approx(0.5, rel=2e-3)
    for rho in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99):
        assert Q.md1_wait_p99(1.0, rho) < mm1(rho)


def _lindley(rho: float, n: int, seed: int) -> np.ndarray:
    """Waits of n prompts of D = 1 arriving at Poisson rate rho (Lindley: W_{k+1} = max(0, W_k + D - A_{k+1}), i.e. the
    random walk S of D - A less its running minimum), the first 1% dropped (from empty to steady state)."""
    steps = 1.0 - np.random.default_rng(seed).exponential(1 / rho, n)
    walk = np.concatenate(([0.0], np.cumsum(steps)))
    return (walk - np.minimum.accumulate(walk))[1 + n // 100:]


@pytest.mark.parametrize("rho, n, points, tail_tol, p99_tol", [
    # tolerances ~5 standard errors, read from the spread over seeds 1-3 at these n (rho 0.8's waits: long-correlated)
    (0.1, 2_000_000, (0.5, 1.05), 0.05, 0.01),
    (0.5, 2_000_000, (1.0, 2.0, 3.0), 0.06, 0.02),
    (0.8, 4_000_000, (3.0, 10.0), 0.12, 0.04),
])
def test_monte_carlo_agrees(rho, n, points, tail_tol, p99_tol):
    waits = _lindley(rho, n, seed=7)
    for t in points:
        assert float((waits > t).mean()) == pytest.approx(Q.md1_wait_tail(t, 1.0, rho), rel=tail_tol)
    assert float(np.quantile(waits, 0.99)) == pytest.approx(Q.md1_wait_p99(1.0, rho), rel=p99_tol)


def test_the_default_queue_is_still_mm1():
    # the answer's model is unchanged: W_mean = rho D / (1 - rho), W_p99 = D ln(100 rho) / (1 - rho)
    assert queue_wait(0.4, 0.5) == pytest.approx((0.4, 0.4 * math.log(50) / 0.5), rel=1e-12)
    # M/D/1: Pollaczek-Khinchine's mean is half M/M/1's
    assert queue_wait(0.4, 0.5, MD1)[0] == pytest.approx(0.2, rel=1e-12)


def _sizing(**kw):
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    return estimate_inference(InferenceInputs(**kw))


def test_the_note_on_a_ttft_bound_sizing_at_a_low_prefill_share():
    # helper MS's ask: Llama-3.1-70B on A100 with TensorRT-LLM (no server hold), 3 requests/s, TTFT p99 800 ms: the idle
    # TTFT (one prefill, ~0.39 s) sits about one prefill under the target, where M/M/1 allows rho ~0.027
    report = _sizing(model="llama-3.1-70b", gpu="a100", engine="trtllm", rps=3, ttft_p99="800ms")
    config = next(line for s in report.sections for line in s.lines if line.key == "sized_config").value
    assert (config["tp"], config["replicas"]) == (8, 44)
    notes = [n for n in report.notes if "M/D/1" in n]
    assert len(notes) == 1
    assert "prefill 2.7% of its GPU time" in notes[0] and "9 x (tp 8 on NVIDIA A100 80GB SXM4) = 72 GPUs" in notes[0]
    assert "13.9%" in notes[0] and "the answer keeps M/M/1's tail" in notes[0]


def test_the_md1_replicas_meet_the_target_and_one_fewer_does_not():
    # the note's 9 replicas from its own formula, not from the search: at 3/9 requests/s a replica the M/D/1 p99 TTFT
    # (prefill + md1_wait_p99) is within 800 ms, at 3/8 past it (no TPOT target, the KV cache holds far more)
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    plan = resolve_plan(InferenceInputs(model="llama-3.1-70b", gpu="a100", engine="trtllm", rps=3, ttft_p99="800ms"))
    prefill = sizing._tp_steps(plan, plan.gpu, 8)[0]
    assert 0.38 < prefill < 0.40
    p99 = lambda replicas: first_token_seconds(prefill, 3 / replicas * prefill, queue=MD1)[1]  # noqa: E731
    assert p99(9) <= 0.8 < p99(8)
    mm1 = lambda replicas: first_token_seconds(prefill, 3 / replicas * prefill)[1]  # noqa: E731
    assert mm1(44) <= 0.8 < mm1(43)  # the answer's 44


def test_no_note_on_the_readme_sizing():
    # README's ask: the H100 answer (3 x tp 1, 8.36 requests/s a replica, TTFT p99 309 ms at it against 500 ms, TPOT 41
    # ms against 50) is held by its KV cache (178 sequences in flight, the cap) at prefill 37%, not by the TTFT: its
    # rate is well below the TTFT's own ceiling, and no note is said
    from gpuplan.jobs.inference import sizing
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    kw = dict(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms", prompt="2K", output_tokens=512, gpu="h100")
    report = _sizing(**kw)
    assert not [n for n in report.notes if "M/D/1" in n]
    plan = resolve_plan(InferenceInputs(**kw))
    target = LoadTarget(0.5, 0.05, 20)
    best = [c for c in sizing.size_for_target(plan, target, cheapest_per_type=True) if c.gpu.id == plan.gpu.id][0]
    prefill = best.steps[0]
    from gpuplan.core.serving import request_path as RP

    ceiling = rate_ceiling(0.5, prefill, RP.server_hold_seconds(plan.setup.runtime, plan.prompt))
    assert best.replica.rate < 0.9 * ceiling
    assert best.replica.in_flight == pytest.approx(best.steps[2], rel=1e-3) and best.replica.prefill_utilisation > 0.2
    # and on the same replica M/D/1 changes next to nothing: only its shorter mean wait (Pollaczek-Khinchine) takes
    # fewer sequences in flight (Little's law), so the KV cap is reached 4e-4 higher
    equal = max_rate(target, prefill, best.steps[1], plan.output, best.steps[2],
                     RP.server_hold_seconds(plan.setup.runtime, plan.prompt), queue=MD1)
    assert equal.rate == pytest.approx(best.replica.rate, rel=1e-3)


def _docs_rows():
    """The rows of docs/inference.md §5b's M/M/1 vs M/D/1 table: (args, M/M/1 text, M/D/1 text)."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[1] / "docs" / "inference.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `(llama[^`]+)` \| (\d+ × \(tp \d+\) = \d+ GPUs, (?:prefill )?[\d.]+%) \| "
                      r"(\d+ × \(tp \d+\) = \d+ GPUs, [\d.]+%) \|$", text, re.M)


def test_the_docs_table_is_what_the_sizing_says(run_cli):
    import re

    rows = _docs_rows()
    assert len(rows) == 4
    for args, mm1, md1 in rows:
        code, out, err = run_cli("infer", *args.split())
        assert code == 0, err
        (m_replicas, m_tp, m_gpus, m_share), (d_replicas, d_tp, d_gpus, d_share) = (
            re.match(r"(\d+) × \(tp (\d+)\) = (\d+) GPUs, (?:prefill )?([\d.]+)%", cell).groups() for cell in (mm1, md1))
        assert f"{m_replicas} x (tp {m_tp} on" in out and f"= {m_gpus} GPUs" in out
        assert f"prefill {m_share}% of its GPU time" in out
        note = out.split("M/D/1: Erlang")[1]
        assert f"{d_replicas} x (tp {d_tp} on" in note and f"= {d_gpus} GPUs would do" in note and f"at {d_share}%;" in note


def test_the_p99_rises_with_the_load_across_the_switch_to_the_asymptote():
    # max_rate bisects the rate on it: the p99 must not fall as rho rises, also where the exact sum hands over
    p99 = [Q.md1_wait_p99(1.0, rho) for rho in np.linspace(0.0101, 0.999, 4001)]
    assert all(b >= a for a, b in zip(p99, p99[1:]))
