"""Hostile inputs, wave 24 part 3 (2026-12-07, helper H2): review R2's findings on the config.json reading of
tests/test_hostile_w24.py / w24b, each checked against transformers 5.25.0 (the installed one) building the model on
the meta device: stated nulls (M1, M2), DeepSeek's q_lora_rank (M3), DBRX's kv_n_heads (M4), YaRN mscale 0 (M5),
rope_parameters nested by layer type on a type without layer_types (M6), left-out K/V heads / head_dim read as the class
builds them (N1), a boolean hidden_size (N2), GPT-OSS / GPT-NeoX attention_bias false (N3)."""

import json
import math

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

BASE = {"hidden_size": 512, "num_hidden_layers": 2, "num_attention_heads": 16, "intermediate_size": 256,
        "vocab_size": 1000, "max_position_embeddings": 4096, "pad_token_id": 0}
MOE = {"num_local_experts": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
       "shared_expert_intermediate_size": 128, "intermediate_size_mlp": 256}
MOE_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "llama4_text")
DEEPSEEK = {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 4, "intermediate_size": 512, "moe_intermediate_size": 128, "n_routed_experts": 8,
            "n_shared_experts": 1, "num_experts_per_tok": 2, "vocab_size": 1000, "max_position_embeddings": 4096,
            "kv_lora_rank": 64, "q_lora_rank": 96, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32,
            "n_group": 2, "topk_group": 1, "first_k_dense_replace": 1}
DBRX = {"model_type": "dbrx", "d_model": 256, "n_heads": 8, "n_layers": 2, "vocab_size": 1000, "max_seq_len": 1024,
        "attn_config": {"rope_theta": 10000.0},
        "ffn_config": {"ffn_hidden_size": 128, "moe_num_experts": 4, "moe_top_k": 2}}


def _config(model_type: str, **fields) -> dict:
    moe = {k: v for k, v in MOE.items() if model_type != "mixtral" or k in ("num_local_experts", "num_experts_per_tok")}
    return {"model_type": model_type, **BASE, **(moe if model_type in MOE_TYPES else {}), **fields}


def _written(folder, config: dict):
    """``config`` written as ``folder``/config.json, the path a door is given."""
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def _meta_model(config: dict):
    """transformers' model of ``config`` on the meta device (AutoConfig.for_model then from_config), or the exception
    it raises (the config class's or the build's)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        built = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
        with torch.device("meta"):
            return AutoModelForCausalLM.from_config(built)
    except Exception as exc:  # noqa: BLE001 - strict-dataclass errors, TypeErrors of the build
        return exc


def _ours(config: dict):
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.core.model.spec import count_parameters

    spec = model_spec_from_hf_config(dict(config))
    return spec, count_parameters(spec).total


def _parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


# ---- M1 / M2: a stated null transformers builds no model from -------------------------------------------------------

NULLS = [(_config(t, head_dim=32, num_key_value_heads=None), "num_key_value_heads")
         for t in ("gemma", "gemma2", "gemma3_text", "gpt_oss", "mistral", "mixtral", "qwen2_moe", "qwen3_moe")] + \
        [(_config(t, num_key_value_heads=4, head_dim=None), "head_dim")
         for t in ("gemma", "gemma2", "gemma3_text", "gpt_oss", "olmo2", "olmo3", "phi3", "qwen2", "qwen2_moe", "qwen3",
                   "qwen3_moe")] + \
        [({**DEEPSEEK, key: None}, key) for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                                     "moe_intermediate_size")] + \
        [({**DBRX, "attn_config": {"kv_n_heads": None}}, "attn_config.kv_n_heads")]
"""M1 (K/V heads, head_dim), M2 (DeepSeek's MLA widths), the expert width found with the sweep below, M4 (DBRX's
nested K/V heads): a stated null the config class refuses, or the build fails on."""


@pytest.mark.parametrize("config, key", NULLS, ids=[f"{c['model_type']}-{key}" for c, key in NULLS])
def test_m1_m2_m4_a_null_transformers_cannot_build_is_refused(config, key):
    from gpuplan.errors import InputError

    assert isinstance(_meta_model(config), Exception)  # the class refuses the null, or the build fails on it
    with pytest.raises(InputError) as caught:
        _ours(config)
    assert str(caught.value) == (f"config.json: {key}: got 'null'; a {config['model_type']} config must give a "
                                 "positive integer: transformers 5.25.0 builds no model from a null one")


@pytest.mark.parametrize("model_type, key, other, kv, head_dim", [
    ("llama", "num_key_value_heads", {}, 16, 32), ("qwen2", "num_key_value_heads", {}, 16, 32),
    ("qwen3", "num_key_value_heads", {"head_dim": 32}, 16, 32), ("llama", "head_dim", {}, 16, 32),
    ("mistral", "head_dim", {"num_key_value_heads": 4}, 4, 32),
    ("mixtral", "head_dim", {"num_key_value_heads": 4}, 4, 32)])
def test_m1_a_null_the_class_fills_is_answered_as_built(model_type, key, other, kv, head_dim):
    config = _config(model_type, **other, **{key: None})
    model = _meta_model(config)
    attention = model.model.layers[0].self_attn
    assert (attention.k_proj.weight.shape[0] // attention.head_dim, attention.head_dim) == (kv, head_dim)
    spec, total = _ours(config)
    assert (spec.attention.num_kv_heads, spec.attention.head_dim) == (kv, head_dim)
    assert total == _parameters(model)


def test_m1_every_door_gives_the_same_line(run_cli, client, tmp_path):
    config = _config("mistral", num_key_value_heads=None)
    path = _written(tmp_path, config)
    line = ("error: config.json: num_key_value_heads: got 'null'; a mistral config must give a positive integer: "
            "transformers 5.25.0 builds no model from a null one\n")
    for job in (("memory", str(path), "--gpus", "1"), ("infer", "--model", str(path)),
                ("measure", "--model", str(path), "--seq-len", "32", "--micro-batch", "1")):
        assert field_refusal(run_cli(*job), "config.json: num_key_value_heads") == line, job
    web = web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}),
                      "config.json: num_key_value_heads")
    assert f"error: {web}\n" == line


# M2's nulls: test_m1_m2_m4_a_null_transformers_cannot_build_is_refused


# ---- M3: q_lora_rank ------------------------------------------------------------------------------------------------

def test_m3_a_left_out_q_lora_rank_is_built_at_rank_1536():
    """What transformers builds from a config without q_lora_rank; its refusal at every door, naming 1,536:
    test_hostile_w24b.py test_11_a_left_out_mla_field_is_refused_at_every_door."""
    config = {k: v for k, v in DEEPSEEK.items() if k != "q_lora_rank"}
    assert _meta_model(config).model.layers[0].self_attn.q_a_proj.weight.shape[0] == 1536


def test_m3_a_null_q_lora_rank_is_direct_queries_as_built():
    config = {**DEEPSEEK, "q_lora_rank": None}
    spec, total = _ours(config)
    assert spec.attention.q_lora_rank is None
    assert total == _parameters(_meta_model(config)) == 4_043_264  # review R2 M3's count


def test_m3_the_catalog_deepseek_v2_lite_is_unchanged_and_as_built():
    from gpuplan.catalog import load_model, model_entry
    from gpuplan.core.model.spec import count_parameters

    config = model_entry("deepseek-v2-lite")["config"]
    assert "q_lora_rank" in config and config["q_lora_rank"] is None  # as the official config.json states it
    spec = load_model("deepseek-v2-lite")
    assert spec.attention.q_lora_rank is None
    assert count_parameters(spec).total == 15_706_484_224  # the published safetensors count, as before
    assert _parameters(_meta_model(config)) == 15_706_484_224


# ---- M4: DBRX's nested K/V heads ------------------------------------------------------------------------------------

def test_m4_dbrx_without_kv_n_heads_is_multi_query_as_built(run_json, tmp_path):
    model = _meta_model(DBRX)
    assert model.config.attn_config.kv_n_heads == 1
    spec, total = _ours(DBRX)
    assert spec.attention.num_kv_heads == 1
    assert total == _parameters(model) == 1_596_672  # review R2 M4's meta-built count (8 K/V heads: 1,826,048)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(DBRX), encoding="utf-8")
    notes = run_json("memory", str(path), "--gpus", "1")["notes"]
    assert "attn_config.kv_n_heads left out: DbrxAttentionConfig's default 1 (multi-query), as transformers " \
           "builds it" in notes


def test_m4_the_class_default_tables_are_complete():
    """Every type gpuplan reads whose config class, given 12 heads of hidden 768, builds K/V heads other than 12 or a
    head_dim other than 64 is in CLASS_DEFAULTS (or fills it itself: Gemma 3's CONFIG_DEFAULTS,
    DeepSeek's MLA, DBRX's attn_config, Falcon's / GPTBigCode's own keys)."""
    from transformers import AutoConfig

    from gpuplan.adapters.class_shapes import CLASS_DEFAULTS
    from gpuplan.adapters.hf_config import CONFIG_DEFAULTS, TRAITS

    own = {"deepseek_v2", "deepseek_v3", "dbrx", "falcon", "gpt_bigcode", "mpt", "gpt2", "gpt_neox"}
    for model_type in sorted(set(TRAITS) - own):
        built = AutoConfig.for_model(model_type, hidden_size=768, num_attention_heads=12)
        fixed = CONFIG_DEFAULTS.get(model_type, {})
        kv, head_dim = getattr(built, "num_key_value_heads", 12), getattr(built, "head_dim", None)
        if kv not in (12, None) and "num_key_value_heads" not in fixed:
            assert CLASS_DEFAULTS[model_type][1]["num_key_value_heads"] == kv, model_type
        if head_dim not in (64, None) and "head_dim" not in fixed:
            assert CLASS_DEFAULTS[model_type][1]["head_dim"] == head_dim, model_type


# ---- M5 / M6: RoPE ---------------------------------------------------------------------------------------------------

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}


def _transformers_attention_factor(config: dict) -> float:
    from transformers import AutoConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    built = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    nested = built.nested_rope_parameter_keys(built.rope_parameters)  # transformers' own test of nesting
    layer_type = "full_attention" if "full_attention" in nested else None
    rope_type = (built.rope_parameters[layer_type] if layer_type else built.rope_parameters).get("rope_type")
    if rope_type in (None, "default"):
        return 1.0
    return float(ROPE_INIT_FUNCTIONS[rope_type](built, "cpu", layer_type=layer_type)[1])


def test_m5_yarn_mscale_zero_falls_back_as_transformers():
    config = _config("llama", rope_scaling={**YARN, "mscale": 0, "mscale_all_dim": 1})
    spec, _ = _ours(config)
    expected = 0.1 * math.log(4.0) + 1.0  # yarn_get_mscale(4): mscale 0 is falsy, so the plain default
    assert spec.attention.rope_attention_factor == pytest.approx(expected, rel=1e-12)
    assert _transformers_attention_factor(config) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("model_type, factor", [("llama", 1.0), ("mistral", 1.0), ("gemma2", 0.1 * math.log(4) + 1)])
def test_m6_nesting_counts_only_the_layer_types_the_class_has(model_type, factor):
    entry = {**YARN, "rope_theta": 1e4}
    config = _config(model_type, head_dim=32, num_key_value_heads=4, rope_parameters={"full_attention": entry})
    spec, _ = _ours(config)
    assert spec.attention.rope_attention_factor == pytest.approx(factor, rel=1e-12)
    assert _transformers_attention_factor(config) == pytest.approx(factor, rel=1e-6)


# ---- N1: a left-out K/V heads / head_dim read as the class builds it ------------------------------------------------

@pytest.mark.parametrize("config, kv, head_dim, note", [
    ({"model_type": "mistral", "hidden_size": 512, "num_attention_heads": 16}, 8, 32,
     "num_key_value_heads left out: MistralConfig's default 8, as transformers builds it (not num_attention_heads "
     "(16))"),
    ({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8}, 8, 128,
     "head_dim left out: Qwen3Config's default 128, as transformers builds it (not hidden_size / "
     "num_attention_heads (1024 / 16))"),
    ({"model_type": "qwen2", "hidden_size": 2048, "num_attention_heads": 64}, 32, 32,
     "num_key_value_heads left out: Qwen2Config's default 32, as transformers builds it (not num_attention_heads "
     "(64))")])
def test_n1_a_left_out_shape_is_read_as_built_with_a_note(run_json, tmp_path, config, kv, head_dim, note):
    config = {**config, "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 1000,
              "max_position_embeddings": 4096}
    model = _meta_model(config)
    spec, total = _ours(config)
    assert (spec.attention.num_kv_heads, spec.attention.head_dim) == (kv, head_dim)
    assert total == _parameters(model)
    assert note in spec.notes
    path = _written(tmp_path, config)
    assert note in run_json("memory", str(path), "--gpus", "1")["notes"]


def test_n1_a_default_that_does_not_divide_the_heads_is_refused(run_cli, tmp_path):
    config = {"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 8, "num_hidden_layers": 2,
              "intermediate_size": 256, "vocab_size": 1000}
    path = _written(tmp_path, config)
    line = ("error: config.json: num_key_value_heads: got no value; a qwen2 config must state it: transformers would "
            "build Qwen2Config's default 32, which does not divide num_attention_heads (8)\n")
    assert field_refusal(run_cli("memory", str(path), "--gpus", "1"), "config.json: num_key_value_heads") == line


# ---- N2 / N3 ---------------------------------------------------------------------------------------------------------

def test_n2_a_boolean_hidden_size_is_named_as_hidden_size():
    from gpuplan.errors import InputError

    config = {"model_type": "qwen3", "hidden_size": True, "num_attention_heads": 16, "num_key_value_heads": 8,
              "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 1000}
    with pytest.raises(InputError, match="^config.json: hidden_size: "):
        _ours(config)


GPT_OSS = {"num_key_value_heads": 2, "head_dim": 32, "num_local_experts": 4, "num_experts_per_tok": 2}


@pytest.mark.parametrize("model_type, extra", [("gpt_oss", {**GPT_OSS, "attention_bias": False}),
                                               ("gpt_neox", {"attention_bias": False})])
def test_n3_attention_bias_false_drops_every_attention_bias(model_type, extra):
    config = {"model_type": model_type, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 96, "vocab_size": 1000, "max_position_embeddings": 512, **extra}
    spec, total = _ours(config)
    assert not spec.attention.qkv_bias and not spec.attention.out_bias
    assert total == _parameters(_meta_model(config))


@pytest.mark.parametrize("heads, layers", [(4, 2), (8, 3)])
def test_n4_gpt_oss_counts_one_attention_sink_a_head_a_layer(heads, layers):
    from dataclasses import replace

    from gpuplan.core.model.spec import count_parameters

    config = {"model_type": "gpt_oss", "hidden_size": 128, "num_hidden_layers": layers, "num_attention_heads": heads,
              "intermediate_size": 96, "vocab_size": 1000, "max_position_embeddings": 512, **GPT_OSS}
    model = _meta_model(config)
    assert tuple(model.model.layers[0].self_attn.sinks.shape) == (heads,)
    spec, total = _ours(config)
    assert total == _parameters(model)
    without = replace(spec, attention=replace(spec.attention, attention_sinks=False))
    assert total - count_parameters(without).total == heads * layers


# ---- expert keys a type does not read (found while testing M1: a Mixtral config's stray moe_intermediate_size) ------

@pytest.mark.parametrize("model_type, stray", [
    ("llama", {"num_experts": 4, "num_experts_per_tok": 2}),
    ("qwen3", {"num_local_experts": 4, "num_experts_per_tok": 2}),
    ("mistral", {"n_routed_experts": 4, "num_experts_per_tok": 2}),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64}),
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2, "shared_expert_intermediate_size": 64}),
    ("gpt_oss", {**GPT_OSS, "n_shared_experts": 1}),
    ("qwen3_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48,
                   "shared_expert_intermediate_size": 64}),
    ("qwen2_moe", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48,
                   "shared_expert_intermediate_size": 80, "n_shared_experts": 1})])
def test_expert_keys_a_type_does_not_read_are_not_read(model_type, stray):
    """Each stray key changed gpuplan's count before (Llama with "num_experts": 4: 650,880 against the meta-built
    dense 428,672; Mixtral's moe_intermediate_size 64: 552,576 against 650,880); now the count is transformers'."""
    config = {"model_type": model_type, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 1000, "max_position_embeddings": 512,
              "pad_token_id": 0, **stray}
    model = _meta_model(config)
    spec, total = _ours(config)
    assert total == _parameters(model)
    assert (spec.moe is None) == (model_type not in MOE_TYPES)


def test_model_type_override_still_reads_the_expert_keys():
    """--model-type reads another type's config in the chosen type's names: its experts are kept (a Qwen2-MoE config
    read as mixtral keeps num_experts' 4 experts)."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    config = {"model_type": "qwen2_moe", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 1000, "num_experts": 4,
              "num_experts_per_tok": 2}
    assert model_spec_from_hf_config(config, model_type="mixtral").moe.num_experts == 4


# ---- expert widths a MoE config class defaults (found with the sweep above) ---------------------------------------

EXPERTS = {"qwen2_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48,
                         "shared_expert_intermediate_size": 80},
           "qwen3_moe": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48}}


@pytest.mark.parametrize("model_type, key, note", [
    ("qwen2_moe", "moe_intermediate_size", "moe_intermediate_size left out: Qwen2MoeConfig's default 1,408, as "
     "transformers builds it"),
    ("qwen2_moe", "shared_expert_intermediate_size", "shared_expert_intermediate_size left out: Qwen2MoeConfig's "
     "default 5,632, as transformers builds it"),
    ("qwen3_moe", "moe_intermediate_size", "moe_intermediate_size left out: Qwen3MoeConfig's default 768, as "
     "transformers builds it"),
    ("deepseek_v3", "moe_intermediate_size", "moe_intermediate_size left out: DeepseekV3Config's default 2,048, as "
     "transformers builds it"),
    ("deepseek_v3", "n_shared_experts", "n_shared_experts left out: DeepseekV3Config's default 1, as transformers "
     "builds it")])
def test_a_left_out_expert_width_is_read_as_built(model_type, key, note):
    """Before: a tiny Qwen2-MoE without shared_expert_intermediate_size 503,936 parameters (no shared expert) against
    the meta-built 4,829,568; without moe_intermediate_size the experts were intermediate_size wide."""
    full = DEEPSEEK if model_type == "deepseek_v3" else {
        "model_type": model_type, "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 32, "intermediate_size": 96, "vocab_size": 1000,
        "max_position_embeddings": 512, **EXPERTS[model_type]}
    config = {k: v for k, v in full.items() if k != key}
    spec, total = _ours(config)
    assert total == _parameters(_meta_model(config))
    assert note in spec.notes


def test_a_missing_expert_count_is_refused_by_its_own_name():
    """(A null expert width: test_m1_m2_m4_a_null_transformers_cannot_build_is_refused.)"""
    from gpuplan.errors import InputError

    with pytest.raises(InputError, match="^config.json: n_routed_experts: got no value; a deepseek_v3 model routes"):
        _ours({k: v for k, v in DEEPSEEK.items() if k != "n_routed_experts"})  # was named num_local_experts
