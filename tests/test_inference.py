"""Serving formulas by hand: weights by format, KV cache (MHA/GQA/MQA/MLA/sliding/fp8/TP/PP),
runtime memory and capacity, the decode/prefill roofline, all-reduce, cost, and the article's 7B."""

import math

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import engines as E
from gpuplan.core.serving import memory as M
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.model.spec import count_parameters
from gpuplan.errors import InputError
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs

GiB = 2**30


def report(**kw):
    return estimate_inference(InferenceInputs(search=False, **kw))


# ----------------------------------------------------------------------------- the article
def test_article_7b_fp16_is_14_gb_plus_kv_and_wants_24_gb():
    r = report(params="7B")
    assert r.value("weights_total") == pytest.approx(14e9)  # 7e9 parameters x 2 bytes
    # generic 7B = Llama-2-7B shape (32 layers, 32 KV heads of 128): 2 x 32 x 32 x 128 x 2 B = 512 KiB/token
    assert r.value("kv_bytes_per_token") == 524_288
    assert r.value("kv_bytes_per_sequence") == 4096 * 524_288  # default context 4,096 tokens: 2 GiB
    assert r.value("recommended_gpu_memory_gb") == 24
    # (14 GB + 2.15 GB KV + activations + runtime) / 0.9 + 0.5 GiB is above 16 GB, below 24 GB
    assert 16e9 < r.value("gpu_memory_needed") < 24e9


def test_recommendation_only_counts_accelerators_that_run_the_format():
    # Gemma-2-9B int4 + fp8 KV needs ~10 GB: the 16 GB TPU v5e has no fp16 path, so 24 GB is the answer
    r = report(model="gemma-2-9b", gpu="l4", context=8192, batch=4, quantization="int4", kv_dtype="fp8")
    assert r.value("gpu_memory_needed") < 16e9
    assert r.value("recommended_gpu_memory_gb") == 24


# ----------------------------------------------------------------------------- weights by format
@pytest.mark.parametrize("name, group, zero, bits", [
    ("int4", 128, True, 4 + (16 + 4) / 128),  # GPTQ/AWQ: 4.15625 bits per weight
    ("int4", 32, False, 4 + 16 / 32),         # llama.cpp Q4_0 / MLC q4f16_1: 4.5
    ("int4", None, True, 4.0),                # per-channel: scales negligible
    ("int8", 128, True, 8.0), ("fp8", 128, True, 8.0), ("bf16", 128, True, 16.0), ("fp32", 128, True, 32.0),
])
def test_bits_per_weight(name, group, zero, bits):
    assert W.weight_format(name, group, zero).bits_per_weight == pytest.approx(bits)


def test_int4_keeps_embeddings_and_lm_head_in_16_bit():
    spec = load_model("llama-3.1-8b")
    c = count_parameters(spec)
    groups = W.param_groups(spec)
    fmt = W.weight_format("int4", 128)
    emb_head = c.embedding + c.lm_head  # 2 x 128,256 x 4,096
    layers = c.total - emb_head - c.norms
    expected = layers * 4.15625 / 8 + (emb_head + c.norms) * 2
    assert W.weight_bytes_total(groups, fmt) == pytest.approx(expected)
    assert W.weight_bytes_total(groups, W.FORMATS["bf16"]) == 2 * c.total


def test_weights_split_over_tp_and_pp():
    spec = load_model("llama-2-7b")
    groups, fmt = W.param_groups(spec), W.FORMATS["fp16"]
    total = W.weight_bytes_total(groups, fmt)
    emb = 32000 * 4096 * 2  # untied: embedding and LM head both 262 MB
    norms = groups.norms * 2
    assert W.weight_bytes_per_gpu(groups, fmt, 32, tp=2) == pytest.approx((total - norms) / 2 + norms)
    # pp 2: 16 of 32 layers, plus the larger of the first stage's embedding and the last's LM head
    layers = total - 2 * emb
    assert W.weight_bytes_per_gpu(groups, fmt, 32, pp=2) == pytest.approx(layers / 2 + emb, rel=1e-4)


# ----------------------------------------------------------------------------- KV cache
@pytest.mark.parametrize("model, per_token", [
    ("llama-2-7b", 2 * 32 * 32 * 128 * 2),       # MHA
    ("llama-3.1-8b", 2 * 32 * 8 * 128 * 2),      # GQA: 131,072 B
    ("falcon-7b", 2 * 32 * 1 * 64 * 2),          # MQA: one KV head
    ("deepseek-v2-lite", (512 + 64) * 27 * 2),   # MLA: latent 512 + RoPE key 64 per layer (DeepSeek-V2 Sec. 2.1)
    ("deepseek-v3", (512 + 64) * 61 * 2),        # 70,272 B for 61 layers of a 671B model
])
def test_kv_bytes_per_token(model, per_token):
    assert K.kv_layout(load_model(model), 2).bytes_per_token == per_token


def test_fp8_kv_halves_the_cache_and_tp_splits_kv_heads():
    spec = load_model("llama-3.1-70b")  # 80 layers, 8 KV heads of 128
    assert K.kv_layout(spec, 1).bytes_per_token == 2 * 80 * 8 * 128 * 1
    assert K.kv_layout(spec, 2, tp=8).bytes_per_token == 2 * 80 * 1 * 128 * 2  # one KV head per GPU
    assert K.kv_layout(spec, 2, tp=16).bytes_per_token == 2 * 80 * 1 * 128 * 2  # replicated, not smaller
    assert K.kv_layout(spec, 2, pp=2).bytes_per_token == 2 * 40 * 8 * 128 * 2  # 40 layers per stage


def test_mla_latent_is_replicated_over_tp():
    spec = load_model("deepseek-v3")
    assert K.kv_layout(spec, 2, tp=8).bytes_per_token == (512 + 64) * 61 * 2


def test_tp_not_dividing_kv_heads_is_an_input_error():
    with pytest.raises(InputError, match="key/value heads"):  # Qwen2.5-7B: 28 heads, 4 KV heads
        K.kv_layout(load_model("qwen2.5-7b"), 2, tp=7)
    with pytest.raises(InputError, match="attention heads"):
        K.kv_layout(load_model("llama-3.1-8b"), 2, tp=3)


def test_block_rounding():
    layout = K.kv_layout(load_model("llama-3.1-8b"), 2)
    assert layout.bytes_per_sequence(4097) == 4112 * 131_072  # 257 blocks of 16 tokens
    assert K.tokens_in(layout, 16 * 131_072 * 10 + 1) == 160  # whole blocks only


def test_sliding_window_layers_hold_at_most_the_window():
    spec = load_model("gemma-2-9b")  # 42 layers alternating sliding (4,096) / full; 8 KV heads of 256
    layout = K.kv_layout(spec, 2)
    per_layer = 2 * 8 * 256 * 2  # 8,192 B per token per layer
    assert layout.bytes_per_sequence(2048) == 42 * 2048 * per_layer
    assert layout.bytes_per_sequence(8192) == (21 * 8192 + 21 * 4096) * per_layer
    budget = 3 * layout.bytes_per_sequence(8192)
    assert K.max_sequences(layout, budget, 8192) == 3
    assert K.max_context(layout, budget, 3) == 8192  # the inversion round-trips
    # every Mistral-7B-v0.1 layer slides (window 4,096): memory never limits the context
    assert K.max_context(K.kv_layout(load_model("mistral-7b-v0.1"), 2), 10 * GiB, 4) == math.inf


def test_max_context_full_attention():
    layout = K.kv_layout(load_model("llama-3.1-8b"), 2)
    # 10 GiB for 4 sequences: 2.5 GiB each / 131,072 B = 20,480 tokens
    assert K.max_context(layout, 10 * GiB, 4) == 20480


# ----------------------------------------------------------------------------- memory and capacity
def test_activation_profile_matches_vllm_10517():
    # vLLM 0.6.4's profile of Llama-3.1-8B on an RTX 3090: peak_torch - weights = 17.06 - 14.99 =
    # 2.07 GiB at 20,000 tokens; 20,000 x 2 B x (3 x 14,336 + 3 x 4,096) = 2,211,840,000 B = 2.06 GiB,
    # above the sampler's 256 x 128,256 x 38 B + the 20,000 x 4,096 x 2 B hidden states (1.41 GB)
    spec = load_model("llama-3.1-8b")
    peak = P.profiled_peak(spec, 20000, 256, 1, REL.vllm_rules((0, 6, 4)))
    assert peak.forward == 2_211_840_000
    assert peak.sampler == 256 * 128_256 * 38 + 20000 * 4096 * 2
    assert peak.peak / GiB == pytest.approx(2.07, abs=0.02)


def test_kv_budget_by_hand():
    spec, gpu = load_model("llama-3.1-8b"), load_accelerator("rtx-3090")
    runtime = SU.Runtime(version=(0, 6, 4), prefill_tokens=20000, max_num_seqs=256)
    memory = M.serving_memory(spec, W.param_groups(spec), gpu.memory_bytes, SU.ServingSetup(W.FORMATS["bf16"], 2,
                                                                                              runtime), 1, 1)
    usable = (24 * GiB - 0.5 * GiB) * 0.9  # 21.15 GiB
    weights = 2 * 8_030_261_248  # Llama-3.1-8B bf16
    # 0.6.4 counts 0.35 GiB of non-torch memory and no CUDA graphs (captured after the KV sizing)
    assert memory.kv_budget == pytest.approx(usable - weights - 2_211_840_000 - 0.35 * GiB)
    assert memory.kv_budget / GiB == pytest.approx(3.81, abs=0.05)  # vLLM logged kv_cache_size=3.81GiB


def test_vllm_serve_batch_defaults_by_gpu():
    runtime = SU.Runtime()
    assert runtime.batch_limits(load_accelerator("h100").memory_bytes, "NVIDIA H100") == (8192, 1024)
    assert runtime.batch_limits(load_accelerator("a100").memory_bytes, "NVIDIA A100 80GB") == (2048, 256)
    assert runtime.batch_limits(24 * GiB, "L4") == (2048, 256)


def test_capacity_in_report_is_consistent():
    r = report(model="llama-3.1-8b", gpu="h100", context=8192, batch=8)
    budget, per_seq = r.value("kv_budget"), r.value("kv_bytes_per_sequence")
    assert r.value("max_sequences") == budget // per_seq
    assert r.value("kv_tokens") == (budget // (16 * 131_072)) * 16
    assert r.value("fits") is True


# ----------------------------------------------------------------------------- speed
def test_decode_batch1_is_weights_plus_kv_over_bandwidth():
    spec, gpu = load_model("llama-2-7b"), load_accelerator("a100")
    setup = SU.ServingSetup(W.FORMATS["fp16"], 2)
    kv = K.kv_layout(spec, 2).bytes_per_sequence(1024)
    step = R.decode_step(spec, W.param_groups(spec), setup, kv, tp=1, pp=1, batch=1, context=1024,
                         bandwidth=gpu.memory_bandwidth, peak=gpu.peak("fp16"), link=gpu.scale_up_bandwidth)
    # every weight but the input embedding (a row lookup) once at 0.85 of 2.039 TB/s (7.6 ms), then
    # 1,024 tokens x 512 KiB of KV at 0.95 (0.28 ms), then one token's elementwise traffic
    weights = 2 * (6_738_415_616 - 32000 * 4096)
    assert step.memory_s == pytest.approx(weights / (2.039e12 * 0.85))
    assert step.attention_s == pytest.approx(1024 * 524_288 / (2.039e12 * 0.95))
    elementwise = 32 * (8 * 4096 + 2 * (4096 + 4096) + 3 * 11008) * 2
    assert step.other_s == pytest.approx(elementwise / (2.039e12 * 0.85))
    assert step.bound == "memory" and step.comm_s == 0


def test_gpu_keywords_read_the_part_at_the_formats_compute_dtype():
    """roofline.gpu_keywords: an H100 SXM (catalog h100-sxm.toml: 3.35 TB/s HBM, 900 GB/s NVLink, dense 989.4
    TFLOP/s BF16 and 1,978.9 FP8) serving FP8 weights runs its GEMMs at the FP8 peak, BF16 weights at BF16's."""
    h100 = load_accelerator("h100-sxm")
    fp8 = R.gpu_keywords(h100, SU.ServingSetup(W.FORMATS["fp8"], 1))
    assert fp8 == {"bandwidth": 3.35e12, "peak": 1978.9e12, "link": 900e9, "fabric": h100}
    assert R.gpu_keywords(h100, SU.ServingSetup(W.FORMATS["bf16"], 2))["peak"] == 989.4e12


def test_prefill_is_compute_bound_flops_over_peak():
    spec, gpu = load_model("llama-2-7b"), load_accelerator("a100")
    step = R.prefill_step(spec, W.param_groups(spec), SU.ServingSetup(W.FORMATS["fp16"], 2), tp=1, pp=1, prompt=2048,
                          bandwidth=gpu.memory_bandwidth, peak=gpu.peak("fp16"), link=None)
    # 2 FLOPs per matmul weight per token (6.48e9 weights in the layers) and the LM head once, at
    # 0.8 of 312 TFLOP/s; causal attention 2 x 32 heads x 256 x (2049/2) keys x 32 layers at 0.6
    layers = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    assert step.bound == "compute"
    assert step.compute_s == pytest.approx((2048 * 2 * layers + 2 * 32000 * 4096) / (312e12 * 0.8))
    assert step.attention_s == pytest.approx(2048 * 2 * 32 * 256 * 2049 / 2 * 32 / (312e12 * 0.6))


def test_moe_decode_reads_only_touched_experts():
    assert W.expected_expert_fraction(8, 2, 1) == pytest.approx(0.25)
    assert W.expected_expert_fraction(8, 2, 2) == pytest.approx(1 - 0.75**2)
    spec = load_model("mixtral-8x7b")
    groups, fmt = W.param_groups(spec), W.FORMATS["bf16"]
    one = W.decode_weight_bytes_read(spec, groups, fmt, 1, 1)
    assert one == pytest.approx(2 * (groups.dense_linear + 0.25 * groups.routed + groups.router + groups.lm_head
                                     + groups.norms))


def test_allreduce_ring_cost():
    # 1 MB over NVLink 900 GB/s (450 per direction, 0.8 of it achieved), tp 2: 8 us + core/comm/volumes.py's
    # ring 2 x 1/2 x 1e6 / 360e9
    from gpuplan.core.serving.kernels import tp_allreduce_seconds

    assert tp_allreduce_seconds(1e6, 2, 900e9, 8e-6) == pytest.approx(8e-6 + 1e6 / 360e9)
    assert tp_allreduce_seconds(1e6, 1, 900e9, 8e-6) == 0.0
    assert SU.Efficiency().latency(64e9) == pytest.approx(24e-6)  # PCIe: x3


def test_tp_adds_allreduce_time_per_token():
    r = report(model="llama-3.1-70b", gpu="h100", tp=4, context=4096, batch=1)
    # 160 all-reduces of 1 x 8,192 x 2 B: 160 x (8 us + 1.5 x 16,384 / (450e9 x 0.8)), + vLLM's embedding all-reduce
    # and its logits all-gather (outside_layers, review w17 ME S2): NCCL's ring LL (collectives.chosen) of 4 ranks,
    # 6.6 + 3 x 0.6 us + 3/4 x 128,256 x 2 B / 141 GB/s (the Hopper LL bus cap) = 9.7644 us
    gather = 6.6e-6 + 3 * 0.6e-6 + 0.75 * 128_256 * 2 / 141e9
    assert r.value("allreduce_per_token") == pytest.approx(161 * (8e-6 + 1.5 * 16384 / 360e9) + gather)


def test_cost_per_million_tokens():
    # $2/GPU-hour x 8 GPUs at 1,000 tokens/s: 16 $/h / 3.6e6 tokens/h x 1e6
    assert R.cost_per_million_tokens(2.0, 8, 1000.0) == pytest.approx(16 / 3.6)


def test_throughput_curve_rises_with_batch():
    r = report(model="llama-3.1-8b", gpu="h100", context=4096, price=2.0)
    rows = r.tables[0].rows
    rates = [float(row[2].replace(",", "")) for row in rows]
    assert rows[0][0] == 1 and rates == sorted(rates) and rates[-1] > 10 * rates[0]
    assert r.value("cost_per_million_tokens") == pytest.approx(
        R.cost_per_million_tokens(2.0, 1, r.value("tokens_per_s")))


def test_cost_not_available_without_price(monkeypatch):
    import gpuplan.jobs.inference.estimate as E

    monkeypatch.setattr(E, "price_for", lambda gpu_id, given: (None, "no price"))
    r = report(model="llama-3.1-8b", gpu="h100")
    assert r.value("cost_per_million_tokens") is None
    from gpuplan.core.units import NO_PRICE_TEXT

    assert r.line("cost_per_million_tokens").text == NO_PRICE_TEXT  # one spelling since w16 MB (d7524c87)


# ----------------------------------------------------------------------------- examples from the issue
def test_70b_on_2_to_8_gpus():
    sequences = {}
    for tp in (2, 4, 8):
        r = report(model="llama-3.1-70b", gpu="h100", tp=tp, context=8192, batch=16)
        sequences[tp] = r.value("max_sequences")
        assert r.value("weights_per_gpu") == pytest.approx(2 * 70.55e9 / tp, rel=0.01)
    assert sequences[2] < 16 <= sequences[4] < sequences[8]


def test_mla_and_moe_examples_run():
    r = report(model="deepseek-v2-lite", gpu="a100", context=32768, batch=16)
    assert r.value("kv_bytes_per_sequence") == 32768 * 31_104  # 0.95 GiB, as vLLM reports (vllm#15871)
    r = report(model="qwen3-30b-a3b", gpu="h100", context=32768, batch=4)
    assert r.value("kv_bytes_per_token") == 2 * 48 * 4 * 128 * 2
    assert r.value("weights_total") == pytest.approx(2 * 30.53e9, rel=0.001)


def test_search_finds_smallest_configuration():
    r = estimate_inference(InferenceInputs(model="llama-3.1-70b", gpu="h100", context=8192, batch=16))
    table = next(t for t in r.tables if t.title.startswith("catalog configurations"))
    records = table.records()
    assert all(rec["max sequences"] >= 16 for rec in records)
    for priced in (True, False):  # fewest GPUs first among the priced, then among the unpriced (alternatives.UNPRICED_LAST)
        gpus = [rec["tp"] for rec in records if (rec["USD/GPU-h"] != "n/a") == priced]
        assert gpus == sorted(gpus)
    first = min(records, key=lambda rec: (rec["tp"], float(rec["memory"].split()[0].replace(",", ""))))  # the search's
    assert r.value("smallest_config") == f"{first['tp']} x {first['gpu']}"  # first: fewest GPUs, then least memory


@pytest.mark.parametrize("model", sorted(__import__("gpuplan.catalog", fromlist=["x"]).model_entries()))
def test_every_catalog_model_estimates(model):
    from gpuplan.report.render import to_json, to_markdown

    from gpuplan.catalog import model_entries
    from gpuplan.core.model.spec import count_parameters

    r = report(model=model, gpu="h200")
    assert r.value("kv_bytes_per_token") > 0
    # the weights: 2 B a parameter (bf16) for a bf16 checkpoint; a checkpoint stored quantised (its config's
    # quantization_config: DeepSeek-V3 FP8, gpt-oss MXFP4) holds fewer (was only '> 0')
    config = model_entries()[model]["config"]
    params = count_parameters(load_model(model)).total
    if "quantization_config" in config or "quantization_config" in (config.get("text_config") or {}):
        assert 0 < r.value("weights_total") < 2 * params
    else:
        assert r.value("weights_total") == pytest.approx(2 * params, rel=1e-9)
    keys = {line.key for s in r.sections for line in s.lines}
    if r.value("max_sequences") >= 1:
        assert r.value("tpot") > 0 and "instead_gpus" not in keys
    else:  # does not fit one H200 (141 GB): no speed or cost, what would fit instead
        assert not keys & {"tpot", "tokens_per_s", "cost_per_million_tokens"} and "instead_gpus" in keys
        assert r.value("weights_per_gpu") > 0.9 * 141e9 or r.value("kv_budget") <= 0
    assert to_json(r) and to_markdown(r)  # no inf/NaN reaches the JSON


def test_a_setup_that_does_not_fit_says_what_would():
    # 70B in bf16: 141.1 GB of weights; one H100 (85.5 GB) cannot hold them; at tp 2 under vLLM 0.29
    # each GPU holds 70.56 GB of 0.92 x (85.52 - 0.54) = 78.18 GB usable; the activation peak (an
    # 8,192-token forward, 8192 x 2 B x (3 x 28,672 / 2 + 3 x 8,192) = 1.107 GB, + V1's 0.052 GiB)
    # takes 1.16 GB, non-torch memory 2.22 GB (0.25 + 1.82 GiB for the TP group) and the CUDA-graph
    # estimate 1.74 GB (first capture: FlashAttention's accumulators, 32 x 32 x 512 x 129 x 4 B = 271 MB,
    # + 100 graphs x 80 layers x 0.175 MiB), leaving 2.50 GB:
    # 3 sequences of 4,096 tokens at 160 KiB per token per GPU (0.67 GB each)
    r = report(model="llama-3.1-70b", gpu="h100")
    keys = {line.key for s in r.sections for line in s.lines}
    assert r.value("fits") is False and not keys & {"tpot", "tokens_per_s", "cost_per_million_tokens"}
    assert r.value("instead_gpus") == 2 and r.line("instead_gpus").text.startswith("tp 2 x pp 1")
    assert "(holds 3 sequences)" in r.line("instead_gpus").text
    assert r.tables == ()  # no throughput curve for a setup that holds no sequence


def test_a_per_query_head_decode_kernel_reads_a_gqa_cache_group_times():
    """core.serving.roofline.kv_reads_per_step: Llama-2-70B has 64 query heads on 8 KV heads, so a kernel
    with one thread block per query head (vLLM paged_attention, TensorRT-LLM before XQA) reads each
    cached element 8 times per step; MHA and MLA caches once; the decode step's memory time grows
    by exactly the extra 7 reads, at the KV kernels' 0.95 of HBM bandwidth."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.serving import roofline as R
    from gpuplan.core.serving import setup as SU
    from gpuplan.core.serving import weights as W
    from gpuplan.core.serving import kv_cache as K

    llama70, llama7, dsv2 = load_model("llama-2-70b"), load_model("llama-2-7b"), load_model("deepseek-v2-lite")
    assert R.kv_reads_per_step(llama70, "per-query-head") == 8
    assert R.kv_reads_per_step(llama70, "grouped") == 1
    assert R.kv_reads_per_step(llama7, "per-query-head") == 1
    assert R.kv_reads_per_step(dsv2, "per-query-head") == 1
    # 30% of the 7 repeated reads hit L2 (Efficiency.kv_repeat_l2_hit): 1 + 7 x 0.7 = 5.9 reads from HBM
    assert R.kv_reads_per_step(llama70, "per-query-head", 0.3) == pytest.approx(5.9)
    assert SU.Efficiency().kv_repeat_l2_hit == 0.3
    gpu = load_accelerator("h100-sxm")
    groups = W.param_groups(llama70)
    steps = {}
    for kernel in R.DECODE_ATTENTION:
        setup = SU.ServingSetup(W.FORMATS["bf16"], K.KV_DTYPE_BYTES["bf16"], decode_attention=kernel)
        steps[kernel] = R.decode_step(llama70, groups, setup, 1e9, tp=4, pp=1, batch=16, context=4096,
                                      bandwidth=gpu.memory_bandwidth, peak=gpu.peak("bf16"), link=None)
    extra = steps["per-query-head"].attention_s - steps["grouped"].attention_s
    assert extra == pytest.approx(16 * 1e9 * 4.9 / (gpu.memory_bandwidth * 0.95), rel=1e-9)


def test_decode_attention_is_checked_at_the_input_boundary(run_cli):
    code, _, err = run_cli("infer", "llama-2-70b", "--gpu", "h100", "--tp", "4", "--decode-attention", "paged")
    assert code == 2 and "decode_attention" in err and "grouped, per-query-head" in err


def test_runtime_memory_by_category():
    """The runtime line names its parts: on 4 NVLink H100s under vLLM 0.29, non-torch 0.25 GiB, the
    TP group's 1.82 GiB (0.19's logged 2.07 - 0.25) and the counted CUDA-graph estimate: first
    capture FlashAttention's split-KV accumulators, 32 splits x 64 / 4 heads x 512 tokens x
    (128 + 1) x 4 B = 135.3 MB (above the piecewise 2 x 512 x 2 B x (3 x 28,672 / 4 + 3 x 8,192) =
    94.4 MB + the capture stream's 32 MiB cuBLAS workspace), + the first capture's own graph and
    (50 + 50) further ones, 80 layers x 0.1656 MiB = 13.2 MiB -> 14 MiB (whole 2 MiB pages) each,
    core.serving.profile.per_graph_bytes; SGLang counts its CUDA context and one
    NCCL communicator (688 MB x 1.5) and keeps its graphs in the reserve."""
    vllm = report(model="llama-3.1-70b", gpu="h100", tp=4).line("runtime")
    graphs = 32 * 16 * 512 * 129 * 4 + 101 * 14 * 2**20
    assert vllm.value == pytest.approx((0.25 + 1.82) * 2**30 + graphs)
    assert vllm.formula == "non-torch 0.25 GiB + TP / PP groups 1.82 GiB + CUDA graphs 1.51 GiB"
    sglang = report(model="llama-3.1-70b", gpu="h100", tp=4, engine="sglang").line("runtime")
    assert sglang.formula == "non-torch 0.35 GiB + TP / PP groups 0.96 GiB"


def test_host_time_per_step_follows_the_releases_scheduler():
    """vLLM before 0.6 waits for its output processing per sequence, 0.6-0.13 for the scheduler
    only, 0.14+ schedules asynchronously; SGLang and TensorRT-LLM overlap it."""
    from gpuplan.core.serving import kernels as KR
    from gpuplan.core.serving.releases import parse_release

    def host(text, seqs=32):
        return KR.host_step_seconds(parse_release(text), seqs)

    assert host("vllm==0.5.3") == pytest.approx(0.6e-3 + 32 * 0.1e-3)
    assert host("vllm==0.5.3", 1) == pytest.approx(0.7e-3)
    assert host("vllm==0.6.0") == host("vllm==0.13") == pytest.approx(0.6e-3)
    assert host("vllm==0.14") == host("vllm") == host("sglang==0.4.9") == host("trtllm==0.9") == 0.0


def test_a_synchronous_release_pays_its_host_time_every_decode_step():
    from dataclasses import replace

    spec = load_model("llama-3-8b")
    base = SU.ServingSetup(W.weight_format("bf16"), 2.0)
    old = replace(base, runtime=SU.Runtime(engine="vllm", version=(0, 5, 3)))
    kw = dict(tp=1, pp=1, batch=16, context=1024, bandwidth=3.35e12, peak=989e12, link=450e9)
    groups = W.param_groups(spec)
    new_s = R.decode_step(spec, groups, base, 1e6, **kw).total
    old_s = R.decode_step(spec, groups, old, 1e6, **kw).total
    assert old_s - new_s == pytest.approx(0.6e-3 + 16 * 0.1e-3)
