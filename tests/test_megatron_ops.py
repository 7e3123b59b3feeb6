"""core/time/megatron_ops.py: Megatron-Core + TE's memory-bound op list, counted by hand for one
Llama-3-8B layer (h 4,096, 32 query / 8 KV heads of 128, SwiGLU width I 14,336), and how the step
uses it (opt-in: StepSettings.megatron_ops) and shows it (plan --explain / --full)."""

import json

import pytest
from helpers import op_class_values

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import megatron_ops as MO
from gpuplan.core.time import megatron_ops_step as MS
from gpuplan.core.time.step import StepSettings, microbatch_compute_time

H, Q, KV, I = 4096, 4096, 1024, 14336
LLAMA3_8B = load_model("llama-3-8b")
FIXED, EFF = 7.84e-6, 0.89  # core.time.memory_kernels


def _by_name(classes):
    return {c.name: c for c in classes}


def test_bf16_layer_bytes_by_hand():
    c = _by_name(MO.layer_classes(LLAMA3_8B, MO.MegatronOps()))
    # TE LayerNormLinear's norm (layernorm_linear.py v2.9 apply_normalization): 2 norms x (read 2 + write 2)
    # forward; backward 2 x (dy 2 + x 2 + dx 2) and each norm's weight-gradient finalisation kernel
    assert (c["norm"].forward_bytes, c["norm"].backward_bytes) == (2 * 4 * H, 2 * 6 * H)
    assert (c["norm"].forward_kernels, c["norm"].backward_kernels) == (2, 4)
    # query.reshape copies the strided slice of the fused QKV output (attention.py); SplitAlongDim's
    # backward concatenates dq, dk, dv
    assert (c["qkv_split"].forward_bytes, c["qkv_split"].backward_bytes) == (4 * Q, 4 * (Q + 2 * KV))
    # TE fused RoPE on q and k: read + write 2 B each way, one kernel per tensor
    assert c["rope"].forward_bytes == c["rope"].backward_bytes == 4 * (Q + KV) == 20480
    # bias_swiglu_impl: read 2I, write I (6 B per I); backward dy I + x 2I read, dx 2I written (10 B per I)
    assert (c["swiglu"].forward_bytes, c["swiglu"].backward_bytes) == (6 * I, 10 * I) == (86016, 143360)
    # two bias-dropout-adds forward, two autograd gradient sums backward: 6 B per element each
    assert c["residual"].forward_bytes == c["grad_sums"].backward_bytes == 12 * H
    assert sum(x.bytes for x in c.values()) == 491520 == 120 * H


def test_fp8_cast_bytes_by_recipe_and_part():
    ops = MO.MegatronOps()
    per_recipe = {}
    for recipe, non_tn in (("current", False), ("current", True), ("delayed", False), ("mxfp8", True)):
        cast = _by_name(MO.layer_classes(LLAMA3_8B, ops, recipe, non_tn))["fp8_casts"]
        per_recipe[(recipe, non_tn)] = (cast.forward_bytes, cast.backward_bytes, cast.forward_kernels)
    grads = H + 2 * I + H + Q + 2 * KV  # fc2, fc1, proj, qkv output gradients = 43,008 per token
    # current scaling on Hopper: after a norm quantize_with_amax 2 + 1 + 1 (transpose), 2 kernels; the
    # proj and fc2 inputs amax 2 + cast 2 + 1 + 1 = 6 B, 3 kernels (quantizer.cpp quantize_impl)
    assert per_recipe[("current", False)] == (4 * 2 * H + 6 * (Q + I), 6 * grads, 2 * 2 + 2 * 3)
    # Blackwell takes non-TN FP8 GEMMs (is_non_tn_fp8_gemm_supported): no transpose, 1 B less
    assert per_recipe[("current", True)] == (3 * 2 * H + 5 * (Q + I), 5 * grads, 10)
    # delayed scaling: the norm writes FP8 itself (-1 B), Hopper transposes it (+2 B, 1 kernel)
    assert per_recipe[("delayed", False)] == (1 * 2 * H + 4 * (Q + I), 4 * grads, 2 + 2)
    # MXFP8: one pass, rowwise + columnwise with E8M0 scales: 2 + 2 x 1.03125 B everywhere
    assert per_recipe[("mxfp8", True)] == pytest.approx((4.0625 * (2 * H + Q + I), 4.0625 * grads, 4))
    assert MO.quantize_cost("nvfp4", False, True) == (7.125, 3)
    with pytest.raises(ValueError):
        MO.quantize_cost("rowwise", False, True)


def test_loss_per_provider():
    # Llama3ModelProvider8B sets cross_entropy_fusion_impl 'te': 10 B per vocabulary element, 3 kernels
    assert MO.default_ops(LLAMA3_8B).cross_entropy == "te"
    te = MO.loss_class(LLAMA3_8B, MO.MegatronOps(cross_entropy="te"), tp=2)
    assert (te.bytes, te.kernels) == (10 * 128256 / 2, 3)
    native = MO.loss_class(LLAMA3_8B, MO.MegatronOps(cross_entropy="native"))
    assert (native.bytes, native.kernels) == (28 * 128256, 4)


def test_moe_keeps_the_fitted_model():
    assert MO.default_ops(load_model("qwen3-30b-a3b")) is None
    with pytest.raises(ValueError, match="dense"):
        MO.layer_classes(load_model("qwen3-30b-a3b"), MO.MegatronOps())


def test_seconds_are_bytes_at_hbm_plus_fixed_kernel_time():
    tokens, bw = 8192.0, 3.35e12
    seconds = MO.elementwise_seconds_per_token(LLAMA3_8B, MO.MegatronOps(), None, False, tokens, bw, tp=2)
    # kernels: norm 2 + 4, split 1 + 1, RoPE 2 + 2, SwiGLU 1 + 1, adds 2, gradient sums 2 = 18
    assert seconds == pytest.approx(120 * H / 2 / (bw * EFF) + 18 * FIXED / tokens, rel=1e-9)


def test_step_adds_exactly_the_op_list_when_opted_in():
    """BF16, no recompute: the opt-in micro-batch minus the fitted model without element-wise work is
    the layers' op list plus the loss (the host is hidden behind 8K-token layers)."""
    cluster = cluster_for(load_accelerator("h100-sxm"))
    ops = MO.default_ops(LLAMA3_8B)
    base = StepSettings(seq_len=8192, elementwise_factor=0.0)
    bare = microbatch_compute_time(LLAMA3_8B, cluster, base, 1, 1, 1, 32, True).total
    opted = microbatch_compute_time(LLAMA3_8B, cluster, StepSettings(seq_len=8192, megatron_ops=ops), 1, 1, 1, 32,
                                    True).total
    bw, tokens = 3.35e12, 8192
    layer = (120 * H * tokens) / (bw * EFF) + 18 * FIXED
    loss = 10 * 128256 * tokens / (bw * EFF) + 3 * FIXED
    assert opted - bare == pytest.approx(32 * layer + loss, rel=1e-6)


def test_optimizer_and_weight_casts_by_hand():
    # 1e9 local parameters over 8 shards: (28 + 4 + 6) B per shard parameter + 4 B zeroed per local one
    assert MS.optimizer_bytes(1e9, 8) == pytest.approx(38e9 / 8 + 4e9)
    # Llama-3-8B's 32 layers x 218,103,808 linear weights, current scaling on Hopper: 6 B once a step
    weights = 32 * (H * (Q + 2 * KV) + Q * H + 3 * H * I)
    assert weights == 32 * 218_103_808
    casts = MS.weight_cast_seconds(LLAMA3_8B, "current", False, 3.35e12, 1, 32)
    assert casts == pytest.approx(6 * weights / (3.35e12 * EFF) + 32 * 4 * 3 * FIXED)
    assert MS.weight_cast_seconds(LLAMA3_8B, None, False, 3.35e12, 1, 32) == 0


def test_host_time_from_te_cpu_timings():
    # te.Linear 99.66 / torch 37.08 us (TransformerEngine#2053) x the H200 host's 16.44 us torch Linear
    assert MS.TE_MODULE_HOST_SECONDS == pytest.approx(44.19e-6, rel=1e-3)
    forward, backward = MS.host_seconds_per_layer(MO.MegatronOps())
    assert forward == backward == pytest.approx(5 * 44.19e-6 + 10 * 6.21e-6, rel=1e-3)
    # exposed only beyond the GPU's work, and never under CUDA graphs
    assert MS.exposed_host_seconds(MO.MegatronOps(), 1e-3, 1e-3) == 0
    assert MS.exposed_host_seconds(MO.MegatronOps(), 100e-6, 0.0) == pytest.approx(2 * forward - 100e-6)
    assert MS.exposed_host_seconds(MO.MegatronOps(cuda_graphs=True), 0.0, 0.0) == 0


PLAN = ("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--pp", "1", "--tp", "1",
        "--framework", "megatron", "--full", "--json")


def test_plan_shows_megatron_classes_that_add_up_to_the_step(run_cli):
    code, out, _ = run_cli(*PLAN, "--dtype", "fp8")
    assert code == 0
    classes, report = op_class_values(out)
    assert sum(classes.values()) == pytest.approx(report["results"]["best_step_seconds"], rel=0.001)
    for name in ("norm", "qkv_split", "rope", "swiglu", "residual", "grad_sums", "fp8_casts", "loss"):
        assert classes[f"class_megatron_{name}"] > 0
    assert classes["class_megatron_swiglu"] > classes["class_megatron_rope"]
    # the residual line by hand: bias_dropout_add twice a layer, read 2 + 2 B and write 2 B of h 4,096 each
    # (megatron_ops.py 'residual': 2 kernels, 2 x 3 x 2 x 4,096 = 49,152 B a token); the plan's layout dp8 mb2 at
    # the default 4,096-token sequence: 8,192 tokens a micro-batch, 1,024 / 8 / 2 = 64 micro-batches, 32 layers;
    # H100 3.35 TB/s at 89% + 7.84 us a kernel (memory_kernels.HBM_STREAM_EFFICIENCY / KERNEL_FIXED_SECONDS):
    # 64 x 32 x (2 x 7.84 us + 49,152 x 8,192 B / 2.9815 TB/s) = 64 x 32 x 150.73 us = 0.30870 s; the backward's
    # grad_sums line moves the same bytes in 2 kernels
    assert report["results"]["best_layout"].startswith("dp8 tp1 pp1") and " mb2," in report["results"]["best_layout"]
    assert report["results"]["global_batch"] == 1024
    residual = 64 * 32 * (2 * 7.84e-6 + 2 * 3 * 2 * 4096 * 8192 / (3.35e12 * 0.89))
    assert residual == pytest.approx(0.30870, rel=1e-4)
    assert classes["class_megatron_residual"] == pytest.approx(residual, rel=1e-9)
    assert classes["class_megatron_grad_sums"] == pytest.approx(residual, rel=1e-9)
    # a MoE model keeps the fused lines
    code, out, _ = run_cli("plan", "qwen3-30b-a3b", "--tokens", "1T", "--gpu", "h100", "--gpus", "16",
                           "--framework", "megatron", "--full", "--json")
    assert code == 0 and not any(k.startswith("class_megatron") for k in op_class_values(out)[0])


def test_opted_in_lines_add_up_and_charge_the_weight_casts():
    """StepSettings.megatron_ops set (the Python API's opt-in): the step charges the op list, the FP8
    weight casts once a step and the distributed optimizer; the lines still add up to it."""
    from dataclasses import replace

    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.step_classes import step_class_lines
    from gpuplan.planner.plan import evaluate_layout
    ev = evaluator_for(PlanInputs(model="llama-3-8b", gpu="h100", gpus="8", dtype="fp8", framework="megatron"))
    ev = replace(ev, step=replace(ev.step, megatron_ops=MO.default_ops(ev.spec)))
    layout = ParallelLayout(dp=8, tp=1, pp=1, zero=1, micro_batch=1, global_batch=128)
    plan = evaluate_layout(ev, layout, "none", 128.0)
    lines = {ln.key: ln.value for ln in step_class_lines(ev, plan, "megatron")}
    assert sum(lines.values()) == pytest.approx(plan.step_seconds, rel=1e-6)
    assert lines["class_megatron_weight_casts"] == pytest.approx(
        MS.weight_cast_seconds(ev.spec, "current", False, 3.35e12, 1, 32))
    params = 8_030_261_248  # Llama-3-8B, untied embeddings
    assert lines["class_optimizer"] == pytest.approx(MS.optimizer_seconds(params, 8, 3.35e12), rel=1e-6)


def test_sequence_parallel_transposes_on_hopper():
    """Under tp > 1 on Hopper the four gathered FP8 tensors (two norm outputs, two row-parallel output
    gradients, h wide) are transposed after the all-gather (TE distributed.py _all_gather_fp8):
    2 B per element of all tp ranks' tokens instead of 1 B locally, one kernel each."""
    one = _by_name(MO.layer_classes(LLAMA3_8B, MO.MegatronOps(), "current", False, tp=1))["fp8_casts"]
    four = _by_name(MO.layer_classes(LLAMA3_8B, MO.MegatronOps(), "current", False, tp=4))["fp8_casts"]
    assert four.backward_bytes - one.backward_bytes == (2 * 4 - 1) * 4 * H
    assert (four.backward_kernels - one.backward_kernels, four.forward_bytes) == (4, one.forward_bytes)
    blackwell = _by_name(MO.layer_classes(LLAMA3_8B, MO.MegatronOps(), "current", True, tp=4))["fp8_casts"]
    assert blackwell.bytes == _by_name(MO.layer_classes(LLAMA3_8B, MO.MegatronOps(), "current", True))["fp8_casts"].bytes
    assert MO.gathered_transpose_bytes("mxfp8", False, 4) == 0


def test_context_parallel_ring_kernels_by_hand():
    """TE's AttnFuncWithCPAndKVP2P at cp 2 (context_parallel.py): forward the k/v concatenation
    4(k + v), the first step's output 4q, one later step merged at 4.5 B per query element on
    average; backward the copies 4(q + k + v) and one accumulation at 4.5 B per element."""
    c = MO.cp_class(LLAMA3_8B, 2)
    assert c.forward_bytes == 4 * (KV + KV) + 4 * Q + 4.5 * Q
    assert c.backward_bytes == 4 * (Q + 2 * KV) + 4.5 * (Q + 2 * KV)
    assert (c.forward_kernels, c.backward_kernels) == (4, 6)
    assert MO.cp_class(LLAMA3_8B, 1).bytes == 0
    names = [x.name for x in MO.layer_classes(LLAMA3_8B, MO.MegatronOps(), cp=2)]
    assert "cp_attention" in names and "cp_attention" not in [x.name for x in MO.layer_classes(LLAMA3_8B, MO.MegatronOps())]


def test_opt_in_on_a_moe_model_keeps_the_fitted_model():
    cluster = cluster_for(load_accelerator("h100-sxm"))
    spec = load_model("qwen3-30b-a3b")
    fitted = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096), 1, 1, 1, 48, True).total
    opted = microbatch_compute_time(spec, cluster, StepSettings(seq_len=4096, megatron_ops=MO.MegatronOps()), 1, 1, 1,
                                    48, True).total
    assert opted == fitted


def test_the_answer_keeps_the_fitted_term():
    """The op list is opt-in (docs/step.md: on the 100 published dense rows it takes the mean error
    from 9.5% to 11.5%): `--framework megatron` plans leave StepSettings.megatron_ops unset."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    assert evaluator_for(PlanInputs(model="llama-3-8b", gpu="h100", gpus="8", framework="megatron")).step.megatron_ops \
        is None


def test_the_loss_line_says_it_is_charged_beside_the_fitted_term(run_cli):
    """--framework megatron charges the vocabulary loss beside the fitted element-wise term
    (StepSettings.megatron_loss), so its explain line says so while the other classes stay
    'inside the fitted term'; its value is the loss per micro-batch x the micro-batches."""
    code, out, _ = run_cli(*PLAN)
    assert code == 0
    report = json.loads(out)
    section = next(s for s in report["sections"] if "op class" in s["title"])
    labels = {line["key"]: line["label"] for line in section["lines"]}
    assert labels["class_megatron_loss"] == "loss kernels, charged beside the fitted term"
    assert labels["class_megatron_norm"].endswith("op list inside the fitted term")
    results = report["results"]
    classes, _ = op_class_values(out)
    assert sum(classes.values()) == pytest.approx(results["best_step_seconds"], rel=0.001)
