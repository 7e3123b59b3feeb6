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

from gpuplan.core.serving import outside_layers as OL
from gpuplan.core.serving.releases import parse_release
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


ISSUE = 94 * 20 * 41.957e-6 + 16.6e-3
"""Qwen3-235B-A22B's eager prefill host time on 8 x B200 (first_token_path): 78.88 ms of launches (20 a layer, the q
reshape's copy included: layer_kernels.qk_reshape_copies) + 16.6 ms a forward."""
ISSUE_ONE_TOKEN = 94 * 19 * 41.957e-6 + 16.6e-3
"""The same of a 1-token forward (a warm request's): its q reshape is a view, 19 launches a layer: 91.53 ms."""
TOKENISE = 1.4e-6
"""SGLang's TokenizerManager tokenising a prompt, seconds a token (prompt_tokenize): the server holds every request
that long before the scheduler sees it, whatever the prefix cache then finds."""


def test_a_row_is_scored_on_the_mean_of_its_requests():
    """The predicted means worked by hand (tolerance rel 2e-3: the elementwise traffic, ~1 us on the
    B200 and ~7 us on the A100, and the decode attention FLOPs are left out). A decode step at batch 1
    is GEMMs (the active weights a GPU streams at 0.85 of HBM) + 0.75 x their FLOPs (the exposed
    share) + the KV read at 0.95 of HBM + the graph floor + the TP all-reduces (8 us + 2 x 7/8 x
    message at 0.8 of half the NVLink bandwidth, 2 a layer); each request's step sits at prompt +
    output / 2 cached tokens, so the row's mean step is the step at the mean context.

    Qwen3-235B-A22B TP 8 on B200 (8 TB/s, 2.25 PFLOP/s, 1.8 TB/s NVLink), 8000/1000: a layer's active
    weights 4096 x (8192 + 2 x 512) + 8192 x 4096 + router 4096 x 128 + 8 x 3 x 4096 x 1536 = 222,822,400,
    x 94 + lm_head 151,936 x 4096 = 21,567,635,456 x 2 B / 8 = 5.3919 GB a GPU / 6.8e12 = 0.7929 ms;
    FLOPs 2 x 21.57e9 / 8 / 1.8e15 = 3.0 us x 0.75; KV 2 x 94 x 128 x 2 B = 48,128 B a token (one KV head
    a GPU) / 7.6e12 = 6.333 ns x mean context (4,194.1 + 421.0 / 2 = 4,404.6) = 27.9 us; floor 94 x 16 x
    4.2667 us = 6.4171 ms (graph_floor.GRAPH_KERNEL_S; 94 x 50 x 16 / 11 us = 6.8364 ms before w17 ME); all-reduces
    188 x (8 us + 14,336 B / 720 GB/s) = 1.5077 ms: 8.7479 ms (9.1672 before).
    Llama-3.1-70B TP 8 on A100 80 GB (2.039 TB/s, 312 TFLOP/s, 600 GB/s), 1000/1000: weights without
    the input embedding 69,503,033,344 x 2 B / 8 / (2.039e12 x 0.85) = 10.0255 ms; FLOPs 69.6 us x 0.75;
    KV 40,960 B a token / 1.937e12 x (610.1 + 421.0 / 2 = 820.6) = 17.4 us; floor 80 x 46.933 us = 3.7547 ms (4.0
    ms before w17 ME); all-reduces 160 x (8 us + 28,672 B / 240 GB/s) = 1.2991 ms: 15.1489 ms (15.3942 before).
    The TTFT mean of the B200 1000/1000 row: SGLang 0.5.6 issues its prefill eagerly and the host runs
    ahead of the GPU (core.serving.first_token_path), so each prefill takes the longer of the issue time,
    94 layers x (17 launches + the q reshape's copy + 2 all-reduces) x 41.957 us = 78.88 ms + 16.6 ms a forward outside
    the layers (PR 12160's 23.10 ms graphed forward less its 6.5 ms of GPU work) = 95.48 ms (91.53 for request 1, whose
    1-token forward reshapes q as a view), and its GPU work; the longest of the
    10 prompts (961 tokens) holds ~10 ms of GPU work, so every request is host-bound and the mean is the
    issue time, + the server's tokenising of the mean prompt (in the 8000/1000 row the 5,057-token prompt holds
    73.5 ms of GPU work, still host-bound; the 7,936-token one, worked below, holds 104.58 ms, over the issue).

    The 7,936-token prefill by hand (one rank of 8; B200 8 TB/s at 0.85, 2.25 PFLOP/s at 0.8 for GEMMs and
    0.6 for attention): GEMM FLOPs 2 x (20,945,305,600 x 7,936 + 151,936 x 4,096) / 8 / 1.8e15 = 23.087 ms
    over the weights' 8.620 ms, + 0.0121 (Efficiency.exposed_share at 7,936 tokens) x 8.620 = 23.191 ms;
    attention 94 layers x 2 x 64 heads x (128 + 128) x (7,937 / 2) x 7,936 = 9.7008e13 FLOPs / 8 / 1.35e15
    = 8.982 ms; elementwise 7,936 x 94 x (79,360 + 131,072) B / 6.8e12 = 23.085 ms (the second term SGLang's
    Triton MoE writing one 4,096-wide row per token and chosen expert and summing them, 2 x 8 x 4,096 x 2 B:
    moe_combine; 8.706 ms without it); all-reduces 2 x 94 of 7,936 x 4,096 x 2 B = 65,011,712 B (NCCL by
    size, kernels.tp_allreduce_seconds: 262.3 us each, bus 433.7 GB/s) = 49.318 ms: 104.576 ms. The run's warm-up sends its first prompt before the clock (request_path.warm_first_request_cached),
    so a row's request 1 finds its prompt cached: 1 new token, host-bound at the issue time."""
    cases = _cases()
    b200 = "sglang056-qwen3-235b-a22b-tp8-b200-8000-1000-c1"
    # + since wave 17 the step's work outside the layers (outside_layers): 20 kernels x 4.2667 us = 85.33 us of
    # floor (w17 ME), one more all-reduce (B200: 8 us + 1.75 x 8,192 B / 720 GB/s = 8.020 us; A100: 8.119 us) and
    # NCCL's logits all-gather (151,936 x 2 B over 8 B200s 11.74 us; 128,256 x 2 B over 8 A100s 13.36 us: worked in
    # test_the_logits_gathers_by_nccls_ring_ll): +105.09 / +106.81 us: 8.8530 / 15.2557 ms; on the B200 + the
    # 14.5 us of K/V projections each rank holds whole (worked below): 8.8675 ms
    assert cases[b200 + "-tpot"][3] == pytest.approx(8.8675e-3, rel=2e-3)
    assert cases["sglang056-llama3.1-70b-tp8-a100-1000-1000-c1-tpot"][3] == pytest.approx(15.2557e-3, rel=2e-3)
    # (9 x 95.48 + 91.53) / 10 = 95.085 ms + the tokenising of the mean prompt, 6,101 / 10 = 610.1 tokens x 1.4 us
    # = 0.854 ms: 95.94 ms
    mean_issue = (9 * ISSUE + ISSUE_ONE_TOKEN) / 10
    ttft_1000 = cases["sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1-ttft"][3]
    assert ttft_1000 == pytest.approx(mean_issue + 610.1 * TOKENISE, rel=1e-3)
    e = _rows("online")[b200]
    prefill, decode = I._served_request(e, 236, 129)
    # 0.7929 ms of weights and KV, + the K/V projections each rank holds whole where tp 8 > the 4 KV heads (vLLM /
    # SGLang QKVParallelLinear replicas, weights.kv_replica_bytes): 2 x 4,096 x 128 x 2 B a rank a layer, less its
    # 1/8 share of 2 x 4,096 x 512 x 2 B = 1,048,576 B, x 94 layers = 98,566,144 B / 6.8e12 = 14.5 us: 0.8074 ms
    assert decode.memory_s == pytest.approx(0.8074e-3, rel=1e-3)
    # 188 all-reduces (1.5077 ms) + the embedding's (8.020 us) and the logits all-gather (11.74 us) since wave 17
    assert decode.comm_s == pytest.approx(1.5077e-3 + 8.020e-6 + 11.74e-6, rel=1e-3)
    # 94 x 16 x 4.2667 us + 20 x 4.2667 us outside the layers (wave 17, review w17 ME)
    assert decode.kernel_floor_s == pytest.approx(6.4171e-3 + 0.08533e-3, rel=1e-4)
    # a 236-token prefill: the weights' stream (all experts: 234.47e9 x 2 B / 8 / 6.8e12 = 8.62 ms) is far
    # under the eager issue time, so the prefill is the issue time (host_s carries the excess over the GPU)
    assert prefill.memory_s == pytest.approx(8.62e-3, rel=2e-3)
    assert prefill.total == pytest.approx(ISSUE + 236 * TOKENISE, rel=1e-3) and prefill.host_s > 0.06
    # bench_serving's TPOT mean leaves out requests with output <= 1 (bench_serving.py@0.5.3 L1538-1539;
    # randint(0, ...) can draw 0 or 1): a row of [7936, 749] and [236, 1] scores [7936, 749]'s step alone
    both = {**e, "id": "two", "requests": [[7936, 749], [236, 1]]}
    assert I._online_cases(both)[1][3] == I._served_request(e, 7936, 749)[1].total
    # the 7,936-token prefill's GPU work (worked above), 104.58 ms, over the layers' 74.94 ms issue, which hides;
    # the 16.6 ms a forward outside the layers runs before them (F + max(I, G), review w9 r1 M2): 121.18 ms,
    # + 7,936 x 1.4 us = 11.11 ms of tokenising before the scheduler sees the request: 132.29 ms
    long = I._served_request(e, 7936, 749)[0]
    assert long.compute_s == pytest.approx(23.087e-3, rel=1e-3) and long.gemm_s == pytest.approx(23.191e-3, rel=1e-3)
    assert long.attention_s == pytest.approx(8.982e-3, rel=1e-3) and long.other_s == pytest.approx(23.085e-3, rel=1e-3)
    from gpuplan.core.serving import kernels as KR
    per_call = KR.tp_allreduce_seconds(65_011_712, 8, 1.8e12, 8e-6, fabric=I._gpu("b200"))
    # + the embedding's all-reduce of the same message and the last token's logits all-gather (outside_layers, wave 17)
    gather = OL.outside_layer_comm_seconds(parse_release("sglang==0.5.6"), I._model_of(e), 8, 0.0, 1, I._gpu("b200"))
    assert gather == pytest.approx(11.74e-6, rel=1e-3)  # worked in test_the_logits_gathers_by_nccls_ring_ll
    assert long.comm_s == pytest.approx(189 * per_call + gather, rel=1e-9) and per_call == pytest.approx(262.3e-6, rel=1e-3)
    gpu = 23.191e-3 + 8.982e-3 + 23.085e-3 + 49.318e-3 + 0.274e-3  # + 262.3 + 11.7 us outside the layers (wave 17)
    assert long.total - long.issue_exposed_s - 7936 * TOKENISE == pytest.approx(gpu, rel=1e-3)
    assert long.total == pytest.approx(gpu + 16.6e-3 + 7936 * TOKENISE, rel=1e-3)
    assert long.issue_exposed_s == pytest.approx(16.6e-3, abs=1e-9)
    # a one-request row gives that request's prefill as the warm-up left it (its prompt cached: 7,935 tokens,
    # 1 computed, host-bound at the 91.53 ms issue of a 1-token forward; the whole text still tokenised, 11.11 ms)
    # and its decode step (the mean of one)
    single = {**e, "id": "one", "requests": [[7936, 749]]}
    ttft, tpot = I._online_cases(single)
    warm = I._served_request(e, 7936, 749, warm=True)
    assert (ttft[3], tpot[3]) == tuple(s.total for s in warm)
    assert warm[0].total == pytest.approx(ISSUE_ONE_TOKEN + 7936 * TOKENISE, rel=1e-3) and warm[0].compute_s < 1e-4


def test_the_graph_floor_counts_the_kernels_of_the_layer():
    """A graph step's floor is 4.2667 us a kernel (graph_floor.GRAPH_KERNEL_S: the vLLM fit's 1.6 ms over 32 x 11
    layer kernels + 23 outside them), times the layer's kernels: Qwen3-235B-A22B's 94 MoE layers with per-head q / k norms run
    11 + 4 (router, top-k, align, sum beyond the MLP's three) + the q / k norms: in SGLang k_norm runs on a
    second stream beside q_norm under graph capture (qwen3_moe.py@0.5.3 L382-390), 1 on the critical path,
    16 kernels, 16 x 4.2667 = 68.27 us a layer, 94 of them 6.417 ms a decode step; vLLM 0.19 runs the two
    serially (qwen3_moe.py L349 / L353), 17. Llama-3.1-70B's dense layers 11, 80 x 46.93 us = 3.755 ms."""
    from gpuplan.core.serving import graph_floor as GF
    from gpuplan.core.serving.releases import parse_release

    qwen = I._model_of({"model": "qwen3-235b-a22b"})
    llama = I._model_of({"model": "llama-3.1-70b"})
    assert GF.graph_kernels_per_layer(qwen, "sglang") == 16 and GF.graph_kernels_per_layer(qwen, "vllm") == 17
    assert GF.graph_kernels_per_layer(llama, "sglang") == 11
    sglang = parse_release("sglang==0.5.6")
    kernel = 32 * 50e-6 / (32 * 11 + 23)
    assert GF.graph_layer_seconds_of(sglang, qwen) == pytest.approx(kernel * 16, rel=1e-12)
    assert GF.graph_layer_seconds_of(parse_release("vllm==0.19"), qwen) == pytest.approx(kernel * 17, rel=1e-12)
    rows = _rows("online")
    e = rows["sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1"]
    _, decode = I._served_request(e, 38, 144)
    # + 20 kernels outside the layers at TP 8 (outside_layers, wave 17, review w17 ME): 6.502 ms
    assert decode.kernel_floor_s == pytest.approx(94 * 16 * kernel + 20 * kernel, rel=1e-12)
    _, decode = I._served_request(rows["sglang056-llama3.1-70b-tp8-a100-1000-1000-c1"], 38, 144)
    assert decode.kernel_floor_s == pytest.approx(80 * 11 * kernel + 20 * kernel, rel=1e-12)


def test_the_logits_gathers_by_nccls_ring_ll():
    """The last token's logits all-gather (outside_layers) worked from the algorithm NCCL's tuner picks
    (collectives.chosen: ring, LL at 256-304 KB on one NVLink domain of 8) and the ring's formula (collectives._ring):
    BASE_US ring LL 6.6 us + 7 steps x 0.6 us (HW_US nvlink ring LL) = 10.8 us, + (7/8 x the bytes) over the LL bus,
    min(NVLink x LL_FACTOR 0.5, LL_MAX_BUS_GBPS): B200 min(680.4 x 0.5, 282) = 282 GB/s, 7/8 x 303,872 B -> 0.943 us:
    11.743 us; A100 min(240 x 0.5, 87.7) = 87.7 GB/s, 7/8 x 256,512 B -> 2.559 us: 13.359 us."""
    from gpuplan.core.comm.collectives import chosen
    from gpuplan.core.comm.topology import cluster_for

    release = parse_release("sglang==0.5.6")
    for gpu, model, vocab, bus in (("b200", "qwen3-235b-a22b", 151_936, 282e9), ("a100", "llama-3.1-70b", 128_256, 87.7e9)):
        part = I._gpu(gpu)
        algorithm, protocol, _, _ = chosen("all_gather", vocab * 2.0, cluster_for(part).group(8))
        assert (algorithm, protocol) == ("ring", "LL")
        by_hand = 10.8e-6 + 7 / 8 * vocab * 2 / bus
        got = OL.outside_layer_comm_seconds(release, I._model_of({"model": model}), 8, 0.0, 1, part)
        assert got == pytest.approx(by_hand, rel=1e-9)
    assert 10.8e-6 + 7 / 8 * 151_936 * 2 / 282e9 == pytest.approx(11.743e-6, rel=1e-4)
    assert 10.8e-6 + 7 / 8 * 128_256 * 2 / 87.7e9 == pytest.approx(13.359e-6, rel=1e-4)
