"""The engines' own benchmark clients send a run's first prompt once before the clock starts (SGLang
bench_serving's warm-up, vLLM's 'initial single prompt test run' / endpoint ready check), and both servers keep
prompts in a prefix cache by default, so the first measured request computes only what the cache lacks
(core/serving/request_path.warm_first_request_cached; jobs/validation/inference._warm_first)."""

from __future__ import annotations

import statistics

import pytest
from helpers import serving_rows_by_id as _rows

from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.validation import inference as I


@pytest.mark.parametrize("release, prompt, cached", [
    ("sglang==0.5.6", 5158, 5157),   # radix cache: up to the prompt less one token (schedule_batch.py L784-790)
    ("sglang==0.5.6", 1, 0),         # nothing to match below one token
    ("vllm==0.9.1", 16000, 15984),   # V1: whole 16-token blocks below the last token: 15,999 // 16 x 16
    ("vllm==0.11.0", 233, 224),      # 232 // 16 x 16
    ("vllm==0.23", 256, 240),        # 255 // 16 x 16
    ("vllm==0.6.0", 5000, 0),        # V0: prefix caching off by default
    ("trtllm==0.12", 5000, 0),       # not an engine whose client is read here
])
def test_cached_tokens_of_the_warm_first_request(release, prompt, cached):
    assert RP.warm_first_request_cached(parse_release(release), prompt) == cached


def test_llama_a100_8000_row_scores_request_1_as_cached():
    """sglang056-llama3.1-70b-tp8-a100-8000-1000-c1: request 1 (5,158 tokens) was the warm-up's prompt, so its
    prefill is 1 new token after 5,157 cached: host-bound at the issue time, 80 layers x (11 + 2 all-reduces)
    x 41.957 us = 43.64 ms + 16.6 ms a forward outside the layers = 60.24 ms, + its 5,158 tokens tokenised by
    the server whatever the cache then holds (x 1.4 us = 7.22 ms, prompt_tokenize): 67.46 ms (rel 1e-3), where
    the cold prefill is GPU-bound at ~529 ms. The row's mean is the mean
    of the ten requests with request 1 so; the others are unchanged. Outside the scored mean, the measured
    median (318.02 ms, the run's print) sits by the warm prediction's median (367.7 ms), not the cold one's
    (479.2 ms; 362.9 / 472.9 before the tokenising, 346.3 / 456.3 before F was made serial with the GPU work,
    review w9 r1 M2): with request 1 at 67 ms the 5th / 6th of ten sorted are 2,896 / 3,981 tokens, else
    3,981 / 5,057."""
    e = _rows("online")["sglang056-llama3.1-70b-tp8-a100-8000-1000-c1"]
    assert I._warm_first(e)
    pairs = e["requests"]
    warm = I._served_request(e, *pairs[0], warm=True)[0]
    cold = I._served_request(e, *pairs[0])[0]
    assert warm.total == pytest.approx(80 * 13 * 41.957e-6 + 16.6e-3 + 5158 * 1.4e-6, rel=1e-3)
    assert cold.total > 8 * warm.total
    rest = [I._served_request(e, p, o)[0].total for p, o in pairs[1:]]
    ttft = I._online_cases(e)[0]
    assert ttft[3] == pytest.approx((warm.total + sum(rest)) / 10, rel=1e-12)
    assert statistics.median([warm.total, *rest]) == pytest.approx(367.7e-3, rel=2e-3)
    assert statistics.median([cold.total, *rest]) == pytest.approx(479.2e-3, rel=2e-3)


def test_only_rows_listing_their_requests_from_an_engine_client_are_warmed():
    rows = _rows("online")
    assert I._warm_first(rows["sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1"])
    # vllm#20469 lists its 30 equal requests (issue 38, 2026-12-06): benchmark_serving warmed request 1
    assert I._warm_first(rows["vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager"])
    # one request of mean lengths (which request came first is not known) or a client that sends no warm-up
    assert not I._warm_first(rows["gpustack-vllm0110-qwen3-8b-h100-sharegpt-c1"])
    assert not I._warm_first({**rows["sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1"], "client": "aiperf"})
