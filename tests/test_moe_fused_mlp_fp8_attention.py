"""What the full-iteration-graph Megatron-Bridge MoE recipes run that the step model charged as
eager / BF16: TE's fused MXFP8 grouped MLP (core.time.moe_layer.fused_mlp_saved_seconds) and cuDNN's
FP8 attention (core.time.low_precision.fp8_attention_time_ratio). Numbers worked out by hand or read
from cuDNN's benchmark (tests/fixtures/cudnn/gb200_gb300_kernels.yaml)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.low_precision import fp8_attention_time_ratio
from gpuplan.core.time.moe_layer import expert_kernel_fixed_seconds, fused_mlp_saved_seconds, stage_expert_kernel_seconds
from gpuplan.core.time.step import StepSettings, microbatch_compute_time
from gpuplan.jobs.validation.throughput import run_spec

FIXTURE = Path(__file__).parent / "fixtures" / "cudnn" / "gb200_gb300_kernels.yaml"


def _cudnn_ratio(model: str, part: str, pass_: str) -> float:
    rows = yaml.safe_load(FIXTURE.read_text())["attention"]
    col = 8 if part == "gb200" else 9
    time = {r[1]: r[col] for r in rows if r[0] == model and r[2] == "top_left" and r[3] == 8192 and r[7] == pass_}
    return time["fp8"] / time["bfloat16"]


@pytest.mark.parametrize("part", ["gb200", "gb300"])
@pytest.mark.parametrize("model, head_dim", [("llama3.1", 128), ("dsv3", 192)])
def test_fp8_attention_ratio_is_cudnn_benchmark_at_8k_causal(part, model, head_dim):
    fwd, bwd = fp8_attention_time_ratio(part, head_dim)
    assert fwd == pytest.approx(_cudnn_ratio(model, part, "fwd"), rel=1e-3)
    assert bwd == pytest.approx(_cudnn_ratio(model, part, "bwd"), rel=1e-3)
    assert fwd < 1 and bwd < 1


def test_fp8_attention_ratio_same_die_and_unmeasured():
    assert fp8_attention_time_ratio("b300", 128) == fp8_attention_time_ratio("gb300", 128)
    assert fp8_attention_time_ratio("b200", 192) == fp8_attention_time_ratio("gb200", 192)
    assert fp8_attention_time_ratio("gb200", 64) == (1.0, 1.0)  # GPT-OSS's head dim: not in the benchmark
    assert fp8_attention_time_ratio("h100-sxm", 128) == (1.0, 1.0)


def _microbatch(model: str, gpu: str, **settings):
    spec = run_spec({"catalog": model, "seq_len": 4096})
    st = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", **settings)
    return microbatch_compute_time(spec, cluster_for(load_accelerator(gpu)), st, 1, 1, 4, spec.num_layers, True, 8)


def test_fp8_attention_scales_only_the_attention_core():
    base, fp8 = _microbatch("qwen3-30b-a3b", "gb300"), _microbatch("qwen3-30b-a3b", "gb300", fp8_attention=True)
    fwd, bwd = fp8_attention_time_ratio("gb300", 128)
    ratio = float(fp8.attention) / float(base.attention)
    assert min(fwd, bwd) < ratio < max(fwd, bwd)
    # the rest of the micro-batch is untouched
    assert float(fp8.total) - float(fp8.attention) == pytest.approx(float(base.total) - float(base.attention), rel=1e-9)
    gpt_oss = _microbatch("gpt-oss-120b", "gb300"), _microbatch("gpt-oss-120b", "gb300", fp8_attention=True)
    assert float(gpt_oss[1].total) == pytest.approx(float(gpt_oss[0].total), rel=1e-12)


def test_fused_mlp_saved_bytes_by_hand():
    # Qwen3-30B-A3B, micro-batch 4 x 4,096 tokens on one rank, top-8, expert width 768, 6 TB/s:
    # forward 8 B and backward 12 B per routed copy and intermediate element
    f, b = fused_mlp_saved_seconds(16384, 8, 768, 6e12)
    assert f == pytest.approx(8 * 16384 * 8 * 768 / 6e12, rel=1e-12)  # 0.134 ms
    assert b == pytest.approx(1.5 * f, rel=1e-12)
    assert f == pytest.approx(1.342e-4, rel=1e-3)


def test_fused_mlp_term_applies_to_mxfp8_fused_layers_only():
    spec = run_spec({"catalog": "qwen3-30b-a3b", "seq_len": 4096})
    st = StepSettings(seq_len=4096, moe_launch="graph", moe_expert_kernels="fused", ep_dispatcher="flex")
    hbm = 8e12
    fused = stage_expert_kernel_seconds(spec, st, 8, spec.num_layers, "mxfp8", 16384, hbm)
    f, b = fused_mlp_saved_seconds(16384, 8, 768, hbm * st.hbm_efficiency)
    assert fused == pytest.approx(-(f + b) * spec.num_moe_layers, rel=1e-9)
    assert stage_expert_kernel_seconds(spec, st, 8, spec.num_layers, "tensorwise", 16384, hbm) == 0.0
    per_expert = stage_expert_kernel_seconds(spec, replace(st, moe_expert_kernels="per-expert"), 8, spec.num_layers,
                                             "mxfp8", 16384, hbm)
    # per-expert kernels instead: each of the 48 MoE layers pays one layer's fixed kernel time for its
    # 128 / 8 = 16 local experts (flex dispatcher: no sorts, no fused savings): 48 x (0.3136 + 0.37632) ms
    # = 33.116 ms at ae3dfd8 (was only '> 0')
    forward, backward = expert_kernel_fixed_seconds(16, "mxfp8")
    assert spec.num_moe_layers == 48 and spec.moe.num_experts == 128
    assert per_expert == pytest.approx(48 * (forward + backward), rel=1e-9)


def test_full_iteration_rows_run_the_fused_grouped_mlp():
    """Every MoE MXFP8 row whose recipe graphs the whole step states the fused grouped MLP (the
    presets pair cuda_graph_impl='full_iteration' with cutedsl_fused_grouped_mlp, v0.5.0 to v0.6.0)."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    graphed = [r for r in published_throughput_rows() if (r.get("moe_comm") or {}).get("cuda_graph") == "full_iteration"]
    # counted in published_throughput.yaml: 26.06 10 + 26.06.01 5 + 26.08 8 rows (DeepSeek-V3 6, Qwen3-30B-A3B 6,
    # Qwen3-235B-A22B 5, GPT-OSS-120B 6: the GB200 rows of 26.06.01 / 26.08 read as full-iteration too,
    # gpt_oss_workload_base_configs.py@v0.5.1 L214, perf_recipes/gpt_oss/common.py@v0.6.0 L23-26)
    assert len(graphed) == 23
    assert all(r["moe_comm"].get("fused_grouped_mlp") for r in graphed)
    assert all("moe_comm.fused_grouped_mlp" in r["derived"] for r in graphed)
