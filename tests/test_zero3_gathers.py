"""ZeRO-3 parameter gathers per micro-batch by framework (core/comm/zero3_gathers.py): DeepSpeed's
module hooks re-gather for the recomputed forward unless the parameter's next use lies within
stage3_max_reuse_distance (1e9) parameters; FSDP does not re-gather. Hand-counted submodule sizes."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.catalog import load_model
from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
from gpuplan.core.time.step import StepSettings, microbatch_compute_time, params_per_gpu
from gpuplan.core.comm.step_comm import step_communication
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.comm.zero3_gathers import (
    deepspeed_regathered_share,
    gathers_per_micro_batch,
    layer_submodule_params,
)


def gpt3_175b() -> ModelSpec:
    h = 12288
    return ModelSpec(name="gpt3", hidden_size=h, num_layers=96, vocab_size=51200,
                     attention=AttentionSpec(96, 96, 128), mlp=MLPSpec(4 * h, gated=False, activation="gelu"),
                     fused_qkv=True, rotary=False, norm="layernorm")


def test_gpt3_submodules_and_regathered_share():
    h = 12288
    assert layer_submodule_params(gpt3_175b()) == (3 * h * h, h * h, 4 * h * h, 4 * h * h)
    # fc2 (4h^2 = 0.60e9) is reused by its backward right after: kept. fc1: 4h^2 + 2 x 4h^2 = 1.81e9
    # >= 1e9: released and gathered again, as are the attention projections: 8h^2 of 12h^2
    assert deepspeed_regathered_share(gpt3_175b()) == pytest.approx(8 / 12)
    assert gathers_per_micro_batch(gpt3_175b(), True, "full") == pytest.approx(2 + 8 / 12)


def test_llama_70b_share_by_tensor_parallel_degree():
    spec = load_model("llama-3.1-70b")  # h 8192, ffn 28672, 64 heads, 8 K/V heads of 128
    h, i, kv = 8192, 28672, 8 * 128
    # forward order q, k, v, o, gate, up, down; released where own + 2 x later >= 1e9:
    # gate (h·i + 2·2h·i = 1.17e9) and everything before it
    released = h * h + h * kv + h * kv + h * h + h * i
    total = released + 2 * h * i
    assert deepspeed_regathered_share(spec) == pytest.approx(released / total)
    # at tp 2 every distance halves below 1e9: nothing is released
    assert np.allclose(deepspeed_regathered_share(spec, np.array([1, 2, 8])), [released / total, 0, 0])


def test_small_models_and_fsdp_never_regather():
    spec = load_model("llama-3.1-8b")  # a whole layer is 0.22e9 parameters: within the reuse distance
    assert deepspeed_regathered_share(spec) == 0.0
    assert gathers_per_micro_batch(gpt3_175b(), False, "full") == 2.0  # FSDP: pre-backward unshards
    assert gathers_per_micro_batch(gpt3_175b(), True, "none") == 2.0  # nothing recomputed


def test_step_communication_counts_the_regathers():
    spec = gpt3_175b()
    cluster = cluster_for(resolve_gpu("a100-sxm4-80gb"), nic_gbit_per_gpu=200)
    lay = dict(dp=384, tp=1, pp=1, vpp=1, cp=1, ep=1, zero=3, micro_batch=4, micro_batches=2, shard_group=None)

    def gather(settings):
        t_mb, t_attn, t_bwd, _ = microbatch_compute_time(spec, cluster, settings, 1, 1, 4, 96, head=False)
        costs = step_communication(spec, cluster, settings, **lay, layers=96,
                                   trained_params=params_per_gpu(spec, 1, 1, 1), t_attn_mb=t_attn,
                                   t_bwd_gemm_mb=t_bwd, compute=t_mb * 2)
        return next(c for c in costs if c.collective == "param all-gather")

    fsdp = gather(StepSettings(seq_len=2048, recompute="full"))
    deepspeed = gather(StepSettings(seq_len=2048, recompute="full", zero3_regathers=True))
    # one gather per layer (an FSDP unit) twice a micro-batch, 2 micro-batches, 96 layers
    assert fsdp.calls == 2 * 2 * 96
    assert deepspeed.calls == pytest.approx((2 + 8 / 12) * 2 * 96)
    assert deepspeed.total == pytest.approx(fsdp.total * (2 + 8 / 12) / 2)


def test_deepspeed_profile_sets_the_planner_step_settings():
    from gpuplan.core.frameworks import DEEPSPEED_ZERO3_OVERLAP
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    deepspeed = evaluator_for(PlanInputs(model="llama-3.1-70b", gpu="h100", gpus="64", framework="deepspeed")).step
    assert deepspeed.zero3_regathers and deepspeed.zero3_overlap == DEEPSPEED_ZERO3_OVERLAP
    torchtitan = evaluator_for(PlanInputs(model="llama-3.1-70b", gpu="h100", gpus="64", framework="torchtitan")).step
    assert not torchtitan.zero3_regathers and torchtitan.zero3_overlap is None
    # an explicit --dp-overlap is the user's figure for every collective, ZeRO-3 included
    given = evaluator_for(PlanInputs(model="llama-3.1-70b", gpu="h100", gpus="64", framework="deepspeed",
                                     dp_overlap=0.5)).step
    assert given.zero3_overlap is None and given.dp_overlap == 0.5
