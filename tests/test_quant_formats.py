"""MXFP4 (gpt-oss), NVFP4 (ModelOpt, compressed-tensors) and the checkpoints' ignore lists:
which layer matmuls a quantised checkpoint stores in the format and which it keeps in bf16."""

from __future__ import annotations

import pytest

from gpuplan.core.serving import weights as W
from gpuplan.jobs.inference.resolve import weight_format_from_hf


def test_mxfp4_is_4_25_bits_on_the_experts_only():
    fmt = weight_format_from_hf({"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]})
    assert fmt.bits_per_weight == pytest.approx(4 + 8 / 32)  # E2M1 + one E8M0 scale per 32 (OCP MX v1.0)
    assert fmt.quantized == "experts" and fmt.compute_dtype == "bf16"


def test_gpt_oss_20b_weights_by_hand():
    from gpuplan.catalog import load_model

    spec = load_model("gpt-oss-20b")
    groups = W.param_groups(spec)
    fmt = weight_format_from_hf({"quant_method": "mxfp4"})
    # experts: 24 layers x 32 x 3 x 2880 x 2880 weights at 4.25 bits; everything else bf16
    experts = 24 * 32 * 3 * 2880 * 2880
    assert groups.routed == experts
    total = sum((groups.embedding, groups.lm_head, groups.norms, groups.router, groups.dense_linear, groups.routed))
    assert W.weight_bytes_total(groups, fmt) == pytest.approx(experts * 4.25 / 8 + (total - experts) * 2)
    assert total == pytest.approx(20.91e9, rel=0.001)  # gpt-oss model card: 20.91B


@pytest.mark.parametrize("qcfg", [
    {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head"]},
    {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4"}},
    {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}},
])
def test_nvfp4_is_4_5_bits(qcfg):
    fmt = weight_format_from_hf(qcfg)
    assert fmt.bits_per_weight == pytest.approx(4 + 8 / 16) and fmt.compute_dtype == "fp4"


def test_fp8_checkpoint_that_keeps_attention_in_bf16():
    from gpuplan.catalog import load_model

    qcfg = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"], "config_groups": {
        "group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
                    "input_activations": {"num_bits": 8, "type": "float"}}}}
    fmt = weight_format_from_hf(qcfg)
    assert fmt.quantized == "mlp"
    groups = W.param_groups(load_model("llama-3.1-8b"))
    # Llama-3.1-8B attention: 32 layers x (4096 x 6144 + 4096 x 4096) = 1.342e9 weights stay at 2 B
    attention = 32 * (4096 * 6144 + 4096 * 4096)
    assert groups.attention == pytest.approx(attention)
    all_fp8 = W.layer_linear_bytes(groups, W.FORMATS["fp8"])
    assert W.layer_linear_bytes(groups, fmt) - all_fp8 == pytest.approx(attention * 1.0)


def test_nvfp4_on_hopper_is_weight_only(tmp_path):
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.catalog import load_model
    from gpuplan.jobs.inference.resolve import resolve_format

    raw = {"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}
    fmt, _, notes = resolve_format("auto", None, load_model("llama-3.1-8b"), raw, resolve_gpu("h100"))
    assert fmt.compute_dtype == "bf16" and any("no FP4 tensor cores" in n for n in notes)
    fmt, _, notes = resolve_format("auto", None, load_model("llama-3.1-8b"), raw, resolve_gpu("b200"))
    assert fmt.compute_dtype == "fp4" and not notes


def test_unknown_modelopt_algorithm_is_one_line():
    from gpuplan.errors import InputError

    with pytest.raises(InputError, match="quant_algo"):
        weight_format_from_hf({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"})
