"""Hostile inputs, wave 24 (2026-12-07, helper H), part 2: the cases (6)-(11) of tests/test_hostile_w24.py's list
(config.json fields read as transformers 5.25.0 builds them: MLA's rotary width, K/V heads and head_dim a config class
fixes, bias keys a type does not read, DeepSeek's first dense layers and MLA fields, GPT-NeoX / GPT-2 K/V keys)."""

import json

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (6) MLA's rotary part of odd width -----------------------------------------------------------------------------

DEEPSEEK = {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 4, "intermediate_size": 512, "moe_intermediate_size": 128, "n_routed_experts": 8,
            "n_shared_experts": 1, "num_experts_per_tok": 2, "vocab_size": 1000, "max_position_embeddings": 4096,
            "kv_lora_rank": 64, "q_lora_rank": 96, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
            "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1}


def test_6_an_odd_mla_rotary_width_is_refused_at_every_door(run_cli, client, tmp_path):
    from transformers import DeepseekV3Config

    config = {**DEEPSEEK, "qk_rope_head_dim": 15}
    with pytest.raises(Exception, match="RoPE requires an even rotary dimension"):
        DeepseekV3Config(**{k: v for k, v in config.items() if k != "model_type"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = ("error: config.json: qk_rope_head_dim: got 15; gives a rotary part 15 channels wide, all rotated: RoPE "
            "turns channel pairs, so the rotated width must be even (transformers refuses an odd one)\n")
    assert field_refusal(run_cli("memory", str(path), "--gpus", "1"), "config.json: qk_rope_head_dim") == line
    assert field_refusal(run_cli("infer", "--model", str(path)), "config.json: qk_rope_head_dim") == line
    web = web_refusal(client.post("/api/inference", json={"config": config}), "config.json: qk_rope_head_dim")
    assert f"error: {web}\n" == line


def test_6_the_even_mla_config_is_answered(run_json, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DEEPSEEK), encoding="utf-8")
    assert run_json("memory", str(path), "--gpus", "1")


# ---- (7) K/V heads and head_dim a config class defaults to fixed numbers --------------------------------------------

# the class defaults against the installed classes: tests/test_class_shapes.py (one table, CLASS_DEFAULTS)


@pytest.mark.parametrize("config, field, words", [
    ({"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 8}, "num_key_value_heads",
     "a qwen2 config must state it: transformers would build Qwen2Config's default 32, which does not divide "
     "num_attention_heads (8)"),
    ({"model_type": "qwen3_moe", "hidden_size": 512, "num_attention_heads": 6, "num_experts": 4,
      "num_experts_per_tok": 2}, "num_key_value_heads",
     "transformers would build Qwen3MoeConfig's default 4, which does not divide num_attention_heads (6)"),
])  # review R2 N1 (helper H2): the Qwen3 head_dim and Mistral K/V cases of 16 heads are now read as their class
# builds them (tests/test_hostile_w24c.py test_n1); a default that does not divide the heads is still refused
def test_7_a_left_out_shape_the_class_fixes_is_refused_at_every_door(run_cli, client, tmp_path, config, field, words):
    config = {**config, "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 1000,
              "max_position_embeddings": 4096}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = f"config.json: {field}: got no value; "
    for job in (("memory", str(path), "--gpus", "1"), ("infer", "--model", str(path))):
        err = field_refusal(run_cli(*job), f"config.json: {field}", words)
        assert err.startswith(f"error: {line}"), err
    assert web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}),
                       f"config.json: {field}", words).startswith(line)


def test_7_the_model_transformers_builds_is_the_one_refused():
    """The first case's meta-built model has 32 K/V heads of 16 channels (k_proj 512 x 128), not 8."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(Qwen2Config(hidden_size=128, num_attention_heads=8,
                                                             num_hidden_layers=1, intermediate_size=64,
                                                             vocab_size=500))
    assert tuple(model.model.layers[0].self_attn.k_proj.weight.shape) == (512, 128)


@pytest.mark.parametrize("config, kv, head_dim", [
    ({"model_type": "qwen2", "hidden_size": 4096, "num_attention_heads": 32}, 32, 128),  # the default is heads
    ({"model_type": "qwen3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8}, 8, 128),
    ({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": None,
      "head_dim": 64}, 16, 64),  # a stated null: Qwen3Config.__post_init__ takes the heads
    ({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8}, 8, 64),  # LlamaConfig: heads, hidden/heads
    ({"model_type": "gemma3_text", "hidden_size": 1024, "num_attention_heads": 16}, 4, 256),  # CONFIG_DEFAULTS
])
def test_7_where_the_class_builds_what_gpuplan_reads_it_is_answered(config, kv, head_dim):
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    spec = model_spec_from_hf_config({**config, "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 1000})
    assert (spec.attention.num_kv_heads, spec.attention.head_dim) == (kv, head_dim)


# ---- (8) bias keys a type does not read ------------------------------------------------------------------------------

@pytest.mark.parametrize("model_type, extra", [
    ("mistral", {"attention_bias": True, "mlp_bias": True}), ("qwen2", {"attention_bias": True, "mlp_bias": True}),
    ("olmo2", {"attention_bias": True, "mlp_bias": True}), ("llama", {"attention_bias": True, "mlp_bias": True}),
    ("llama", {"bias": True}), ("qwen3", {"attention_bias": True, "mlp_bias": True, "head_dim": 32}),
    ("phi3", {"attention_bias": True, "pad_token_id": 0}),
    ("mixtral", {"attention_bias": True, "mlp_bias": True, "num_local_experts": 4, "num_experts_per_tok": 2})])
def test_8_biases_are_counted_where_transformers_builds_them(model_type, extra):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.core.model.spec import count_parameters

    config = {"model_type": model_type, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 1000, "max_position_embeddings": 512,
              **extra}
    ours = count_parameters(model_spec_from_hf_config(dict(config))).total
    built = AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(built)
    assert ours == sum(p.numel() for p in model.parameters())


# ---- (9)-(11) DeepSeek's first dense layers and MLA fields; GPT-NeoX / GPT-2 K/V keys --------------------------------

def _meta_parameters(config: dict) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    built = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        return sum(p.numel() for p in AutoModelForCausalLM.from_config(built).parameters())


def test_9_first_k_dense_replace_zero_is_read_as_transformers_builds_it():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.core.model.spec import count_parameters

    config = {**DEEPSEEK, "first_k_dense_replace": 0}
    spec = model_spec_from_hf_config(dict(config))
    assert spec.moe_layers == (True,) * 4
    assert count_parameters(spec).total == _meta_parameters(config)


@pytest.mark.parametrize("config", [
    {"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
     "intermediate_size": 96, "vocab_size": 500, "max_position_embeddings": 512, "num_key_value_heads": 1},
    {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 500, "n_positions": 512,
     "num_kv_heads": 2}])
def test_10_mha_types_ignore_kv_head_keys(config):
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.core.model.spec import count_parameters

    spec = model_spec_from_hf_config(dict(config))
    assert spec.attention.num_kv_heads == spec.attention.num_heads == 4
    assert count_parameters(spec).total == _meta_parameters(config)


@pytest.mark.parametrize("key, default", [("kv_lora_rank", "512"), ("qk_rope_head_dim", "64"),
                                          ("v_head_dim", "128"),
                                          # review R2 M3 (merged from test_hostile_w24c's test_m3, the CLI's
                                          # memory door alone there)
                                          ("q_lora_rank", '1,536 (give "q_lora_rank": null for queries without '
                                                          'compression)')])
def test_11_a_left_out_mla_field_is_refused_at_every_door(run_cli, client, tmp_path, key, default):
    config = {k: v for k, v in DEEPSEEK.items() if k != key}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = (f"error: config.json: {key}: got no value; a deepseek_v3 config must state it: transformers would build "
            f"DeepseekV3Config's default {default}\n")
    assert field_refusal(run_cli("memory", str(path), "--gpus", "1"), f"config.json: {key}") == line
    assert field_refusal(run_cli("infer", "--model", str(path)), f"config.json: {key}") == line
    web = web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}), f"config.json: {key}")
    assert f"error: {web}\n" == line


# the MLA defaults against the installed classes: tests/test_class_shapes.py (CLASS_DEFAULTS' DeepSeek rows)
