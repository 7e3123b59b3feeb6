"""SGLang's eager prefill host time (core/serving/first_token_path.py): the per-kernel cost from
sglang PR 12160's two forward costs, the issue time from the kernel counts, and the step's
max(host, GPU). Hand-worked numbers; tolerance 0.1% unless stated."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.validation import inference as VI

REL = 1e-3


def _entry(model, gpu, release, tp):
    return {"id": "t", "model": model, "gpu": gpu, "release": release, "quantization": "bf16",
            "kv_dtype": "bf16", "tp": tp, "concurrency": 1}


def test_per_kernel_host_time_from_pr_12160():
    # the PR's sm90 path counted from SGLang's code (core.serving.layer_kernels): dense layers 15 + 5,
    # MoE layers 15 + 9, + 2 all-reduces: (3 x 20 + 58 x 24) / 61 + 2 = 25.803 launches a layer;
    # (82.64 - 23.10 + 6.5) ms over 61 x 25.803 = 1,574.0 launches = 41.96 us
    assert FT.DEEPSEEK_V3_KERNELS_PER_LAYER == pytest.approx(1452 / 61 + 2, rel=REL)
    assert FT.DEEPSEEK_V3_KERNELS_PER_LAYER == pytest.approx(25.8033, rel=REL)
    assert FT.EAGER_HOST_PER_LAUNCH_S == pytest.approx(66.04e-3 / 1574.0, rel=REL)
    assert FT.EAGER_HOST_PER_LAUNCH_S == pytest.approx(41.96e-6, rel=REL)


@pytest.mark.parametrize("gpu", ["h20", "h200-sxm", "h800-sxm"])
def test_graphed_forward_gpu_time_is_gpuplans_decode_step(gpu):
    """PR12160_GRAPH_GPU_S (6.5 ms) is gpuplan's own batch-1 DeepSeek-V3 fp8 TP 8 step on the Hopper GPUs
    the PR may have used (the path layer_kernels counts for it is sm90's): within 1 ms of each
    (+-0.7 us a launch). The B200 runs another path (trtllm_mla, flashinfer_trtllm MoE: 8.5 ms)."""
    entry = {**_entry("deepseek-v3", gpu, "sglang==0.5.6", 8), "quantization": "fp8"}
    _, decode = VI._served_request(entry, 2, 2)
    assert abs(decode.verify_s - decode.host_s - FT.PR12160_GRAPH_GPU_S) < 1.0e-3


def test_pr_12160_all_reduces_are_kernels_rule():
    """The PR's forward counts DeepSeek-V3's TP all-reduces as kernels.allreduces_per_layer does (2: Megatron's pair)."""
    from gpuplan.core.serving import kernels as KR

    assert FT.DEEPSEEK_V3_ALLREDUCES == KR.allreduces_per_layer(load_model("deepseek-v3"), parse_release("sglang==0.5.4"))


def test_issue_time_counts_layers_and_kernels():
    sglang = parse_release("sglang==0.5.6")
    # Qwen3-235B-A22B (general rule): 94 MoE layers x (11 + 4 MoE + 2 q/k norms, issued one after the
    # other eagerly + 2 all-reduces at TP 8) = 1,786 launches x 41.957 us = 74.93 ms; 17 a layer at TP 1;
    # a prefill adds the forward's 16.6 ms outside the layers (23.10 - 6.5): 91.53 ms
    qwen3 = load_model("qwen3-235b-a22b")
    assert LK.issued_kernels(qwen3, sglang, tp=8) == 19
    assert LK.issued_kernels(qwen3, sglang) == 17
    assert FT.eager_issue_seconds(sglang, qwen3, tp=8, prefill=False) == pytest.approx(74.93e-3, rel=REL)
    assert FT.eager_issue_seconds(sglang, qwen3, tp=8) == pytest.approx(74.93e-3 + 16.6e-3, rel=REL)
    # Llama-3.1-70B: 80 dense layers x (11 + 2 all-reduces) = 1,040 x 41.957 us = 43.64 ms (+ 16.6 = 60.24)
    assert LK.issued_kernels(load_model("llama-3.1-70b"), sglang, tp=8) == 13
    assert FT.eager_issue_seconds(sglang, load_model("llama-3.1-70b"), tp=8) == pytest.approx(
        60.24e-3, rel=REL)


def test_pr_12160s_own_eager_forward_is_its_log_line():
    """The per-forward term closes PR 12160's equations: its eager forward is F + I = (23.10 - G) + (82.64 - 23.10
    + G) = 82.64 ms at every G, so at each end of the range (G = 6.5, 23.1, 0) F + 61 x 25.803 launches x the
    per-launch time gives the logged 82.64 ms (before 2026-12-06 the model gave I alone, 66.04 ms at G = 6.5).
    vLLM's eager steps and SGLang's eager decode steps take no per-forward term (0)."""
    launches = FT.DEEPSEEK_V3_LAYERS * FT.DEEPSEEK_V3_KERNELS_PER_LAYER
    assert launches == pytest.approx(1574.0, rel=1e-4)
    for forward, per_launch in zip(FT.SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S, FT.EAGER_HOST_PER_LAUNCH_RANGE_S):
        assert forward + launches * per_launch == pytest.approx(82.64e-3, rel=1e-9)
    assert FT.SGLANG_PREFILL_HOST_PER_FORWARD_RANGE_S == pytest.approx((16.6e-3, 0.0, 23.10e-3), rel=1e-9)
    assert FT.eager_forward_host_seconds(parse_release("sglang==0.5.6")) == pytest.approx(16.6e-3, rel=1e-9)
    assert FT.eager_forward_host_seconds(parse_release("sglang==0.5.6"), prefill=False) == 0.0
    assert FT.eager_forward_host_seconds(parse_release("vllm==0.9.1")) == 0.0


@pytest.mark.parametrize("release", ["vllm==0.23", "trtllm==0.10", "trtllm==1.0"])
def test_other_engines_keep_their_rules(release):
    """No issue-time rule for their eager steps (runs_issue_bound): vLLM with graphs (V1's prefill replays
    them), TensorRT-LLM before and after 1.0 keep setup.Efficiency.layer_launch_s."""
    assert not FT.runs_issue_bound(parse_release(release), 256)


def test_exposed_host_is_what_the_gpu_does_not_hide():
    assert FT.exposed_host_seconds(0.100, 0.030) == pytest.approx(0.070)
    assert FT.exposed_host_seconds(0.030, 0.100) == 0.0


def test_short_prompt_is_host_bound():
    """A 38-token Qwen3-235B prefill on 8 x B200: the GPU work (~10 ms) hides under the 95.48 ms issue
    time (94 layers x 20 launches x 41.957 us = 78.88 of launches, the q reshape's copy included:
    layer_kernels.qk_reshape_copies; + 16.6 outside the layers), so the step is the issue time (SGLang >= 0.4
    adds no scheduler host time)."""
    prefill, _ = VI._served_request(_entry("qwen3-235b-a22b", "b200", "sglang==0.5.6", 8), 38, 2)
    gpu = prefill.verify_s - prefill.host_s
    assert gpu < 0.03
    assert prefill.issue_s == pytest.approx(95.48e-3, rel=REL)
    assert prefill.total == pytest.approx(95.48e-3, rel=REL)


def test_long_prompt_is_gpu_bound():
    """A 7,936-token Llama-3.1-70B prefill on 8 x A100: GPU work (~0.7 s) above the layers' 43.64 ms issue
    time (80 x 13 x 41.957 us), so the layers add no host time; the 16.6 ms a forward outside the layers
    runs before them (metadata + its device sync, model_runner.py@v0.5.6:2589-2592) and is added whole
    (review w9 r1 M2: F + max(I, G), not max(F + I, G)); the server's tokenising of the prompt, 7,936 x 1.4 us
    = 11.11 ms (prompt_tokenize), precedes both."""
    prefill, _ = VI._served_request(_entry("llama-3.1-70b", "a100-sxm4-80gb", "sglang==0.5.6", 8), 7936, 2)
    assert prefill.issue_s == pytest.approx(60.24e-3, rel=REL)
    assert prefill.issue_forward_s == pytest.approx(16.6e-3, rel=1e-9)
    assert prefill.host_s == pytest.approx(16.6e-3 + 7936 * 1.4e-6, rel=1e-9)
    assert prefill.bound != "host (eager issue)"
    assert prefill.total > 0.5


def test_per_forward_host_time_is_serial_with_the_layers():
    """F + max(I, G) by hand: I = 10 ms of layer issue, F = 16.6 ms (SGLang 0.5.6 prefill). G = 4 ms:
    exposed 16.6 + 6 = 22.6 ms; G = 30 ms: 16.6 ms (the overlapped max(F + I, G) would give 0.0).
    vLLM (no per-forward term): max(0, I - G) only."""
    sglang, qwen3 = parse_release("sglang==0.5.6"), load_model("qwen3-8b")
    issue = FT.eager_issue_seconds(sglang, qwen3)
    layers = issue - 16.6e-3
    for gpu, past in ((layers - 6e-3, 22.6e-3), (layers + 20e-3, 16.6e-3)):
        total, forward, exposed = FT.eager_exposed_seconds(sglang, qwen3, gpu)
        assert (total, forward) == (pytest.approx(issue, rel=1e-12), pytest.approx(16.6e-3, rel=1e-9))
        assert exposed == pytest.approx(past, rel=1e-9)
    vllm = parse_release("vllm==0.9.1")
    assert FT.eager_exposed_seconds(vllm, qwen3, 1.0)[1:] == (0.0, 0.0)


def test_tensorrt_prefill_keeps_its_launches():
    """A TensorRT engine before 1.0 still pays layer_launch_s (80 us) a layer on top: 80 x 80 us."""
    prefill, _ = VI._served_request(_entry("llama-3.1-70b", "h100-sxm", "trtllm==0.10", 2), 500, 2)
    assert prefill.issue_s == 0.0
    assert prefill.host_s == pytest.approx(80 * 80e-6, rel=REL)


def test_held_out_qwen3_rows_are_host_bound():
    """The cookbook's Qwen3-235B-A22B-Instruct-2507 1000/1000 run (held out: nothing fitted on it):
    every request's prompt (38-961 tokens) is host-bound, so the mean TTFT is the issue time,
    78.88 ms of launches (94 x 20, the q reshape's copy included) + 16.6 ms outside the layers = 95.48 ms (request
    1, prefix-cached by the client's warm-up, prefills 1 token: no copy, 91.53 ms; mean 95.085 ms), + the
    server's tokenising of the mean prompt (610.1 tokens x 1.4 us = 0.85 ms, prompt_tokenize) = 95.94 ms, against
    99.03 ms measured: -3.1% (-6.7% without the q copy, -7.6% also without the tokenising, -24.3% without the
    per-forward term; +18.0% while the per-launch time divided the coarse 14.8-kernel DeepSeek count, 73.1 us;
    -79% before the issue time existed). The test pins it within 5 points."""
    entry = next(e for e in VI.reference_measurements()["online"]
                 if e["id"] == "sglang056-qwen3-235b-a22b-tp8-b200-1000-1000-c1")
    ttft = VI._online_cases(entry)[0]
    assert ttft[3] == pytest.approx((9 * 95.48e-3 + 91.53e-3) / 10 + 610.1 * 1.4e-6, rel=REL)
    assert -0.075 < ttft[3] / ttft[2] - 1 < 0.025


def test_range_is_pr_12160s_bracket():
    """The graphed forward all GPU work (G = 23.1: I = 82.64 ms over 1,574.0 launches, 52.50 us a launch, F = 0)
    or none of it (G = 0: I = 59.54 ms, 37.83 us, F = 23.10 ms). Qwen3-235B-A22B's 1,786 launches at TP 8,
    more than the PR's 1,574, make G = 23.1 the slower end: 93.77 ms against 23.10 + 67.56 = 90.66 ms; a
    decode step (no F) keeps 93.77 / 67.56."""
    expected, slow, fast = FT.EAGER_HOST_PER_LAUNCH_RANGE_S
    assert (slow, fast) == (pytest.approx(52.50e-6, rel=REL), pytest.approx(37.83e-6, rel=REL))
    assert fast < expected < slow
    qwen3, sglang = load_model("qwen3-235b-a22b"), parse_release("sglang==0.5.6")
    assert FT.eager_issue_seconds(sglang, qwen3, 1, tp=8) == pytest.approx(93.77e-3, rel=REL)
    assert FT.eager_issue_seconds(sglang, qwen3, 2, tp=8) == pytest.approx(90.66e-3, rel=REL)
    assert FT.eager_issue_seconds(sglang, qwen3, 2, tp=8, prefill=False) == pytest.approx(67.56e-3, rel=REL)
    # gpt-oss-120b's 360 launches (fewer than 1,574): G = 0 is the slower end, 23.10 + 360 x 37.83 us = 36.72 ms,
    # G = 23.1 the faster, 360 x 52.50 us = 18.90 ms
    gpt, b200 = load_model("gpt-oss-120b"), _b200()
    ends = [FT.eager_issue_seconds(sglang, gpt, w, fabric=b200, fmt_name="mxfp4", tokens=332, tp=8) for w in (1, 2)]
    assert ends == [pytest.approx(36.72e-3, rel=REL), pytest.approx(18.90e-3, rel=REL)]


def _b200():
    from gpuplan.catalog import load_accelerator
    return load_accelerator("b200")


def _sglang_decode(model, gpu, fmt, batch, graph_max_tokens=256):
    from dataclasses import replace

    from gpuplan.catalog import load_accelerator
    from gpuplan.core.serving import roofline as R
    from gpuplan.core.serving import setup as SU
    from gpuplan.core.serving.weights import FORMATS, param_groups
    spec, part = load_model(model), load_accelerator(gpu)
    setup = SU.ServingSetup(FORMATS[fmt], 2, runtime=SU.Runtime(engine="sglang", version=(0, 5, 6)),
                            efficiency=replace(SU.Efficiency(), graph_max_tokens=graph_max_tokens))
    return R.decode_step(spec, param_groups(spec), setup, 1e6, tp=8, pp=1, batch=batch, context=2000,
                         **R.gpu_keywords(part, setup))


def test_sglang_eager_decode_is_issue_bound():
    """SGLang's decode step past cuda_graph_max_bs (512 on a B200) runs the same eager Python forward as its
    prefill (model_runner.py@v0.5.6:2660-2700): max(issue, GPU), not 80 us a layer. Qwen3-235B-A22B on
    8 x B200, batch 513: 94 layers x 20 launches (the q reshape's copy included: 513 tokens,
    layer_kernels.qk_reshape_copies) x 41.957 us = 78.88 ms (the GPU work ~33 ms), so the step is the issue
    time; batch 512 replays its graph (no issue time)."""
    eager = _sglang_decode("qwen3-235b-a22b", "b200", "bf16", 513)
    assert eager.issue_s == pytest.approx(94 * 20 * FT.EAGER_HOST_PER_LAUNCH_S, rel=1e-9)
    assert eager.issue_s == pytest.approx(78.88e-3, rel=REL)
    assert eager.verify_s == pytest.approx(eager.issue_s, rel=1e-9)  # host-bound: the step ends with its issue
    graphed = _sglang_decode("qwen3-235b-a22b", "b200", "bf16", 512)
    assert graphed.issue_s == 0 and graphed.host_s == 0 and graphed.kernel_floor_s > 0
    # --cuda-graph-gib 0 (SGLang's --disable-cuda-graph): batch 1 is eager too
    assert _sglang_decode("qwen3-235b-a22b", "b200", "bf16", 1, graph_max_tokens=0).issue_s == pytest.approx(
        74.93e-3, rel=REL)


def test_sglang_eager_decode_reads_the_decode_path_counts():
    """DeepSeek-V3 (R1's shape) FP8 on 8 x B200, eager decode (layer_kernels' decode path, not the
    prefill's): dense layers 15 + 5, MoE layers 15 + 11 launches, norms inside the all-reduces (<= 2,048 tokens at TP 8) + 2
    all-reduces: (3 x 20 + 58 x 26) / 61 + 2 = 27.705 a layer; x 61 layers x 41.957 us = 70.91 ms."""
    eager = _sglang_decode("deepseek-v3", "b200", "fp8", 513)  # past the B200's cuda_graph_max_bs (512)
    assert eager.issue_s == pytest.approx(61 * ((3 * 20 + 58 * 26) / 61 + 2) * FT.EAGER_HOST_PER_LAUNCH_S,
                                          rel=1e-9)
    assert eager.issue_s == pytest.approx(70.91e-3, rel=REL)


@pytest.mark.parametrize("gpu, tp, graph_bs", [("b200", 1, 512), ("b200", 8, 512), ("h100", 2, 256),
                                                ("h100", 4, 512), ("h200", 8, 512), ("a100-40gb", 8, 160)])
def test_sglang_graph_limit_is_its_cuda_graph_max_bs(gpu, tp, graph_bs):
    """Final read 8 item 1: SGLang's graph limit is cuda_graph_max_bs by device memory and TP
    (server_args.py@v0.5.6:756-802: < 60 GB 32 / 160 at TP >= 4; < 160 GB 256 / 512; B200 512), the tiers
    engines.sglang_defaults holds for the memory split, not 256 everywhere."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.serving import engines as E
    from gpuplan.core.serving import kernels as KR
    from gpuplan.core.serving import roofline as R

    part, sglang = load_accelerator(gpu), parse_release("sglang==0.5.6")
    assert KR.graph_max_tokens_of(sglang, gpu=part, tp=tp) == graph_bs == E.sglang_defaults(part.memory_bytes, tp)[1]
    assert R.graph_max_tokens_at(sglang, 256, part, tp) == graph_bs  # the schema's GPU-free value is re-read
    assert R.graph_max_tokens_at(sglang, 0, part, tp) == 0  # --cuda-graph-gib 0 stays eager


def test_sglang_batch_512_on_8_b200_replays_its_graph():
    """Final read 8 item 1: Qwen3-235B-A22B on 8 x B200, batch 512, was priced as an eager step (74.93 ms =
    94 x 19 x 41.957 us, 6,833 tokens/s, below batch 256's 10,273); SGLang 0.5.6 replays its graph there, so
    the step is its GPU work plus the small-kernel floor, no issue time: under half the eager step, and
    tokens/s rise with the batch. Llama-3.1-70B on 8 x H100 (TP 8 >= 4: 512) at batch 302 likewise: below
    its 43.64 ms eager step (80 x 13 x 41.957 us)."""
    graphed = _sglang_decode("qwen3-235b-a22b", "b200", "bf16", 512, graph_max_tokens=256)
    assert graphed.issue_s == 0 and graphed.kernel_floor_s > 0
    assert graphed.verify_s < 74.93e-3 / 2
    at_256 = _sglang_decode("qwen3-235b-a22b", "b200", "bf16", 256)
    assert 512 / graphed.verify_s > 256 / at_256.verify_s
    r = _infer(model="llama-3.1-70b", gpu="h100", tp=8, engine="sglang==0.5.6", batch=302)
    assert r.line("tpot").value < 43.64e-3 * 0.9


def _infer(**kw):
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs
    return estimate_inference(InferenceInputs(search=False, **kw))


def test_past_the_gpu_work_is_the_exposed_issue_time_only():
    """Review w8 r1 item 5: SGLang 0.3.0 (a scheduler that is not overlapped: 0.6 ms a step, kernels.HOST_FIXED_S)
    on Llama-3.1-70B, 8 x H100, 3,840-token prompt: the issue time (80 x 13 x 41.957 us = 43.64 ms, + 16.6 ms
    outside the layers = 60.24 ms): the layers' 43.64 ms hides behind ~165 ms of GPU work, the 16.6 ms outside
    them runs before the layers are queued (review w9 r1 M2: F + max(I, G)), so 16.6 ms is past the GPU work;
    the 0.6 ms is the scheduler's (in host_s)."""
    r = _infer(model="llama-3.1-70b", gpu="h100", tp=8, engine="sglang==0.3.0")
    line = r.line("ttft_host_issue")
    assert line.value == pytest.approx(60.24e-3, rel=REL)
    assert "(16.6 ms past the GPU work)" in line.text and "13.0 launches" in line.formula
    # Qwen3-235B-A22B on 8 x B200, 16-token prompt (SGLang 0.5.6 overlaps its scheduler: no host time a step),
    # worked by hand. Issue: 94 layers x (17 launches + 1 q reshape copy + 2 all-reduces) x 41.957 us = 78.879 ms
    # + 16.6 ms a forward outside the layers = 95.479 ms. GPU work, one rank (TP 8; B200 8 TB/s at 0.85, 2.25 PFLOP/s at
    # 0.8 for GEMMs):
    #   weights: 16 tokens x 8 of 128 experts touch 1 - (1 - 8/128)^16 = 0.64393 of the experts, so
    #     (94 x 71,303,168 attention + 0.64393 x 227,096,395,776 routed) x 2 B + (49,283,072 router + 622,329,856
    #     head) x 2 B = 307.215e9 B / 8 + 774,144 norm weights x 2 B = 38.403e9 B / 6.8e12 B/s = 5.6476 ms;
    #   FLOPs 2 x (20,945,305,600 x 16 + 151,936 x 4,096) / 8 / 1.8e15 = 46.6 us, x 0.75 exposed = 35.0 us;
    #   elementwise 16 x 94 x (79,360 + 131,072 of the Triton MoE's per-expert rows written and summed,
    #     2 x 8 x 4,096 x 2 B: moe_combine) B / 6.8e12 = 46.6 us; attention ~0;
    #   all-reduces 188 x (8 us + 2 x 7/8 x 131,072 B / (0.8 x 900 GB/s)) = 188 x 8.3186 us = 1.5639 ms;
    #   GPU 5.6476 + 0.0350 + 0.0466 + 1.5639 = 7.293 ms, so 95.479 - 7.293 = 88.186 ms of issue past it.
    r = _infer(model="qwen3-235b-a22b", gpu="b200", tp=8, engine="sglang==0.5.6", prompt=16)
    line = r.line("ttft_host_issue")
    assert line.value == pytest.approx(94 * 20 * 41.957e-6 + 16.6e-3, rel=1e-4)
    assert "20.0 launches" in line.formula and "+ 16.6 ms a forward outside the layers" in line.formula
    past = float(line.text.split("(")[1].split(" ms past")[0])
    assert past == pytest.approx(95.479 - 7.293, abs=0.06)  # printed to 0.1 ms


def test_ttft_bound_says_host_when_the_issue_outlasts_the_gpu():
    """Review w8 r1 item 4: the 16-token and the 3,840-token Qwen3-235B-A22B SGLang prefills on 8 x B200 are
    host-bound (issue 74.9 ms against ~7 / ~54 ms of GPU work); Llama-3.1-70B on 8 x H100 is not (43.6 ms of
    issue under ~165 ms of GPU work: compute-bound)."""
    for prompt in (16, 3840):
        r = _infer(model="qwen3-235b-a22b", gpu="b200", tp=8, engine="sglang==0.5.6", prompt=prompt)
        assert r.line("ttft").formula.endswith("; host-bound (eager issue)"), prompt
    r = _infer(model="llama-3.1-70b", gpu="h100", tp=8, engine="sglang==0.5.6")
    assert r.line("ttft").formula.endswith("; compute-bound")


def test_the_pr12160_layer_counts_are_the_catalogs_deepseek_v3():
    """first_token_path writes DeepSeek-V3's 61 layers, 58 of them MoE (config.json num_hidden_layers 61,
    first_k_dense_replace 3), as constants so the module reads no catalog file at import; they must stay the
    catalog's, which the per-launch constant divides by."""
    from gpuplan.catalog import load_model
    from gpuplan.core.serving import first_token_path as FTP

    spec = load_model("deepseek-v3")
    assert (spec.num_layers, spec.num_moe_layers) == (FTP.DEEPSEEK_V3_LAYERS, FTP.DEEPSEEK_V3_MOE_LAYERS) == (61, 58)


def test_the_pr12160_launches_a_layer_are_layer_kernels_mean_of_the_catalogs_deepseek_v3():
    """DEEPSEEK_V3_KERNELS_PER_LAYER is layer_kernels' dense / MoE weighting (layer_mean, the one _mean reads for a
    spec), not a second copy of it: on the catalog's DeepSeek-V3 (61 layers, 58 MoE) _mean over PR 12160's
    (dense, MoE) pair gives it exactly; by hand (3 x (15 + 5) + 58 x (15 + 9)) / 61 + 2 all-reduces
    = 1,452 / 61 + 2 = 25.8033 (rel 1e-12)."""
    spec = load_model("deepseek-v3")
    assert FT.DEEPSEEK_V3_KERNELS_PER_LAYER == LK._mean(FT.PR12160_LAYERS, spec, "issued") + FT.DEEPSEEK_V3_ALLREDUCES
    assert FT.DEEPSEEK_V3_KERNELS_PER_LAYER == pytest.approx(1452 / 61 + 2, rel=1e-12)
    assert [k.issued for k in FT.PR12160_LAYERS] == [20, 24]
