"""GB300 (Blackwell Ultra, NVL72) kernel rates against GB200: cuDNN's own measurements of both parts
(tests/fixtures/cudnn/gb200_gb300_kernels.yaml, copied from NVIDIA/cudnn-frontend @3929da2) and what
core/time/efficiency.py derives from them (GB300_OVER_GB200_TENSOR_RATE)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
import yaml

FIXTURE = Path(__file__).parent / "fixtures" / "cudnn" / "gb200_gb300_kernels.yaml"


def _kernels():
    return yaml.safe_load(FIXTURE.read_text("utf-8"))


def _ratios(dtype: str, pass_: str) -> list[float]:
    """GB200 time / GB300 time of each attention row of ``dtype`` and pass."""
    return [r[8] / r[9] for r in _kernels()["attention"] if r[1] == dtype and r[7] == pass_]


def test_the_tensor_rate_ratio_is_cudnns_bf16_backward_geomean():
    """18 BF16 backward shapes (Llama 3.1 / DeepSeek-V3 / Kimi K2 heads, d 128 or 192, s 8,192-32,768,
    causal and full): GB300 1.08-1.22x the GB200, geometric mean 1.141. Those passes do >= 1,280 tensor
    FLOPs per exponential (5 matmuls x 2 x 128) against the 512 that bind on Blackwell, so the doubled
    SFU of Blackwell Ultra does not enter; the FP8 backward (closer to the exponential roof) is faster
    still (1.23), the BF16 forward in between (1.17)."""
    from gpuplan.core.time.efficiency import GB300_OVER_GB200_TENSOR_RATE

    bwd = _ratios("bfloat16", "bwd")
    assert len(bwd) == 18 and 1.07 < min(bwd) and max(bwd) < 1.22
    assert statistics.geometric_mean(bwd) == pytest.approx(GB300_OVER_GB200_TENSOR_RATE, abs=0.0015)
    assert statistics.geometric_mean(_ratios("fp8", "bwd")) == pytest.approx(1.234, abs=0.002)
    assert statistics.geometric_mean(_ratios("bfloat16", "fwd")) == pytest.approx(1.166, abs=0.002)


def test_memory_bound_kernels_run_alike_so_hbm_stays_8_tbps_on_both():
    """cuDNN's RMSNorm / LayerNorm kernels (15 model shapes): GB300 / GB200 GB/s 0.97-1.05, geometric mean
    1.01 forward and 1.02 backward: the catalog's equal 8 TB/s holds; the tensor rate is what differs."""
    from gpuplan.catalog import load_accelerator

    norms = _kernels()["norms"]
    fwd = statistics.geometric_mean([n[6] / n[4] for n in norms])
    bwd = statistics.geometric_mean([n[7] / n[5] for n in norms])
    assert len(norms) == 15 and 1.0 < fwd < 1.015 and 1.015 < bwd < 1.03
    assert load_accelerator("gb300").memory_bandwidth == load_accelerator("gb200").memory_bandwidth


def test_gb300_gemm_fractions_are_gb200s_measured_mamf_times_the_ratio():
    """GB200 MAMF (stas00/ml-engineering @744d01e): BF16 1,822.0 of 2,500, FP8 3,615.6 of 5,000 TFLOP/s.
    GB300 (same spec peaks): 1,822.0 x 1.141 = 2,079 (0.832 of 2,500) and 3,615.6 x 1.141 = 4,125 (0.825
    of 5,000). NVFP4 has no kernel measurement on either part and keeps the B300's FP8 fraction (0.745)
    of its own 15,000 peak, as before."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.efficiency import gemm_efficiency

    gb300, gb200 = load_accelerator("gb300"), load_accelerator("gb200")
    big = 1e12  # shape term d / (d + d_half) -> 1
    assert gemm_efficiency(gb300, big, 512) * gb300.peak("bf16") == pytest.approx(1822.0e12 * 1.141, rel=2e-3)
    assert gemm_efficiency(gb300, big, 512, "fp8") * gb300.peak("fp8") == pytest.approx(3615.6e12 * 1.141, rel=2e-3)
    assert gemm_efficiency(gb300, big, 512, True) == gemm_efficiency(gb300, big, 512, "fp8")
    # 0.745: core/time/efficiency.py MAMF_FP8_FRACTION["b300"] (the B300's measured FP8 fraction, cited there)
    assert gemm_efficiency(gb300, big, 512, "fp4") == pytest.approx(0.745, rel=1e-3)
    # 0.723: GB200's measured 3,615.6 FP8 TFLOP/s of its 5,000 dense peak (the docstring) = 0.7231
    assert gemm_efficiency(gb200, big, 512, "fp4") == gemm_efficiency(gb200, big, 512, "fp8") == pytest.approx(0.723)


def test_same_layout_pair_moves_toward_the_published_ratio(published_rows):
    """NeMo 25.11, Llama 3 8B FP8-CS on 8 GPUs, the same layout (dp 8, mbs 2, gbs 128, CUDA graphs on both
    presets): GB300 37,556 vs GB200 31,508 tokens/s/GPU, 1.192x. With B300's fractions the model gave
    1.016x; with the measured tensor rate in the GEMMs 1.060x; with attention's measured 1.166 / 1.141x at
    head dim 128 too (core/time/attention_core.py FLASH_TENSOR_RATE) 1.106x, still below the published
    ratio (the memory-bound kernels, 1.01x in cuDNN's norm benchmark, stay equal)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    rows = published_rows
    ultra, base = (rows[f"mbridge-25.11-llama-3-8b-{g}-8g-fp8cs"] for g in ("gb300", "gb200"))
    assert ultra["layout"] == base["layout"]
    measured = ultra["measured"]["tokens_per_s_per_gpu"] / base["measured"]["tokens_per_s_per_gpu"]
    predicted = predict_tokens_per_gpu_s(ultra) / predict_tokens_per_gpu_s(base)
    assert measured == pytest.approx(1.192, abs=1e-3)
    assert 1.10 < predicted < measured


def _attention_layer(head_dim: int, gpu_id: str):
    """(model spec, one micro-batch's attention-core seconds through core/time/step.py) for a 2-layer,
    16-head causal model at s 8,192 on ``gpu_id`` (Megatron-style flash path)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
    from gpuplan.core.time.step import StepSettings, microbatch_compute_time

    spec = ModelSpec(f"d{head_dim}", hidden_size=2048, num_layers=2, vocab_size=1000,
                     attention=AttentionSpec(num_heads=16, num_kv_heads=16, head_dim=head_dim), mlp=MLPSpec(8192))
    cluster = cluster_for(load_accelerator(gpu_id))
    times = microbatch_compute_time(spec, cluster, StepSettings(seq_len=8192), tp=1, cp=1, micro_batch=1,
                                    layers=2, head=False)
    return spec, times.attention


def test_gb300_attention_at_head_dim_128_runs_at_cudnns_measured_ratio():
    """Head dim 128 (Llama): 512 FLOPs per exponential / (2 x 256) = 1, no exponential stretch, so the
    measured BF16 rates apply: forward 1.166x, backward 1.141x the GB200 (the fixture's geometric means,
    checked above). Both parts: 2.5 PFLOP/s BF16 at the default flash efficiency 0.30 (equal), forward
    F = 2 layers x 8,192 tokens x 4 x 16 x 128 x 8,193 / 2 FLOPs / (2.5e15 x 0.3), backward 2.5 F.
    GB200: 3.5 F; GB300: F / 1.166 + 2.5 F / 1.141 = (0.85763 + 2.19106) F = 3.04869 F; ratio 1.1480."""
    from gpuplan.core.time.attention_core import FLASH_TENSOR_RATE

    fwd_rate = statistics.geometric_mean(_ratios("bfloat16", "fwd"))
    bwd_rate = statistics.geometric_mean(_ratios("bfloat16", "bwd"))
    assert FLASH_TENSOR_RATE["gb300"] == pytest.approx((fwd_rate, bwd_rate), abs=5e-4)
    _, gb200 = _attention_layer(128, "gb200")
    _, gb300 = _attention_layer(128, "gb300")
    forward = 2 * 8192 * 4 * 16 * 128 * 8193 / 2 / (2.5e15 * 0.3)
    assert gb200 == pytest.approx(3.5 * forward, rel=1e-9)
    assert gb300 == pytest.approx(forward / 1.166 + 2.5 * forward / 1.141, rel=1e-9)
    assert gb200 / gb300 == pytest.approx(1.1480, abs=2e-4)


def test_gb300_attention_at_head_dim_64_keeps_its_exponential_bound_time():
    """Head dim 64: 512 / (2 x 128) = 2x exponential stretch on both parts; cuDNN's GPT-OSS shape ran
    only 1.04 / 1.05x faster on the GB300 (core/time/attention_core.py), so no tensor rate: GB300 =
    GB200 = 3.5 x 2 x (2 x 8,192 x 4 x 16 x 64 x 8,193 / 2) / (2.5e15 x 0.3), as before the rate."""
    _, gb200 = _attention_layer(64, "gb200")
    _, gb300 = _attention_layer(64, "gb300")
    forward = 2 * 8192 * 4 * 16 * 64 * 8193 / 2 / (2.5e15 * 0.3)
    assert gb300 == pytest.approx(3.5 * 2 * forward, rel=1e-9) and gb300 == pytest.approx(gb200, rel=1e-12)


def test_hf_sdpa_on_gb300_takes_the_same_rate():
    """transformers' SDPA on a GB300 (no cuDNN table of its own: the flash path's formula) at head dim 128:
    forward and backward 1.166x / 1.141x faster than the GB200's, both parts at 0.30 of 2.5 PFLOP/s."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.time.attention import sdpa_seconds_per_token

    spec, _ = _attention_layer(128, "gb200")
    kw = dict(peak=2.5e15, fallback_efficiency=0.3)
    f200, b200 = sdpa_seconds_per_token(spec, 8192, gpu=load_accelerator("gb200"), **kw)
    f300, b300 = sdpa_seconds_per_token(spec, 8192, gpu=load_accelerator("gb300"), **kw)
    assert (f200 / f300, b200 / b300) == pytest.approx((1.166, 1.141), rel=1e-9)
