"""One adapter count for the hf op profile's R feature (core.time.op_profile.adapter_params) and the count the
memory, step, DP gradient bytes, MFU numerator and calibrate read (core.model.finetune.lora_params): both are
finetune.lora_layer_params. Before, adapter_params counted a dense layer of an MLA model by the dense rule (q, k,
v, o at the head widths) while lora_params counted it as peft's all-linear finds it (q_a/q_b, kv_a_with_mqa,
kv_b, o; transformers 5.17 modeling_deepseek_v3.py L383-411): DeepSeek's first dense layers (closing note s8)."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.model.finetune import lora_layer_params, lora_params
from gpuplan.core.time.op_profile import adapter_params, layer_features


def _dense_mla_by_hand(h, heads, q_lora, kv_lora, rope, nope, v, inter, rank):
    """Σ (in + out) over a dense MLA layer's linears x rank; q through q_a + q_b where q_lora is set."""
    q_out = heads * (nope + rope)
    q = (h + q_lora) + (q_lora + q_out) if q_lora else h + q_out
    kv_a = h + kv_lora + rope
    kv_b = kv_lora + heads * (nope + v)
    o = heads * v + h
    return rank * (q + kv_a + kv_b + o + 3 * (h + inter))


@pytest.mark.parametrize("model, by_hand, dense_rule, moe_layer_r16", [
    # h 7168, 128 heads, q_lora 1536, kv_lora 512, rope 64, nope 128, v 128, dense MLP 18,432:
    # 16 x (34,816 + 7,744 + 33,280 + 23,552 + 76,800) = 16 x 176,192; dense rule 16 x 195,584
    ("deepseek-v3", 2_819_072, 3_129_344, 132_174_848),
    # h 2048, 16 heads, no q_lora, kv_lora 512, dense MLP 10,944: 16 x (5,120 + 2,624 + 4,608 + 4,096 + 38,976)
    ("deepseek-v2-lite", 886_784, 934_912, 14_030_848),
])
def test_dense_mla_layer_counted_as_peft_finds_it(model, by_hand, dense_rule, moe_layer_r16):
    spec = load_model(model)
    a = spec.attention
    assert by_hand == _dense_mla_by_hand(spec.hidden_size, a.num_heads, a.q_lora_rank or 0, a.kv_lora_rank,
                                         a.qk_rope_head_dim, a.qk_nope_head_dim, a.value_head_dim,
                                         spec.mlp.intermediate_size, 16)
    assert adapter_params(spec, 16, moe_layer=False) == by_hand  # the parent: the dense rule's 3,129,344 / 934,912
    assert adapter_params(spec, 16, moe_layer=False) != dense_rule
    assert adapter_params(spec, 16, moe_layer=True) == moe_layer_r16
    # the per-layer counts add up to lora_params (DeepSeek-V3: 58 MoE + 3 dense layers; V2-Lite: 26 + 1)
    moe, dense = spec.num_moe_layers, spec.num_layers - spec.num_moe_layers
    assert moe * moe_layer_r16 + dense * by_hand == lora_params(spec, 16, peft_experts=True)
    assert layer_features(spec, 4096, 4096, 16, moe_layer=False)["R"] == by_hand


def test_one_rule_for_other_models_and_frameworks():
    """Non-MLA dense layers and frameworks other than peft keep the dense rule (r (in + out) over q, k, v, o and
    the MLP): Llama-3.1-8B at r 16 is 16 x (4,096 + 4,096 + 2 x (4,096 + 1,024) + 4,096 + 4,096 + 3 x (4,096 +
    14,336)) = 1,310,720 a layer either way; DeepSeek-V3 off peft is the dense rule on every layer."""
    llama = load_model("llama-3.1-8b")
    assert adapter_params(llama, 16) == lora_layer_params(llama, 16) == 1_310_720
    v3 = load_model("deepseek-v3")
    assert lora_layer_params(v3, 16, moe_layer=False) == lora_layer_params(v3, 16, moe_layer=True) == 3_129_344
    assert lora_params(v3, 16) == 61 * 3_129_344
