"""SGLang's concurrency-1 speed rows (issue 38: 'TTFT and TPOT on the published runs that state them',
per engine): the SGLang cookbook's bench_serving runs (sglang 0.5.6; Qwen3-235B-A22B on 8 x B200,
Llama-3.1-70B on 8 x A100, TP 8). Their random lengths come from bench_serving's default seed, so the
rows list each request's lengths; these tests redraw them and check them against the totals the runs
print, check the quoted means, and work the mean-of-requests scoring by hand.

Rows: catalog/reference/inference_measurements.yaml, section online.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import serving_cases_by_id as _cases
from helpers import serving_rows_by_id as _rows

from gpuplan.jobs.validation import inference as I

QUOTED = {  # id -> (input total, generated total, mean TTFT ms, mean TPOT ms) as the pages print them
    "sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1": (6101, 4210, 99.03, 10.12),
    "sglang056-qwen3-235b-a22b-tp8-b200-1000-8000-c1": (6101, 44452, 110.60, 10.23),
    "sglang056-qwen3-235b-a22b-tp8-b200-8000-1000-c1": (41941, 4210, 139.90, 10.31),
    # sgl-project/sgl-cookbook@eeda7bbf docs/Qwen/Qwen3.md: the base Qwen3-235B-A22B, same settings
    "sglang056-qwen3-235b-a22b-base-tp8-b200-1000-1000-c1": (6101, 4210, 96.27, 10.27),
    "sglang056-qwen3-235b-a22b-base-tp8-b200-1000-8000-c1": (6101, 44452, 91.23, 10.33),
    "sglang056-qwen3-235b-a22b-base-tp8-b200-8000-1000-c1": (41941, 4210, 159.87, 10.38),
    "sglang056-llama3.1-70b-tp8-a100-1000-1000-c1": (6101, 4220, 131.61, 18.63),
    "sglang056-llama3.1-70b-tp8-a100-8000-1000-c1": (41941, 4220, 395.25, 18.80),
}


def _seeded_lengths(input_len: int, output_len: int, n: int = 10) -> list[list[int]]:
    """bench_serving.sample_random_requests at --random-range-ratio 0.0 and --seed 1 (sglang
    bench_serving.py: np.random.seed(args.seed); randint(max(int(in x 0), 1), in + 1) prompts, then
    randint(int(out x 0), out + 1) outputs)."""
    np.random.seed(1)
    prompts = np.random.randint(1, input_len + 1, size=n)
    outputs = np.random.randint(0, output_len + 1, size=n)
    return [[int(p), int(o)] for p, o in zip(prompts, outputs)]


@pytest.mark.parametrize("row_id", list(QUOTED))
def test_requests_are_the_seeded_draws_and_sum_to_the_printed_totals(row_id):
    e = _rows("online")[row_id]
    assert e["requests"] == _seeded_lengths(e["prompt_tokens"], e["output_tokens"])
    inputs, generated = QUOTED[row_id][:2]
    assert sum(p for p, _ in e["requests"]) == inputs
    # the Llama runs print 10 more generated tokens than their seeded lengths (1 a request)
    assert sum(o for _, o in e["requests"]) == (generated - 10 if "llama" in row_id else generated)


@pytest.mark.parametrize("row_id", list(QUOTED))
def test_rows_state_what_the_criterion_asks_and_quote_the_means(row_id):
    e, cases = _rows("online")[row_id], _cases()
    for field in ("release", "model", "gpu", "tp", "quantization", "source", "requests"):
        assert e.get(field) not in (None, ""), field
    assert e["release"] == "sglang==0.5.6" and e["concurrency"] == 1 and e["tp"] == 8
    assert e["source"].startswith(("https://github.com/sgl-project/sglang/blob/",
                                   "https://github.com/sgl-project/sgl-cookbook/blob/"))
    ttft, tpot = cases[row_id + "-ttft"], cases[row_id + "-tpot"]
    assert ttft[2] == pytest.approx(QUOTED[row_id][2] / 1e3, abs=1e-9)
    assert tpot[2] == pytest.approx(QUOTED[row_id][3] / 1e3, abs=1e-9)
    a100 = e["gpu"].startswith("a100")
    assert ttft[1] == (I.KIND_ONLINE_TTFT_SGLANG_A100 if a100 else I.KIND_ONLINE_TTFT_SGLANG)
    assert tpot[1] == (I.KIND_ONLINE_TPOT_SGLANG_A100 if a100 else I.KIND_ONLINE_TPOT_SGLANG)
    assert "SGLang" in ttft[1] and "held out" in ttft[1]


def test_a_row_is_scored_on_the_mean_of_its_requests():
    """Scored by hand from the per-request steps: the mean TTFT is the mean of the 10 prefills and
    the mean TPOT the mean of the 10 decode steps (each at prompt + output / 2 cached tokens); a
    one-request row gives exactly that request's prefill and step."""
    row_id = "sglang056-qwen3-235b-a22b-tp8-b200-8000-1000-c1"
    e = _rows("online")[row_id]
    steps = [I._served_request(e, p, o) for p, o in e["requests"]]
    cases = _cases()
    assert cases[row_id + "-ttft"][3] == pytest.approx(sum(s[0].total for s in steps) / 10, rel=1e-12)
    assert cases[row_id + "-tpot"][3] == pytest.approx(sum(s[1].total for s in steps) / 10, rel=1e-12)
    # the prefills differ with the prompt (236 vs 7,936 tokens), so the mean is not one request's
    assert steps[4][0].total > 2 * steps[1][0].total
    single = {**e, "id": "one", "requests": [[7936, 749]]}
    ttft, tpot = I._online_cases(single)
    assert (ttft[3], tpot[3]) == (steps[4][0].total, steps[4][1].total)


def test_the_graph_floor_counts_the_kernels_of_the_layer():
    """A graph step's floor is vLLM's 50 us a dense layer of 11 kernels (kernels.VLLM_GRAPH_LAYER_S),
    scaled by the layer's kernels: Qwen3-235B-A22B's 94 MoE layers with per-head q / k norms run
    11 + 4 (router, top-k, align, sum beyond the MLP's three) + the q / k norms: in SGLang k_norm runs on a
    second stream beside q_norm under graph capture (qwen3_moe.py@0.5.3 L382-390), 1 on the critical path,
    16 kernels, 50 x 16 / 11 = 72.73 us a layer, 94 of them 6.836 ms a decode step; vLLM 0.19 runs the two
    serially (qwen3_moe.py L349 / L353), 17. Llama-3.1-70B's dense layers 11, 80 x 50 us = 4.0 ms."""
    from gpuplan.core.serving import kernels as KR
    from gpuplan.core.serving.releases import parse_release

    qwen = I._model_of({"model": "qwen3-235b-a22b"})
    llama = I._model_of({"model": "llama-3.1-70b"})
    assert KR.graph_kernels_per_layer(qwen, "sglang") == 16 and KR.graph_kernels_per_layer(qwen, "vllm") == 17
    assert KR.graph_kernels_per_layer(llama, "sglang") == 11
    sglang = parse_release("sglang==0.5.6")
    assert KR.graph_layer_seconds_of(sglang, qwen) == pytest.approx(50e-6 * 16 / 11, rel=1e-12)
    assert KR.graph_layer_seconds_of(parse_release("vllm==0.19"), qwen) == pytest.approx(50e-6 * 17 / 11, rel=1e-12)
    rows = _rows("online")
    e = rows["sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1"]
    _, decode = I._served_request(e, 38, 144)
    assert decode.kernel_floor_s == pytest.approx(94 * 50e-6 * 16 / 11, rel=1e-12)  # 6.836 ms
    _, decode = I._served_request(rows["sglang056-llama3.1-70b-tp8-a100-1000-1000-c1"], 38, 144)
    assert decode.kernel_floor_s == pytest.approx(80 * 50e-6, rel=1e-12)
