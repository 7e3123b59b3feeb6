"""SGLang 0.5.6's decode step outside its decoder layers (core/serving/outside_layers.py, issue 38 wave 17):
24 small kernels at TP > 1 (22 at TP 1) at the small-kernel floor's rate a kernel, and the vocabulary-parallel
embedding's all-reduce and the LM head's logits all-gather; other engines unchanged. Numbers worked by hand."""

from __future__ import annotations

import pytest

from gpuplan.core.comm.collectives import collective_seconds
from gpuplan.core.comm.topology import cluster_for
from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import outside_layers as OL
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs

SGLANG = parse_release("sglang==0.5.6")
# the code's count (SGLANG_OUTSIDE_LAYERS): host-launched 1 + 3 + 2 + 1 + 5 + 4 + 1 + 1 + 1 = 19, in the
# graph 3 (embedding: mask, lookup, masked_fill) + 1 (final norm) + 1 (LM head) = 5; at TP 1 no mask, no fill
KERNELS_TP8, KERNELS_TP1 = 24, 22
PER_KERNEL = 50e-6 / 11  # the floor's 50 us a dense layer of 11 kernels


def test_kernel_count_by_tp_and_engine():
    assert OL.outside_layer_kernels(SGLANG, 8) == KERNELS_TP8
    assert OL.outside_layer_kernels(SGLANG, 1) == KERNELS_TP1
    assert OL.outside_layer_kernels(parse_release("vllm==0.10.1"), 8) == 0
    assert OL.outside_layer_kernels(parse_release("trtllm==1.0"), 8) == 0


def test_floor_seconds_by_hand():
    """24 x 50 / 11 us = 109.09 us; a given --graph-layer-us 33 (a dense layer's) -> 24 x 3 us = 72 us."""
    assert OL.outside_layer_floor_seconds(SGLANG, 8, None) == pytest.approx(109.0909e-6, rel=1e-5)
    assert OL.outside_layer_floor_seconds(SGLANG, 8, 33e-6) == pytest.approx(72e-6, rel=1e-12)
    assert OL.outside_layer_floor_seconds(SGLANG, 8, 0.0) == 0.0


def test_comm_is_one_allreduce_plus_nccl_logits_gather():
    """Llama-3.1-70B at TP 8 on A100s, one decode token: one more all-reduce of the layers' message, and NCCL's
    all-gather of 1 x 128,256 bf16 logits (256,512 bytes produced); nothing at TP 1 or under vLLM."""
    a100 = load_accelerator("a100")
    spec = load_model("llama-3.1-70b")
    gather = float(collective_seconds("all_gather", 128_256 * 2.0, cluster_for(a100).group(8)))
    assert 1e-6 < gather < 50e-6  # an NVLink NCCL all-gather of 256 KB: a few to tens of us
    got = OL.outside_layer_comm_seconds(SGLANG, spec, 8, 8.1e-6, 1, a100)
    assert got == pytest.approx(8.1e-6 + gather, rel=1e-12)
    assert OL.outside_layer_comm_seconds(SGLANG, spec, 1, 8.1e-6, 1, a100) == 0.0
    assert OL.outside_layer_comm_seconds(parse_release("vllm==0.10.1"), spec, 8, 8.1e-6, 1, a100) == 0.0
    assert OL.logits_rows(961, 1, prefill=True) == 1 and OL.logits_rows(4, 4, prefill=False) == 4


def _answer(engine):
    return estimate_inference(InferenceInputs(search=False, model="llama-3.1-70b", gpu="a100", tp=8, engine=engine))


def test_sglang_decode_step_on_a100_by_hand():
    """Llama-3.1-70B, 8 x A100, SGLang 0.5.6, batch 1: the floor 80 layers x 50 us + 109.09 us = 4.1091 ms (it was
    4.00 ms); the all-reduce part 160 + 1 all-reduces of 16 KiB (8 us + 2 x 7/8 x 16,384 B / (300 GB/s x 0.8) =
    8.119 us each) + the logits all-gather; vLLM's answer keeps 4.00 ms and 160 all-reduces' worth."""
    sg, vl = _answer("sglang==0.5.6"), _answer("vllm==0.10.1")
    assert sg.value("kernel_floor_per_step") == pytest.approx(80 * 50e-6 + KERNELS_TP8 * PER_KERNEL, rel=1e-9)
    assert vl.value("kernel_floor_per_step") == pytest.approx(80 * 50e-6, rel=1e-9)
    one = 8e-6 + 2 * 7 / 8 * 16_384 / (300e9 * 0.8)
    gather = float(collective_seconds("all_gather", 128_256 * 2.0, cluster_for(load_accelerator("a100")).group(8)))
    assert sg.value("allreduce_per_token") == pytest.approx(161 * one + gather, rel=1e-6)
    assert "24 kernels outside the layers x 4.55 us" in sg.line("kernel_floor_per_step").formula
    assert "outside the layers" not in vl.line("kernel_floor_per_step").formula


def test_a_proposers_draft_step_keeps_the_collectives_not_the_scheduler_kernels():
    """A step that is not scheduled (a proposer's draft step: it replays the drafter's graph, no input preparation
    between) pays the layers' floor and the two collectives but not the 24 kernels: exactly 24 x 50 / 11 us less."""
    from gpuplan.core.serving import roofline as R
    from gpuplan.jobs.inference.resolve import resolve_plan

    plan = resolve_plan(InferenceInputs(search=False, model="llama-3.1-70b", gpu="a100", tp=8, engine="sglang==0.5.6"))
    keywords = R.gpu_keywords(plan.gpu, plan.setup)

    def step(scheduled):
        return R.step_time(R.StepWork(1e9, 1e9, 0.0, 0.0, 1, 1, scheduled), plan.spec, plan.setup, tp=8, pp=1,
                           **keywords)

    scheduled, draft = step(True), step(False)
    assert scheduled.kernel_floor_s - draft.kernel_floor_s == pytest.approx(KERNELS_TP8 * PER_KERNEL, rel=1e-9)
    assert draft.kernel_floor_s == pytest.approx(80 * 50e-6, rel=1e-12)
    assert scheduled.comm_s == draft.comm_s


def test_the_sm100_paths_count_their_own_metadata_and_paged_allocation():
    """DeepSeek-V3 (R1-0528 shape) FP8 on B200 (trtllm_mla: 1 metadata kernel for FlashInfer's 4, + 4 of the page-64 allocation) 25
    kernels; gpt-oss-120b MXFP4 on B200 (trtllm_mha: 6 metadata + 4 allocation) 30; Qwen3-235B-A22B BF16 on B200 and
    Llama-3.1-70B on A100 (FlashInfer, page size 1) 24. Their floors: 25 / 30 x 50 / 11 us = 113.6 / 136.4 us."""
    b200, a100 = load_accelerator("b200"), load_accelerator("a100")
    path = {name: OL.decode_backend(load_model(model), SGLANG, gpu, fmt) for name, model, gpu, fmt in (
        ("deepseek", "deepseek-v3", b200, "fp8"), ("gpt-oss", "gpt-oss-120b", b200, "mxfp4"),
        ("qwen3", "qwen3-235b-a22b", b200, "bf16"), ("llama", "llama-3.1-70b", a100, "bf16"))}
    assert path == {"deepseek": "trtllm_mla", "gpt-oss": "trtllm_mha", "qwen3": "flashinfer", "llama": "flashinfer"}
    kernels = {backend: OL.outside_layer_kernels(SGLANG, 8, backend) for backend in ("flashinfer", "trtllm_mla", "trtllm_mha")}
    assert kernels == {"flashinfer": 24, "trtllm_mla": 25, "trtllm_mha": 30}
    assert OL.outside_layer_floor_seconds(SGLANG, 8, None, "trtllm_mha") == pytest.approx(136.3636e-6, rel=1e-5)


@pytest.mark.parametrize("rows", [1, 7, 256, 1024, 1500, 2.5])
def test_the_vectorised_gathers_equal_the_scalar_ones(rows):
    """_all_gather_seconds reads whole rows up to 1,024 from one vectorised pass; the same seconds as collective_seconds
    asked alone (past 1,024 rows and for a fraction it asks alone)."""
    a100 = load_accelerator("a100")
    alone = float(collective_seconds("all_gather", rows * 128_256 * 2.0, cluster_for(a100).group(8)))
    assert OL._all_gather_seconds(rows, 128_256 * 2, 8, a100) == pytest.approx(alone, rel=1e-12)
