"""Wave 12 step-model mends (review_w12_r2 / r1 leftovers): each test fails on the commit before its mend."""

import pytest

from gpuplan.core.comm.dp_costs import ParamGather
from gpuplan.jobs.validation import published_throughput as pt

CP8_ROW = "torchtitan-2412-llama-3.1-8b-8g-cp8-seq262144"  # FSDP 1 x CP 8, Float8, full recompute


def test_float8_gather_time_gates_on_dp_shard_like_memory(published_rows):
    """torchtitan turns the float8 all-gather on only where dp_shard > 1 (float8.py@9dec370 L51-54; parallel_dims.py
    L103-104: FSDP's ranks over cp). The CP-8 row shards FSDP over its 8 cp ranks with dp_shard 1: with the flag
    given, the step's compute stream is the bf16 gather's (step.py passes cp to titan_float8.step_copy_seconds),
    as memory's gate (core.memory.float8_gather) already had it."""
    row = published_rows[CP8_ROW]
    on = pt.predicted_step(row, param_gather=ParamGather(fp8_matrices=True))
    off = pt.predicted_step(row, param_gather=ParamGather())
    assert on.compute == pytest.approx(off.compute, rel=1e-12)


def test_cp_ring_output_corrections_on_the_value_width():
    """TE's ring merges the attention output, heads x value_head_dim wide (context_parallel.py@v2.9 L1643-1650:
    ``out.view(v_shape)`` under MLA). DeepSeek-V3 at cp 2 (128 heads, qk 192, v 128): K/V concatenation
    2 x 2 B x (128 x 192 + 128 x 128) = 163,840 B, the first step's correction 2 x 2 B x 16,384 = 65,536 B and one
    later step's 4.5 B x 16,384 = 73,728 B: 303,104 B a local token (on the query width: 372,736). Llama 3.1 8B,
    whose q and o are both 4,096 wide, is unchanged: 2 x 2 x 2,048 + 4 x 4,096 + 4.5 x 4,096 = 43,008 B."""
    from gpuplan.catalog import load_model
    from gpuplan.core.time.megatron_ops import cp_class

    assert cp_class(load_model("deepseek-v3"), 2).forward_bytes == pytest.approx(303_104, rel=1e-12)
    assert cp_class(load_model("llama-3.1-8b"), 2).forward_bytes == pytest.approx(43_008, rel=1e-12)


def test_cp_ring_hides_behind_the_models_own_forward_and_backward_attention():
    """The ring's transfers hide behind each step's attention core, forward and backward as the step model times
    them (core.time.attention_core.layer_attention_seconds), not split 1 : 2.5 (review_w12_r2 S5). Eager attention
    with dropout (Megatron-LM 2021's kernel: the backward's matmuls are 2x the forward's, its score traffic is not
    2.5x): forward share 0.397 on Llama 3.1 8B at 4,096 tokens, tp 8 (flash: 1 / 3.5 = 0.286). At cp 4, tp 8 (the
    ring spans two H100 nodes) the exposure follows context_parallel's step rule on that split:
    (cp - 1) max(0, t - a_f / cp) + 2 max(0, t - a_b / cp) + (cp - 2) max(0, 2t - a_b / cp) a layer-micro-batch."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.attention_core import attention_forward_share
    from gpuplan.core.time.step import StepSettings, microbatch_compute_time, step_time

    spec, cluster = load_model("llama-3.1-8b"), cluster_for(load_accelerator("h100-sxm"))
    settings = StepSettings(seq_len=4096, attention_kernel="eager", attention_dropout=0.1)
    tp, cp, k = 8, 4, 4
    share = attention_forward_share(spec, cluster.gpu, settings, tp)
    # by hand (core.time.attention_core, eager): matmuls 4 x 4,096 x 4,096 / tp 8 / (989.4e12 x MAMF 0.803) = 10.56 ns
    # a token; 32 / 8 x 4,096 = 16,384 scores at (8 + 5 dropout) B forward, (14 + 5) B backward, at 3.35e12 x 0.75:
    # forward 10.56 + 84.77 = 95.33 ns, backward 2 x 10.56 + 123.90 = 145.02 ns: share 95.33 / 240.35 = 0.3966
    matmul = 4 * 4096 * 4096 / tp / (989.4e12 * 0.803)
    forward, backward = matmul + 16384 * 13 / (3.35e12 * 0.75), 2 * matmul + 16384 * 19 / (3.35e12 * 0.75)
    assert share == pytest.approx(forward / (forward + backward), rel=1e-9)
    assert forward == pytest.approx(95.33e-9, rel=1e-4)
    assert attention_forward_share(spec, cluster.gpu, StepSettings(seq_len=4096), tp) == pytest.approx(1 / 3.5)
    step = step_time(spec, cluster, settings, dp=1, tp=tp, cp=cp, micro_batch=1, micro_batches=k)
    layers = spec.num_layers
    attention = microbatch_compute_time(spec, cluster, settings, tp, cp, 1, layers, True).attention / layers
    a_f, a_b = attention * share / cp, attention * (1 - share) / cp
    from gpuplan.core.comm.step_comm import link
    from gpuplan.core.comm import volumes as C

    kv_bytes = 1 * 4096 / cp * (8 * 128 * 2) * 2 / tp  # tokens x (k + v width) x 2 B / tp
    t = C.p2p_time(kv_bytes, *link(cluster, tp * cp))
    per_layer = (cp - 1) * max(0, t - a_f) + 2 * max(0, t - a_b) + (cp - 2) * max(0, 2 * t - a_b)
    assert per_layer > 0
    assert float(step.cp_comm) == pytest.approx(k * layers * per_layer, rel=1e-9)
    # by hand: t = 524,288 B / 45 GB/s + 15 us = 26.65 us on the network (tp x cp = 32 spans 4 nodes); a layer's
    # attention per ring step on 1,024 local tokens: forward 1,024 x 95.33 ns / 4 = 24.40 us, backward 1,024 x
    # 145.02 ns / 4 = 37.12 us; exposed 3 x (26.65 - 24.40) + 2 x 0 + 2 x (53.30 - 37.12) = 39.10 us x 4 micro-batches
    # x 32 layers = 5.004 ms
    assert t == pytest.approx(524288 / 45e9 + 15e-6, rel=1e-12)
    assert (a_f, a_b) == (pytest.approx(1024 * forward / cp, rel=1e-9), pytest.approx(1024 * backward / cp, rel=1e-9))
    hand = 3 * (t - 1024 * forward / cp) + 2 * (2 * t - 1024 * backward / cp)
    assert float(step.cp_comm) == pytest.approx(k * layers * hand, rel=1e-9)
    assert hand == pytest.approx(39.10e-6, rel=1e-3)


def test_te_ring_kernels_only_where_te_runs_the_ring():
    """TE's CP ring kernels (context_parallel.ring_kernels, 0.1221 ms a layer-micro-batch at Llama 3.1 405B's
    tp 4 cp 2 GB200 layout: test_context_parallel) are charged where TE's AttnFuncWithCPAndKVP2P runs: Megatron-Core
    (NeMo / Megatron-Bridge rows, --framework megatron). --framework deepspeed (Ulysses) and generic pay the ring's
    transfers only (review_w12_r2 note)."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time import context_parallel as CP
    from gpuplan.core.time.step import StepSettings, microbatch_compute_time
    from gpuplan.jobs.plan import step_settings as S
    from gpuplan.jobs.plan.schema import PlanInputs

    spec, gpu = load_model("llama-3.1-405b"), load_accelerator("gb200")
    cluster = cluster_for(gpu)
    ring = CP.ring_kernels(spec, 2, 4096, gpu.memory_bandwidth, 4) * 4096
    te, other = (microbatch_compute_time(spec, cluster, StepSettings(seq_len=8192, te_cp_ring=on), 4, 2, 1, 16,
                                         False).total for on in (True, False))
    # ring: 0.0784 ms of kernels' fixed time + 4,096 x 76,032 B / 7.12 TB/s = 0.0784 + 0.0437 = 0.1221 ms a layer
    # (the hand working of tests/test_context_parallel.py test_ring_kernels_at_the_405b_layout_by_hand)
    assert te - other == pytest.approx(16 * ring, rel=1e-9) and ring == pytest.approx(0.1221e-3, rel=1e-3)
    for framework, runs_te in (("megatron", True), ("generic", False), ("deepspeed", False)):
        inputs = PlanInputs(model="llama-3.1-8b", tokens=1e11, gpu="h100", gpus=16, framework=framework, cp=2)
        assert S._step_settings(inputs, load_model("llama-3.1-8b"), load_accelerator("h100-sxm"), "flash", 0.0).te_cp_ring is runs_te


def test_a_dense_yarn_model_pays_the_eager_ropes_kernels():
    """A dense model with a YaRN attention factor (a user config's rope_scaling 'yarn') under Megatron-Core runs the
    unfused RoPE (core.time.eager_fallbacks): its bytes, 42 B x (32 + 8) x 128 = 215,040 B a token and layer, and
    its kernels' fixed time, 22 x 7.84 + 12 x 0.92 = 183.52 us a layer-micro-batch, both in the step's element-wise
    work (review_w12_r1 S3: the kernels sat in moe_layer, 0 for dense models). Llama 3.1 8B-shaped, 32 layers, one
    micro-batch of 4,096 tokens on an H100 (3.35 TB/s x 0.75)."""
    from dataclasses import replace

    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.eager_fallbacks import YARN_ROPE
    from gpuplan.core.time.step import StepSettings, microbatch_compute_time

    base = load_model("llama-3.1-8b")
    spec = replace(base, attention=replace(base.attention, rope_attention_factor=1.35))
    cluster = cluster_for(load_accelerator("h100-sxm"))
    fused, eager = (microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, eager_fallbacks=f), 1, 1, 1, 32,
                                            False).total for f in ((), (YARN_ROPE,)))
    by_hand = 32 * (4096 * 215_040 / (cluster.gpu.memory_bandwidth * 0.75) + 183.52e-6)
    assert eager - fused == pytest.approx(by_hand, rel=1e-9)
