"""torchtitan's FSDP2 float8 all-gather (--float8.enable_fsdp_float8_all_gather, core.time.titan_float8): torchao's
WeightWithDynamicFloat8CastTensor casts each shard to float8 before the gather (torchao/float8/fsdp_utils.py@eab345c
L226-244), the gather moves 1 B a layer-matrix element (core.comm.dp_costs.gather_bytes, the Megatron FP8 param
gather's mechanism), the copy-out copies 1 + 1 B, and Float8Linear skips its own weight cast
(float8_linear.py@eab345c L324-336). Hand-worked on Llama 3.1 8B."""

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.dp_costs import ParamGather, gather_bytes
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import titan_float8 as TF
from gpuplan.core.time.stages import paced_stage_layers, rank_layers
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY, memory_bound_seconds
from gpuplan.core.time.step import StepSettings
from gpuplan.core.time.titan_ops import TitanOps
from gpuplan.jobs.validation import published_throughput as pt

# Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json): 32 layers, hidden 4,096, 32 heads of 128, 8 KV heads,
# FFN 14,336, vocabulary 128,256, untied head; RMSNorm weights only
H, L, FFN, VOCAB, KV = 4096, 32, 14336, 128256, 8 * 128
MATRICES = L * (2 * H * H + 2 * H * KV + 3 * H * FFN)  # wq wo, wk wv, w1 w2 w3: 6,979,321,856
REST = 2 * VOCAB * H + (2 * L + 1) * H  # tok_embeddings + output + norms: 1,050,939,392 (bf16: not Float8Linear)


@pytest.fixture(scope="module")
def h100_cluster():
    return cluster_for(load_accelerator("h100-sxm-96gb-500w"))


def test_8b_gather_bytes_by_hand():
    spec = load_model("llama-3.1-8b")
    # the hand count against the catalog's: matrices + the rest = Llama 3.1 8B's 8,030,261,248 parameters, and the
    # matrices are the ones the gather counts (core.comm.dp_costs.matrices_per_gpu)
    from gpuplan.core.comm.dp_costs import matrices_per_gpu
    from gpuplan.core.model.spec import count_parameters

    assert MATRICES + REST == count_parameters(spec).active == 8_030_261_248
    assert matrices_per_gpu(spec, 1, 1, 1) == MATRICES
    # FSDP over 8 (tp 1, pp 1): the whole stage is gathered: matrices at 1 B, the rest at 2 B = 9.081e9 B (bf16 16.06e9)
    fp8 = gather_bytes(spec, ParamGather(fp8_matrices=True), 1, 1, 1)
    assert fp8 == pytest.approx(MATRICES + 2 * REST, rel=1e-9)
    assert fp8 / gather_bytes(spec, ParamGather(), 1, 1, 1) == pytest.approx(0.5654, abs=1e-4)


def test_float8_gather_seconds_by_hand(h100_cluster):
    """FSDP 8, ZeRO-3, pp 1, one micro-batch: the copy-out saves 2 B x (the stage + 31 of 32 blocks re-gathered
    for backward) = 27.48e9 B at the 89% stream line; the weight cast 5 B x 6.979e9 = 34.90e9 B at the rate
    core.time.step charged it, memory bandwidth x StepSettings.hbm_efficiency (0.75), x 4/3 under a recompute
    that re-runs the forward's elementwise third; the amax pass reads 4 B x 6.979e9 / 8 = 3.49e9 B (one kernel)
    and one all-reduce of 7 x 32 fp32 amaxes over the 8 ranks."""
    spec, hbm = load_model("llama-3.1-8b"), h100_cluster.gpu.memory_bandwidth
    copy_out, cast = 2 * MATRICES * (1 + 31 / 32), 5 * MATRICES
    # the 2 B a copy-out element saves and the 5 B cast are the code's: (2 + 2) - (1 + 1), amax 2 + read 2 + write 1
    assert TF.COPY_OUT_SAVED_BYTES == (2 + 2) - (1 + 1) and TF.FP8_WEIGHT_CAST_BYTES == 2 + 2 + 1
    amax = memory_bound_seconds(4 * MATRICES / 8, 1, hbm) + K.collective_seconds("all_reduce", 4 * 7 * 32,
                                                                                  h100_cluster.group(8, 1))
    args = dict(tp=1, pp=1, shard=8, micro_batches=1, hbm_efficiency=0.75, stage_layers=32)  # pp 1: every layer
    got = TF.float8_gather_seconds(spec, h100_cluster, zero=3, **args)
    assert got == pytest.approx(amax - copy_out / (hbm * HBM_STREAM_EFFICIENCY) - cast / (hbm * 0.75), rel=1e-9)
    assert got == pytest.approx(-0.0306, abs=5e-4)  # 2.4 TB/s HBM2e: 12.9 ms of copy-out, 19.4 ms of cast (16.3 at 0.89)
    assert TF.float8_gather_seconds(spec, h100_cluster, zero=3, **args, rerun=1.0) - got == pytest.approx(
        -cast / 3 / (hbm * 0.75), rel=1e-9)  # full recompute / op SAC: the re-run forward's cast is gone too
    # torchtitan's ZeRO-2 (reshard_after_forward False): no backward re-gather, the copy-out saved once
    kept = TF.float8_gather_seconds(spec, h100_cluster, zero=2, **args)
    assert got - kept == pytest.approx(-2 * MATRICES * 31 / 32 / (hbm * HBM_STREAM_EFFICIENCY), rel=1e-9)
    # no FSDP: torchtitan's dp_shard_enabled gate (float8.py@9dec370 L51-54) and ZeRO-1
    assert TF.float8_gather_seconds(spec, h100_cluster, zero=3, **{**args, "shard": 1}) == 0
    assert TF.float8_gather_seconds(spec, h100_cluster, zero=1, **args) == 0
    # dp_shard counts no cp ranks: FSDP over dp 1 x cp 8 gathers in bf16, over dp 2 x cp 4 in float8
    assert TF.float8_gather_seconds(spec, h100_cluster, zero=3, **args, cp=8) == 0
    assert TF.float8_gather_seconds(spec, h100_cluster, zero=3, **args, cp=4) != 0


def test_the_removed_cast_is_the_fullest_stages():
    """core.time.step charges the Float8Linear weight cast on its fullest stage (stage_span: Llama 3.1 405B's 126
    layers at pp 4 split 32, 32, 31, 31), so the float8 gather takes it back there, not on an average 31.5 layers
    (the parent's num_layers / pp; torchtitan-2412-llama-3.1-405b-512g-1f1b +13.1 -> +13.2%). By hand, tp 8, one
    micro-batch at 3.35 TB/s x 0.75: a layer's matrices 2 x 16,384^2 + 2 x 16,384 x 1,024 + 3 x 16,384 x 53,248 =
    3,187,671,040 / 8 = 398,458,880 x 32 layers x 5 B = 63.75e9 B / 2.5125e12 B/s = 25.37 ms."""
    spec = load_model("llama-3.1-405b")
    h = 16384
    per_layer = 2 * h * h + 2 * h * 1024 + 3 * h * 53248
    assert per_layer == 3_187_671_040 and [rank_layers(spec, 4, r) for r in range(4)] == [32, 32, 31, 31]
    args = dict(tp=8, micro_batches=1, hbm_efficiency=0.75)
    got = TF.removed_cast_seconds(spec, 3.35e12, stage_layers=rank_layers(spec, 4, 0), **args)
    assert got == pytest.approx(5 * per_layer / 8 * 32 / (3.35e12 * 0.75), rel=1e-12)
    assert got == pytest.approx(25.37e-3, abs=0.01e-3)
    # pp 2 divides the layers: 63 each, the average; a stage the step names (a recipe's split) is taken as given
    assert TF.removed_cast_seconds(spec, 3.35e12, stage_layers=rank_layers(spec, 2, 0), **args) == pytest.approx(
        got * 63 / 32, rel=1e-12)
    assert TF.removed_cast_seconds(spec, 3.35e12, stage_layers=30, **args) == pytest.approx(got * 30 / 32)


def test_the_removed_cast_is_the_pacing_stages(h100_cluster):
    """Llama 3.1 8B at pp 3 splits 11, 11, 10 (stage_span); the last stage, one layer fewer but the 128,256-word
    LM head, is the slower, so step_time's micro-batch is the last stage's and the float8 gather takes the weight
    cast (and the amax pass) off its 10 layers, not the first stage's 11 (the cast each stage's time holds is its
    own layers'). dp 16 x ZeRO-3, 8 micro-batches of 8,192 tokens, no recompute, 2.4 TB/s. One layer of matrices
    (2 x 4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336 = 218,103,808) is, by hand, a cast of 5 B x 8 micro-batches
    / (2.4e12 x 0.75) = 4.8468 ms less taken off, and an amax pass of 4 B / 16 ranks / (2.4e12 x 0.89) = 0.0255 ms
    less run: the 11-layer choice would make the step 4.821 ms too short."""
    from gpuplan.core.time import step as S

    spec, cl = load_model("llama-3.1-8b"), h100_cluster
    settings = StepSettings(dtype="fp8", seq_len=8192, param_gather=ParamGather(fp8_matrices=True),
                            titan_ops=TitanOps(norm="fused", compiled=True, fused_qkv=False))
    first, last = rank_layers(spec, 3, 0), rank_layers(spec, 3, 2)
    assert (first, last) == (11, 10) and TF.gathers_float8(settings) and settings.recompute == "none"
    t_first = S.microbatch_compute_time(spec, cl, settings, 1, 1, 1, first, False).total
    t_last = S.microbatch_compute_time(spec, cl, settings, 1, 1, 1, last, True).total
    assert t_last > t_first * 1.05  # the head paces: 0.3126 vs 0.2807 s
    assert paced_stage_layers(first, last, t_first, t_last) == 10
    kw = dict(tp=1, pp=3, shard=16, zero=3, micro_batches=8, cp=1)
    paced, fullest = (TF.step_copy_seconds(spec, cl, settings, stage_layers=n, **kw) for n in (10, 11))
    step = S.step_time(spec, cl, settings, dp=16, pp=3, zero=3, micro_batches=8)
    assert step.compute == pytest.approx(8 * t_last + paced, rel=1e-12)
    layer = 2 * H * H + 2 * H * KV + 3 * H * FFN
    assert layer == 218_103_808 == MATRICES // L
    amax_reduce = (K.collective_seconds("all_reduce", 4 * 7 * 10, cl.group(16, 1))
                   - K.collective_seconds("all_reduce", 4 * 7 * 11, cl.group(16, 1)))  # -1.4 ns: 28 B
    by_hand = 5 * layer * 8 / (2.4e12 * 0.75) - 4 * layer / 16 / (2.4e12 * HBM_STREAM_EFFICIENCY) + amax_reduce
    assert paced - fullest == pytest.approx(by_hand, rel=1e-9)
    assert paced - fullest == pytest.approx(4.821e-3, abs=0.001e-3)
    # the first stage paces where it is the slower (and on a tie): its layers; arrays of layouts element-wise
    assert paced_stage_layers(11, 10, 0.3, 0.2) == paced_stage_layers(11, 10, 0.3, 0.3) == 11
    assert list(paced_stage_layers([11, 16], [10, 14], [0.28, 0.53], [0.31, 0.52])) == [10, 16]


def test_one_gate_for_memory_and_step():
    """torchtitan's dp_shard_enabled (parallel_dims.py@9dec370 L103-104: dp_shard > 1) is the one gate: FSDP's
    ranks (shard_group or dp x cp) over cp. HSDP with a shard group of 1 replica's cp ranks: off."""
    from gpuplan.core.memory.float8_gather import dp_shard_enabled

    assert dp_shard_enabled(8) and dp_shard_enabled(8, 4) and not dp_shard_enabled(8, 8) and not dp_shard_enabled(1)
    assert list(dp_shard_enabled([1, 2, 8], 2)) == [False, False, True]


def test_recompute_rerun_share():
    assert TF.recompute_rerun_share(StepSettings(recompute="full"), 32) == 1.0
    assert TF.recompute_rerun_share(StepSettings(recompute="selective", selective="op-sac"), 32) == 1.0
    assert TF.recompute_rerun_share(StepSettings(recompute="selective"), 32) == 0.0  # core-attn: no cast re-run
    assert TF.recompute_rerun_share(StepSettings(recompute="none"), 32) == 0.0
    assert TF.recompute_rerun_share(StepSettings(recompute="full", recompute_layers=8), 32) == 0.25


def test_only_torchtitan_fp8_tensorwise_gathers_float8():
    ops = TitanOps(norm="fused", compiled=True, fused_qkv=False)
    fp8 = ParamGather(fp8_matrices=True)
    assert TF.gathers_float8(StepSettings(dtype="fp8", titan_ops=ops, param_gather=fp8))
    assert not TF.gathers_float8(StepSettings(dtype="fp8", titan_ops=ops))  # torchtitan's default: bf16 gathers
    assert not TF.gathers_float8(StepSettings(dtype="fp8", param_gather=fp8))  # Megatron's FP8 gather: not here
    assert not TF.gathers_float8(StepSettings(dtype="bf16", titan_ops=ops, param_gather=fp8))
    assert not TF.gathers_float8(StepSettings(dtype="fp8", fp8_recipe="mxfp8", titan_ops=ops, param_gather=fp8))


def test_rows_carry_the_flag_with_a_citation(published_rows):
    flagged = {i: r for i, r in published_rows.items() if "fsdp_float8_all_gather" in r}
    # every torchtitan FP8 row of published_throughput.yaml (2408 x 2, 2412 x 14, 2506 x 10, IBM 2411 x 2): 22 on,
    # 6 off (the four fp8rw and the two cp8 rows, below)
    assert len(flagged) == 28
    assert all(r["derived"].get("fsdp_float8_all_gather") for r in flagged.values())
    on = {i for i, r in flagged.items() if r["fsdp_float8_all_gather"]}
    # rowwise (recipe_name: refused with the gather) and FSDP degree 1 (dp_shard_enabled false) rows stay bf16
    assert {i for i in flagged if "fp8rw" in i or "cp8" in i} == set(flagged) - on
    assert all(r["layout"]["dp"] > 1 for i, r in flagged.items() if i in on)
    row = published_rows["torchtitan-2412-llama-3.1-8b-8g-fsdp-compile-float8"]
    assert pt.param_gather(row) == ParamGather(fp8_matrices=True)
    assert pt.param_gather(published_rows["torchtitan-2412-llama-3.1-8b-8g-cp8-seq262144"]) == ParamGather()
    assert pt.param_gather(published_rows["torchtitan-2412-llama-3.1-8b-8g-fsdp-compile"]) == ParamGather()


def test_8b_row_step_by_hand(published_rows):
    """torchtitan-2412-llama-3.1-8b-8g-fsdp-compile-float8 (FSDP 8, local batch 2, one micro-batch a step): the
    compute stream sheds float8_gather_seconds (its op SAC re-runs the forward: 37.1 ms of a ~2 s step)."""
    row = published_rows["torchtitan-2412-llama-3.1-8b-8g-fsdp-compile-float8"]
    on, off = pt.predicted_step(row), pt.predicted_step(row, param_gather=ParamGather())
    cluster = cluster_for(load_accelerator(row["gpu"]))
    delta = TF.float8_gather_seconds(load_model("llama-3.1-8b"), cluster, tp=1, pp=1, shard=8, zero=3,
                                     micro_batches=1, hbm_efficiency=0.75, rerun=1.0,  # op SAC: the cast re-run
                                     stage_layers=32)  # pp 1: every layer
    assert on.compute - off.compute == pytest.approx(delta, rel=1e-6)
    assert on.dp_comm < off.dp_comm and on.total < off.total


def test_unsharded_layer_at_one_byte():
    """The working set's gathered layer (core.memory.float8_gather): Llama 3.1 8B's largest layer holds 218,103,808
    matrix elements + 8,192 norm weights; float8 saves 1 B on each matrix element (0.203 GiB), a pipeline stage kept
    unsharded saves its matrices; nothing at dp 1 (torchtitan's dp_shard_enabled gate)."""
    from gpuplan.core.memory.float8_gather import unsharded_float8_saving
    from gpuplan.core.memory.model_states import stage_params
    from gpuplan.core.parallel import ParallelLayout

    spec = load_model("llama-3.1-8b")
    layout = ParallelLayout(dp=8, zero=3)
    params = stage_params(spec, layout, 0)
    assert params.largest_layer == MATRICES // L + 2 * H
    layer, stage = unsharded_float8_saving(spec, params, layout, 2.0, True)
    assert layer == MATRICES // L == 218_103_808 and stage == pytest.approx(MATRICES)
    assert unsharded_float8_saving(spec, params, layout, 2.0, False) == (0, 0)
    assert unsharded_float8_saving(spec, params, ParallelLayout(dp=1, cp=8, zero=3), 2.0, True) == (0, 0)


def test_8b_fsdp_peak_drops_by_the_layer():
    """The allocated peak of Llama 3.1 8B under FSDP 8 (micro-batch 2, seq 8,192, op SAC: the Dec-2024 table's
    run) drops by the gathered layer's 218,103,808 B with float8 all-gather (the published compile vs compile +
    Float8 pair: 77.0 -> 76.8 GiB reserved)."""
    from dataclasses import replace as swap

    from gpuplan.core.memory import training as M
    from gpuplan.core.parallel import ParallelLayout

    spec = load_model("llama-3.1-8b")
    layout = ParallelLayout(dp=8, zero=3, micro_batch=2, global_batch=16)
    bf16 = M.MemorySettings(seq_len=8192, framework="torchtitan", recompute="selective")
    drop = M.peak_allocated(spec, layout, bf16) - M.peak_allocated(spec, layout, swap(bf16, fsdp_float8_all_gather=True))
    assert drop == pytest.approx(MATRICES // L, rel=1e-9)


def test_plan_option_is_torchtitans_fp8_tensorwise_only():
    """--fsdp-float8-all-gather (torchtitan's --float8.enable_fsdp_float8_all_gather, default False): refused in one
    line under another framework, another dtype or MXFP8; under torchtitan fp8 the plan's step gathers float8."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.step_settings import _step_settings

    base = dict(model="llama-3.1-8b", gpus=8, gpu="h100-sxm", dtype="fp8", fsdp_float8_all_gather=True)
    for bad, cause in ((dict(framework="megatron"), r"give --framework torchtitan \(not megatron\)$"),
                       (dict(framework="torchtitan", dtype="bf16"), r"give --dtype fp8 \(not bf16\)$"),
                       (dict(framework="torchtitan", fp8_recipe="mxfp8"), r"give --fp8-recipe tensorwise \(not mxfp8;")):
        with pytest.raises(InputError, match=cause):  # the one cause that stops it, named (review_w12_r2 M4)
            PlanInputs(**{**base, **bad})
    inputs = PlanInputs(**base, framework="torchtitan")
    assert PlanInputs(**{**base, "fsdp_float8_all_gather": False}, framework="torchtitan").fsdp_float8_all_gather is False
    assert inputs.recipe_memory_settings()["fsdp_float8_all_gather"] is True
    spec, gpu = load_model("llama-3.1-8b"), load_accelerator("h100-sxm")
    assert _step_settings(inputs, spec, gpu, "flash", 0.0).param_gather.fp8_matrices


def test_memory_takes_the_option_with_its_dtype():
    """`gpuplan memory` has train's --dtype since s24 (helper MD), so it reads the option as train does: under --dtype
    fp8 the gathered matrices at 1 B (a lower peak than bf16 gathers), refused naming it without --dtype fp8 (it was
    an unknown field of memory while memory had no --dtype)."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.memory.estimate import estimate_memory
    from gpuplan.jobs.memory.schema import MemoryInputs

    base = dict(model="llama-3.1-8b", gpu="h100", dp=8, zero=3, framework="torchtitan")
    with pytest.raises(InputError, match="fsdp_float8_all_gather.*--dtype fp8 only"):
        MemoryInputs(**base, fsdp_float8_all_gather=True)
    fp8 = estimate_memory(MemoryInputs(**base, dtype="fp8")).value("peak_allocated")
    assert estimate_memory(MemoryInputs(**base, dtype="fp8", fsdp_float8_all_gather=True)).value("peak_allocated") < fp8
