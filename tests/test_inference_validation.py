"""Inference accuracy cases: every reference entry cites its source; errors stay within stated bounds."""

from dataclasses import replace

import pytest

from gpuplan.jobs.validation.inference import (
    KIND_DECODE,
    KIND_KV,
    KIND_LATENCY,
    KIND_WEIGHTS,
    inference_excluded,
    inference_validation_cases,
    reference_measurements,
)

CASES = inference_validation_cases()


def test_every_entry_cites_a_source():
    data = reference_measurements()
    for section in ("kv_tokens", "weights", "decode", "latency", "throughput"):
        assert data[section], section
        for entry in data[section]:
            assert entry["source"].startswith("https://"), entry["id"]
    assert all(reason for _, reason in inference_excluded())
    from gpuplan.jobs.validation.serving_memory import memory_logs

    assert len(memory_logs()) >= 50
    assert all(e["source"].startswith("https://") and e["logged"] for e in memory_logs())


def test_case_tuples_have_the_agreed_shape():
    from gpuplan.jobs.validation.serving_memory import serving_memory_cases

    assert len(CASES) == len(serving_memory_cases()) + sum(len(reference_measurements()[s]) for s in (
        "kv_tokens", "weights", "decode", "latency", "speculative", "throughput"))
    for case in CASES:
        case_id, kind, measured, predicted, basis, note = case
        assert kind.startswith(("inference: ", "memory, serving (")) and measured > 0 and predicted > 0 and basis
        assert isinstance(note, str)


def _errors(kind):
    """Errors of one kind by case id."""
    return {c[0]: (c[3] - c[2]) / c[2] for c in CASES if c[1] == kind}


def test_speculative_speedup_is_optimistic_by_at_most_20_percent():
    """vLLM EAGLE at batch 1 (vllm#16035): the roofline speedup with the logged acceptance length
    is 1.58x / 1.49x against 1.36x / 1.29x measured: +16% (engine overhead per draft step and the
    rejection sampler are not modelled; docs/inference.md says so)."""
    from gpuplan.jobs.validation.inference import KIND_SPECULATIVE

    errors = _errors(KIND_SPECULATIVE)
    assert len(errors) == 2 and all(0.10 < e < 0.20 for e in errors.values()), errors


def test_kv_per_token_formula_matches_engine_logs_within_2_percent():
    # MHA/GQA (vLLM), MLA latent (DeepSeek-V2-Lite), fp8 KV with 32-token blocks (TensorRT-LLM)
    assert all(abs(e) < 0.02 for e in _errors(KIND_KV).values()), _errors(KIND_KV)


def test_weights_per_gpu_match_engine_logs():
    """Within 0.5% for TP 1 and TP 4; the Qwen2.5-14B TP 2 log (vLLM 0.7.1) shows 0.19 GiB more per
    rank than the parameters hold (its 32B sibling in serving_memory_logs.yaml the same amount, so
    not a weight term): within 1.5%."""
    errors = _errors(KIND_WEIGHTS)
    tp2 = {"vllm13061-r1-distill-qwen-14b-tp2"}
    assert all(abs(e) < 0.005 for k, e in errors.items() if k not in tp2), errors
    assert all(-0.015 < errors[k] < 0 for k in tp2), errors


def test_decode_speed_within_30_percent():
    errors = _errors(KIND_DECODE)
    assert len(errors) >= 4 and all(abs(e) < 0.3 for e in errors.values()), errors
    assert abs(sum(errors.values()) / len(errors)) < 0.1  # the default efficiency is not biased


def test_tp_batch_latency_within_30_percent():
    assert all(abs(e) < 0.3 for e in _errors(KIND_LATENCY).values()), _errors(KIND_LATENCY)


def test_static_batch_throughput_by_hand():
    """TensorRT-LLM v0.6.1, Llama-2-7B fp16 on one A100 80GB, batch 60, 128 in / 2048 out: 1,928
    output tokens/s published. Decode is memory-bound: weights 6.74e9 x 2 B =
    13.48 GB plus 60 sequences x 1,152 cached tokens (72 blocks of 16) x 524,288 B (2 x 32 layers x
    4096 x 2 B) = 36.24 GB per step, at 2.039 TB/s x 0.65 -> 37.5 ms; the prediction is
    60 x 2048 / (prefill + 2048 x decode)."""
    from gpuplan.jobs.validation.inference import KIND_THROUGHPUT

    (case,) = [c for c in CASES if c[0] == "trtllm061-llama2-7b-a100-fp16-b60-128-2048"]
    assert case[1] == KIND_THROUGHPUT and case[2] == 1928
    decode_s = (6.74e9 * 2 + 60 * 1152 * 524_288) / (2.039e12 * 0.65)  # 37.5 ms
    # prefill: 60 x 128 prompt tokens x 2 x 6.74e9 FLOPs at 312 TFLOP/s x 0.5 (attention over
    # 128-token prompts adds 0.5%, left out) = 0.66 s
    prefill_s = 60 * 128 * 2 * 6.74e9 / (312e12 * 0.5)
    assert case[3] == pytest.approx(60 * 2048 / (prefill_s + 2048 * decode_s), rel=0.02)


def test_static_batch_throughput_errors_as_documented():
    """Held out (docs/inference.md section 7): TensorRT-LLM's static-batch tables, v0.6.1 (21 rows)
    and v0.9.0 (48 rows). v0.6.1: the MHA Llama-2-7B rows within 30%; the GQA rows (Llama-2-70B, 8
    KV heads; Falcon-180B, 232 query heads on 8) within 40% with that release's masked MHA reading
    the cache once per query head. v0.9.0 ran Llama-2-70B with XQA (one load per KV head): within
    26% up to batch 96; the four batch-256/512 rows with 2048 output tokens are 32-80% too fast
    (XQA at large batch, not modelled)."""
    from gpuplan.jobs.validation.inference import KIND_THROUGHPUT

    errors = _errors(KIND_THROUGHPUT)
    assert len(errors) == 69
    old = {k: e for k, e in errors.items() if k.startswith("trtllm061")}
    assert len(old) == 21
    seven = {k: e for k, e in old.items() if "llama2-7b" in k}
    assert len(seven) == 8 and all(abs(e) < 0.31 for e in seven.values()), seven
    gqa = {k: e for k, e in old.items() if "llama2-70b" in k or "falcon-180b" in k}
    assert len(gqa) == 13 and all(abs(e) < 0.4 for e in gqa.values()), gqa
    xqa = {k: e for k, e in errors.items() if k.startswith("trtllm090-llama2-70b")}
    small = {k: e for k, e in xqa.items() if int(k.split("-b")[-1].split("-")[0]) <= 96}
    assert len(small) == 8 and all(abs(e) < 0.27 for e in small.values()), small
    large = {k: e for k, e in xqa.items() if k.endswith("-128-2048") and k not in small}
    assert len(large) == 4 and all(0.3 < e < 0.8 for e in large.values()), large
    assert sum(abs(e) for e in errors.values()) / len(errors) < 0.2


def test_reading_the_cache_once_per_kv_head_is_what_makes_old_gqa_decode_2_to_3x_too_fast():
    """The 13 v0.6.1 GQA rows with a grouped decode kernel (the modern default): the decode-heavy
    ones (2048 output tokens) come out 1.85x-3.2x too fast."""
    from gpuplan.jobs.validation import inference as V

    data = [e for e in V.reference_measurements()["throughput"] if e["id"].startswith("trtllm061")]
    long_gqa = [e for e in data if e["output_tokens"] == 2048 and ("70b" in e["id"] or "falcon" in e["id"])]
    assert len(long_gqa) == 6
    for e in long_gqa:
        grouped = V._throughput_case({**e, "decode_attention": "grouped"})
        assert grouped[3] / grouped[2] > 1.8, e["id"]
