"""Megatron-Core's eager fallbacks (core/time/eager_fallbacks.py): GPT-OSS's biased experts, its YaRN
RoPE with an attention factor and its clamped expert activation, the bytes the unfused paths move, where the planner and the
published rows charge them, and the parameter count that now includes the biases."""

import math

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.catalog import load_model
from gpuplan.core.time.eager_fallbacks import (
    MEGATRON_EAGER_FALLBACKS,
    eager_expert_bias_bytes_per_token,
    eager_fallback_bytes_per_token,
    eager_glu_clamp_bytes_per_token,
    eager_rope_bytes_per_token,
    routing_probs_dtype,
)
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.time.step import StepSettings, microbatch_compute_time
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.serving.weights import param_groups
from gpuplan.errors import InputError


def _gpu(name):
    from gpuplan.adapters.resolve import resolve_gpu

    return resolve_gpu(name)


def test_gpt_oss_has_the_three_paths_and_other_models_none():
    oss = load_model("gpt-oss-120b")
    assert oss.moe.expert_bias and oss.moe.activation_clamp == 7.0  # config.json swiglu_limit
    # rope_scaling {"rope_type": "yarn", "factor": 32.0}: 0.1 ln 32 + 1
    assert oss.attention.rope_attention_factor == pytest.approx(0.1 * math.log(32) + 1)
    qwen = load_model("qwen3-30b-a3b")
    assert not qwen.moe.expert_bias and qwen.attention.rope_attention_factor == 1.0
    assert qwen.moe.activation_clamp is None
    assert eager_fallback_bytes_per_token(qwen, MEGATRON_EAGER_FALLBACKS, "flex") == 0.0


def test_expert_bias_bytes_by_hand():
    """GPT-OSS 120B: hidden 2,880, top-4, every one of its 36 layers MoE. bf16 probabilities
    (NCCL alltoall): 28 B per element of each of the 4 output rows = 322,560 B per token and layer;
    fp32 (DeepEP / HybridEP): 68 B -> 783,360."""
    spec = load_model("gpt-oss-120b")
    # 24 / 64 B an element, + 4 for the split's re-assembly in the backward (autograd's split_with_sizes_backward: cat)
    assert eager_expert_bias_bytes_per_token(spec, "bf16") == 28 * 2880 * 4 == 322_560
    assert eager_expert_bias_bytes_per_token(spec, "fp32") == 68 * 2880 * 4 == 783_360
    assert routing_probs_dtype("flex") == "fp32" and routing_probs_dtype("alltoall") == "bf16"


def test_rope_bytes_by_hand():
    """q is 64 heads x 64, k 8 x 64: 4,608 elements per token and layer x (50 - 8) B = 193,536 B."""
    spec = load_model("gpt-oss-120b")
    assert eager_rope_bytes_per_token(spec) == 42 * (64 + 8) * 64 == 193_536
    assert eager_fallback_bytes_per_token(spec, ("expert-bias", "yarn-rope"), "alltoall") == 322_560 + 193_536
    assert eager_fallback_bytes_per_token(spec, ("yarn-rope",), "flex") == 193_536  # TE's fused grouped MLP


def test_glu_clamp_bytes_by_hand():
    """Each of the 4 routed rows has a first-linear output of 2 x 2,880 bf16 elements; clamps + cat
    forward 8 B, clamp_backward + the chunk's re-assembly 15 B: 23 x 5,760 x 4 = 529,920 B per token
    and layer; all four paths under NCCL alltoall 322,560 + 193,536 + 529,920 + 11,520 (the unfused bias-dropout-add's
    4 x 2,880) = 1,057,536."""
    spec = load_model("gpt-oss-120b")
    assert eager_glu_clamp_bytes_per_token(spec) == 23 * 5760 * 4 == 529_920
    assert eager_fallback_bytes_per_token(spec, MEGATRON_EAGER_FALLBACKS, "alltoall") == 1_057_536
    assert eager_glu_clamp_bytes_per_token(load_model("qwen3-30b-a3b")) == 0.0
    assert eager_fallback_bytes_per_token(spec, (), "flex") == 0.0


@pytest.mark.parametrize(("scaling", "factor"), [
    ({"rope_type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),  # DeepSeek-V3
    ({"type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707}, 1.0),  # DeepSeek-V2
    ({"rope_type": "yarn", "factor": 4.0}, 0.1 * math.log(4) + 1),  # Qwen's long-context recipe
    ({"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.2}, 1.2),
    ({"rope_type": "linear", "factor": 4.0}, 1.0),
    (None, 1.0),
])
def test_yarn_attention_factor_from_config(scaling, factor):
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
           "intermediate_size": 4096, "vocab_size": 1000, "rope_scaling": scaling}
    assert model_spec_from_hf_config(cfg).attention.rope_attention_factor == pytest.approx(factor)


@pytest.mark.parametrize("limit", ["7", -1.0, 0, float("nan"), float("inf"), True, [7.0]])
def test_malformed_swiglu_limit_is_refused(limit):
    cfg = {"model_type": "gpt_oss", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 64, "vocab_size": 100,
           "num_local_experts": 4, "num_experts_per_tok": 2, "swiglu_limit": limit}
    with pytest.raises(InputError, match="swiglu_limit"):
        model_spec_from_hf_config(cfg)


@pytest.mark.parametrize("bad", [{"rope_type": "yarn", "factor": "32"}, {"rope_type": "yarn", "factor": -2},
                                 {"rope_type": "yarn", "factor": 4, "mscale": float("nan"), "mscale_all_dim": 1}])
def test_malformed_yarn_scaling_is_refused(bad):
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
           "intermediate_size": 4096, "vocab_size": 1000, "rope_scaling": bad}
    with pytest.raises(InputError, match="rope_scaling"):
        model_spec_from_hf_config(cfg)


def test_step_time_adds_the_bytes_at_hbm_speed():
    """One micro-batch of 4 x 4,096 tokens on one B200, 36 layers, NCCL alltoall: the three paths add
    tokens x layers x (322,560 + 193,536 + 529,920) B / (bandwidth x 0.75 HBM efficiency), and the eager RoPE's
    kernels their fixed time beside those bytes, 36 x (22 x 7.84 + 12 x 0.92) us = 36 x 183.52 us (review w12 R1 S3:
    core.time.step, not the MoE layer's term)."""
    spec = load_model("gpt-oss-120b")
    cluster = cluster_for(_gpu("b200"))
    args = {"tp": 1, "cp": 1, "micro_batch": 4, "layers": 36, "head": False, "ep": 64}
    fused = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096), **args).total
    eager = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, eager_fallbacks=MEGATRON_EAGER_FALLBACKS),
                                    **args).total
    expected = 4 * 4096 * 36 * (322_560 + 193_536 + 529_920 + 11_520) / (cluster.gpu.memory_bandwidth * 0.75)  # + bda
    assert eager - fused == pytest.approx(expected + 36 * 183.52e-6, rel=1e-9)


def test_planner_charges_them_under_megatron_only():
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    megatron = evaluator_for(PlanInputs(model="gpt-oss-120b", gpu="b200", gpus="64"))  # the default framework
    assert megatron.step.eager_fallbacks == MEGATRON_EAGER_FALLBACKS
    for other in ("torchtitan", "hf", "deepspeed"):
        ev = evaluator_for(PlanInputs(model="gpt-oss-120b", gpu="b200", gpus="64", framework=other))
        assert ev.step.eager_fallbacks == ()


def test_parameter_count_includes_the_biases_kept_16_bit():
    """Per expert 2 x 2,880 (gate_up_proj_bias) + 2,880 (down_proj_bias) = 8,640; x 128 experts x
    36 layers = 39,813,120 on top of the matrices; serving keeps them 16-bit with the routers."""
    spec = load_model("gpt-oss-120b")
    counts = count_parameters(spec)
    matrices = 36 * 128 * 3 * 2880 * 2880
    assert counts.routed_experts == matrices + 36 * 128 * 8640
    groups = param_groups(spec)
    assert groups.routed == matrices
    # routers (GptOssTopKRouter has a bias) + the expert biases
    assert groups.router == 36 * (2880 * 128 + 128) + 36 * 128 * 8640
    assert counts.total == pytest.approx(116.83e9, rel=0.002)  # model card: 116.8B


def test_published_rows_mark_the_fused_grouped_mlp_recipes():
    """Megatron-Bridge's GB200 / GB300 MXFP8 GPT-OSS presets of 26.06, 26.06.01 and 26.08 set
    cutedsl_fused_grouped_mlp / use_transformer_engine_op_fuser; every other GPT-OSS row runs the
    eager bias and clamp (the B300 MXFP8 preset of 26.06 is the BF16 one)."""
    from gpuplan.jobs.validation.published_throughput import (
        megatron_eager_fallbacks,
        published_throughput_rows,
    )

    fused = {r["id"] for r in published_throughput_rows() if (r.get("moe_comm") or {}).get("fused_grouped_mlp")}
    # ... and every MoE MXFP8 row whose recipe graphs the whole step (tests/test_moe_fused_mlp_fp8_attention.py)
    graphed = {r["id"] for r in published_throughput_rows()
               if (r.get("moe_comm") or {}).get("cuda_graph") == "full_iteration"}
    assert fused == {f"mbridge-{rel}-gpt-oss-120b-{gpu}-64g-mxfp8"
                     for rel in ("26.06", "26.06.01", "26.08") for gpu in ("gb200", "gb300")} | graphed
    for row in published_throughput_rows():
        if row["model"].get("catalog") == "gpt-oss-120b":
            paths = megatron_eager_fallbacks(row)
            assert ("expert-bias" in paths) == ("clamped-glu" in paths) == (row["id"] not in fused)


def test_exponentials_bind_the_attention_forward_on_blackwell_at_head_dim_64():
    """Tensor FLOPs per exponential per SM and clock: B200 8,192 / 16 = 512; one score of a head
    dim 64 model costs 2 x (64 + 64) = 256 FLOPs -> the forward takes 2x its FLOPs' time; Llama's
    head dim 128 (512 FLOPs) and H100 (4,096 / 16 = 256) are not stretched; the B300 (and the GB300
    through kernels_like) keeps the B200's 512: cuDNN's head dim 64 kernel measured no faster on the
    GB300 than on the GB200 (core.time.attention_core)."""
    from gpuplan.core.time.attention_core import TENSOR_FLOPS_PER_EXP, exp_bound_stretch
    from gpuplan.core.time.step import _lookup

    oss, llama = load_model("gpt-oss-120b"), load_model("llama-3.1-8b")
    assert exp_bound_stretch(oss, TENSOR_FLOPS_PER_EXP["b200"]) == 2.0
    assert exp_bound_stretch(llama, TENSOR_FLOPS_PER_EXP["b200"]) == 1.0
    assert exp_bound_stretch(oss, TENSOR_FLOPS_PER_EXP["h100-sxm"]) == 1.0
    assert _lookup(TENSOR_FLOPS_PER_EXP, _gpu("gb300"), 0.0) == 512.0  # cuDNN's measured kernel: the B200's
    assert _lookup(TENSOR_FLOPS_PER_EXP, _gpu("a100-sxm4-80gb"), 0.0) == 0.0  # no roof: never binds
    cluster_b200, cluster_b300 = cluster_for(_gpu("b200")), cluster_for(_gpu("b300"))
    args = {"tp": 1, "cp": 1, "micro_batch": 1, "layers": 1, "head": False}
    b200 = microbatch_compute_time(oss, cluster_b200, StepSettings(seq_len=4096), **args)
    b300 = microbatch_compute_time(oss, cluster_b300, StepSettings(seq_len=4096), **args)
    # both stretched 2x, forward and backward alike, at the same default flash efficiency: the
    # attention differs only by the bf16 peaks
    assert b200.attention / b300.attention == pytest.approx(_gpu("b300").peak("bf16")
                                                            / _gpu("b200").peak("bf16"), rel=1e-6)
