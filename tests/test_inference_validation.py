"""Inference accuracy cases: every reference entry cites its source; errors stay within stated bounds."""

from statistics import mean

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


def test_no_reference_entry_states_a_field_twice():
    """PyYAML keeps the last of two equal keys without a word, so a row that states its decode kernel
    or source twice hides the first statement: refuse duplicate keys in the packaged reference."""
    from importlib import resources

    import yaml

    class Strict(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            keys = [self.construct_object(k, deep=deep) for k, _ in node.value]
            repeated = {k for k in keys if keys.count(k) > 1}
            assert not repeated, f"line {node.start_mark.line + 1}: {sorted(repeated)}"
            return super().construct_mapping(node, deep=deep)

    text = (resources.files("gpuplan.catalog") / "reference" / "inference_measurements.yaml").read_text("utf-8")
    assert yaml.load(text, Loader=Strict) == reference_measurements()


def test_case_tuples_have_the_agreed_shape():
    from gpuplan.jobs.validation.serving_memory import serving_memory_cases

    assert len(CASES) == len(serving_memory_cases()) + sum(len(reference_measurements()[s]) for s in (
        "kv_tokens", "weights", "decode", "latency", "speculative", "throughput", "ttft")) + 2 * len(
        reference_measurements()["online"])
    for case in CASES:
        case_id, kind, measured, predicted, basis, note = case
        assert kind.startswith(("inference: ", "memory, serving (")) and measured > 0 and predicted > 0 and basis
        assert isinstance(note, str)


def _errors(kind):
    """Errors of one kind by case id."""
    return {c[0]: (c[3] - c[2]) / c[2] for c in CASES if c[1] == kind}


def test_speculative_speedup_within_5_percent():
    """vLLM EAGLE at batch 1 (vllm#16035, V1 on 0.8.x, its EAGLE head launched eagerly before
    0.9.0's #17211): the roofline speedup with the logged acceptance length was 1.62x / 1.56x against
    1.36x / 1.29x measured: +18.9% / +21.4% (+14.5% / +13.7% before a CUDA-graph step paid
    Efficiency.graph_layer_s a layer, which made the plain step 7.51 ms, the PR's own vanilla run
    7.77 ms). With the runner's eager launches counted from vLLM 0.8.4's code (core/serving/spec_runner.py)
    at 8 us a launch: 1.53x / 1.45x, +12.3% / +12.7%. At the package's Python launch time (41.96 us,
    first_token_path, the constant vLLM V1's --enforce-eager steps use), the 29 launches nothing hides
    serial and the draft forwards max(issue, GPU) (no sync between them): 10.52 / 12.40 ms engine steps,
    1.349x / 1.260x, -1.1% / -2.2% (2026-12-06)."""
    from gpuplan.jobs.validation.inference import KIND_SPECULATIVE

    errors = _errors(KIND_SPECULATIVE)
    assert len(errors) == 2 and all(-0.05 < e < 0.0 for e in errors.values()), errors


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


def test_tp_batch_latency_within_20_percent():
    """vLLM 0.2.7's latency at batch 64 (held out): -27% without the synchronous host time per
    step, -15% with it (kernels.host_step_seconds, taken from vllm#6854 and #6913), -7.3% with the
    exposed share of its 64-token decode GEMMs' math (Efficiency.ridge_exposed), -0.3% with a CUDA-graph
    step's 50 us a layer (Efficiency.graph_layer_s, fitted on vllm PR 23197's 8B rows, not on this one):
    80 layers x 50 us = 4.0 ms on each of its 255 decode steps. The row the host time was checked on; PR
    2192's other three rows (added blind) are in test_serving_speed_rows.py."""
    error = _errors(KIND_LATENCY)["vllm2192-llama2-70b-tp4-a100-bs64"]
    assert -0.03 < error < 0.03, error


def test_static_batch_throughput_by_hand():
    """TensorRT-LLM v0.6.1, Llama-2-7B fp16 on one A100 80GB, batch 60, 128 in / 2048 out: 1,928
    output tokens/s published. A decode step runs, one after the other: the weights (all but the
    input embedding, 13.21 GB) at 0.85 of 2.039 TB/s, 7.6 ms, and 0.75 of their 60-token GEMM math
    (60 x 13.21e9 FLOPs at 0.8 of 312 TFLOP/s = 3.18 ms: one tile row hides only a quarter of it,
    Efficiency.ridge_exposed); 60 sequences x 1,152 cached tokens (72 blocks of 16) x 524,288 B of
    KV at 0.95, 18.7 ms; the elementwise traffic; and 32 layers x 80 us of host enqueue (a TensorRT
    engine without CUDA graphs). The prefill of 7,680 tokens exposes 0.75 x 128 / 7,680 of the
    weight stream. The prediction is 60 x 2048 / (prefill + 2048 x decode)."""
    from gpuplan.jobs.validation.inference import KIND_THROUGHPUT_FITTED

    (case,) = [c for c in CASES if c[0] == "trtllm061-llama2-7b-a100-fp16-b60-128-2048"]
    assert case[1] == KIND_THROUGHPUT_FITTED and case[2] == 1928
    bw, peak = 2.039e12, 312e12
    elementwise = 32 * (8 * 4096 + 2 * (4096 + 4096) + 3 * 11008) * 2  # per token, all layers
    weights = 2 * (6_738_415_616 - 32000 * 4096)
    flops_per_token = 2 * 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 2 * 32000 * 4096
    decode_math = 60 * flops_per_token / (peak * 0.8)
    assert decode_math == pytest.approx(3.18e-3, rel=0.01)
    decode_s = (weights / (bw * 0.85) + 0.75 * decode_math + 60 * 1152 * 524_288 / (bw * 0.95)
                + 60 * elementwise / (bw * 0.85) + 32 * 80e-6)
    # prefill: 60 x 128 tokens x 2 x 6.48e9 layer weights + the LM head per sequence at 0.8 of the
    # peak; causal attention over 128 tokens (0.4% of it) at 0.6
    gemm = 60 * 128 * 2 * 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 60 * 2 * 32000 * 4096
    attention = 60 * 128 * 2 * 32 * 256 * 129 / 2 * 32
    prefill_s = (gemm / (peak * 0.8) + 0.75 * 128 / 7680 * weights / (bw * 0.85) + attention / (peak * 0.6)
                 + 60 * 128 * elementwise / (bw * 0.85) + 32 * 80e-6)
    assert case[3] == pytest.approx(60 * 2048 / (prefill_s + 2048 * decode_s), rel=1e-6)
    assert case[3] / case[2] == pytest.approx(0.983, abs=0.005)


def test_static_batch_throughput_errors_as_documented():
    """docs/inference.md section 7: the kernel fractions and the L2 share of repeated KV reads were
    fitted on TensorRT-LLM v0.6.1's table (21 rows, mean 5.7%, max 12%); its v0.9.0 table (48 rows of
    Llama-2-7B / 70B and Falcon-180B on H200, H100, L40S FP8 and A100 FP16) and v0.5's four L40S
    rows are held out: mean 5.5%, max 25.1% (6.3% / 25.9% while an H200's per-query-head repeats
    ran at its own HBM rate, kernels.repeat_read_bandwidth; 7.8% before NCCL's PCIe slowdown, kernels.
    PCIE_NCCL_SLOWDOWN, fitted on v0.9.0's L40S first-token rows; 8.5% / 32.0% before 0.9's Falcon
    block was reduced once a layer). Llama-2-70B on PCIe L40S: +13-25% -> -1-+10%; Falcon-180B
    there +21 / +22% -> -1 / +3% at 128 output tokens, -13 / -9% -> -23 / -16% at 2,048 (its
    per-query-head decode reads, not the all-reduce). Falcon-180B's four H200 rows (29 query heads a
    KV head) +6 / +18 / +4 / +26% -> +3 / -2 / 0 / +9% with the repeats at the H100 die's rate. The
    other outlier: the batch-896 128 / 128 row on H200 (+25%, multi-head: no repeats). Mistral-7B's
    16 rows (no build command on the page) are their own kind. With TensorRT-LLM's masked MHA floored
    by the die's work per query head (kernels.MASKED_MHA_ELEMENTS_PER_S, fitted on the v0.6.1 rows):
    fitted 5.1% -> 4.4%, held out 5.5% -> 5.1% (max 25.1% -> 22.7%, the same H200 row), Mistral-7B
    17.8% -> 16.1%; with the L40S's rate fitted on its four Falcon-180B rows (10.3% -> 2.9%) the 48
    rows still held out are 4.6% (max 22.7%) and Mistral-7B 8.5% (max 19.2%; its L40S rows were
    -20 / -46 / -24 / -45%)."""
    from gpuplan.jobs.validation.inference import (KIND_THROUGHPUT, KIND_THROUGHPUT_FITTED,
                                                    KIND_THROUGHPUT_FITTED_DIE, KIND_THROUGHPUT_UNSTATED)

    fitted, held = _errors(KIND_THROUGHPUT_FITTED), _errors(KIND_THROUGHPUT)
    mistral = _errors(KIND_THROUGHPUT_UNSTATED)
    assert len(fitted) == 21 and len(held) == 48 and len(mistral) == 16
    assert mean(abs(e) for e in fitted.values()) < 0.05 and max(abs(e) for e in fitted.values()) < 0.13
    assert mean(abs(e) for e in held.values()) < 0.05 and max(abs(e) for e in held.values()) < 0.25
    assert mean(abs(e) for e in mistral.values()) < 0.09 and max(abs(e) for e in mistral.values()) < 0.20
    falcon_h200 = {k: e for k, e in held.items() if "falcon-180b-h200" in k}
    assert len(falcon_h200) == 4 and all(abs(e) < 0.10 for e in falcon_h200.values()), falcon_h200
    pcie = {k: e for k, e in held.items() if "70b-l40s" in k}
    assert len(pcie) == 4 and all(-0.02 < e < 0.12 for e in pcie.values()), pcie
    falcon_pcie = _errors(KIND_THROUGHPUT_FITTED_DIE)
    assert len(falcon_pcie) == 4 and all("falcon-180b-l40s" in k for k in falcon_pcie), falcon_pcie
    assert all(abs(e) < 0.07 for e in falcon_pcie.values()), falcon_pcie
    assert all(abs(e) < 0.09 for k, e in mistral.items() if "l40s" in k), mistral
    rest = {k: e for k, e in held.items() if not ("l40s" in k or "falcon" in k)}
    assert mean(abs(e) for e in rest.values()) < 0.06, rest


def test_time_to_first_token_as_documented():
    """First-token latencies at batch 1: TensorRT-LLM v0.5's 14 rows set the small-GEMM exposure
    (fitted: mean 9.8%, was 20.8% with the plain roofline, whose 128-token prompts came out 26-39%
    fast); v0.9.0's four L40S rows at tp 4 / 8 set NCCL's PCIe slowdown (1.44: they were -15 to
    -21%, now within 2.3%); its other 28 rows on four GPUs and five models are held out: mean 6.2%,
    max 26%."""
    from gpuplan.jobs.validation.inference import KIND_TTFT, KIND_TTFT_FITTED, KIND_TTFT_FITTED_PCIE

    fitted, held = _errors(KIND_TTFT_FITTED), _errors(KIND_TTFT)
    pcie = _errors(KIND_TTFT_FITTED_PCIE)
    assert len(fitted) == 14 and mean(abs(e) for e in fitted.values()) < 0.10
    assert len(pcie) == 4 and all("l40s" in k for k in pcie) and max(abs(e) for e in pcie.values()) < 0.03
    assert len(held) == 28 and mean(abs(e) for e in held.values()) < 0.07
    assert max(abs(e) for e in held.values()) < 0.27
    short = [e for k, e in held.items() if k.endswith("-128") and "falcon" not in k]
    assert len(short) == 11 and all(-0.20 < e < 0.15 for e in short), held


def test_served_ttft_and_tpot_at_concurrency_1_within_10_percent():
    """NIM 1.8.0's published AIPerf runs of Llama-3.3-70B fp8 on 2 x H100 at TP 2, concurrency 1
    (held out): TTFT 406.77 ms at 5,000 prompt tokens and 47.77 ms at 500, inter-token latency
    18.58 / 18.91 ms. Predicted as one prefill (-6.6%, -3.8%) and one batch-1 decode step (+9.8%,
    +6.8%: 12.4 ms of FP8 weights at 0.85 x 3.35 TB/s, 6.4 ms of per-layer launches of a TensorRT
    engine without CUDA graphs, 1.3 ms of all-reduces)."""
    from gpuplan.jobs.validation.inference import KIND_ONLINE_TPOT, KIND_ONLINE_TTFT

    ttft, tpot = _errors(KIND_ONLINE_TTFT), _errors(KIND_ONLINE_TPOT)
    assert len(ttft) == 2 and len(tpot) == 2
    assert all(-0.10 < e < 0 for e in ttft.values()), ttft
    assert all(0 < e < 0.10 for e in tpot.values()), tpot
    assert reference_measurements()["online"][0]["source"].startswith("https://docs.nvidia.com/nim/")


def test_reading_the_cache_once_per_kv_head_is_what_makes_old_gqa_decode_2_to_3x_too_fast():
    """The 6 v0.6.1 GQA rows with 2048 output tokens, run with a grouped decode kernel (the modern
    default) instead of that release's masked MHA: 1.35x-2.1x too fast."""
    from gpuplan.jobs.validation import inference as V

    data = [e for e in V.reference_measurements()["throughput"] if e["id"].startswith("trtllm061")]
    long_gqa = [e for e in data if e["output_tokens"] == 2048 and ("70b" in e["id"] or "falcon" in e["id"])]
    assert len(long_gqa) == 6
    for e in long_gqa:
        grouped = V._throughput_case({**e, "decode_attention": "grouped"})
        assert grouped[3] / grouped[2] > 1.3, e["id"]


def test_a_served_row_above_concurrency_1_is_refused():
    """A closed loop of C > 1 requests mixes prefills into decode steps: not a row the batch-1 scoring reads."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.validation.inference import _online_cases

    row = {**reference_measurements()["online"][0], "concurrency": 5}
    with pytest.raises(InputError):
        _online_cases(row)
