"""Megatron-Core's eager expert fc2 bias (core/expert_bias.py): GPT-OSS's biased experts, the bytes
the unfused path moves, where the planner and the published rows charge it, and the parameter
count that now includes the biases."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.expert_bias import (
    eager_expert_bias_bytes_per_token,
    routing_probs_dtype,
)
from gpuplan.core.model import count_parameters
from gpuplan.core.step import StepSettings, microbatch_compute_time
from gpuplan.core.topology import cluster_for
from gpuplan.core.weights import param_groups


def test_gpt_oss_experts_have_biases_and_llama_moe_ones_do_not():
    assert load_model("gpt-oss-120b").moe.expert_bias
    assert not load_model("qwen3-30b-a3b").moe.expert_bias


def test_bytes_per_token_by_hand():
    """GPT-OSS 120B: hidden 2,880, top-4, every one of its 36 layers MoE. bf16 probabilities
    (NCCL alltoall): 24 B per element of each of the 4 output rows = 276,480 B per token and layer;
    fp32 (DeepEP / HybridEP): 64 B -> 737,280."""
    spec = load_model("gpt-oss-120b")
    assert eager_expert_bias_bytes_per_token(spec, "bf16") == 24 * 2880 * 4 == 276_480
    assert eager_expert_bias_bytes_per_token(spec, "fp32") == 64 * 2880 * 4 == 737_280
    assert eager_expert_bias_bytes_per_token(spec, None) == 0.0  # fused (TE op fuser) or not Megatron
    assert eager_expert_bias_bytes_per_token(load_model("qwen3-30b-a3b"), "fp32") == 0.0  # no expert biases
    assert routing_probs_dtype("flex") == "fp32" and routing_probs_dtype("alltoall") == "bf16"


def test_step_time_adds_the_bytes_at_hbm_speed():
    """One micro-batch of 4 x 4,096 tokens on one B200, 36 layers: the eager path adds
    tokens x layers x 276,480 B / (bandwidth x 0.75 HBM efficiency), forward and backward together."""
    spec = load_model("gpt-oss-120b")
    cluster = cluster_for(_gpu("b200"))
    args = {"tp": 1, "cp": 1, "micro_batch": 4, "layers": 36, "head": False, "ep": 64}
    fused = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096), **args).total
    eager = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, expert_bias_probs="bf16"), **args).total
    expected = 4 * 4096 * 36 * 276_480 / (cluster.gpu.memory_bandwidth * 0.75)
    assert eager - fused == pytest.approx(expected, rel=1e-9)


def _gpu(name):
    from gpuplan.adapters.resolve import resolve_gpu

    return resolve_gpu(name)


def test_planner_charges_it_under_megatron_only():
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    megatron = evaluator_for(PlanInputs(model="gpt-oss-120b", gpu="b200", gpus="64"))  # the default framework
    assert megatron.step.expert_bias_probs == "bf16"  # Megatron-Core's default dispatcher is alltoall
    flex = evaluator_for(PlanInputs(model="gpt-oss-120b", gpu="b200", gpus="64", framework="megatron",
                                    ep_dispatcher="flex"))
    assert flex.step.expert_bias_probs == "fp32"
    for other in ("torchtitan", "hf", "deepspeed"):
        ev = evaluator_for(PlanInputs(model="gpt-oss-120b", gpu="b200", gpus="64", framework=other))
        assert ev.step.expert_bias_probs is None


def test_parameter_count_includes_the_biases_kept_16_bit():
    """Per expert 2 x 2,880 (gate_up_proj_bias) + 2,880 (down_proj_bias) = 8,640; x 128 experts x
    36 layers = 39,813,120 on top of the matrices; serving keeps them 16-bit with the routers."""
    spec = load_model("gpt-oss-120b")
    counts = count_parameters(spec)
    matrices = 36 * 128 * 3 * 2880 * 2880
    assert counts.routed_experts == matrices + 36 * 128 * 8640
    groups = param_groups(spec)
    assert groups.routed == matrices
    assert groups.router == 36 * (2880 * 128 + 128) + 36 * 128 * 8640  # routers (GptOssTopKRouter has a bias) + expert biases
    assert counts.total == pytest.approx(116.83e9, rel=0.002)  # model card: 116.8B


def test_published_rows_mark_the_fused_grouped_mlp_recipes():
    """Megatron-Bridge's GB200 / GB300 MXFP8 GPT-OSS presets of 26.06, 26.06.01 and 26.08 set
    cutedsl_fused_grouped_mlp / use_transformer_engine_op_fuser; every other GPT-OSS row runs the
    eager bias (the B300 MXFP8 preset of 26.06 is the BF16 one)."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    fused = {r["id"] for r in published_throughput_rows() if (r.get("moe_comm") or {}).get("fused_grouped_mlp")}
    assert fused == {f"mbridge-{rel}-gpt-oss-120b-{gpu}-64g-mxfp8"
                     for rel in ("26.06", "26.06.01", "26.08") for gpu in ("gb200", "gb300")}
