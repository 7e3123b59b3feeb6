"""core/serving/layer_kernels.py: the kernels a decoder layer runs, counted from the engines' code, and
the two rules that read them (the CUDA-graph decode floor and the eager issue time). Counts are the
table's (each entry cites its lines); times are worked by hand. Tolerance 0.1% unless stated."""

import pytest
from helpers import serving_cases_by_id

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import graph_floor as GF
from gpuplan.core.serving import kernels as KR
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.validation import inference as VI

REL = 1e-3
KERNEL = 32 * 50e-6 / (32 * 11 + 23)  # graph_floor.GRAPH_KERNEL_S: the fitted 32 x 50 us over 352 + 23 kernels
SGLANG = parse_release("sglang==0.5.6")
PER_LAUNCH = 41.957e-6  # first_token_path: 66.04 ms / 1,574.0 launches
FORWARD = 16.6e-3  # first_token_path: an SGLang prefill forward's host time outside its layers, 23.10 - 6.5 ms


def _gpu(cc):
    return load_accelerator({(10, 0): "b200", (9, 0): "h100"}[cc])


def _case(row_id):
    return serving_cases_by_id()[row_id]


def test_deepseek_b200_counts():
    """DeepSeek-V3 FP8 on sm100: decode graph 14 (attention) + 11 (MoE) = 25 on MoE layers, 14 + 5 = 19 on
    the 3 dense ones: (3 x 19 + 58 x 25) / 61 = 24.705; eager prefill 17 + 12 = 29 / 17 + 5 = 22:
    (3 x 22 + 58 x 29) / 61 = 28.656, + 2 all-reduces at TP 8 = 30.656; past 2,048 tokens the norms leave
    the all-reduces: 32.656."""
    spec, b200 = load_model("deepseek-v3"), _gpu((10, 0))
    assert LK.graph_kernels(spec, SGLANG, b200, "fp8", tp=8) == pytest.approx(1507 / 61, rel=REL)
    assert LK.issued_kernels(spec, SGLANG, b200, "fp8", tokens=961, tp=8) == pytest.approx(1748 / 61 + 2, rel=REL)
    assert LK.issued_kernels(spec, SGLANG, b200, "fp8", tokens=5057, tp=8) == pytest.approx(1748 / 61 + 4, rel=REL)
    # the floor: 4.267 us x 24.705 = 105.4 us a layer (general rule: 4.267 x 14.803 = 63.2 us)
    scale = LK.graph_floor_scale(spec, SGLANG, b200, "fp8", tp=8)
    assert GF.graph_layer_seconds_of(SGLANG, spec) * scale == pytest.approx(KERNEL * 1507 / 61, rel=REL)


def test_other_paths_keep_the_general_rule():
    """Hopper DeepSeek, bf16 DeepSeek on a B200, other engines: no table entry, the general rule."""
    spec = load_model("deepseek-v3")
    general = GF.graph_kernels_per_layer(spec, "sglang")
    assert LK.graph_kernels(spec, SGLANG, _gpu((9, 0)), "fp8") == general
    assert LK.graph_kernels(spec, SGLANG, _gpu((10, 0)), "bf16") == general
    assert LK.graph_kernels(spec, parse_release("vllm==0.11"), _gpu((10, 0)), "fp8") == GF.graph_kernels_per_layer(
        spec, "vllm")


def test_the_confirmations_equal_the_general_rule():
    """The two paths counted to check the general rule: SGLang's Llama layer on an A100 (11) and vLLM
    0.9.1's Qwen3 layer (11 + 2 q/k norms = 13)."""
    assert LK.SGLANG_DENSE_A100.issued == GF.graph_kernels_per_layer(load_model("llama-3.1-70b"), "sglang")
    assert LK.VLLM_091_QWEN3.issued == GF.graph_kernels_per_layer(load_model("qwen3-14b"), "vllm")
    assert LK.issued_kernels(load_model("qwen3-14b"), parse_release("vllm==0.9.1"), tp=1) == 13


def test_gpt_oss_b200():
    """GPT-OSS MXFP4 on sm100: 11 kernels on the graph's path (46.9 us a layer, 36 layers: 1.69 ms, where
    the general rule's 15 would give 2.30 ms); 8 launches + 2 all-reduces eagerly: 36 x 10 x 41.957 us = 15.10 ms, + the
    prefill forward's 16.6 ms outside the layers (first_token_path) = 31.70 ms."""
    spec, b200 = load_model("gpt-oss-120b"), _gpu((10, 0))
    assert LK.graph_kernels(spec, SGLANG, b200, "mxfp4", tp=8) == 11
    assert FT.eager_issue_seconds(SGLANG, spec, fabric=b200, fmt_name="mxfp4", tokens=332, tp=8) == pytest.approx(
        36 * 10 * PER_LAUNCH + FORWARD, rel=REL)


def test_tp_1_counts_the_norms_in_both_rules():
    """Final read 8 SHOULD 1: without TP no all-reduce fuses the two add + RMSNorm kernels, so the graph count
    takes them as the issued count does. GPT-OSS MXFP4 on one B200: graph 11 + 2 = 13 (4.267 x 13 =
    55.5 us a layer, was 46.9 us), issued 8 + 2 = 10; DeepSeek-V3 FP8: 1507 / 61 + 2."""
    spec, b200 = load_model("gpt-oss-120b"), _gpu((10, 0))
    assert LK.graph_kernels(spec, SGLANG, b200, "mxfp4", tp=1) == 13
    assert LK.issued_kernels(spec, SGLANG, b200, "mxfp4", tokens=1, tp=1) == 10
    assert GF.graph_layer_seconds_of(SGLANG, spec) * LK.graph_floor_scale(spec, SGLANG, b200, "mxfp4", 1) == (
        pytest.approx(KERNEL * 13, rel=REL))
    assert LK.graph_kernels(load_model("deepseek-v3"), SGLANG, b200, "fp8", tp=1) == pytest.approx(1507 / 61 + 2,
                                                                                                 rel=REL)
    # the general rule (no table entry) counts its norms already: unchanged by tp
    llama = load_model("llama-3.1-8b")
    assert LK.graph_kernels(llama, SGLANG, b200, tp=1) == LK.graph_kernels(llama, SGLANG, b200, tp=8) == 11


def test_deepseek_rows_move_by_the_count():
    """The held-out DeepSeek-R1-0528 1000/1000 row: TTFT (every prompt <= 961 tokens host-bound) is
    61 x 30.656 x 41.957 us = 78.46 ms + 16.6 ms a forward outside the layers = 95.06 ms, + the server's
    tokenising of the mean prompt, 610.1 tokens x 1.4 us = 0.85 ms (prompt_tokenize): 95.91 ms (153.0 measured:
    -37%); TPOT's floor 61 x 105.4 us = 6.43 ms."""
    row = "sglang056p1-deepseek-r1-0528-tp8-b200-1000-1000-c1"
    assert _case(row + "-ttft")[3] == pytest.approx(61 * (1748 / 61 + 2) * PER_LAUNCH + FORWARD + 610.1 * 1.4e-6,
                                                    rel=2e-3)
    e = next(x for x in VI.reference_measurements()["online"] if x["id"] == row)
    _, decode = VI._served_request(e, 236, 129)
    # + the 17 kernels outside the layers on the trtllm_mla path at TP 8 (overlap: its paged allocation off the
    # path), 4.267 us each (outside_layers, wave 17, review w17 ME)
    assert decode.kernel_floor_s == pytest.approx(KERNEL * 1507 + 17 * KERNEL, rel=REL)


def test_vllm_enforce_eager_decode_is_issue_bound():
    """vLLM 0.9.1 --enforce-eager, Qwen3-14B-AWQ on one A100 PCIe (row vllm20469, held out): a decode step
    issues 40 layers x 13 launches = 520 x 41.957 us = 21.82 ms, above its ~6.6 ms of GPU work, + the
    V1 scheduler's 0.6 ms (kernels.HOST_FIXED_S): 22.42 ms against 20.63 measured (+8.7%; it was
    10.45 ms, -49%, at 80 us a layer of launches)."""
    tpot = _case("vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager-tpot")
    assert tpot[3] == pytest.approx(40 * 13 * PER_LAUNCH + KR.HOST_FIXED_S, rel=2e-3)
    assert FT.runs_issue_bound(parse_release("vllm==0.9.1"), 0)
    assert not FT.runs_issue_bound(parse_release("vllm==0.9.1"), 512)  # graphs: the floor instead
    assert not FT.runs_issue_bound(parse_release("vllm==0.7.3"), 0)  # V0: layer_launch_s
    assert not FT.runs_issue_bound(parse_release("trtllm==0.10"), 0)


def test_validation_basis_puts_the_step_bound_last():
    """Final read 8: the served rows' basis read 'GEMMs 8.9 ms (host (eager issue)) + ...', as if the GEMMs were
    host-bound; the step's bound now closes the basis ('; bound: host (eager issue)'), the GEMMs carry none."""
    for row in ("vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager-tpot",
                "sglang056p1-deepseek-r1-0528-tp8-b200-1000-1000-c1-ttft"):
        basis = _case(row)[4]
        assert basis.endswith("; bound: host (eager issue)"), basis
        assert "(host (eager issue))" not in basis
