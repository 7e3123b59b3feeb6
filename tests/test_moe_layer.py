"""The per-expert kernels' fixed GPU time of a Megatron-Core MoE layer (core/time/moe_layer.py):
counts read from Transformer Engine's GroupedLinear, times by hand from the two measured
constants (7.84 us per pass-kernel, core.time.memory_kernels; 0.92 us per one-block kernel,
gpu_step_probes.yaml)."""

from __future__ import annotations

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import moe_layer as L
from gpuplan.core.time.step import StepSettings, step_time

US = 1e-6


def test_counts_read_from_transformer_engine():
    # current scaling: one-block amax zeroing (current_scaling.cu@v2.12 L75) + amax pass + one-block
    # scale (L258) + cast pass; MXFP8 one pass; BF16 views
    assert L.QUANTIZE_KERNELS_PER_CALL["tensorwise"] == (2, 2)
    assert L.QUANTIZE_KERNELS_PER_CALL["mxfp8"] == (1, 0)
    assert L.QUANTIZE_KERNELS_PER_CALL["bf16"] == (0, 0)
    # fc1 and fc2: fprop forward; dgrad + wgrad backward; 4 cuBLAS streams
    assert L.GEMMS_PER_EXPERT == (2, 4) and L.GEMM_STREAMS == 4
    assert L.TINY_KERNEL_SECONDS == pytest.approx(0.919e-6, abs=0.01e-6)


def test_forward_launches_per_local_expert_by_recipe():
    # fc1 and fc2: the input's quantisation kernels + the fprop GEMM each
    assert L.forward_launches_per_local_expert("tensorwise") == 2 * 4 + 2
    assert L.forward_launches_per_local_expert("mxfp8") == 2 * 1 + 2
    for fused_or_none in (None, "bf16", "delayed", "nvfp4"):
        assert L.forward_launches_per_local_expert(fused_or_none) == 2


def test_mxfp8_sixteen_local_experts_by_hand():
    # forward: 16 x (2 casts x 7.84 + 2 GEMMs x 7.84 / 4) = 16 x 19.60 = 313.6 us
    # backward: 16 x (2 casts x 7.84 + 4 GEMMs x 1.96) = 16 x 23.52 = 376.3 us
    fwd, bwd = L.expert_kernel_fixed_seconds(16, "mxfp8")
    assert fwd == pytest.approx(313.6 * US, abs=0.1 * US)
    assert bwd == pytest.approx(376.3 * US, abs=0.1 * US)


def test_current_scaling_pays_its_amax_pass_and_two_one_block_kernels():
    # one quantisation: 2 x 7.84 + 2 x 0.92 = 17.52 us; forward 16 x (2 x 17.52 + 3.92) = 623.4 us
    fwd, bwd = L.expert_kernel_fixed_seconds(16, "tensorwise")
    assert fwd == pytest.approx(623.4 * US, abs=0.2 * US)
    assert bwd == pytest.approx(686.1 * US, abs=0.2 * US)  # 16 x (35.04 + 7.84)
    assert fwd > L.expert_kernel_fixed_seconds(16, "mxfp8")[0]


def test_bf16_and_few_experts_overlap_the_gemms_on_fewer_streams():
    # BF16 has no per-expert quantisation: 8 experts x 2 GEMMs x 7.84 / 4 = 31.4 us forward
    assert L.expert_kernel_fixed_seconds(8, None)[0] == pytest.approx(31.36 * US, abs=0.01 * US)
    # two local experts use two streams: 2 x 2 x 7.84 / 2 = 15.7 us
    assert L.expert_kernel_fixed_seconds(2, None)[0] == pytest.approx(15.68 * US, abs=0.01 * US)
    # delayed scaling and NVFP4 quantise all experts in one fused kernel: GEMMs only
    assert L.expert_kernel_fixed_seconds(8, "nvfp4") == L.expert_kernel_fixed_seconds(8, None)


def _step(kernels: str, launch: str = "graph", model: str = "qwen3-30b-a3b"):
    spec, cluster = load_model(model), cluster_for(load_accelerator("b200"))
    settings = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", moe_launch=launch, expert_tp=1,
                            moe_expert_kernels=kernels)
    return spec, step_time(spec, cluster, settings, dp=8, ep=8, micro_batch=1, micro_batches=4)


def test_step_adds_it_per_moe_layer_and_micro_batch():
    spec, per_expert = _step("per-expert")
    fused = _step("fused")[1]
    # pp 1 (no bubble): 4 micro-batches x 48 MoE layers x (313.6 + 376.3) us = 0.1325 s, and the fused
    # MXFP8 grouped MLP's element-wise passes, 20 B x 4,096 tokens x 8 x 768 / (0.75 x 8 TB/s) = 83.9 us
    assert spec.num_moe_layers == 48 and spec.moe.num_experts // 8 == 16
    assert per_expert.total - fused.total == pytest.approx(4 * 48 * (689.9 + 83.9) * US, rel=1e-3)


def test_not_charged_outside_megatron_core_or_on_dense_models():
    # moe_launch 'none': the MoE layer is not Megatron-Core's (torchtitan, hf): no term
    assert _step("per-expert", launch="none")[1].total == pytest.approx(_step("fused", launch="none")[1].total,
                                                                       rel=1e-12)
    dense = _step("per-expert", model="llama-3-8b")[1].total
    assert dense == pytest.approx(_step("fused", model="llama-3-8b")[1].total, rel=1e-12)


def test_published_rows_with_the_fused_grouped_mlp_pay_nothing(published_rows):
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    rows = [r for r in published_rows.values() if (r.get("moe_comm") or {}).get("fused_grouped_mlp")]
    assert len(rows) == 23  # the 6 GPT-OSS rows and the 17 full-iteration-graph rows (test_moe_fused_mlp_fp8_attention)
    for r in rows:
        assert predict_tokens_per_gpu_s(r) == predict_tokens_per_gpu_s(r, moe_expert_kernels="fused"), r["id"]
    # a row without it (TE GroupedLinear, 16 local experts) is slower with the term
    row = published_rows["mbridge-26.04.01-qwen3-30b-a3b-b200-8g-mxfp8"]
    assert predict_tokens_per_gpu_s(row) < 0.96 * predict_tokens_per_gpu_s(row, moe_expert_kernels="fused")


def test_plan_explain_lists_the_term_as_its_own_class(run_cli):
    import json

    code, out, err = run_cli("plan", "qwen3-30b-a3b", "--tokens", "1T", "--gpu", "h100", "--gpus", "16", "--explain",
                             "--json")
    assert code == 0, err
    text = json.dumps(json.loads(out))
    assert "class_moe_expert_kernels" in text
    # a dense model has no such line
    code, out, err = run_cli("plan", "llama-3-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--explain",
                             "--json")
    assert code == 0, err
    assert "class_moe_expert_kernels" not in json.dumps(json.loads(out))


def test_alltoall_sorts_by_hand():
    # Qwen3-30B-A3B, 4,096 tokens, top-8, hidden 2,048 on 8 TB/s: one sort reads and writes
    # 2 x 4,096 x 8 x 2,048 x 2 B = 256 MiB: 7.84 us + 268,435,456 / (0.89 x 8e12) = 45.54 us;
    # forward sort + un-sort, backward their inverse gathers
    fwd, bwd = L.alltoall_sort_seconds(4096, 8, 2048, 8e12)
    assert fwd == pytest.approx(91.08 * US, abs=0.05 * US) and bwd == fwd


def test_breakdown_carries_the_seconds_the_line_shows():
    spec, per_expert = _step("per-expert")
    fused = _step("fused")[1]
    # the default dispatcher is 'alltoall' with 16 local experts: every MoE layer sorts, 182.2 us a
    # micro-batch (b200 8 TB/s, as above); the per-expert kernels add 689.9 us; the fused MXFP8 grouped
    # MLP takes its 83.9 us of element-wise passes off (test_step_adds_it_per_moe_layer_and_micro_batch)
    assert float(fused.moe_expert_kernels) == pytest.approx(4 * 48 * (182.2 - 83.9) * US, rel=1e-3)
    assert float(per_expert.moe_expert_kernels) == pytest.approx(4 * 48 * (182.2 + 689.9) * US, rel=1e-3)
    # 'flex' (DeepEP / HybridEP) has no second sort: only the fused MLP's saving is left
    spec, cluster = load_model("qwen3-30b-a3b"), cluster_for(load_accelerator("b200"))
    flex = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", moe_launch="graph", expert_tp=1,
                        moe_expert_kernels="fused", ep_dispatcher="flex")
    assert float(step_time(spec, cluster, flex, dp=8, ep=8, micro_batch=1, micro_batches=4).moe_expert_kernels) \
        == pytest.approx(-4 * 48 * 83.9 * US, rel=1e-3)


def test_recomputing_the_moe_module_runs_its_kernels_again():
    from dataclasses import replace

    spec = load_model("qwen3-30b-a3b")
    base = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", moe_launch="graph", ep_dispatcher="flex")
    plain = L.stage_expert_kernel_seconds(spec, base, 8, spec.num_layers, "mxfp8")
    moe = L.stage_expert_kernel_seconds(spec, replace(base, recompute="selective", recompute_modules=("moe",)), 8,
                                        spec.num_layers, "mxfp8")
    act = L.stage_expert_kernel_seconds(spec, replace(base, recompute="selective", recompute_modules=("moe_act",)), 8,
                                        spec.num_layers, "mxfp8")
    # 48 layers x (313.6 + 376.3) us, plus 48 x 313.6 us more when the MoE module is recomputed
    assert plain == pytest.approx(48 * 689.9 * US, rel=1e-3)
    assert moe - plain == pytest.approx(48 * 313.6 * US, rel=1e-3)
    assert act == plain


def test_eager_fc2_bias_kernels_by_hand():
    # experts.py@core_v0.15.0 _apply_bias: b * p and t + . per expert forward; MulBackward0's two
    # products, each reduced, backward (bf16 probabilities); fp32 adds the two casts back to bf16
    assert L.EAGER_BIAS_KERNELS_PER_EXPERT == {"bf16": (2, 4), "fp32": (2, 6)}
    # 16 local experts, bf16: forward 16 x 2 x 7.84 = 250.9 us, backward 16 x 4 x 7.84 = 501.8 us
    fwd, bwd = L.eager_bias_fixed_seconds(16, "bf16")
    assert fwd == pytest.approx(250.88 * US, abs=0.01 * US)
    assert bwd == pytest.approx(501.76 * US, abs=0.01 * US)
    assert L.eager_bias_fixed_seconds(2, "fp32")[1] == pytest.approx(94.08 * US, abs=0.01 * US)  # 2 x 6 x 7.84


def _gpt_oss_step(fallbacks, dispatcher="alltoall", model="gpt-oss-120b"):
    spec, cluster = load_model(model), cluster_for(load_accelerator("b200"))
    settings = StepSettings(seq_len=4096, moe_launch="graph", expert_tp=1, moe_expert_kernels="fused",
                            ep_dispatcher=dispatcher, eager_fallbacks=fallbacks)
    return spec, step_time(spec, cluster, settings, dp=8, ep=8, micro_batch=1, micro_batches=4)


def test_eager_fc2_bias_charged_per_moe_layer_only_where_it_runs():
    from gpuplan.core.time.eager_fallbacks import EXPERT_BIAS

    spec, with_bias = _gpt_oss_step((EXPERT_BIAS,))
    without = _gpt_oss_step(())[1]
    # GPT-OSS 120B has expert biases; 128 / ep 8 = 16 local experts; 'fused' expert kernels pay
    # nothing and the alltoall sorts do not depend on the flag, so the fixed-time difference is the
    # bias's: 4 micro-batches x 36 MoE layers x (250.88 + 501.76) us = 108.4 ms (its bytes are
    # core.time.eager_fallbacks', outside moe_expert_kernels)
    assert spec.moe.expert_bias and spec.num_moe_layers == 36
    assert with_bias.moe_expert_kernels - without.moe_expert_kernels == pytest.approx(4 * 36 * 752.64 * US, rel=1e-6)
    # flex dispatchers hand the experts fp32 probabilities: 16 x (2 + 6) x 7.84 us per layer
    flex = _gpt_oss_step((EXPERT_BIAS,), "flex")[1].moe_expert_kernels - _gpt_oss_step((), "flex")[1].moe_expert_kernels
    assert flex == pytest.approx(4 * 36 * 16 * 8 * 7.84 * US, rel=1e-6)
    # a model without expert biases pays nothing for the flag
    qwen = "qwen3-30b-a3b"
    assert not load_model(qwen).moe.expert_bias
    assert _gpt_oss_step((EXPERT_BIAS,), model=qwen)[1].moe_expert_kernels == \
        _gpt_oss_step((), model=qwen)[1].moe_expert_kernels


def test_quantisation_padding_copies_by_hand():
    # Fp8Padding of the experts' input and Fp8Unpadding of fc2's output (experts.py@core_v0.15.0 L860-867,
    # L957-958; TE fused_multi_row_padding / _unpadding), their backwards the inverse copies: the same
    # 2 + 2 reads and writes of the routed rows as the alltoall sorts. Qwen3-30B-A3B, 4,096 tokens, top-8,
    # hidden 2,048 on 8 TB/s: 2 x 45.54 = 91.08 us each way per layer; 48 layers x 182.16 us = 8.744 ms
    from dataclasses import replace

    assert L.QUANTIZATION_PADDING_COPIES == (2, 2)
    spec = load_model("qwen3-30b-a3b")
    eager = StepSettings(seq_len=4096, dtype="fp8", fp8_recipe="mxfp8", moe_launch="eager", expert_tp=1)
    padded = L.stage_expert_kernel_seconds(spec, eager, 8, spec.num_layers, "mxfp8", 4096, 8e12)
    static = L.stage_expert_kernel_seconds(spec, replace(eager, moe_launch="static"), 8, spec.num_layers, "mxfp8",
                                           4096, 8e12)  # drop-and-pad: counts aligned, TE skips the copy
    assert padded - static == pytest.approx(48 * 182.16 * US, rel=1e-3)
    assert L.pads_for_quantization(eager, "tensorwise") and L.pads_for_quantization(eager, "mxfp8")
    # BF16 has no padding; 'flex' (HybridEP pads in its kernel from core 0.16), drop-and-pad and the
    # fused grouped MLP are left out
    assert not L.pads_for_quantization(eager, None)
    for other in (replace(eager, ep_dispatcher="flex"), replace(eager, moe_launch="static"),
                  replace(eager, moe_launch="graph"), replace(eager, moe_expert_kernels="fused")):
        assert not L.pads_for_quantization(other, "mxfp8")
