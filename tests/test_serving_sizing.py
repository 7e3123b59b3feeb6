"""Sizing a serving deployment from a target (core/serving/load.py, jobs/inference/sizing.py):
the queueing formulas by hand, the search meeting its targets, and the input rules."""

from __future__ import annotations

import math

import pytest

from gpuplan.core.serving.load import LoadTarget, max_rate, queue_wait, replica_at, replicas_for


def test_mm1_wait_by_hand():
    # prefill 0.1 s at 50% utilisation: mean wait rho t / (1 - rho) = 0.1 s; p99 t ln(100 rho) / (1 - rho)
    mean, p99 = queue_wait(0.1, 0.5)
    assert mean == pytest.approx(0.1)
    assert p99 == pytest.approx(0.1 * math.log(50) / 0.5)
    assert queue_wait(0.1, 0.005) == pytest.approx((0.1 * 0.005 / 0.995, 0.0))  # below 1%: no p99 wait


def test_replica_steady_state_by_hand():
    # a constant 20 ms decode step: at 2 req/s with 0.1 s prompts (rho 0.2) and 100 output tokens,
    # TPOT = 0.02 / 0.8 = 25 ms, TTFT mean = 0.1 + 0.2 x 0.1 / 0.8 = 0.125 s,
    # in flight = 2 x (0.125 + 100 x 0.025) = 5.25 sequences (Little's law)
    load = replica_at(2.0, 0.1, lambda batch: 0.02, 100)
    assert load.tpot == pytest.approx(0.025)
    assert load.ttft_mean == pytest.approx(0.125)
    assert load.in_flight == pytest.approx(5.25)
    assert load.ttft_p99 == pytest.approx(0.1 + 0.1 * math.log(20) / 0.8)
    assert replica_at(10.0, 0.1, lambda batch: 0.02, 100) is None  # prompts alone fill the GPU


def test_max_rate_is_the_edge_of_the_target():
    target = LoadTarget(ttft_p99=0.5, tpot=0.05, requests_per_s=30)
    decode = lambda batch: 0.02 + 0.0001 * batch  # noqa: E731 - a step that grows with the batch
    best = max_rate(target, 0.1, decode, 200, max_sequences=10_000)
    assert best.meets(target)
    # a little faster and one target breaks
    worse = replica_at(best.rate * 1.01, 0.1, decode, 200)
    assert worse is None or not worse.meets(target)
    assert replicas_for(target, best) == math.ceil(30 / best.rate)


def test_kv_capacity_caps_the_rate():
    target = LoadTarget(ttft_p99=10, tpot=1, requests_per_s=1)
    capped = max_rate(target, 0.01, lambda batch: 0.02, 500, max_sequences=8)
    assert capped.in_flight <= 8 and capped.in_flight == pytest.approx(8, rel=1e-3)


def test_sizing_from_the_cli_meets_its_targets():
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    report = estimate_inference(InferenceInputs(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms",
                                                prompt="2K", output_tokens=512))
    assert report.value("sized_ttft_p99") <= 0.5 and report.value("sized_tpot") <= 0.05
    config = report.value("sized_config")
    rate = report.value("sized_rate_per_replica")
    assert config["replicas"] == math.ceil(20 / rate)
    table = next(t for t in report.tables if t.title.startswith("Configurations meeting"))
    costs = [float(row[-1].strip("$").replace(",", "")) for row in table.rows if row[-1] != "n/a"]
    assert costs == sorted(costs)  # cheapest first, the first is the one chosen
    per_million = report.value("sized_cost_per_million_tokens")
    assert per_million == pytest.approx(report.value("sized_cost_per_hour") / (20 * (2048 + 512) * 3600) * 1e6)


@pytest.mark.parametrize("args, field", [
    (["--ttft-p99", "500ms"], "rps"),
    (["--rps", "5", "--prompt", "2K", "--context", "8K"], "prompt"),
    (["--rps", "5", "--tpot", "50"], "tpot"),
    (["--rps", "-3"], "rps"),
])
def test_bad_targets_are_one_line(args, field, capsys):
    from gpuplan.cli import main

    assert main(["infer", "llama-3.1-8b", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0]


def test_sglang_memory_fraction_by_hand():
    from gpuplan.core.serving.engines import sglang_mem_fraction_static

    # H100 (81,559 MiB, < 90 GB tier: chunked prefill 8192, CUDA-graph max batch 256 at tp 1):
    # reserve 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024 = 13,440 MiB -> (81,559 - 13,440) / 81,559 = 0.835
    assert sglang_mem_fraction_static(81559 * 2**20, tp=1) == 0.835
    # tp 8: graph max batch 512, + 8/8 GiB: 512 + 12,288 + 1,024 + 1,024 = 14,848 MiB -> 0.818
    assert sglang_mem_fraction_static(81559 * 2**20, tp=8) == round((81559 - 14848) / 81559, 3)
    # RTX 4090 (24,564 MiB, < 35 GB: 2048 and 24): 512 + 3072 + 48 + 128 = 3,760 -> 0.847 (no 10 GiB floor)
    assert sglang_mem_fraction_static(24564 * 2**20, tp=1) == round((24564 - 3760) / 24564, 3)


def test_sglang_kv_pool_is_the_fraction_minus_weights():
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    report = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="sglang", search=False))
    weights = report.value("weights_per_gpu")
    # SGLang's "total" is the memory free once the CUDA context exists: 85,520,809,984 B (H100 as
    # the device reports it) - 0.5 GiB the driver keeps - 0.35 GiB non-torch memory; the pool is
    # 0.835 of that, less the weights
    total = 85_520_809_984 - 0.5 * 2**30 - 0.35 * 2**30
    assert report.value("kv_budget") == pytest.approx(0.835 * total - weights)


def test_bare_pp_means_one_gpu_per_stage():
    """`infer --pp 2` without --gpus or --tp: tp 1 on two GPUs (found by the hostile-input fuzzer:
    it divided by a tp of 0)."""
    from gpuplan.jobs.inference.schema import InferenceInputs

    inputs = InferenceInputs(model="llama-3.1-8b", pp=2)
    assert (inputs.tp_degree, inputs.pp_degree) == (1, 2)


def test_trtllm_kv_is_the_free_fraction_of_what_is_left():
    """TensorRT-LLM: KV = 0.9 x (visible - weights - the profiled context batch of max_num_tokens
    8192 - CUDA context): 1.0's PyTorch backend (_util.py KvCacheCreator._cal_max_memory); before
    it the TensorRT engine's runtime buffers and decoder state (kvCacheManager.cpp
    calculateFreeMemBytes; 43.29 + 180.30 MB in its memory guide) come off too."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    for engine, buffers in (("trtllm", 0.0), ("trtllm==0.9", (43.29 + 180.30) * 2**20)):
        report = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine=engine, search=False))
        weights = report.value("weights_per_gpu")
        visible = 85_520_809_984 - 0.5 * 2**30
        context = 8192 * (3 * 14336 + 3 * 4096) * 2  # activation peak of an 8,192-token forward, bf16
        free = visible - weights - context - 0.35 * 2**30 - buffers
        assert report.value("kv_budget") == pytest.approx(0.9 * free, rel=1e-9), engine
        assert report.value("engine_headroom") == pytest.approx(0.1 * free, rel=1e-9), engine
    # TensorRT-LLM's own memory guide (docs/source/reference/memory.md): 79.10 GiB total, 70.48 GiB
    # available -> 'Allocated 63.44 GiB for max tokens in paged KV cache' = 0.9 x 70.48
    from gpuplan.core.serving.engines import TRTLLM_FREE_FRACTION

    assert TRTLLM_FREE_FRACTION * 70.48 == pytest.approx(63.44, abs=0.01)  # the log rounds both to 0.01 GiB


def test_engine_settings_belong_to_their_engine(capsys):
    from gpuplan.cli import main

    assert main(["infer", "llama-3.1-8b", "--mem-fraction-static", "0.8"]) == 2
    assert "--engine sglang" in capsys.readouterr().err
    assert main(["infer", "llama-3.1-8b", "--free-gpu-memory-fraction", "0.8"]) == 2
    assert "--engine trtllm" in capsys.readouterr().err


def test_a_gpu_asked_is_the_answer_and_the_cheapest_elsewhere_is_named():
    """`--gpu h100 --rps 5` answered 2 x tp 2 on B200 as if the GPU had not been asked: the answer is
    now the cheapest H100 configuration that meets the target, with the cheapest on any type beside
    it; without --gpu the cheapest on any type is the answer, as before."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    target = dict(model="llama-3.1-70b", rps=5, ttft_p99="2s", tpot="50ms")
    asked = estimate_inference(InferenceInputs(gpu="h100", **target))
    anywhere = estimate_inference(InferenceInputs(**target))
    assert asked.value("sized_config")["gpu"] == "h100-sxm"
    cheapest = anywhere.value("sized_config")
    assert cheapest["gpu"] != "h100-sxm"
    assert anywhere.value("sized_cost_per_hour") < asked.value("sized_cost_per_hour")
    other = next(line for s in asked.sections for line in s.lines if line.key == "sized_config_any_gpu")
    assert other.text.startswith(f"{cheapest['replicas']} x (tp {cheapest['tp']} on ")
    assert not any(line.key == "sized_config_any_gpu" for s in anywhere.sections for line in s.lines)


def _line(report, key):
    return next((line for s in report.sections for line in s.lines if line.key == key), None)


def test_disaggregated_pools_are_on_the_gpu_asked_with_the_cheapest_elsewhere_beside():
    """`--gpu h100 --disaggregate` answered B300 pools under an H100 colocated answer: the pools are
    now on H100 (3 x tp 4 prefill + 1 x tp 4 decode = 16 GPUs at the H100's $/GPU-h, $63.84/h by
    hand from the colocated $47.88/h for 12 GPUs), the cheapest on any type beside them."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    target = dict(model="llama-3.1-70b", rps=5, ttft_p99="2s", tpot="50ms", disaggregate=True)
    asked = estimate_inference(InferenceInputs(gpu="h100", **target))
    anywhere = estimate_inference(InferenceInputs(**target))
    prefill, decode = asked.value("disagg_prefill"), asked.value("disagg_decode")
    assert prefill["gpu"] == decode["gpu"] == "h100-sxm"
    gpus = prefill["instances"] * prefill["tp"] + decode["instances"] * decode["tp"]
    per_gpu = asked.value("sized_cost_per_hour") / asked.value("sized_config")["replicas"] / asked.value(
        "sized_config")["tp"]
    assert asked.value("disagg_cost_per_hour") == pytest.approx(gpus * per_gpu, rel=1e-9)
    cheapest = anywhere.value("disagg_prefill"), anywhere.value("disagg_decode")
    assert cheapest[0]["gpu"] != "h100-sxm"
    assert anywhere.value("disagg_cost_per_hour") < asked.value("disagg_cost_per_hour")
    beside = _line(asked, "disagg_any_gpu").text
    cheap_gpus = sum(p["instances"] * p["tp"] for p in cheapest)
    assert f"= {cheap_gpus} GPUs, ${anywhere.value('disagg_cost_per_hour'):,.2f}/h" in beside
    assert _line(anywhere, "disagg_any_gpu") is None and _line(asked, "disagg_other_gpu") is None


def test_none_on_the_gpu_asked_is_said_in_every_language():
    """No L4 configuration serves Llama 3.1 70B at 50 ms TPOT (colocated or disaggregated): the answer
    is on another type under its own keys, so the Chinese label (translated by key) says so too."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs
    from gpuplan.report.i18n import translate_report

    report = estimate_inference(InferenceInputs(model="llama-3.1-70b", rps=5, ttft_p99="2s", tpot="50ms",
                                                gpu="l4", disaggregate=True))
    assert _line(report, "sized_config") is None
    other = _line(report, "sized_config_other_gpu")
    assert other.label.startswith("none on l4") and other.value["gpu"] != "l4"
    assert _line(report, "disagg_other_gpu").label == "none on l4 meets the target"
    assert report.value("disagg_prefill")["gpu"] != "l4"
    zh = translate_report(report, "zh")
    assert "达不到" in _line(zh, "sized_config_other_gpu").label
    assert "达不到" in _line(zh, "disagg_other_gpu").label
    on_asked = translate_report(estimate_inference(InferenceInputs(model="llama-3.1-70b", rps=5, ttft_p99="2s",
                                                                   tpot="50ms", gpu="h100")), "zh")
    assert "达不到" not in _line(on_asked, "sized_config").label
