"""Attention-core time per token (core/time/attention_core.py): flash kernels vs the unfused attention
of Megatron-LM 2021 and transformers' eager path, worked by hand on a small shape."""

import pytest

from gpuplan.core.time.attention_core import attention_seconds_per_token
from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
from gpuplan.jobs.validation.throughput import throughput_cases

SPEC = ModelSpec("t", hidden_size=1024, num_layers=2, vocab_size=1000,
                 attention=AttentionSpec(num_heads=8, num_kv_heads=8, head_dim=128), mlp=MLPSpec(4096))
KW = {"peak": 100e12, "efficiency": 0.3, "mamf": 0.8, "hbm_bytes_per_s": 1e12}


def test_flash_is_causal_flops_at_the_attention_efficiency_and_backward_two_and_a_half():
    # causal: (s + 1) / 2 keys per token; QK and AV: 2 x 2 x heads x head_dim FLOPs per key
    s = 2048
    flops = 4 * 8 * 128 * (s + 1) / 2
    fwd, bwd = attention_seconds_per_token(SPEC, s, 1, kernel="flash", **KW)
    assert fwd == pytest.approx(flops / (100e12 * 0.3), rel=1e-9)
    assert bwd == pytest.approx(2.5 * fwd, rel=1e-9)


@pytest.mark.parametrize("dropout, fwd_bytes, bwd_bytes", [(0.0, 8, 14), (0.1, 13, 19)])
def test_eager_runs_every_key_at_mamf_and_moves_the_scores_through_hbm(dropout, fwd_bytes, bwd_bytes):
    s, tp = 2048, 2
    matmul = 4 * 8 * 128 * s / tp / (100e12 * 0.8)  # every key, heads split over tp
    scores = 8 / tp * s  # score elements per token
    fwd, bwd = attention_seconds_per_token(SPEC, s, tp, kernel="eager", dropout=dropout, **KW)
    assert fwd == pytest.approx(matmul + scores * fwd_bytes / 1e12, rel=1e-9)
    assert bwd == pytest.approx(2 * matmul + scores * bwd_bytes / 1e12, rel=1e-9)


def test_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="flash, flash1, eager"):
        attention_seconds_per_token(SPEC, 2048, 1, kernel="paged", **KW)


def test_megatron_2021_small_models_are_no_longer_the_outliers():
    """Narayanan et al. 2021 Table 1 (held out): with the 2021 code's unfused attention the 1.7B
    and 3.6B rows, +34% / +22% with flash-style attention, come within 5% (137 / 138 TFLOP/s
    published; 133 / 132 predicted); the 3.6B row's tp 2 without sequence parallelism (the 2021 code has none:
    core/time/sequence_parallel.py; wave 6) then runs its norms and residual adds on both ranks: 131, -5.1%."""
    cases = {c.id: c for c in throughput_cases()}
    for run, measured, within in (("narayanan21-table1-1.7b", 137, 0.05), ("narayanan21-table1-3.6b", 138, 0.055)):
        assert cases[run].measured == measured and abs(cases[run].error) < within


@pytest.mark.parametrize("given, kernel", [("eager", "eager"), ("sdpa", "flash"), (None, "flash")])
def test_one_attention_kernel_sets_the_plans_time_and_memory(given, kernel):
    """`plan` / `train --attention-kernel eager` evaluates the layout with unfused attention in the
    step model and the s x s scores in the memory model (one plan, one kernel)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    inputs = PlanInputs.parse({"model": "llama-3.1-8b", "gpu": "h100", "gpus": "64", "attention_kernel": given})
    evaluator = evaluator_for(inputs)
    assert evaluator.step.attention_kernel == kernel and evaluator.memory.attention_kernel == kernel


def test_the_exponential_roof_stretches_forward_and_backward_alike():
    """Head dim 64 on a part with 512 tensor FLOPs per exponential: one score costs 2 x (64 + 64) =
    256 FLOPs, so both passes take 512 / 256 = 2x their FLOPs' time; the backward stays 2.5x the
    (stretched) forward (cuDNN's GB200 measurement: 2.21x)."""
    spec = ModelSpec("t64", hidden_size=512, num_layers=2, vocab_size=1000,
                     attention=AttentionSpec(num_heads=8, num_kv_heads=8, head_dim=64), mlp=MLPSpec(2048))
    s = 2048
    flops = 4 * 8 * 64 * (s + 1) / 2
    fwd, bwd = attention_seconds_per_token(spec, s, 1, kernel="flash", tensor_flops_per_exp=512.0, **KW)
    assert fwd == pytest.approx(2 * flops / (100e12 * 0.3), rel=1e-9)
    assert bwd == pytest.approx(2.5 * fwd, rel=1e-9)


def test_a_sliding_layer_computes_whole_key_tiles_of_its_band():
    """Window 128, 128-key tiles: once the window is full a 128-query tile reaches ceil(127 / 128) + 1
    = 2 key tiles; over s = 4,096 (32 query tiles) the mean is (1 + 2 x 31) / 32 = 1.96875 tiles =
    252 keys per query, against the window-capped count (128 x 129 / 2 + 3,968 x 128) / 4,096 =
    126.02. One of two layers slides: the mean layer executes (2,048.5 + 252) / 2 keys."""
    from dataclasses import replace

    from gpuplan.core.time.attention_core import flash_executed_keys

    assert flash_executed_keys(4096, 128) == pytest.approx(252.0, rel=1e-12)
    assert flash_executed_keys(4096, 129) == pytest.approx(252.0, rel=1e-12)  # still two tiles
    assert flash_executed_keys(4096, 256) == pytest.approx(128 * (6 + 29 * 3) / 32, rel=1e-12)
    swa = replace(SPEC, sliding_window=128, layer_types=("sliding", "full"))
    fwd, bwd = attention_seconds_per_token(swa, 4096, 2, kernel="flash", **KW)
    keys = (4097 / 2 + 252.0) / 2
    assert fwd == pytest.approx(4 * 8 * 128 * keys / 2 / (100e12 * 0.3), rel=1e-9)
    assert bwd == pytest.approx(2.5 * fwd, rel=1e-9)


@pytest.mark.parametrize("gpu_id, heads, kv_heads, window, forward_ms, backward_ms", [
    ("gb200", 128, 128, 128, 0.210, 0.465), ("gb300", 128, 128, 128, 0.202, 0.442),
    ("h200-sxm", 64, 8, 1024, 0.358, 1.042)])
def test_the_window_kernel_against_cudnns_own_gpt_oss_measurement(gpu_id, heads, kv_heads, window, forward_ms,
                                                                   backward_ms):
    """cudnn-frontend benchmark/sdpa_benchmark_training/results (@3929da2): the GPT-OSS shape (BF16, head
    dim 64, causal with a sliding window, 2 x 4,096 tokens), cuDNN 9.22 on GB200 / GB300 (128 heads,
    window 128) and 9.19 on H200 (64 / 8 heads, window 1,024). The step model's flash kernel at the
    parts' default efficiencies (Blackwell 0.30, Hopper cuDNN 0.35), the tile band and the
    exponential roof: GB200 -14% / -3%, GB300 -11% / +2%, H200 +9% / -6%, each asserted within 15%.

    Not a validation of the two choices: the GB200 and GB300 rows SET them and are not held out.
    The backward's stretch was read from their backward / forward ratios (2.21x, 2.19x), and the
    B300's 512 FLOPs per exponential from the GB300 row (at 256, the SFU's own rate, the model gives
    it 0.090 / 0.225 ms, -55% / -49%), so these rows pin the choices down rather than test them.
    Only the H200 row is an independent check, and only of the tile band and the Hopper efficiency
    with its 2.5x backward: at 256 FLOPs per exponential head dim 64 takes no stretch there."""
    from dataclasses import replace

    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.time.attention_core import TENSOR_FLOPS_PER_EXP
    from gpuplan.core.time.step import _lookup, attention_efficiency

    oss = load_model("gpt-oss-120b")
    spec = replace(oss, attention=replace(oss.attention, num_heads=heads, num_kv_heads=kv_heads),
                   sliding_window=window, layer_types=("sliding",) * oss.num_layers)
    gpu = load_accelerator(gpu_id)
    fwd, bwd = attention_seconds_per_token(
        spec, 4096, 1, kernel="flash", peak=gpu.peak("bf16"), efficiency=attention_efficiency(gpu, hopper_tuned=True),
        mamf=0.8, hbm_bytes_per_s=gpu.memory_bandwidth, tensor_flops_per_exp=_lookup(TENSOR_FLOPS_PER_EXP, gpu, 0.0))
    tokens = 2 * 4096
    assert fwd * tokens * 1e3 == pytest.approx(forward_ms, rel=0.15)
    assert bwd * tokens * 1e3 == pytest.approx(backward_ms, rel=0.15)


def _sdpa(model, gpu_id, seq_len, **kw):
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.time.attention import sdpa_seconds_per_token

    return sdpa_seconds_per_token(load_model(model), seq_len, gpu=load_accelerator(gpu_id), **kw)


def test_hf_sdpa_on_blackwell_is_the_flash_paths_formula_where_nothing_slides():
    """A model without windows (head dim 64, so the exponential roof binds) on a B200 through
    transformers' SDPA: torch runs cuDNN there, the kernel Megatron's flash path times; both give
    (s + 1) / 2 keys x 2 x 8 x (64 + 64) FLOPs at 0.3 of 2.25 PFLOP/s, stretched 512 / 256 = 2x, and
    a 2.5x backward."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.attention import sdpa_seconds_per_token

    spec = ModelSpec("t64", hidden_size=512, num_layers=2, vocab_size=1000,
                     attention=AttentionSpec(num_heads=8, num_kv_heads=8, head_dim=64), mlp=MLPSpec(2048))
    s = 4096
    fwd, bwd = sdpa_seconds_per_token(spec, s, gpu=load_accelerator("b200"), peak=2.25e15, fallback_efficiency=0.3)
    assert fwd == pytest.approx(2 * 2 * 8 * 128 * (s + 1) / 2 / (2.25e15 * 0.3), rel=1e-9)
    assert bwd == pytest.approx(2.5 * fwd, rel=1e-9)
    flash = attention_seconds_per_token(spec, s, 1, kernel="flash", peak=2.25e15, efficiency=0.3, mamf=0.8,
                                        hbm_bytes_per_s=8e12, tensor_flops_per_exp=512.0)
    assert (fwd, bwd) == pytest.approx(flash, rel=1e-12)


def test_hf_sdpa_computes_every_key_of_a_masked_sliding_layer():
    """GPT-OSS-20B (24 layers, every other one window 128; 64 heads x 64) on a B200 at s 4,096:
    transformers passes the sliding layers' mask to SDPA (s >= window), so they compute all 4,096
    keys; the full layers keep (4,096 + 1) / 2. Mean layer: 2 x 64 x 128 x (2,048.5 + 4,096) / 2
    FLOPs per token, at 0.3 of 2.25 PFLOP/s, x 2 for the exponentials (512 / (2 x 128)). Before,
    the window-capped 126 keys and no roof made it 5.65x faster than this; the Megatron path's tile
    band (252 keys) is 2.7x faster (a window passed to the kernel)."""
    fwd, bwd = _sdpa("gpt-oss-20b", "b200", 4096, peak=2.25e15, fallback_efficiency=0.3)
    flops = 2 * 64 * 128 * (4097 / 2 + 4096) / 2
    assert fwd == pytest.approx(2 * flops / (2.25e15 * 0.3), rel=1e-9)
    assert bwd == pytest.approx(2.5 * fwd, rel=1e-9)


def test_hf_sdpa_masks_only_once_the_sequence_reaches_the_window():
    """Mistral-7B (window 4,096, 32 heads x 128) on the H200: at s 2,048 no mask, causal, the cuDNN
    causal curve (the H200 probe's 495 TFLOP/s at 4,096 times the H100 paper's 484 / 518 at 2,048);
    at s 4,096 a mask: every key on the non-causal curve, 609 x 495 / 518 = 581.96 TFLOP/s, so
    2 x 32 x 256 x 4,096 / 581.96e12 = 115.3 ns per token and layer; backward 2.5x at 0.766 of
    the forward's rate."""
    peak = 989.4e12  # the H200's dense BF16 (= the tables' H100 peak)
    fwd, bwd = _sdpa("mistral-7b-v0.1", "h200-sxm", 2048, peak=peak, fallback_efficiency=0.3)
    assert fwd == pytest.approx(2 * 32 * 256 * 2049 / 2 / (484 * 495 / 518 * 1e12), rel=1e-9)
    fwd, bwd = _sdpa("mistral-7b-v0.1", "h200-sxm", 4096, peak=peak, fallback_efficiency=0.3)
    assert fwd == pytest.approx(115.3e-9, rel=1e-3)
    assert bwd == pytest.approx(2.5 * fwd / 0.766, rel=1e-9)
