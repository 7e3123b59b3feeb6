"""GPTBigCode (model_type gpt_bigcode: SantaCoder, StarCoder) read from config.json as transformers builds it
(transformers models/gpt_bigcode/configuration_gpt_bigcode.py and modeling_gpt_bigcode.py @5.25.0): parameters,
FLOPs and serving KV with one K/V head, hand-worked; malformed configs refused naming the field (exit 2)."""

import json

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.catalog import load_model, model_entries
from gpuplan.core.model.flops import layer_matmul_weights_per_token, training_flops_per_token
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.serving.kv_cache import kv_bytes_per_token_per_layer
from gpuplan.errors import InputError

# bigcode/gpt_bigcode-santacoder's config.json (catalog/models/santacoder.json cites the copy read)
SANTACODER = {"model_type": "gpt_bigcode", "architectures": ["GPTBigCodeForCausalLM"], "n_embd": 2048, "n_head": 16,
              "n_inner": 8192, "n_layer": 24, "n_positions": 2048, "vocab_size": 49280, "multi_query": True,
              "activation_function": "gelu_pytorch_tanh", "layer_norm_epsilon": 1e-5, "attn_pdrop": 0.1,
              "embd_pdrop": 0.1, "resid_pdrop": 0.1}
# hand count, per layer: c_attn 2048 x (2048 + 2 x 128) + 2304 bias; c_proj 2048^2 + 2048; c_fc + c_proj
# 2 x 2048 x 8192 + 8192 + 2048; ln_1 + ln_2 2 x 2 x 2048
SANTA_LAYER = (2048 * 2304 + 2304) + (2048 * 2048 + 2048) + (2 * 2048 * 8192 + 8192 + 2048) + 4 * 2048
SANTA_TOTAL = 49280 * 2048 + 2048 * 2048 + 24 * SANTA_LAYER + 2 * 2048  # wte (tied head), wpe, layers, ln_f


def test_santacoder_parameters_by_hand():
    assert SANTA_LAYER == 42_490_112
    assert SANTA_TOTAL == 1_124_886_528
    spec = model_spec_from_hf_config(SANTACODER)
    a = spec.attention
    assert (a.num_heads, a.num_kv_heads, a.head_dim) == (16, 1, 128)
    assert a.qkv_bias and a.out_bias and spec.mlp.bias and not spec.mlp.gated
    assert spec.tie_embeddings and spec.learned_positions == 2048 and not spec.rotary
    assert spec.norm == "layernorm" and spec.mlp.activation == "gelu_pytorch_tanh" and spec.dropout == 0.1
    counted = count_parameters(spec)
    assert counted.total == SANTA_TOTAL
    assert counted.position_embedding == 2048 * 2048 and counted.lm_head == 0
    # the card's '1.1B' (bigcode/santacoder README): within its rounding (1.05B-1.15B)
    assert abs(counted.total - 1.1e9) / 1.1e9 < 0.025


def test_starcoder_shapes_by_hand():
    """StarCoder 15.5B (model card) and a StarCoderBase-1B-shaped config (n_inner left out: 4 x n_embd,
    modeling_gpt_bigcode.py L264): hand counts."""
    star = count_parameters(load_model("starcoder")).total
    layer = (6144 * 6400 + 6400) + (6144 ** 2 + 6144) + (2 * 6144 * 24576 + 24576 + 6144) + 4 * 6144
    assert star == 49152 * 6144 + 8192 * 6144 + 40 * layer + 2 * 6144 == 15_517_456_384
    assert abs(star - 15.5e9) / 15.5e9 < 0.005  # the card's 15.5B
    one_b = dict(SANTACODER, n_positions=8192, vocab_size=49152)
    del one_b["n_inner"]
    spec = model_spec_from_hf_config(one_b)
    assert spec.mlp.intermediate_size == 8192
    assert count_parameters(spec).total == 49152 * 2048 + 8192 * 2048 + 24 * SANTA_LAYER + 2 * 2048 == 1_137_207_296


def test_counts_equal_transformers_modules():
    """The same count as GPTBigCodeForCausalLM built from the config (meta device: no weights allocated)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    keys = ("n_embd", "n_head", "n_inner", "n_layer", "n_positions", "vocab_size", "multi_query")
    for config in (SANTACODER, dict(SANTACODER, multi_query=False, n_layer=2)):
        with torch.device("meta"):
            model = transformers.GPTBigCodeForCausalLM(transformers.GPTBigCodeConfig(**{k: config[k] for k in keys}))
        assert count_parameters(model_spec_from_hf_config(config)).total == sum(p.numel() for p in model.parameters())


def test_catalog_santacoder_is_the_config():
    assert count_parameters(load_model("santacoder")).total == SANTA_TOTAL
    assert model_entries()["santacoder"]["config"]["n_layer"] == 24


def test_flops_follow_one_kv_head():
    spec = model_spec_from_hf_config(SANTACODER)
    # q and output 2 x 2048 x 2048, k and v 2 x 2048 x 128, MLP 2 x 2048 x 8192 matmul weights a layer
    per_layer = 2 * 2048 * 2048 + 2 * 2048 * 128 + 2 * 2048 * 8192
    assert layer_matmul_weights_per_token(spec) == 24 * per_layer == 1_019_215_872
    flops = training_flops_per_token(spec, 2048)
    attention_core = 24 * 2 * 16 * (128 + 128) * 2048  # QK^T and AV over 2,048 keys ('full' convention)
    assert flops.attention_core_forward == attention_core
    assert flops.model == 3 * (2 * 24 * per_layer + 2 * 49280 * 2048) + 3 * attention_core == 7_928_807_424


def test_serving_kv_is_one_head():
    """KV per token: 2 x head_dim x layers x bytes with one K/V head (replicated under TP, vLLM's
    max(1, kv_heads // tp)); multi_query false keeps a K/V head per query head, 16 x as much."""
    spec = model_spec_from_hf_config(SANTACODER)
    assert kv_bytes_per_token_per_layer(spec.attention, 2) * spec.num_layers == 2 * 128 * 24 * 2 == 12_288
    assert kv_bytes_per_token_per_layer(spec.attention, 2, tp=2) == 512
    mha = model_spec_from_hf_config(dict(SANTACODER, multi_query=False))
    assert kv_bytes_per_token_per_layer(mha.attention, 2) == 16 * 512
    assert count_parameters(mha).total - SANTA_TOTAL == 24 * (2 * 2048 * 1920 + 2 * 1920)  # K/V to 2,048 wide


def test_config_class_defaults_fill_left_out_fields():
    """configuration_gpt_bigcode.py L59-77: n_positions 1024, multi_query true, gelu_pytorch_tanh, dropouts 0.1."""
    bare = {"model_type": "gpt_bigcode", "n_embd": 768, "n_head": 12, "n_layer": 12, "vocab_size": 50257}
    spec = model_spec_from_hf_config(bare)
    assert spec.attention.num_kv_heads == 1 and spec.learned_positions == 1024
    assert spec.mlp.intermediate_size == 3072 and spec.mlp.activation == "gelu_pytorch_tanh" and spec.dropout == 0.1


@pytest.mark.parametrize(("change", "field"), [
    ({"n_head": 15}, "config.json: n_head"),  # 2048 / 15: L132-136 raise
    ({"multi_query": "yes"}, "config.json: multi_query"),
    ({"add_cross_attention": True}, "config.json: add_cross_attention"),
    ({"n_layer": 0}, "config.json: n_layer"),
    ({"n_positions": -1}, "config.json: n_positions"),
    ({"activation_function": "gelu_bigcode"}, "config.json: activation_function"),
    ({"n_inner": 1.5}, "config.json: n_inner"),
])
def test_malformed_configs_name_the_field(change, field):
    with pytest.raises(InputError) as refusal:
        model_spec_from_hf_config(dict(SANTACODER, **change))
    assert str(refusal.value).startswith(field), str(refusal.value)


def test_cli_refuses_with_one_line_and_exit_2(run_cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(SANTACODER, n_head=15)))
    code, out, err = run_cli("memory", str(path), "--gpu", "h100")
    assert code == 2 and "n_head" in err and "must divide n_embd 2048" in err
    assert len(err.strip().splitlines()) == 1, err
