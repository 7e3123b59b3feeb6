"""The hf eager step (core.time.eager_step.microbatch) times a MoE model's dense layers as dense layers
(DeepSeek's first_k_dense_replace: V2-Lite 1 of 27, V3 3 of 61), each kind by its own linears and op-profile
features, so its adapter count R and its layers' parameters P sum to core.model.finetune.lora_params and
count_parameters, and its matmuls to the model FLOPs' (core.model.flops.layer_matmul_weights_per_token, MLA's
attention linears as transformers runs them) and its per-token adapters to lora_params(per_token=True). Before,
every layer of a model with MoE layers was a MoE layer, and MLA's attention ran as q, k, v, o at the head widths."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.catalog import load_model
from gpuplan.catalog.op_profiles import eager_ops_for
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.model.finetune import lora_params
from gpuplan.core.model.flops import attention_matmul_weights, layer_matmul_weights_per_token
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.time import eager_step as E
from gpuplan.core.time import linears as G
from gpuplan.core.time.eager_path import eager_run
from gpuplan.core.time.op_profile import layer_features
from gpuplan.core.time.step import StepSettings

H200 = resolve_gpu("h200")
V2_LITE = load_model("deepseek-v2-lite")


def test_layer_kinds():
    assert E.layer_kinds(V2_LITE, 27) == ((26.0, True), (1.0, False))
    assert E.layer_kinds(load_model("deepseek-v3"), 61) == ((58.0, True), (3.0, False))
    assert E.layer_kinds(load_model("qwen3-30b-a3b"), 48) == ((48, True),)  # every layer MoE: one kind
    assert E.layer_kinds(load_model("llama-3.1-8b"), 32) == ((32, False),)
    (moe, _), (dense, _) = E.layer_kinds(V2_LITE, np.array([27.0, 13.5]))
    assert list(moe) == pytest.approx([26.0, 13.0]) and list(dense) == pytest.approx([1.0, 0.5])


def test_adapters_and_parameters_sum_to_the_models_counts():
    """DeepSeek-V2-Lite at r 16 (peft on transformers 5.x): a MoE layer's R 14,030,848 (496,640 per token +
    13,534,208 folded), the dense layer's 886,784 (its MLA linears and a 10,944-wide MLP): 26 x 14,030,848 +
    886,784 = 365,688,832 = lora_params (27 x 14,030,848 = 378,832,896 before, +3.6%). P: 26 x 584,847,872 +
    81,007,104 = 15,287,051,776, count_parameters' non-embedding less the final norm's 2,048 (27 x 584,847,872
    = 15,790,892,544 before, +3.3%)."""
    kinds = E.layer_kinds(V2_LITE, V2_LITE.num_layers)
    feats = [(n, layer_features(V2_LITE, 4096, 4096, 16, moe_layer=moe)) for n, moe in kinds]
    r = sum(n * f["R"] for n, f in feats)
    assert r == 26 * 14_030_848 + 886_784 == 365_688_832 == lora_params(V2_LITE, 16, peft_experts=True)
    p = sum(n * f["P"] for n, f in feats)
    assert p == 26 * 584_847_872 + 81_007_104 == count_parameters(V2_LITE).non_embedding - 2048


def _weights(linears):
    return sum(lin.inputs * lin.outputs * lin.rows * lin.groups * lin.count for lin in linears)


def test_matmuls_sum_to_the_model_flops():
    """Weights a token passes through, per layer kind's linears (eager_layer_linears): MoE router 2048 x 64 +
    6 experts x 3 x 2048 x 1408 + shared 3 x 2048 x 2816 = 69,337,088; dense 3 x 2048 x 10,944 = 67,239,936;
    26 x + 1 x = 1,870,004,224, the model FLOPs' MLP share (the MFU numerator's; 27 x 69,337,088 before). MLA's
    attention: q 2048 x 3072 + kv_a 2048 x 576 + kv_b 512 x 4096 + o 2048 x 2048 = 13,762,560 a layer (q, k, v, o
    at the head widths before: 20,971,520). In all 2,241,593,344 = core.model.flops' (2,438,332,416 before, +8.8%)."""
    def mlp(moe):
        return _weights([lin for lin in E.eager_layer_linears(V2_LITE, moe) if lin.name not in E.ATTENTION_LINEARS
                         and lin.name not in ("q_a", "q_b", "kv_a", "kv_b")])

    kinds = E.layer_kinds(V2_LITE, 27)
    assert sum(n * mlp(moe) for n, moe in kinds) == 26 * 69_337_088 + 67_239_936 == 1_870_004_224
    attention = _weights(E.eager_layer_linears(V2_LITE, False)) - 67_239_936
    assert attention == 2048 * 3072 + 2048 * 576 + 512 * 4096 + 2048 * 2048 == 13_762_560
    assert attention == attention_matmul_weights(V2_LITE.attention, 2048)
    total = sum(n * _weights(E.eager_layer_linears(V2_LITE, moe)) for n, moe in kinds)
    assert total == layer_matmul_weights_per_token(V2_LITE) == 2_241_593_344
    llama = load_model("llama-3.1-8b")  # not MLA: core.time.linears' list as it was
    assert E.eager_layer_linears(llama, False) == G.layer_linears(llama)


def test_per_token_adapters_sum_to_lora_params():
    """peft's per-token adapters at r 16: a MoE layer's MLA linears (q 2048 + 3072, kv_a 2048 + 576, kv_b 512 +
    4096, o 2048 + 2048 = 16,448) and shared gate, up, down (3 x (2048 + 2816) = 14,592): 16 x 31,040 = 496,640;
    the dense layer's 16 x (16,448 + 3 x (2048 + 10,944)) = 886,784; 26 x + 1 x = 13,799,424 =
    lora_params(per_token=True), the adapters' FLOPs numerator (finetune.adapter_flops_per_token)."""
    def adapters(moe):
        return _weights(E.peft_linear_adapters(E.eager_layer_linears(V2_LITE, moe), 16))

    assert adapters(True) == 496_640 and adapters(False) == 886_784
    total = sum(n * adapters(moe) for n, moe in E.layer_kinds(V2_LITE, 27))
    assert total == 13_799_424 == lora_params(V2_LITE, 16, peft_experts=True, per_token=True)
    llama = load_model("llama-3.1-8b")  # the dense rule's pairs, as core.time.linears.lora_linears has them
    assert E.peft_linear_adapters(G.layer_linears(llama), 16) == G.lora_linears(llama, 16)


def _phases(spec, layers, finetune="full", rank=0):
    ops = eager_ops_for(spec.model_type, "bf16", finetune, "flash")
    settings = StepSettings(seq_len=4096, eager_ops=ops, finetune=finetune, lora_rank=rank)
    return E.microbatch(spec, eager_run(spec, cluster_for(H200, None, None), settings), 4096, layers, head=0.0)


def test_the_step_is_26_moe_layers_and_one_dense_layer():
    """Without the head, V2-Lite's 27 layers time as 26/27 of the same model with all 27 layers MoE plus 1/27 of
    it with none (its dense MLP in every layer): matmuls, attention and memory-bound kernels add by layer."""
    all_moe = replace(V2_LITE, moe_layers=(True,) * 27)
    dense = replace(V2_LITE, moe=None, moe_layers=())
    for got, moe, den in zip(_phases(V2_LITE, 27), _phases(all_moe, 27), _phases(dense, 27)):
        for part in ("gemm", "attention", "memory"):
            assert getattr(got, part) == pytest.approx(26 / 27 * getattr(moe, part) + 1 / 27 * getattr(den, part),
                                                       rel=1e-9)
        assert got.gemm < moe.gemm  # the dense layer's bf16 MLP is quicker than a MoE layer's grouped GEMMs
