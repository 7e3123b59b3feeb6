"""The host time a Megatron-Core MoE layer's dispatcher sync exposes (core.time.moe_host)."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import moe_host as M
from gpuplan.core.time.host import HOST_SECONDS_PER_OP, reference_scale
from gpuplan.core.time.moe_layer import stage_expert_kernel_seconds
from gpuplan.core.time.step import StepSettings, microbatch_compute_time, step_time
from gpuplan.jobs.validation.published_throughput import moe_launch

US = 1e-6


def test_per_op_costs_are_core_time_host_carried_over():
    # r x (704 us / 210 - 0.5 us) + k with host.py's probes: r = 1.506, k = 3.250 us -> 7.547 us
    scale = reference_scale()
    assert scale.python == pytest.approx(1.506, abs=0.001)
    assert scale.launch == pytest.approx(3.250 * US, abs=0.001 * US)
    by_hand = scale.python * (HOST_SECONDS_PER_OP["forward"] - 0.5 * US) + scale.launch
    assert M.forward_op_seconds() == pytest.approx(by_hand, rel=1e-12)
    assert M.forward_op_seconds() == pytest.approx(7.547 * US, abs=0.001 * US)


def test_alltoall_hand_worked_32_local_experts_fp8():
    # after the sync: 6 dispatcher + 10 expert-module ops x 7.547 us = 120.7 us, plus MXFP8's 4 launches
    # (quantise + GEMM for fc1 and fc2) x 32 experts x 3.250 us = 416.0 us: 536.8 us counted
    host = M.host_after_sync_seconds("alltoall", 32, "mxfp8")
    assert host == pytest.approx(536.8 * US, abs=0.5 * US)
    # sync to sync the host needs 2,938 + 536.8 = 3,474.8 us; a 3,000 us GPU forward leaves 474.8 us
    assert M.MOE_LAYER_HOST_SECONDS == pytest.approx(2938 * US)
    assert M.exposed_host_seconds("alltoall", 32, "mxfp8", 3000 * US) == pytest.approx(474.8 * US, abs=0.5 * US)
    # BF16: no quantisations, 2 launches per expert: 120.7 + 208.0 = 328.8 us
    assert M.host_after_sync_seconds("alltoall", 32, None) == pytest.approx(328.8 * US, abs=0.5 * US)


def test_current_scaling_launches_four_kernels_per_expert_quantisation():
    # Float8CurrentScalingQuantizer::quantize_impl (pytorch/csrc/quantizer.cpp@v2.12 L517-537): zero the
    # amax (current_scaling.cu L75 zero_amax_kernel), the amax pass, the scale kernel (L258), the cast:
    # 2 x 4 + 2 GEMMs = 10 launches per expert forward; 32 experts x 10 x 3.250 us = 1,040.0 us
    # + 120.7 us of Python ops = 1,160.8 us, 624.0 us (6 x 32 launches) more than MXFP8's
    host = M.host_after_sync_seconds("alltoall", 32, "tensorwise")
    assert host == pytest.approx(1160.8 * US, abs=0.5 * US)
    assert host - M.host_after_sync_seconds("alltoall", 32, "mxfp8") == pytest.approx(624.0 * US, abs=0.1 * US)


def test_eager_expert_bias_adds_two_python_ops_per_local_expert():
    # _apply_bias (experts.py@core_v0.15.0 L823-840): b * p and t + . per expert from Python;
    # 32 experts: 64 ops x 7.547 us = 483.0 us more than 328.8 us (BF16 above) = 811.8 us
    assert M.EAGER_BIAS_PYTHON_OPS_PER_EXPERT == 2
    host = M.host_after_sync_seconds("alltoall", 32, None, eager_bias=True)
    assert host == pytest.approx(811.8 * US, abs=0.5 * US)
    # 2,938 + 811.8 - 3,000 us of GPU forward = 749.8 us
    assert M.exposed_host_seconds("alltoall", 32, None, 3000 * US, eager_bias=True) == \
        pytest.approx(749.8 * US, abs=0.5 * US)


def test_flex_counts_fewer_python_ops_and_a_long_forward_hides_the_host():
    # flex: 2 + 10 ops = 90.6 us + 416.0 us = 506.6 us, 4 ops (30.2 us) fewer than alltoall's;
    # 2,938 + 506.6 - 3,000 us of GPU forward = 444.6 us
    flex = M.exposed_host_seconds("flex", 32, "mxfp8", 3000 * US)
    assert flex == pytest.approx(444.6 * US, abs=0.5 * US)
    assert M.exposed_host_seconds("alltoall", 32, "mxfp8", 3000 * US) - flex == pytest.approx(4 * 7.547 * US, rel=1e-3)
    # enough GPU work between the syncs hides the host entirely
    assert M.exposed_host_seconds("flex", 32, "mxfp8", 3600 * US) == 0.0


def test_paired_micro_batch_backward_covers_the_launches():
    alone = M.exposed_host_seconds("alltoall", 32, "mxfp8", 3000 * US)
    paired = M.exposed_host_seconds("alltoall", 32, "mxfp8", 3000 * US, paired_mlp_backward=200 * US)
    assert alone - paired == pytest.approx(200 * US, abs=1e-9)


def _short_sequence_step(launch: str):
    # the per-expert kernels' fixed GPU time (core.time.moe_layer) is off: a graph does not remove it
    spec, cluster = load_model("qwen3-30b-a3b"), cluster_for(load_accelerator("b200"))
    settings = StepSettings(seq_len=256, dtype="fp8", moe_launch=launch, expert_tp=1, moe_expert_kernels="fused")
    return spec, cluster, settings, step_time(spec, cluster, settings, dp=8, ep=8, micro_batch=1, micro_batches=4)


def test_cuda_graphs_remove_the_term_and_eager_adds_it_per_layer_and_micro_batch():
    spec, cluster, settings, eager = _short_sequence_step("eager")
    graph = _short_sequence_step("graph")[3]
    # a graph removes the host term only: beside 'none' (the MoE layer not Megatron-Core's) it keeps
    # the alltoall dispatcher's sorts (core.time.moe_layer), 4 micro-batches x 48 layers of them
    sorts = stage_expert_kernel_seconds(spec, settings, 8, spec.num_layers, "tensorwise", 256,
                                        cluster.gpu.memory_bandwidth)
    assert graph.total - _short_sequence_step("none")[3].total == pytest.approx(4 * sorts, rel=1e-9)
    # 256 tokens: the MLP forward is far shorter than 16 local experts' launches
    phases = microbatch_compute_time(spec, cluster, settings, 1, 1, 1, spec.num_layers, True, ep=8).moe_phases
    assert phases.mlp_forward < 100 * US
    assert eager.total > graph.total
    # pp 1: no bubble, so the step grows by micro-batches x MoE layers x the per-layer exposure
    per_layer = (eager.total - graph.total) / (4 * spec.num_moe_layers)
    # at most the host's sync-to-sync time minus the layer's forward without its all-to-alls, plus the counted
    # backward's host minus the layer's backward without them
    upper = M.MOE_LAYER_HOST_SECONDS + M.host_after_sync_seconds("alltoall", 16, "tensorwise") \
        - phases.pre_dispatch_forward - phases.mlp_forward \
        + M.backward_host_seconds("alltoall", 16, "tensorwise") - phases.pre_dispatch_backward - phases.mlp_backward
    assert 0 < per_layer <= upper + 1e-12


def test_published_rows_take_the_recipes_cuda_graphs(published_rows):
    rows = published_rows
    graphed = [i for i, r in rows.items() if (r.get("moe_comm") or {}).get("cuda_graph") == "full_iteration"]
    # 21 + the two GPT-OSS GB200 rows whose presets also capture the whole step (26.06.01 V2 preset, 26.08 recipe)
    assert len(graphed) == 23
    assert all("cuda_graph" in rows[i]["derived"] for i in graphed)  # each cites its recipe
    assert moe_launch(rows["mbridge-26.08-qwen3-30b-a3b-gb200-8g-mxfp8"]["moe_comm"]) == "graph"
    # the 25.09 perf script pads to capacity (apply_moe_token_drop): static split sizes, no sync
    token_drop = rows["mbridge-25.09-qwen3-30b-a3b-b200-8g-fp8cs"]
    assert moe_launch(token_drop["moe_comm"]) == "static"  # moe_comm.static_splits, not the table label
    dropless = rows["mbridge-26.04-qwen3-30b-a3b-h100-sxm-16g-fp8cs"]
    assert moe_launch(dropless["moe_comm"]) == "eager"
    assert moe_launch({}) == "none"
    assert replace(StepSettings(), moe_launch="eager").moe_launch in M.MOE_LAUNCH_MODES


def test_megatron_plans_charge_all_experts_on_one_gpu():
    # Megatron-Core runs eager unless a recipe sets cuda_graph_impl (default 'none')
    from gpuplan.core.frameworks import framework

    assert framework("megatron").moe_launch == "eager"
    assert framework("torchtitan").moe_launch == "none"
    # ep 1 keeps all 128 Qwen3-30B-A3B experts on each GPU: 16 ops x 7.547 us + 512 MXFP8 launches x
    # 3.250 us = 120.8 + 1,664.0 = 1,785 us after the sync, no all-to-all to hide it
    assert M.host_after_sync_seconds("alltoall", 128, "mxfp8") == pytest.approx(1785 * US, abs=1 * US)
    spec, cluster = load_model("qwen3-30b-a3b"), cluster_for(load_accelerator("b200"))
    # the host term alone (the per-expert kernels' GPU time, core.time.moe_layer, is tests/test_moe_layer.py's)
    settings = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", moe_launch="eager", expert_tp=1,
                            moe_expert_kernels="fused")
    phases = microbatch_compute_time(spec, cluster, settings, 1, 1, 1, spec.num_layers, True, ep=1).moe_phases
    eager_step = step_time(spec, cluster, settings, dp=8, ep=1, micro_batch=1, micro_batches=4)
    none_step = step_time(spec, cluster, replace(settings, moe_launch="graph"), dp=8, ep=1, micro_batch=1,
                          micro_batches=4)  # a graph removes the host term from the compute
    # the compute (the stretch the data-parallel traffic hides behind since session 26: tests/test_moe_host_window_s26.py)
    eager, none = eager_step.compute, none_step.compute
    # pp 1, no bubble, ep 1 (no all-to-all): 4 micro-batches x 48 MoE layers x
    # ((2,938 + 1,785 us - the layer's forward) + (the backward's host - the layer's backward)); the backward's
    # host: the forward's Python, 4,723 - 512 MXFP8 launches x 3.25 us = 3,059 us, x 1.4544 = 4,449 us, + 128
    # experts x 6 launches x 3.25 us = 2,496 us: 6,945 us
    assert M.backward_host_seconds("alltoall", 128, "mxfp8") == pytest.approx(6945 * US, abs=1 * US)
    layer = phases.pre_dispatch_forward + phases.mlp_forward
    layer_backward = phases.pre_dispatch_backward + phases.mlp_backward
    assert layer_backward < 6945 * US  # the backward is host-bound too
    assert eager - none == pytest.approx(4 * 48 * (2938 * US + 1785 * US - layer + 6945 * US - layer_backward),
                                         rel=1e-3)
    assert eager - none > 0.1
    # the step grows by the host term less the gradient all-reduce it hides
    assert eager_step.total - none_step.total == pytest.approx(eager - none - (none_step.dp_comm - eager_step.dp_comm),
                                                               rel=1e-9)
    assert 0 <= none_step.dp_comm - eager_step.dp_comm < eager - none
