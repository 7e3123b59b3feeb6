"""Parameter counting on hand-written configs, checked against hand-worked sums."""

import pytest

from gpuplan.adapters.generic_shape import generic_dense_spec
from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.core.model.spec import count_parameters
from gpuplan.errors import InputError

LLAMA2_7B = dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=32000, tie_word_embeddings=False)


def test_llama2_7b_by_hand():
    # per layer: attention 4·h² = 67,108,864; MLP 3·h·i = 135,266,304; 2 RMSNorm = 8,192
    # 32 layers = 6,476,267,520; embeddings + LM head 2·V·h = 262,144,000; final norm 4,096
    counts = count_parameters(model_spec_from_hf_config(LLAMA2_7B))
    assert counts.total == 6_738_415_616  # = published safetensors count of Llama-2-7b-hf
    assert counts.non_embedding == 6_738_415_616 - 262_144_000
    assert counts.active == counts.total


def test_gpt2_small_by_hand():
    # wte 50257·768 + wpe 1024·768; per layer: c_attn 768·2304+2304, c_proj 768²+768,
    # c_fc 768·3072+3072, mlp c_proj 3072·768+768, ln_1/ln_2 2·(2·768); ln_f 2·768; tied head
    cfg = dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)
    layer = (768 * 2304 + 2304) + (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 4 * 768
    expected = 50257 * 768 + 1024 * 768 + 12 * layer + 2 * 768
    counts = count_parameters(model_spec_from_hf_config(cfg))
    assert counts.total == expected == 124_439_808
    assert counts.lm_head == 0  # tied by GPT2Config's default


def test_gqa_llama3_8b_by_hand():
    cfg = dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False)
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024  # q, o full; k, v 8 heads x 128
    layer = attn + 3 * 4096 * 14336 + 2 * 4096
    assert count_parameters(model_spec_from_hf_config(cfg)).total == 32 * layer + 2 * 128256 * 4096 + 4096
    assert model_spec_from_hf_config(cfg).attention.kind == "gqa"


def test_mixtral_active_vs_total():
    cfg = dict(model_type="mixtral", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, vocab_size=32000, num_local_experts=8,
               num_experts_per_tok=2, tie_word_embeddings=False)
    counts = count_parameters(model_spec_from_hf_config(cfg))
    expert = 3 * 4096 * 14336
    assert counts.routed_experts == 32 * 8 * expert
    assert counts.router == 32 * 4096 * 8
    assert counts.total - counts.active == 32 * 6 * expert  # 6 of 8 experts idle per token
    assert counts.total == 46_702_792_704  # Mixtral-8x7B safetensors count


def test_deepseek_v3_mla_moe():
    cfg = dict(model_type="deepseek_v3", hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
               num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128, n_shared_experts=1,
               n_routed_experts=256, num_experts_per_tok=8, first_k_dense_replace=3, moe_layer_freq=1,
               q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
               v_head_dim=128, vocab_size=129280, topk_method="noaux_tc", tie_word_embeddings=False)
    spec = model_spec_from_hf_config(cfg)
    counts = count_parameters(spec)
    assert spec.num_moe_layers == 58 and spec.attention.kind == "mla"
    # MLA by hand: q_a 7168·1536 + norm 1536 + q_b 1536·128·192; kv_a 7168·576 + norm 512;
    # kv_b 512·128·256; o 128·128·7168
    mla = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    assert counts.attention == 61 * mla
    assert counts.total == pytest.approx(671e9, rel=0.001)  # paper: 671B total (MTP excluded)
    assert counts.active == pytest.approx(37e9, rel=0.02)  # paper: 37B activated


def test_qwen2_sliding_window_ignored_when_disabled():
    cfg = dict(LLAMA2_7B, model_type="qwen2", sliding_window=32768, use_sliding_window=False)
    spec = model_spec_from_hf_config(cfg)
    assert spec.sliding_window is None and spec.num_sliding_layers == 0
    assert spec.attention.qkv_bias and not spec.attention.out_bias


def test_gemma2_alternates_sliding_layers():
    cfg = dict(model_type="gemma2", hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
               num_attention_heads=8, num_key_value_heads=4, head_dim=256, vocab_size=256000, sliding_window=4096)
    spec = model_spec_from_hf_config(cfg)
    assert spec.num_sliding_layers == 13 and spec.layer_types[0] == "sliding" and spec.layer_types[1] == "full"
    assert spec.tie_embeddings and spec.norms_per_layer == 4


def test_vlm_config_reads_text_config():
    cfg = {"model_type": "gemma3", "text_config": dict(LLAMA2_7B, model_type="gemma3_text"),
           "vision_config": {"hidden_size": 1152}}
    spec = model_spec_from_hf_config(cfg)
    assert spec.hidden_size == 4096 and spec.attention.qk_norm == "per_head"


def test_falcon_multi_query_and_new_architecture():
    base = dict(model_type="falcon", hidden_size=4544, num_hidden_layers=32, num_attention_heads=71,
                vocab_size=65024, bias=False)
    seven = model_spec_from_hf_config(dict(base, multi_query=True, parallel_attn=True))
    assert seven.attention.num_kv_heads == 1 and seven.norms_per_layer == 1 and seven.mlp.intermediate_size == 4 * 4544
    forty = model_spec_from_hf_config(dict(base, hidden_size=8192, num_attention_heads=128,
                                           new_decoder_architecture=True, num_kv_heads=8))
    assert forty.attention.num_kv_heads == 8 and forty.norms_per_layer == 2


def test_unknown_model_type_is_refused_unless_read_as_llama():
    with pytest.raises(InputError, match="brand_new.*not supported.*--model-type llama"):
        model_spec_from_hf_config(dict(LLAMA2_7B, model_type="brand_new"))
    spec = model_spec_from_hf_config(dict(LLAMA2_7B, model_type="brand_new"), model_type="llama")
    assert count_parameters(spec).total == 6_738_415_616
    assert any("brand_new" in n and "llama" in n for n in spec.notes)


@pytest.mark.parametrize("change, field", [
    ({"hidden_size": None}, "hidden_size"),
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_attention_heads": 30}, "num_attention_heads"),  # 4096 % 30 != 0
    ({"num_key_value_heads": 5}, "num_key_value_heads"),  # 32 % 5 != 0
    ({"vocab_size": "lots"}, "vocab_size"),
    ({"num_hidden_layers": -2}, "num_hidden_layers"),
])
def test_bad_configs_name_the_field(change, field):
    cfg = {k: v for k, v in {**LLAMA2_7B, **change}.items() if v is not None}
    with pytest.raises(InputError) as exc:
        model_spec_from_hf_config(cfg)
    assert field in str(exc.value)


def test_moe_top_k_above_experts_is_rejected():
    cfg = dict(LLAMA2_7B, model_type="mixtral", num_local_experts=4, num_experts_per_tok=8)
    with pytest.raises(InputError, match="num_experts_per_tok"):
        model_spec_from_hf_config(cfg)


def test_generic_7b_is_llama2_7b_shape():
    spec = generic_dense_spec(7e9)
    assert (spec.num_layers, spec.hidden_size, spec.mlp.intermediate_size) == (32, 4096, 11008)
    assert spec.declared_params == 7e9


@pytest.mark.parametrize("n", [1e9, 13e9, 70e9, 405e9])
def test_generic_shape_is_close_to_the_requested_count(n):
    spec = generic_dense_spec(n)
    # hidden = 128·layers: neighbouring layer counts differ by ~3/L in size, so within 8%
    assert count_parameters(spec).total == pytest.approx(n, rel=0.08)


def test_official_gemma3_4b_config_relies_on_class_defaults():
    # google/gemma-3-4b-pt's config.json text_config omits heads, kv heads, head_dim, vocab and the
    # sliding pattern; Gemma3TextConfig supplies 8, 4, 256, 262208 and every 6th layer global.
    cfg = {"model_type": "gemma3", "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                                                   "model_type": "gemma3_text", "num_hidden_layers": 34,
                                                   "sliding_window": 1024}}
    spec = model_spec_from_hf_config(cfg)
    assert (spec.attention.num_heads, spec.attention.num_kv_heads, spec.attention.head_dim) == (8, 4, 256)
    assert spec.vocab_size == 262208 and spec.sliding_window == 1024
    assert spec.layer_types.count("full") == 5 and spec.layer_types[5] == "full"  # layers 6, 12, ..., 30


# ---- Llama 4 and DBRX config readers (hand counts from transformers' modeling_llama4.py / modeling_dbrx.py)
SCOUT_TEXT = {"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
              "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
              "vocab_size": 202048, "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1,
              "tie_word_embeddings": False, "max_position_embeddings": 10485760, "use_qk_norm": True}
# meta-llama/Llama-4-Scout-17B-16E config.json (text_config); Maverick: 128 experts, MoE every 2nd layer


def test_llama4_scout_counts_like_its_modeling_code():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    counts = count_parameters(model_spec_from_hf_config({"model_type": "llama4", "text_config": SCOUT_TEXT}))
    embed = 2 * 202048 * 5120  # untied embedding + LM head
    attention = 48 * (2 * 5120 * 5120 + 2 * 5120 * 8 * 128)  # q, o + k, v (L2 qk-norm has no weights)
    expert = 3 * 5120 * 8192  # gate_up_proj [h, 2i] + down_proj [i, h]
    moe = 48 * (16 * expert + expert + 5120 * 16)  # routed + shared expert + router
    norms = 48 * 2 * 5120 + 5120
    assert counts.total == embed + attention + moe + norms == 107_769_861_120
    # active: one routed expert + the shared one per layer; Meta: "17B active"
    assert counts.active == embed + attention + 48 * (2 * expert + 5120 * 16) + norms
    assert counts.active / 17e9 == pytest.approx(1.0, abs=0.011)
    # Meta's 109B counts the vision encoder too (~0.9B); the text model is 0.2% under a round 108B
    assert counts.total / 108e9 == pytest.approx(1.0, abs=0.003)


def test_llama4_maverick_interleaves_dense_and_moe_layers():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    config = {**SCOUT_TEXT, "num_local_experts": 128, "interleave_moe_layer_step": 2}
    spec = model_spec_from_hf_config(config)
    assert spec.moe_layers == tuple(i % 2 == 1 for i in range(48))  # range(step - 1, layers, step)
    assert spec.mlp.intermediate_size == 16384  # dense layers: intermediate_size_mlp
    counts = count_parameters(spec)
    assert counts.total / 400e9 == pytest.approx(1.0, abs=0.005)  # Meta: 400B total (text ~400.7B)
    assert counts.active / 17e9 == pytest.approx(1.0, abs=0.011)  # 17B active


def test_dbrx_nested_config():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    # databricks/dbrx-base config.json: attention and FFN settings nested under attn_config / ffn_config
    config = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40, "max_seq_len": 32768,
              "vocab_size": 100352, "attn_config": {"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000},
              "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
              "tie_word_embeddings": False}
    counts = count_parameters(model_spec_from_hf_config(config))
    expert = 3 * 6144 * 10752
    layer = 6144 * (6144 + 2 * 1024) + 6144 * 6144 + 16 * expert + 6144 * 16 + 2 * 6144  # Wqkv, out, experts, router, 2 LN
    assert counts.total == 2 * 100352 * 6144 + 40 * layer + 6144
    assert counts.total / 132e9 == pytest.approx(1.0, abs=0.005)  # Databricks: 132B total
    assert counts.active / 36e9 == pytest.approx(1.0, abs=0.015)  # 36B active (4 of 16 experts)
