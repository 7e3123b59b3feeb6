"""What a serving step runs, by engine release: the TP all-reduce (the engine's own kernel or NCCL
by size), the decode kernel a release runs on a GQA cache, and GEMMs of few tokens. Numbers worked
by hand from the formulas' sources (core/serving/kernels.py, core/serving/roofline.py)."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release

MiB = 2**20


def test_which_releases_reduce_with_their_own_kernel():
    # vLLM's custom all-reduce (PR 2192, 0.3.0) takes messages up to 8 MiB; TensorRT-LLM builds
    # reduce with NCCL before 0.10 and with its AUTO strategy's 16 MB (tp <= 2) / 8 MB workspace after
    assert KR.custom_allreduce_bytes_of(parse_release("vllm==0.2.7"), 4) == 0
    assert KR.custom_allreduce_bytes_of(parse_release("vllm==0.19"), 4) == 8 * MiB
    assert KR.custom_allreduce_bytes_of(parse_release("sglang==0.5.3"), 8) == 8 * MiB
    assert KR.custom_allreduce_bytes_of(parse_release("trtllm==0.9.0"), 4) == 0
    assert KR.custom_allreduce_bytes_of(parse_release("trtllm==1.0"), 2) == 16e6
    assert KR.custom_allreduce_bytes_of(parse_release("trtllm==1.0"), 4) == 8e6


def test_an_nccl_all_reduce_is_costed_by_the_nccl_tuner_and_the_custom_kernel_by_its_latency():
    """2 MiB (128 tokens x 8,192 x 2 B) over 4 H100s. NCCL's tuner takes the LL ring: 6.6 us base +
    2 x 3 steps x 0.6 us on NVLink = 10.2 us, plus 2 x 3/4 x 2 MiB at LL's Hopper cap of 141 GB/s =
    22.31 us: 32.5 us. The custom kernel: 8 us + the same bytes at 0.8 x 450 GB/s = 8.74 us: 16.7 us."""
    h100 = load_accelerator("h100-sxm")
    link = h100.scale_up_bandwidth
    nccl = KR.tp_allreduce_seconds(2 * MiB, 4, link, 8e-6, fabric=h100, custom_max_bytes=0)
    assert nccl == pytest.approx(10.2e-6 + 1.5 * 2 * MiB / 141e9, rel=1e-6)
    custom = KR.tp_allreduce_seconds(2 * MiB, 4, link, 8e-6, fabric=h100, custom_max_bytes=8 * MiB)
    assert custom == pytest.approx(8e-6 + 1.5 * 2 * MiB / 360e9, rel=1e-6)
    # above the custom kernel's limit NCCL takes over; without a fabric the custom formula stands in
    assert KR.tp_allreduce_seconds(16 * MiB, 4, link, 8e-6, fabric=h100) > KR.tp_allreduce_seconds(
        16 * MiB, 4, link, 8e-6)
    # vLLM refuses its custom kernel on more than two PCIe-only GPUs: 4 L40S reduce with NCCL
    l40s = load_accelerator("l40s")
    assert KR.tp_allreduce_seconds(4096, 4, l40s.scale_up_bandwidth, 24e-6, fabric=l40s) == pytest.approx(
        KR.tp_allreduce_seconds(4096, 4, l40s.scale_up_bandwidth, 24e-6, fabric=l40s, custom_max_bytes=0))
    assert KR.tp_allreduce_seconds(2 * MiB, 1, link, 8e-6, fabric=h100) == 0.0


def test_tensorrt_llm_runs_masked_mha_on_a_gqa_cache_until_xqa_became_the_default():
    # v0.9.0's page: XQA kernels 'currently experimental and not enabled by default'; 0.10 enables them
    assert KR.decode_attention_of(parse_release("trtllm==0.9.0")) == "per-query-head"
    assert KR.decode_attention_of(parse_release("trtllm==0.10")) == "grouped"
    assert KR.decode_attention_of(parse_release("vllm==0.3")) == "per-query-head"
    assert KR.decode_attention_of(parse_release("vllm==0.4")) == "grouped"


def test_per_query_head_repeats_run_at_the_dies_rate_on_an_h200():
    """Llama-2-70B (8 KV heads of 128, 80 layers), FP8 KV, 64 sequences of 2,048 cached tokens:
    2 x 8 x 128 x 80 x 2,048 = 335,544,320 B a sequence, 21,474,836,480 B a step read once. Masked
    MHA reads each KV head for its 8 query heads, 7 repeats of which 30% hit L2: 4.9 repeats more.
    On an H100 all at 0.95 x 3.35 TB/s: 5.9 x 21.47e9 / 3.1825e12 = 39.81 ms. The H200 is the same
    die with 4.8 TB/s HBM: the first read at 0.95 x 4.8 TB/s (4.709 ms), the repeats at the H100's
    rate (33.06 ms): 37.77 ms, not 39.81 x 3.35 / 4.8 = 27.78 ms. A grouped kernel (one read) scales
    with the HBM: 6.748 ms and 4.709 ms."""
    from gpuplan.core.serving import kv_cache as K

    spec = load_model("llama-2-70b")
    h100, h200 = load_accelerator("h100-sxm"), load_accelerator("h200-sxm")
    kv_seq = K.kv_layout(spec, 1, 1, 1, 16).bytes_per_sequence(2048)
    assert kv_seq == 335_544_320
    unique = 64 * kv_seq

    def attention(gpu, kernel):
        setup = SU.ServingSetup(W.FORMATS["fp8"], 1, decode_attention=kernel)
        return R.decode_step(spec, W.param_groups(spec), setup, kv_seq, tp=1, pp=1, batch=64, context=2048,
                             bandwidth=gpu.memory_bandwidth, peak=gpu.peak("fp8"), link=None, fabric=gpu).attention_s

    assert attention(h100, "per-query-head") == pytest.approx(5.9 * unique / (3.35e12 * 0.95), rel=1e-9)
    assert attention(h200, "per-query-head") == pytest.approx(
        unique / (4.8e12 * 0.95) + 4.9 * unique / (3.35e12 * 0.95), rel=1e-9)
    assert attention(h200, "per-query-head") == pytest.approx(37.77e-3, rel=1e-3)
    assert attention(h100, "grouped") == pytest.approx(6.748e-3, rel=1e-3)
    assert attention(h200, "grouped") == pytest.approx(4.709e-3, rel=1e-3)
    # parts with no entry keep their own HBM for the repeats (where the L2 share was fitted)
    a100 = load_accelerator("a100-sxm4-80gb")
    assert KR.repeat_read_bandwidth(a100, a100.memory_bandwidth) == a100.memory_bandwidth
    assert KR.repeat_read_bandwidth(None, 4.8e12) == 4.8e12


def test_tensorrt_llm_masked_mha_is_floored_by_the_dies_work_per_query_head():
    """Llama-2-7B (32 heads of 128, 32 layers), FP8 KV, 896 sequences of 192 cached tokens (v0.9.0's
    128 / 128 row): 896 x 192 x 32 x 32 x 128 = 22,548,578,304 query-head elements a step; at 62 ps
    per SM over 132 SMs: 10.592 ms. The cache, 2 x 32 x 128 x 32 x 192 = 50,331,648 B a sequence,
    45,097,156,608 B a step, reads in 45.097e9 / (0.95 x 4.8e12) = 9.890 ms on an H200 (the floor
    binds) and 14.170 ms on an H100 (the read binds). vLLM's kernels and parts without a fitted
    rate (H100 PCIe: 114 SMs) keep the HBM read. The L40S's rate (105 ps x 142 SMs): 16.674 ms."""
    from gpuplan.core.serving import kv_cache as K

    spec = load_model("llama-2-7b")
    kv_seq = K.kv_layout(spec, 1, 1, 1, 16).bytes_per_sequence(192)
    assert kv_seq == 50_331_648

    def attention(gpu_id, engine):
        gpu = load_accelerator(gpu_id)
        setup = SU.ServingSetup(W.FORMATS["fp8"], 1, decode_attention="per-query-head",
                                runtime=SU.Runtime(engine=engine, version=(0, 9, 0)))
        return R.decode_step(spec, W.param_groups(spec), setup, kv_seq, tp=1, pp=1, batch=896, context=192,
                             bandwidth=gpu.memory_bandwidth, peak=gpu.peak("fp8"), link=None, fabric=gpu).attention_s

    assert attention("h200-sxm", "trtllm") == pytest.approx(22_548_578_304 * 62e-12 / 132, rel=1e-9)
    assert attention("h200-sxm", "trtllm") == pytest.approx(10.592e-3, rel=1e-3)
    assert attention("h100-sxm", "trtllm") == pytest.approx(14.170e-3, rel=1e-3)
    assert attention("h200-sxm", "vllm") == pytest.approx(9.890e-3, rel=1e-3)
    assert attention("h100-pcie", "trtllm") == attention("h100-pcie", "vllm")
    assert KR.masked_mha_work_seconds(load_accelerator("h100-pcie"), "trtllm", 1e9) is None
    assert KR.masked_mha_work_seconds(load_accelerator("l40s"), "trtllm", 22_548_578_304) == pytest.approx(
        16.674e-3, rel=1e-3)


def test_a_prompt_of_one_tile_row_leaves_part_of_the_shorter_gemm_bound_exposed():
    """Llama-2-7B FP16 on an A100, 128 tokens: the GEMMs stream 13,214,687,232 B (6.476e9 layer
    weights + the 32,000 x 4,096 LM head, 2 B each) at 0.85 x 2.039 TB/s = 7.625 ms, and do
    128 x 2 x 6.476e9 + 2 x 32,000 x 4,096 FLOPs at 0.80 x 312 TFLOP/s = 6.643 ms. One 128-row tile
    hides only a quarter of the shorter: 7.625 + 0.75 x 6.643 = 12.607 ms. At 2,048 tokens the share
    falls to 0.75 x 128 / 2,048 = 0.046875: 106.27 + 0.046875 x 7.625 = 106.63 ms."""
    spec, gpu = load_model("llama-2-7b"), load_accelerator("a100-sxm4-80gb")
    setup = SU.ServingSetup(W.FORMATS["fp16"], 2)
    common = dict(tp=1, pp=1, bandwidth=gpu.memory_bandwidth, peak=gpu.peak("fp16"), link=None)
    short = R.prefill_step(spec, W.param_groups(spec), setup, prompt=128, **common)
    assert short.memory_s == pytest.approx(13_214_687_232 / (2.039e12 * 0.85), rel=1e-6)
    assert short.compute_s == pytest.approx((128 * 2 * 6_476_005_376 + 2 * 32000 * 4096) / (312e12 * 0.8), rel=1e-6)
    assert short.exposed == 0.75
    assert short.gemm_s == pytest.approx(12.607e-3, rel=1e-4)
    long = R.prefill_step(spec, W.param_groups(spec), setup, prompt=2048, **common)
    assert long.exposed == pytest.approx(0.046875)
    assert long.gemm_s == pytest.approx(106.63e-3, rel=1e-4)
    # the exposure is a setting: 0 gives the plain roofline max(streaming, math)
    plain = R.prefill_step(spec, W.param_groups(spec), SU.ServingSetup(
        W.FORMATS["fp16"], 2, efficiency=SU.Efficiency(ridge_exposed=0.0)), prompt=128, **common)
    assert plain.gemm_s == pytest.approx(short.memory_s)


def test_draft_steps_run_inside_the_engine_step_and_pay_no_scheduler_time():
    """vLLM 0.9 schedules between engine steps (0.6 ms, kernels.host_step_seconds); an EAGLE step
    is one scheduled verify step plus k draft steps run by the proposer inside it. Llama-3-8B on an
    H100 at batch 1, k = 2: the host time is counted once, on the verify step, and each draft step
    (replayed from a CUDA graph from 0.9.0, kernels.drafter_runs_eager) costs its bytes: one Llama
    layer (218,112,000 weights) + the shared 128,256 x 4,096 LM head in bf16, 1.486e9 B at 0.85 x
    3.35 TB/s = 0.52 ms. Every vLLM CUDA-graph step also pays its small-kernel floor (46.93 us a layer,
    graph_floor.VLLM_GRAPH_LAYER_S; GPU time): 32 on the verify step with its 23 kernels outside the layers at 4.267 us
    (1.6 ms), 1 layer on each draft step (no scheduler, no input preparation)."""
    from dataclasses import replace

    from gpuplan.core.serving import kv_cache as K
    from gpuplan.core.serving.speculative import speculation

    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    runtime = SU.Runtime(engine="vllm", version=(0, 9, 0))
    plain = SU.ServingSetup(W.FORMATS["bf16"], 2, runtime=runtime)
    eagle = replace(plain, speculation=speculation("eagle", 2, 0.568, spec))
    kv = K.kv_layout(spec, 2, 1, 1, 16).bytes_per_sequence(512)
    common = dict(tp=1, pp=1, batch=1, context=512, bandwidth=gpu.memory_bandwidth, peak=gpu.peak("bf16"),
                  link=None)
    step = R.decode_step(spec, W.param_groups(spec), eagle, kv, **common)
    assert step.host_s == pytest.approx(0.6e-3)  # the scheduler, once
    kernel = 32 * 50e-6 / (32 * 11 + 23)  # graph_floor.GRAPH_KERNEL_S
    assert step.kernel_floor_s == pytest.approx((32 * 11 + 23) * kernel)  # GPU time of the graph step, not host time
    draft = R.decode_step(eagle.speculation.draft, W.param_groups(eagle.speculation.draft), plain, 0.0,
                          scheduled=False, **common)
    assert draft.host_s == 0.0 and draft.kernel_floor_s == pytest.approx(11 * kernel)  # one graph layer, no scheduler
    assert step.draft_s == pytest.approx(2 * draft.total, rel=0.05)
    assert step.draft_s / 2 == pytest.approx(1.486e9 / (gpu.memory_bandwidth * 0.85) + 11 * kernel, rel=0.05)


def test_a_falcon_parallel_block_is_reduced_once_where_the_engine_code_does():
    """Falcon's attention and MLP read the same normalised input; vLLM's falcon.py and TensorRT-LLM's
    checkpoint-config FalconDecoderLayer add their row-parallel partial sums and all-reduce once a
    layer, TensorRT-LLM's first Falcon code (v0.5 / v0.6.1 here) inside each RowLinear (twice).
    Falcon-40B (60 layers) at TP 4 on H100s, one decode step of 64 tokens under trtllm==0.9 (NCCL
    only): 60 all-reduces of 64 x 8,192 x 2 B = 1 MiB, half of v0.6.1's 120; Llama keeps 2 a layer."""
    falcon, llama = load_model("falcon-40b"), load_model("llama-2-70b")
    assert falcon.parallel_residual and falcon.model_type == "falcon"
    assert R.forward_allreduces(falcon, parse_release("trtllm==0.9.0")) == 60
    assert R.forward_allreduces(falcon, parse_release("trtllm==0.6.1")) == 120
    assert R.forward_allreduces(falcon, parse_release("vllm==0.19")) == 60
    assert R.forward_allreduces(falcon, parse_release("sglang==0.5.3")) == 120  # its code not read
    assert R.forward_allreduces(falcon) == 120
    assert R.forward_allreduces(llama, parse_release("trtllm==0.9.0")) == 160
    h100 = load_accelerator("h100-sxm")
    one = KR.tp_allreduce_seconds(64 * 8192 * 2, 4, h100.scale_up_bandwidth, 8e-6, fabric=h100, custom_max_bytes=0)
    comm = {}
    for release in ("trtllm==0.9.0", "trtllm==0.6.1"):
        r = parse_release(release)
        setup = SU.ServingSetup(W.FORMATS["fp16"], 2, runtime=SU.Runtime(engine=r.engine, version=r.version))
        work = R.StepWork(1.0, 1.0, tokens=64, sequences=64)
        comm[release] = R.step_time(work, falcon, setup, tp=4, pp=1, bandwidth=h100.memory_bandwidth,
                                    peak=h100.peak("fp16"), link=h100.scale_up_bandwidth, fabric=h100).comm_s
    assert comm["trtllm==0.9.0"] == pytest.approx(60 * one, rel=1e-9)
    assert comm["trtllm==0.6.1"] == pytest.approx(120 * one, rel=1e-9)


def test_allreduce_assumption_describes_the_layout_the_time_uses():
    """The printed TP all-reduce is the one core.serving.roofline.step_time takes for the asked tp,
    engine release and GPU: TensorRT-LLM 0.10+'s AUTO workspace is 16 MB at tp <= 2 and 8 MB above
    (CustomAllReduceHelper.max_workspace_size_auto); vLLM's kernel takes 8 MiB (8192 x 1024 B) and
    is refused on more than two PCIe-only GPUs; tp 1 has no all-reduce."""
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    def shown(**kw):
        r = estimate_inference(InferenceInputs(search=False, model="llama-3.1-70b", **kw))
        return r.assumption("tp_allreduce").value

    assert shown(gpu="h100", tp=2, engine="trtllm==0.10.0") == "own kernel up to 16 MB at tp 2, NCCL above"
    assert shown(gpu="h100", tp=4, engine="trtllm==0.10.0") == "own kernel up to 8 MB at tp 4, NCCL above"
    assert shown(gpu="h100", tp=4, engine="trtllm==0.9.0") == "NCCL at every size"
    # vLLM 0.19 on an H100: the memory report's rule (fused / custom / symmetric memory below 32 MiB at tp 4,
    # releases.own_allreduce_max_bytes; tests/test_allreduce_one_rule.py)
    assert shown(gpu="h100", tp=4, engine="vllm==0.19") == "own kernels below 32 MiB at tp 4, NCCL from there"
    assert shown(gpu="l40s", tp=4, engine="vllm==0.19").startswith("NCCL at every size (the own kernel is refused")
    assert shown(gpu="l40s", tp=2, engine="vllm==0.19").startswith("own kernel up to 8 MiB at tp 2, NCCL above; "
                                                                    "NCCL's time x 1.44 on PCIe-only GPUs")
    assert shown(gpu="h100", tp=1, quantization="int4") == "none (tp 1)"
    # TensorRT-LLM's AUTO takes NCCL on any PCIe-only group (no NVLink), two GPUs included
    assert shown(gpu="l40s", tp=2, engine="trtllm==0.10.0").startswith("NCCL at every size (the own kernel is "
                                                                        "refused on 2 PCIe-only GPUs)")


def test_custom_allreduce_limit_is_the_one_the_step_uses():
    """16 MB at tp 2 under TensorRT-LLM 0.10: a 12 MB message (tp 2, 768 tokens x 8,192 x 2 B) runs the
    own kernel, so the step's all-reduce time is the custom formula, not NCCL's."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.serving import kernels as KR
    from gpuplan.core.serving.releases import parse_release

    h100 = load_accelerator("h100")
    release = parse_release("trtllm==0.10.0")
    assert KR.custom_allreduce_limit(release, 2, h100) == 16e6
    assert KR.custom_allreduce_limit(release, 4, h100) == 8e6
    assert KR.custom_allreduce_limit(release, 1, h100) == 0.0
    assert KR.custom_allreduce_limit(parse_release("vllm==0.19"), 4, load_accelerator("l40s")) == 0.0
    assert KR.custom_allreduce_limit(release, 2, h100, given=0.0) == 0.0
    assert KR.custom_allreduce_limit(release, 2, load_accelerator("l40s")) == 0.0  # AUTO: no NVLink -> NCCL
    assert KR.custom_allreduce_limit(parse_release("vllm==0.19"), 2, load_accelerator("l40s")) == 8 * 2**20
    # 12 MB at tp 2: ring 2 x 1/2 x 12 MB at 0.8 x 450 GB/s per direction (h100-sxm.toml: 900 GB/s both
    # directions; kernels.COLLECTIVE_EFFICIENCY 0.8) + a 10 us latency = 10 + 33.333 = 43.333 us
    link = h100.scale_up_bandwidth
    own = KR.tp_allreduce_seconds(12e6, 2, link, 10e-6, fabric=h100, custom_max_bytes=16e6)
    assert own == pytest.approx(10e-6 + 2 * (2 - 1) / 2 * 12e6 / (900e9 / 2 * 0.8), rel=1e-9)
    nccl = KR.tp_allreduce_seconds(12e6, 2, link, 10e-6, fabric=h100, custom_max_bytes=8e6)
    assert nccl != pytest.approx(own)


def test_nccl_between_pcie_only_gpus_is_slowed_by_the_fitted_factor():
    """NCCL between PCIe-only GPUs (L40S) takes PCIE_NCCL_SLOWDOWN x core.comm's figure (fitted on
    TensorRT-LLM v0.9.0's four L40S tp 4 / 8 first-token rows); NVLink GPUs keep core.comm's."""
    from gpuplan.core.comm.collectives import collective_seconds
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.catalog import load_accelerator

    assert KR.PCIE_NCCL_SLOWDOWN == 1.44
    l40s, h100 = load_accelerator("l40s"), load_accelerator("h100")
    message = 2048 * 8192 * 2  # one 2,048-token prefill all-reduce of Llama-2-70B, 33.6 MB
    base = float(collective_seconds("all_reduce", message, cluster_for(l40s).group(4)))
    # by hand, NCCL's ring / Simple on 4 PCIe GPUs (core.comm.collectives BASE_US / HW_US, from NCCL
    # src/graph/tuning.cc): latency 8.4 us + 2 x 3 steps x 5.7 us (PCI ring Simple) = 42.6 us; bus 64 / 2 GB/s
    # per direction (l40s.toml, PCIe Gen4 x16) x 0.80 (topology.DEFAULT_SCALE_UP_EFFICIENCY) = 25.6 GB/s;
    # 2 x 3/4 x 33,554,432 B / 25.6 GB/s = 1,966.08 us: base = 2,008.68 us (exact arithmetic)
    by_hand = (8.4 + 2 * 3 * 5.7) * 1e-6 + 2 * 3 / 4 * message / (64e9 / 2 * 0.80)
    assert base == pytest.approx(by_hand, rel=1e-9)
    assert KR.tp_allreduce_seconds(message, 4, l40s.scale_up_bandwidth, 0.0, fabric=l40s) == \
        pytest.approx(1.44 * by_hand, rel=1e-9)
    # 25.6 GB/s of bus bandwidth modelled -> 17.40 GB/s: 2 x 3/4 x 33.6 MB / (1.44 x 2,008.68 us)
    assert 2 * 3 / 4 * message / (1.44 * base) / 1e9 == pytest.approx(17.40, abs=0.005)
    nv = float(collective_seconds("all_reduce", message, cluster_for(h100).group(4)))
    assert KR.tp_allreduce_seconds(message, 4, h100.scale_up_bandwidth, 0.0, fabric=h100, custom_max_bytes=0) == \
        pytest.approx(nv)


def test_eagle_drafter_runs_eager_before_vllm_0_9():
    """vLLM 0.9.0's notes list 'torch.compile & cudagraph to EAGLE (#17211)': before it the V1
    EAGLE head ran without CUDA graphs, its draft forwards issued from Python; from 0.9.0 the draft
    steps replay graphs. Llama-3-8B, k = 2, batch 1 on an H100: 0.8.3's two draft forwards are issued
    as 42 launches (spec_runner.draft_segment_seconds: the segment's 11, 2 x 9 of the head's layer, 13 of
    the second step) at 41.96 us (first_token_path.EAGER_HOST_PER_LAUNCH_S) = 1.762 ms, more than their
    GPU work, so they take that; 0.9.0's are their GPU time (2 x (522 us streaming the layer and the LM
    head + 50 us a graph layer) + the fc's 47 us = 1.196 ms)."""
    from dataclasses import replace as dc_replace

    from gpuplan.core.serving import kv_cache as K
    from gpuplan.core.serving import weights as W
    from gpuplan.core.serving.releases import parse_release
    from gpuplan.core.serving.speculative import speculation

    assert KR.drafter_runs_eager(parse_release("vllm==0.8.3"), "eagle")
    assert not KR.drafter_runs_eager(parse_release("vllm==0.9.0"), "eagle")
    assert not KR.drafter_runs_eager(parse_release("vllm==0.8.3"), "ngram")
    assert not KR.drafter_runs_eager(parse_release("sglang==0.4.9"), "eagle")
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100")

    def draft_seconds(label: str) -> float:
        release = parse_release(label)
        plain = SU.ServingSetup(W.FORMATS["bf16"], 2, runtime=SU.Runtime(engine=release.engine,
                                                                        version=release.version))
        setup = dc_replace(plain, speculation=speculation("eagle", 2, 0.57, spec))
        kv = K.kv_layout(spec, 2, 1, 1, 16).bytes_per_sequence(512)
        step = R.decode_step(spec, W.param_groups(spec), setup, kv, tp=1, pp=1, batch=1, context=512,
                             bandwidth=gpu.memory_bandwidth, peak=gpu.peak("bf16"), link=None)
        return step.draft_s

    from gpuplan.core.serving.first_token_path import EAGER_HOST_PER_LAUNCH_S

    assert EAGER_HOST_PER_LAUNCH_S == pytest.approx(41.96e-6, rel=1e-3)
    assert draft_seconds("vllm==0.8.3") == pytest.approx(42 * EAGER_HOST_PER_LAUNCH_S, rel=1e-9)
    assert draft_seconds("vllm==0.9.0") == pytest.approx(2 * (522.2e-6 + 50e-6) + 47.1e-6, rel=0.005)
