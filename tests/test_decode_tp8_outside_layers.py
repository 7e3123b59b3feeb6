"""A decode step outside its decoder layers (core/serving/outside_layers.py, outside_kernels.py, graph_floor.py; issue
38 wave 17, review w17 ME): SGLang 0.5.6's forward-stream kernels (20 at TP > 1, 18 at TP 1; prepare_for_decode's 5
more only without the overlap scheduler), vLLM 0.10.1 V1's 23, at the floor's rate a kernel, 1.6 ms / (32 x 11 + 23)
(the fit rows' step, unchanged by construction), and the embedding's all-reduce and the LM head's logits all-gather
of both engines at TP > 1. Numbers worked by hand."""

from __future__ import annotations

import pytest

from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import outside_layers as OL
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs

SGLANG, VLLM, TRTLLM = parse_release("sglang==0.5.6"), parse_release("vllm==0.10.1"), parse_release("trtllm==1.0")
# SGLang's forward stream (SGLANG_ON_PATH): future ids 1, positions 1, 5 buffer copies, embedding 3 (mask, lookup,
# masked_fill; 1 at TP 1), final norm 1, LM head 1, logits to fp32 1, argmax 1, store_to_map 1, copy to host 1 = 16
# (14 at TP 1), + FlashInfer's 4 metadata kernels: 20 (18 at TP 1)
KERNELS_TP8, KERNELS_TP1 = 20, 18
OFF_PATH = 3 + 2  # KV slot allocation + seq_lens + 1 on the default stream (off the path under overlap)
# vLLM 0.10.1 V1 (VLLM_V1_OUTSIDE): 2 + 4 + 3 + 1 + 1 (FA3 metadata) + 1 + 1 + 1 + 1 + 8 (sampler) = 23
VLLM_KERNELS = 23
PER_KERNEL = 32 * 50e-6 / (32 * 11 + 23)  # the fitted 50 us x 32 layers over the fit rows' 375 kernels = 4.2667 us
LAYER = 11 * PER_KERNEL  # 46.933 us a dense layer


def test_kernel_count_by_tp_engine_and_overlap():
    assert OL.outside_layer_kernels(SGLANG, 8) == KERNELS_TP8
    assert OL.outside_layer_kernels(SGLANG, 1) == KERNELS_TP1
    assert OL.outside_layer_kernels(SGLANG, 8, overlap=False) == KERNELS_TP8 + OFF_PATH
    assert OL.outside_layer_kernels(VLLM, 8) == OL.outside_layer_kernels(VLLM, 1) == VLLM_KERNELS
    assert OL.outside_layer_kernels(parse_release("vllm==0.2.7"), 1) == VLLM_KERNELS  # V0 takes V1's count
    assert OL.outside_layer_kernels(TRTLLM, 8) == 0
    # the gathered logits' movedim + reshape copies at more than one row, at TP > 1 only (a view at one row)
    assert OL.outside_layer_kernels(SGLANG, 8, rows=2) == KERNELS_TP8 + 1
    assert OL.outside_layer_kernels(SGLANG, 1, rows=2) == KERNELS_TP1
    assert OL.outside_layer_kernels(VLLM, 4, rows=16) == VLLM_KERNELS + 1


def test_overlap_is_off_with_speculation_and_pipeline_stages():
    assert OL.overlapped(SGLANG, 1, False)
    assert not OL.overlapped(SGLANG, 1, True) and not OL.overlapped(SGLANG, 2, False)


def _outside(model="llama-3.1-70b", gpu="a100", **kw):
    """(kernels, seconds a kernel) outside the layers of a one-token decode step of SGLang 0.5.6 at TP 8, as
    roofline.step_time reads them (OL.graph_step_outside; their product is the step's outside floor)."""
    from gpuplan.jobs.inference.resolve import resolve_plan

    plan = resolve_plan(InferenceInputs(search=False, model=model, gpu=gpu, tp=8, engine="sglang==0.5.6", **kw))
    return OL.graph_step_outside(plan.spec, plan.setup, plan.gpu, 8, 1, 1, 1)


def test_floor_seconds_by_hand():
    """20 x 4.2667 us = 85.33 us; a given --graph-layer-us 33 over a dense layer's 11 kernels -> 3 us a kernel, 60 us
    (the step's floor: 80 x 33 + 20 x 3 us = 2.7 ms); over a Qwen3 MoE layer's 15 -> 2.2 us a kernel (review N4);
    0 -> 0."""
    assert PER_KERNEL == pytest.approx(4.26667e-6, rel=1e-5)
    kernels, per_kernel = _outside()
    assert kernels == KERNELS_TP8 and kernels * per_kernel == pytest.approx(85.3333e-6, rel=1e-5)
    kernels, per_kernel = _outside(graph_layer_us=33.0)
    assert kernels == KERNELS_TP8 and kernels * per_kernel == pytest.approx(60e-6, rel=1e-12)
    floor = _answer("sglang==0.5.6", graph_layer_us=33.0).value("kernel_floor_per_step")
    assert floor == pytest.approx(80 * 33e-6 + 20 * 3e-6, rel=1e-12)
    assert OL.kernel_seconds(33e-6, lambda: 15) == pytest.approx(2.2e-6, rel=1e-12)
    assert OL.kernel_seconds(0.0, lambda: 11) == 0.0


def test_comm_is_one_allreduce_plus_nccl_logits_gather_for_sglang_and_vllm():
    """Llama-3.1-70B at TP 8 on A100s, one decode token: one more all-reduce of the layers' message, and NCCL's
    all-gather of 1 x 128,256 bf16 logits (256,512 bytes produced), under SGLang and vLLM alike (review S2); nothing
    at TP 1 or under TensorRT-LLM."""
    a100 = load_accelerator("a100")
    spec = load_model("llama-3.1-70b")
    gather = float(collective_seconds("all_gather", 128_256 * 2.0, cluster_for(a100).group(8)))
    assert 1e-6 < gather < 50e-6  # an NVLink NCCL all-gather of 256 KB: a few to tens of us
    for release in (SGLANG, VLLM, parse_release("vllm==0.2.7")):
        assert OL.outside_layer_comm_seconds(release, spec, 8, 8.1e-6, 1, a100) == pytest.approx(8.1e-6 + gather,
                                                                                                rel=1e-12)
        assert OL.outside_layer_comm_seconds(release, spec, 1, 8.1e-6, 1, a100) == 0.0
    assert OL.outside_layer_comm_seconds(TRTLLM, spec, 8, 8.1e-6, 1, a100) == 0.0
    assert OL.logits_rows(961, 1, prefill=True) == 1 and OL.logits_rows(4, 4, prefill=False) == 4


def _answer(engine, model="llama-3.1-70b", gpu="a100", tp=8, **kw):
    return estimate_inference(InferenceInputs(search=False, model=model, gpu=gpu, tp=tp, engine=engine, **kw))


def test_the_fit_rows_step_is_unchanged_by_construction():
    """vLLM 0.10.1, Llama-3.1-8B, TP 1 on an H100 (vllm PR 23197's fit rows): 32 x 46.93 + 23 x 4.267 us = 1.6 ms,
    the 32 x 50 us it was fitted as."""
    answer = _answer("vllm==0.10.1", "llama-3.1-8b", "h100", 1)
    assert answer.value("kernel_floor_per_step") == pytest.approx(32 * 50e-6, rel=1e-12)
    assert "23 kernels outside the layers x 4.27 us" in answer.line("kernel_floor_per_step").formula


def test_decode_steps_on_a100_by_hand():
    """Llama-3.1-70B, 8 x A100, batch 1: SGLang's floor 80 x 46.933 us + 20 x 4.267 us = 3.8400 ms, vLLM's 80 x
    46.933 + 23 x 4.267 us = 3.8528 ms; SGLang's all-reduce part 160 + 1 all-reduces of 16 KiB (8 us + 2 x 7/8 x
    16,384 B / (300 GB/s x 0.8) = 8.119 us each) + the logits all-gather."""
    sg, vl = _answer("sglang==0.5.6"), _answer("vllm==0.10.1")
    assert sg.value("kernel_floor_per_step") == pytest.approx(80 * LAYER + KERNELS_TP8 * PER_KERNEL, rel=1e-9)
    assert vl.value("kernel_floor_per_step") == pytest.approx(80 * LAYER + VLLM_KERNELS * PER_KERNEL, rel=1e-9)
    one = 8e-6 + 2 * 7 / 8 * 16_384 / (300e9 * 0.8)
    gather = float(collective_seconds("all_gather", 128_256 * 2.0, cluster_for(load_accelerator("a100")).group(8)))
    assert sg.value("allreduce_per_token") == pytest.approx(161 * one + gather, rel=1e-6)
    assert "20 kernels outside the layers x 4.27 us" in sg.line("kernel_floor_per_step").formula
    assert "logits all-gather" in vl.line("allreduce_per_token").formula


def test_no_outside_note_without_a_floor():
    """--graph-layer-us 0, or an eager step (batch 300 past SGLang's cuda_graph_max_bs 256 on one H100): no '+ N
    kernels outside the layers x 0.00 us' (review N1)."""
    for answer in (_answer("sglang==0.5.6", graph_layer_us=0.0),
                   _answer("sglang==0.5.6", "llama-3.1-8b", "h100", 1, batch=300, context=1024)):
        line = answer.line("kernel_floor_per_step")
        assert line.value == 0.0 and "outside the layers" not in line.formula


def test_a_proposers_draft_step_keeps_the_collectives_not_the_scheduler_kernels():
    """A step that is not scheduled (a proposer's draft step: it replays the drafter's graph, no input preparation
    between) pays the layers' floor and the two collectives but not the 20 kernels: exactly 20 x 4.267 us less."""
    from gpuplan.core.serving import roofline as R
    from gpuplan.jobs.inference.resolve import resolve_plan

    plan = resolve_plan(InferenceInputs(search=False, model="llama-3.1-70b", gpu="a100", tp=8, engine="sglang==0.5.6"))
    keywords = R.gpu_keywords(plan.gpu, plan.setup)

    def step(scheduled, pp=1):
        return R.step_time(R.StepWork(1e9, 1e9, 0.0, 0.0, 1, 1, scheduled), plan.spec, plan.setup, tp=8, pp=pp,
                           **keywords)

    scheduled, draft = step(True), step(False)
    assert scheduled.kernel_floor_s - draft.kernel_floor_s == pytest.approx(KERNELS_TP8 * PER_KERNEL, rel=1e-9)
    assert draft.kernel_floor_s == pytest.approx(80 * LAYER, rel=1e-12)
    assert scheduled.comm_s == draft.comm_s
    # at PP 2 the overlap scheduler is off: prepare_for_decode's 5 kernels join the path
    assert step(True, pp=2).kernel_floor_s - scheduled.kernel_floor_s == pytest.approx(OFF_PATH * PER_KERNEL, rel=1e-9)


def test_the_sm100_paths_count_their_own_metadata():
    """DeepSeek-V3 (R1-0528 shape) FP8 on B200 (trtllm_mla: 1 metadata kernel for FlashInfer's 4) 17 kernels;
    gpt-oss-120b MXFP4 on B200 (trtllm_mha: 6) 22; Qwen3-235B-A22B BF16 on B200 and Llama-3.1-70B on A100 (FlashInfer)
    20. Their paged allocation (4) is prepare_for_decode's: off the path under overlap, on it without (27 / 31)."""
    b200, a100 = load_accelerator("b200"), load_accelerator("a100")
    path = {name: OL.decode_backend(load_model(model), SGLANG, gpu, fmt) for name, model, gpu, fmt in (
        ("deepseek", "deepseek-v3", b200, "fp8"), ("gpt-oss", "gpt-oss-120b", b200, "mxfp4"),
        ("qwen3", "qwen3-235b-a22b", b200, "bf16"), ("llama", "llama-3.1-70b", a100, "bf16"))}
    assert path == {"deepseek": "trtllm_mla", "gpt-oss": "trtllm_mha", "qwen3": "flashinfer", "llama": "flashinfer"}
    backends = ("flashinfer", "trtllm_mla", "trtllm_mha")
    assert {b: OL.outside_layer_kernels(SGLANG, 8, b) for b in backends} == {
        "flashinfer": 20, "trtllm_mla": 17, "trtllm_mha": 22}
    assert {b: OL.outside_layer_kernels(SGLANG, 8, b, overlap=False) for b in backends} == {
        "flashinfer": 25, "trtllm_mla": 26, "trtllm_mha": 31}
    assert _outside("gpt-oss-120b", "b200") == pytest.approx((22, PER_KERNEL), rel=1e-12)  # the step's: trtllm_mha


@pytest.mark.parametrize("rows", [1, 7, 256, 1024, 1500, 2.5])
def test_the_vectorised_gathers_equal_the_scalar_ones(rows):
    """_all_gather_seconds reads whole rows up to 1,024 from one vectorised pass; the same seconds as collective_seconds
    asked alone (past 1,024 rows and for a fraction it asks alone)."""
    a100 = load_accelerator("a100")
    alone = float(collective_seconds("all_gather", rows * 128_256 * 2.0, cluster_for(a100).group(8)))
    assert OL._all_gather_seconds(rows, 128_256 * 2, 8, a100) == pytest.approx(alone, rel=1e-12)
