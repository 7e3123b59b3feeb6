"""Speculative decoding, prefix caching and disaggregated prefill / decode: numbers worked out
by hand from the formulas' sources (core/serving/speculative.py, core/serving/load.py)."""

from __future__ import annotations

import math

import pytest

from gpuplan.cli import main

from gpuplan.core.serving.load import decode_pool_rate, prefill_pool_rate, queue_wait
from gpuplan.core.serving.speculative import Speculation
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs

GiB = 2**30


def _report(**kw):
    return estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", search=False, **kw))


def test_mean_accepted_length_is_leviathan_eq1():
    # alpha 0.5, k 3: (1 - 0.5^4) / (1 - 0.5) = 0.9375 / 0.5 = 1.875; alpha 1: every token, k + 1
    assert Speculation("ngram", 3, 0.5, "").mean_accepted_length == pytest.approx(1.875)
    assert Speculation("ngram", 4, 1.0, "").mean_accepted_length == 5.0
    # vllm#24243 logs acceptance 0.58 at the first position and a mean length of 2.47 at k = 5:
    # the geometric model gives (1 - 0.58^6) / 0.42 = 2.29, 7% under the log (later positions
    # decay slower than geometric there): on the safe side
    length = Speculation("eagle3", 5, 0.58, "").mean_accepted_length
    assert length == pytest.approx(2.29, abs=0.005) and 2.47 * 0.92 < length < 2.47


def test_ngram_speculation_divides_a_memory_bound_step():
    """Batch 1 on an H100 is memory-bound: scoring 4 positions reads the same weights and KV, so
    the verify step costs one plain step plus three more tokens' elementwise traffic (32 layers x
    (8 x 4,096 + 2 x (4,096 + 1,024) + 3 x 14,336) x 2 B each at 0.85 of HBM bandwidth) and the
    exposed 0.75 of three more tokens' GEMM math (2 x 7.5e9 FLOPs a token, LM head included, at 0.80
    of the bf16 peak: 0.75 x 3 x 15.0e9 / 791.5e12 = 42.7 us; a step of few tokens does not hide that share
    behind the weight stream: setup.Efficiency.ridge_exposed),
    and TPOT = verify / 1.875 (no draft model, no draft time)."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.serving.roofline import gemm_flops_per_token

    plain = _report().value("tpot")
    spec = _report(speculative="ngram", spec_tokens=3, spec_acceptance=0.5).value("tpot")
    h100 = load_accelerator("h100")
    elementwise = 32 * (8 * 4096 + 2 * (4096 + 1024) + 3 * 14336) * 2 / (h100.memory_bandwidth * 0.85)
    math = 0.75 * 3 * gemm_flops_per_token(load_model("llama-3.1-8b")) / (h100.peak("bf16") * 0.80)
    assert 3 * elementwise == pytest.approx(5.80e-6, rel=0.01) and math == pytest.approx(42.7e-6, rel=0.01)
    assert spec * 1.875 == pytest.approx(plain + 3 * elementwise + math, rel=1e-6)


def test_eagle_head_memory_is_one_llama_layer():
    # one Llama-3.1-8B layer: q,o 4096x4096 each, k,v 4096x1024 each, MLP 3 x 4096 x 14336, two norms
    # and the head's final norm, all bf16; the embedding and LM head are the target's (EAGLE shares them)
    layer = (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 3 * 4096) * 2
    plain, eagle = _report(), _report(speculative="eagle")
    assert eagle.value("weights") - plain.value("weights") == pytest.approx(layer, rel=1e-9)
    # its KV cache takes 1 layer's share of 33 (32 target layers + 1): budget x 32/33 for the target
    assert eagle.value("kv_budget") == pytest.approx((plain.value("kv_budget") - layer) * 32 / 33, rel=1e-9)


def test_draft_model_needs_the_same_tokenizer(capsys):
    assert main(["infer", "llama-3.1-8b", "--speculative", "draft", "--draft-model", "qwen3-0.6b",
                 "--no-search"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "draft_model" in err[0] and "tokenizer" in err[0]
    assert main(["infer", "llama-3.1-8b", "--speculative", "draft", "--no-search"]) == 2
    assert "--draft-model" in capsys.readouterr().err


def test_prefix_hit_halves_the_linear_prefill_and_shares_the_prefix():
    base = _report(prompt=3840, output_tokens=256)
    hit = _report(prompt=3840, output_tokens=256, prefix_hit=0.5)
    # compute-bound prefill: FLOPs(3840) - FLOPs(1920) + one LM head; the matmul part halves and the
    # causal attention of the second half (keys 1921..3840) is 3/4 of the whole prompt's. The server's hold (its
    # 2 ms window + tokenising the whole 3,840-token text, 5.38 ms: prompt_tokenize, review w11 r3 M2) does not shrink
    # with a cache hit: it is taken off both before the ratio
    hold = base.value("ttft_server_hold")
    assert hold == hit.value("ttft_server_hold") == pytest.approx(0.002 + 3840 * 1.4e-6, rel=1e-9)
    assert hit.value("ttft") - hold < 0.55 * (base.value("ttft") - hold)
    assert hit.value("ttft") - hold > 0.45 * (base.value("ttft") - hold)
    # KV: 1,920 shared tokens stored once (120 blocks of 16 x 128 KiB), each sequence holds 2,176
    budget = base.value("kv_budget")
    per_token = 128 * 1024
    expected = math.floor((budget - 1920 * per_token) / (2176 * per_token))
    assert hit.value("max_sequences") == expected


def test_decode_pool_rate_by_hand():
    # step 10 ms + 1 ms per sequence; 30 ms target -> at most 20 sequences in flight; with 100
    # output tokens each Little's law gives 20 / (100 x 0.030 s) = 6.67 requests/s
    rate, in_flight, step = decode_pool_rate(0.030, lambda b: 0.010 + 0.001 * b, 100, 64)
    assert (in_flight, step) == (20.0, pytest.approx(0.030))
    assert rate == pytest.approx(20 / 3.0)
    assert decode_pool_rate(0.030, lambda b: 0.010 + 0.001 * b, 100, 8)[1] == 8.0  # KV capacity caps it
    assert decode_pool_rate(0.005, lambda b: 0.010, 100, 64) is None


def test_prefill_pool_rate_is_the_edge_of_the_ttft_target():
    # 100 ms prefill + 50 ms transfer within 500 ms p99: the rate whose M/M/1 p99 wait is 350 ms
    rate = prefill_pool_rate(0.5, 0.1, 0.05)
    assert 0.1 + queue_wait(0.1, rate * 0.1)[1] + 0.05 == pytest.approx(0.5, rel=1e-3)
    assert prefill_pool_rate(0.12, 0.1, 0.05) is None


def test_kv_transfer_by_hand():
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.sizing import kv_transfer_seconds

    plan = resolve_plan(InferenceInputs(model="llama-3.1-70b", prompt=2048, output_tokens=256, search=False))
    # 80 layers x 8 KV heads x 128 x (K and V) x 2 B = 327,680 B per token x 2,048 tokens, over 4 ConnectX-7
    # NICs at 400 Gb/s (50 GB/s) each
    assert kv_transfer_seconds(plan, load_accelerator("h100-sxm"), 4) == pytest.approx(
        327_680 * 2048 / (4 * 50e9), rel=1e-9)


def test_disaggregated_sizing_meets_both_targets(capsys):
    args = ["infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "40ms", "--prompt", "2K",
            "--output-tokens", "256", "--disaggregate", "--format", "json"]
    assert main(args) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    values = {line["key"]: line["value"] for section in data["sections"] for line in section["lines"]}
    assert values["disagg_ttft_p99"] <= 0.5 * (1 + 1e-6)
    assert values["disagg_tpot"] <= 0.040 * (1 + 1e-6)
    assert values["disagg_prefill"]["instances"] >= 1 and values["disagg_decode"]["instances"] >= 1
    assert main(["infer", "llama-3.1-8b", "--disaggregate"]) == 2  # needs the load and both targets


def test_mtp_needs_the_models_own_layer(capsys):
    assert main(["infer", "llama-3.1-8b", "--speculative", "mtp", "--no-search"]) == 2
    assert "num_nextn_predict_layers" in capsys.readouterr().err
    report = estimate_inference(InferenceInputs(model="deepseek-v3", gpu="h200", gpus=8, speculative="mtp",
                                                quantization="fp8", search=False))
    assert report.value("spec_accepted_length") == pytest.approx((1 - 0.85 ** 4) / 0.15)
