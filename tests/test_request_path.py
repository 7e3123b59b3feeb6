"""vLLM V1 chunked prefill of one request (core/serving/request_path.py): the scheduler's chunks,
the server's token budget, and the chunks' step times added up. Chunk sizes are hand-worked from
scheduler.py@v0.9.1:396-406 (min(remaining, budget) a step) and arg_utils.py@v0.9.1:1554-1566;
step-time identities hold to 1e-9 relative."""

import pytest

from gpuplan.core.serving import request_path as RP
from gpuplan.jobs.validation import inference as VI

ROW = {"id": "t", "model": "qwen3-14b", "gpu": "a100-pcie-80gb", "release": "vllm==0.9.1", "quantization": "int4",
       "group_size": 128, "zero_point": True, "kv_dtype": "bf16", "tp": 1, "concurrency": 1, "enforce_eager": True,
       "max_num_seqs": 30}


def test_sixteen_thousand_tokens_at_2048_are_eight_steps():
    # 7 x 2,048 = 14,336, then the last 1,664; each chunk's prefix is what the steps before computed
    chunks = RP.prefill_chunks(16000, 0, 2048)
    assert [new for _, new in chunks] == [2048] * 7 + [1664]
    assert [prefix for prefix, _ in chunks] == [2048 * i for i in range(8)]


def test_cached_prefix_starts_the_chunks_and_a_full_hit_computes_one_token():
    assert RP.prefill_chunks(16000, 10000, 2048) == ((10000, 2048), (12048, 2048), (14096, 1904))
    assert RP.prefill_chunks(100, 100, 2048) == ((99, 1),)
    assert RP.prefill_chunks(2048, 0, 2048) == ((0, 2048),)
    with pytest.raises(ValueError, match="budget"):
        RP.prefill_chunks(10, 0, 0)


def _setup_gpu(gpu, release="vllm==0.9.1"):
    spec = VI._model_of({**ROW, "gpu": gpu})
    fmt = VI._format({**ROW, "gpu": gpu})
    return VI._setup_of({**ROW, "gpu": gpu, "release": release}, fmt), VI._gpu(gpu), spec


@pytest.mark.parametrize("gpu, budget", [("a100-pcie-80gb", 2048), ("h100-sxm", 8192), ("l4", 2048)])
def test_server_budget_per_gpu(gpu, budget):
    # vllm serve: 8,192 on >= 70 GiB GPUs that are not A100s, else 2,048 (arg_utils.py@v0.9.1:1554-1566)
    setup, part, _ = _setup_gpu(gpu)
    assert RP.chunk_budget(setup, part) == budget


def test_no_split_outside_vllm_v1_or_for_a_static_batch():
    setup, part, _ = _setup_gpu("a100-pcie-80gb", "vllm==0.7.3")  # V0: chunking off below 32K contexts
    assert RP.chunk_budget(setup, part) is None
    # SGLang 0.5.3 on: its chunked_prefill_size default, 8,192 on an 80 GB part (tests/test_sglang_chunked_prefill)
    setup, part, _ = _setup_gpu("a100-pcie-80gb", "sglang==0.5.3")
    assert RP.chunk_budget(setup, part) == 8192
    setup, part, _ = _setup_gpu("a100-pcie-80gb", "sglang==0.4.9")  # before 0.5.3: 8,192 above 25,000 MiB
    assert RP.chunk_budget(setup, part) == 8192
    setup, part, _ = _setup_gpu("a100-pcie-80gb")
    assert RP.chunk_budget(setup, part, batch=4) is None
    assert RP.chunk_budget(setup, None) is None


def test_chunks_keep_the_work_and_add_a_step_each():
    """The 16,000-token AWQ prompt on an A100 PCIe (vllm20469's setup): the 8 chunks do the causal
    attention of the whole prompt (each chunk: causal(prefix + chunk) - causal(prefix); the sum
    telescopes), the same GEMM FLOPs, and 8 steps' host time (eager launches + the scheduler)."""
    from gpuplan.core.serving import roofline as R
    setup, part, spec = _setup_gpu("a100-pcie-80gb")
    groups = VI.W.param_groups(spec)
    common = dict(tp=1, pp=1, **R.gpu_keywords(part, setup))
    chunked = R.prefill_step(spec, groups, setup, prompt=16000, **common)
    whole = R.prefill_step(spec, groups, setup, prompt=16000, fabric=None,
                           **{k: v for k, v in common.items() if k != "fabric"})  # no GPU given: one forward
    one = R.prefill_step(spec, groups, setup, prompt=2048, **common)
    assert chunked.attention_s == pytest.approx(whole.attention_s, rel=1e-9)
    # the GEMM FLOPs of the prompt once, plus the LM head of each partial chunk's last token (V1 computes
    # logits for every scheduled request and drops a partial prefill's sample): 7 more heads, each the
    # part of a forward's GEMM time that does not grow with its tokens, 2 x t(2,048) - t(4,096)
    nogpu = {k: v for k, v in common.items() if k != "fabric"}
    head = (2 * R.prefill_step(spec, groups, setup, prompt=2048, **nogpu).compute_s
            - R.prefill_step(spec, groups, setup, prompt=4096, **nogpu).compute_s)
    lm = 2 * spec.vocab_size * spec.hidden_size  # FLOPs of the LM head for one token
    # the GPU-less forwards (whole, head) run the 16-bit GEMM fraction; with the A100 PCIe named, vLLM 0.9.1's
    # int4 linears run Marlin at marlin_ratio x that fraction (core/serving/marlin.py, wave 12): the same FLOPs
    # take 1 / 0.567 as long on the GPU's forwards (one, chunked)
    from gpuplan.core.serving import marlin as MG
    release, fmt = setup.runtime.release, setup.fmt.name
    assert MG.runs_marlin(release, part, fmt)
    assert not MG.runs_marlin(release, None, fmt)
    marlin = MG.marlin_ratio(part)
    assert head == pytest.approx(lm / (2048 * (R.gemm_flops_per_token(spec) - lm) + lm) * one.compute_s * marlin,
                                 rel=1e-6)
    assert chunked.compute_s == pytest.approx((whole.compute_s + 7 * head) / marlin, rel=1e-9)
    assert chunked.host_s == pytest.approx(8 * one.host_s, rel=1e-9)
    parts = [R.prefill_step(spec, groups, setup.__class__(**{**setup.__dict__, "prefix_hit": (p + 0.5) / (p + n) if p else 0.0}),
                            prompt=p + n, **common) for p, n in RP.prefill_chunks(16000, 0, 2048)]
    assert chunked.total == pytest.approx(sum(x.total for x in parts), rel=1e-9)
    assert chunked.gemm_s == pytest.approx(sum(x.gemm_s for x in parts), rel=1e-9)
    # the split costs 7 more steps' host time and weight reads, not more FLOPs: under 2% here (the whole prompt's
    # forward with its GEMMs at Marlin's rate, as the GPU's chunks run them)
    whole_marlin = whole.total + whole.compute_s * (1 / marlin - 1)
    assert 0 < chunked.total - whole_marlin < 0.02 * whole_marlin


def test_tokeniser_batch_window_from_0_10():
    """vLLM's OpenAI server holds a lone text prompt for AsyncMicrobatchTokenizer's whole 2 ms window
    (batch_wait_timeout_s = 0.002, utils/__init__.py@v0.10.0:521 ... async_utils.py@v0.23.0:36); 0.9
    tokenises at once; SGLang and TensorRT-LLM get nothing from this rule."""
    from gpuplan.core.serving.releases import parse_release
    assert RP.api_server_seconds(parse_release("vllm==0.9.1")) == 0.0
    assert RP.api_server_seconds(parse_release("vllm==0.10.0")) == 0.002
    assert RP.api_server_seconds(parse_release("vllm==0.11.0")) == 0.002
    assert RP.api_server_seconds(parse_release("vllm==0.23")) == 0.002
    assert RP.api_server_seconds(parse_release("sglang==0.5.6")) == 0.0


def test_served_request_adds_the_window_as_host_time():
    # the gpustack Qwen3-8B H100 row (vLLM 0.11.0, 233 tokens): the served prefill is the engine's + 2.000 ms window
    # + 233 x 1.4 us = 0.3262 ms of the API server's tokenising (async_utils.py@v0.23.0:116-132; review w11 r3 M2)
    row = {"id": "t", "model": "qwen3-8b", "gpu": "h100-sxm", "release": "vllm==0.11.0", "quantization": "bf16",
           "kv_dtype": "bf16", "tp": 1, "concurrency": 1}
    engine, _ = VI._static_batch({**row, "batch": 1, "prompt_tokens": 233, "output_tokens": 221})
    served, _ = VI._served_request(row, 233, 221)
    assert served.total - engine.total == pytest.approx(0.002 + 233 * 1.4e-6, rel=1e-9)
    assert served.host_s - engine.host_s == pytest.approx(0.002 + 233 * 1.4e-6, rel=1e-9)


def test_load_counts_the_window_in_ttft_not_in_gpu_time():
    """core/serving/load.replica_at: path_s is in the mean and p99 TTFT, not the utilisation. Hand-worked:
    prefill 20 ms at 10 requests/s is rho 0.2, M/M/1 mean wait 0.2 x 20 / 0.8 = 5 ms, p99 wait
    20 x ln(20) / 0.8 = 74.9 ms; TTFT mean 2 + 20 + 5 = 27 ms, p99 2 + 20 + 74.9 = 96.9 ms."""
    import math
    from gpuplan.core.serving.load import replica_at
    load = replica_at(10.0, 0.020, lambda b: 0.010, 100, path_s=0.002)
    assert load.prefill_utilisation == pytest.approx(0.2, rel=1e-12)
    assert load.ttft_mean == pytest.approx(0.027, rel=1e-9)
    assert load.ttft_p99 == pytest.approx(0.002 + 0.020 + 0.020 * math.log(20) / 0.8, rel=1e-9)
    assert load.ttft_p99 == pytest.approx(0.0969, abs=1e-4)
