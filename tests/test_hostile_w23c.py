"""Review R3 (s21) of the hostile wave 23 mends, helper H3: S2 (a Qwen config without use_sliding_window has no window,
as its config class reads it), S1 (each type's own MLP-width key), S4 (the LoRA no-replica refusal names max_loras)."""

from __future__ import annotations

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config

# ---- S2: use_sliding_window defaults to false for Qwen2 / Qwen3 / Qwen2-MoE / Qwen3-MoE ------------------------------

QWEN = {"hidden_size": 1024, "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 2,
        "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 32768, "sliding_window": 4096}
QWEN_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 512}
QWEN_TYPES = {"qwen2": {}, "qwen3": {"head_dim": 64}, "qwen2_moe": {**QWEN_MOE, "shared_expert_intermediate_size": 512},
              "qwen3_moe": QWEN_MOE}


def _transformers_layers(config: dict) -> tuple[int | None, tuple[str, ...]]:
    """The window and sliding layers transformers' own config class builds (the installed version), in gpuplan's
    reading: Qwen3-MoE's modelling slides every layer on the one window (modeling_qwen3_moe.py@5.25.0 L149) whatever
    its layer_types; a window of None / 0 (Qwen2-MoE's off) is no window."""
    from transformers import CONFIG_MAPPING

    built = CONFIG_MAPPING[config["model_type"]](**{k: v for k, v in config.items() if k != "model_type"})
    if not built.sliding_window:
        return None, ()
    if config["model_type"] == "qwen3_moe":
        return built.sliding_window, ("sliding",) * built.num_hidden_layers
    kinds = tuple("sliding" if t == "sliding_attention" else "full" for t in built.layer_types)
    return (built.sliding_window, kinds) if "sliding" in kinds else (None, ())


@pytest.mark.parametrize("model_type", sorted(QWEN_TYPES))
@pytest.mark.parametrize("flag", [None, False, True])
def test_s2_a_qwen_window_slides_only_where_use_sliding_window_is_true(model_type, flag):
    config = {**QWEN, **QWEN_TYPES[model_type], "model_type": model_type}
    if flag is not None:
        config["use_sliding_window"] = flag
    spec = model_spec_from_hf_config(config)
    assert (spec.sliding_window, spec.layer_types) == _transformers_layers(config)
    if flag is not True:  # left out: the class's False (configuration_qwen2.py@5.25.0 L73, L83)
        assert spec.sliding_window is None and spec.layer_types == ()
    else:
        assert spec.sliding_window == 4096


def test_s2_the_hand_worked_layers_with_the_flag_true():
    qwen2 = model_spec_from_hf_config({**QWEN, "model_type": "qwen2", "use_sliding_window": True})
    assert qwen2.layer_types == ("full",) * 28 + ("sliding",) * 4  # i >= max_window_layers (28)
    moe = model_spec_from_hf_config({**QWEN, **QWEN_MOE, "model_type": "qwen3_moe", "use_sliding_window": True})
    assert moe.sliding_window == 4096 and moe.layer_types == ("sliding",) * 32
    bare = model_spec_from_hf_config({**QWEN, "model_type": "qwen2"})
    assert bare.sliding_window is None and bare.layer_types == ()
    mistral = model_spec_from_hf_config({**QWEN, "model_type": "mistral"})  # no flag in MistralConfig: it slides
    assert mistral.sliding_window == 4096 and mistral.layer_types == ("sliding",) * 32


# ---- S1: each type's own MLP-width key ------------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 4, "num_attention_heads": 16,
         "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 4096}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 2, "n_head": 12, "vocab_size": 1000, "n_positions": 1024}
FALCON = {"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 2, "num_attention_heads": 71,
          "vocab_size": 1000, "multi_query": True, "parallel_attn": True, "bias": False}


@pytest.mark.parametrize("other", ["n_inner", "ffn_hidden_size", "intermediate_size_mlp"])
def test_s1_a_llama_width_under_another_types_key_is_refused(other):
    from gpuplan.errors import InputError

    with pytest.raises(InputError) as refusal:
        model_spec_from_hf_config({**LLAMA, other: 14336})  # LlamaConfig ignores the key: it builds 11,008
    assert str(refusal.value) == ("config.json: intermediate_size: got no value; a llama config must state its MLP "
                                  "width: transformers would build LlamaConfig's default 11,008 whatever hidden_size "
                                  "is")


@pytest.mark.parametrize("config, stray, width", [
    (GPT2, "intermediate_size", 4 * 768),  # GPT2Config keeps n_inner None: 4 x n_embd (modeling_gpt2.py L252)
    (GPT2, "ffn_hidden_size", 4 * 768),
    ({**GPT2, "model_type": "gpt_bigcode"}, "intermediate_size", 4 * 768),
    (FALCON, "intermediate_size", 4 * 4544),  # FalconConfig: ffn_hidden_size None -> 4 x hidden (L97-98)
    (FALCON, "n_inner", 4 * 4544)])
def test_s1_a_four_x_type_ignores_other_keys(config, stray, width):
    assert model_spec_from_hf_config({**config, stray: 1000}).mlp.intermediate_size == width


@pytest.mark.parametrize("config, own, width", [(GPT2, "n_inner", 1000), (FALCON, "ffn_hidden_size", 1000),
                                                 ({**LLAMA, "model_type": "mistral"}, "intermediate_size", 5632)])
def test_s1_the_types_own_key_is_read(config, own, width):
    assert model_spec_from_hf_config({**config, own: width}).mlp.intermediate_size == width


def test_s1_the_named_class_defaults_are_the_installed_ones():
    """Each refusal's 'transformers would build X's default N' against the installed transformers' classes."""
    import transformers

    from gpuplan.adapters.mlp_width import CLASS_WIDTHS, WIDTH_KEYS

    for model_type, (name, width) in CLASS_WIDTHS.items():
        key = WIDTH_KEYS.get(model_type, "intermediate_size").split(".")[-1]
        built = transformers.DbrxConfig().ffn_config if model_type == "dbrx" else getattr(transformers, name)()
        assert getattr(built, key) == width, (model_type, name)


def test_s1_the_width_bound_holds_under_every_key():
    from gpuplan.errors import InputError

    with pytest.raises(InputError, match=r"^config.json: n_inner: got 16777217; must be at most 16,777,216$"):
        model_spec_from_hf_config({**GPT2, "n_inner": (1 << 24) + 1})


# ---- S4: the LoRA no-replica refusal names max_loras where the weights alone fit; numbers echoed as numbers ---------

SLOTS_ASK = {"model": "llama-3.1-8b", "gpu": "h100", "rps": 1, "ttft_p99": "1s", "tpot": "50ms", "max_loras": 4096,
             "max_lora_rank": 512}


def test_s4_slots_that_alone_leave_no_replica_name_max_loras_at_every_door(run_cli, client, tmp_path):
    from tests.helpers import four_door_refusal

    # one slot of rank 512 on llama-3.1-8b: 512 x (q 4,096 + 4,096 + k / v 2 x (4,096 + 1,024) + o 8,192 + gate / up
    # 2 x (4,096 + 14,336) + down 18,432) x 32 layers x 2 bytes = 2.684 GB; 4,096 slots = 10,995 GB; 16 GB of weights
    # alone fit an H100 with room for one 4,096-token sequence
    words = four_door_refusal(run_cli, client, tmp_path, "infer", "inference", SLOTS_ASK, "max_loras", "")
    assert words == ("max_loras: got 4096; 4,096 LoRA slots of rank 512 (10,995 GB before tensor parallelism) leave no "
                     "catalog GPU type room for one 4,096-token sequence of llama-3.1-8b (bf16) within one NVLink "
                     "domain, which its weights alone leave: fewer or lower-rank slots (--max-loras, --max-lora-rank)")


@pytest.mark.parametrize("lora", [{}, {"max_loras": 4}])
def test_s4_where_the_weights_alone_leave_none_rps_is_named_as_a_number(run_cli, client, tmp_path, lora):
    from tests.helpers import four_door_refusal

    ask = {"model": "llama-3.1-405b", "rps": 1, "ttft_p99": "1h", "tpot": "1min", "context": 16_000_000, **lora,
           "engine": "sglang"}  # vLLM refuses a context past 131,072 (test_hostile_w25)
    words = four_door_refusal(run_cli, client, tmp_path, "infer", "inference", ask, "rps", "")
    assert words.startswith("rps: got 1; sizes replicas within one NVLink domain, and no catalog GPU type holds "
                            "llama-3.1-405b (bf16) with one 16,000,000-token sequence"), words
    assert ("and 4 LoRA slots of rank 16 (4.99 GB before tensor parallelism)" in words) == bool(lora), words


# ---- N12: one LoRA-fit test and one GB rounding for the fits line, the note and the refusal -------------------------

@pytest.mark.parametrize("weights, slots, usable, fills", [
    (100e9, 30e9, 80e9, True),   # 70 GB without the slots: the slots leave no room
    (110e9, 30e9, 80e9, False),  # exactly 80 GB without them: equality names the weights in both texts
    (120e9, 30e9, 80e9, False),  # 90 GB without them: the weights alone exceed it
    (100e9, 0.0, 80e9, False)])  # no slots
def test_n12_the_fits_line_and_the_note_share_one_test(weights, slots, usable, fills):
    from types import SimpleNamespace

    from gpuplan.jobs.inference.memory_report import slots_fill_it

    assert slots_fill_it(SimpleNamespace(weights=weights, lora_slots=slots, usable=usable)) is fills


def test_n12_one_rounding_of_the_slot_gb():
    from gpuplan.jobs.inference.memory_report import gb_text

    assert (gb_text(10_995.116e9), gb_text(4.987e9), gb_text(1.0737e9)) == ("10,995", "4.99", "1.07")


# ---- N2, N6, N10 ----------------------------------------------------------------------------------------------------

def test_n2_a_stated_layer_types_list_with_no_sliding_entry_has_no_window():
    olmo = {"model_type": "olmo3", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
            "num_key_value_heads": 16, "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 8192,
            "sliding_window": 1024}
    stated = model_spec_from_hf_config({**olmo, "layer_types": ["full_attention"] * 4})
    assert stated.sliding_window is None and stated.layer_types == ()  # as the default path answers (was 1024)
    default = model_spec_from_hf_config(olmo)  # Olmo3Config: sliding unless (i + 1) % 4 == 0
    assert default.sliding_window == 1024 and default.layer_types == ("sliding", "sliding", "sliding", "full")


def test_n6_ndarray_takes_an():
    from gpuplan.errors import a_or_an

    assert [a_or_an(w) for w in ("ndarray", "list", "int", "E", "uint8", "NoneType")] == \
        ["an ndarray", "a list", "an int", "an E", "a uint8", "a NoneType"]


def test_n10_the_web_no_fit_refusal_names_the_config_the_body_sent(client):
    from tests.helpers import web_refusal

    huge = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1 << 20,
            "intermediate_size": 1 << 22, "num_attention_heads": 8192, "num_key_value_heads": 8,
            "num_hidden_layers": 10_000, "vocab_size": 128256, "max_position_embeddings": 8192}
    words = web_refusal(client.post("/api/plan", json={"config": huge, "tokens": "1e18", "gpu": "h100"}), "config",
                        "no layout fits")
    assert words.startswith("config: got 'config.json'; no layout fits NVIDIA H100"), words


@pytest.mark.parametrize("model_type, extra", [
    ("qwen2_moe", {**QWEN_MOE, "use_sliding_window": True, "sliding_window": None}),
    ("qwen2", {"use_sliding_window": False, "layer_types": ["sliding_attention"] * 32}),
    ("qwen2", {"layer_types": ["sliding_attention"] * 32})])
def test_n1_sliding_layers_with_no_window_read_as_windowless(model_type, extra):
    """transformers builds sliding layers with no window here, which cannot run; gpuplan reads them windowless
    (docs/catalog-models.md), not refused as class_defaults refuses OLMo 3's / Gemma's null window."""
    spec = model_spec_from_hf_config({**QWEN, **extra, "model_type": model_type})
    assert spec.sliding_window is None and spec.layer_types == ()


@pytest.mark.parametrize("model_type", sorted(QWEN_TYPES))
def test_a_qwen_config_with_the_flag_and_no_window_key_takes_the_class_window(model_type):
    """Review s21 R3 (left by H3): use_sliding_window true with no sliding_window key was read windowless; the Qwen
    classes default the window to 4,096 (configuration_qwen2.py@5.25.0 L74; qwen3 L77, qwen2_moe L89, qwen3_moe L92):
    the same window and layers as the installed transformers builds. A stated null stays windowless (test_n1)."""
    config = {**{k: v for k, v in QWEN.items() if k != "sliding_window"}, **QWEN_TYPES[model_type],
              "model_type": model_type, "use_sliding_window": True}
    spec = model_spec_from_hf_config(config)
    assert spec.sliding_window == 4096 and (spec.sliding_window, spec.layer_types) == _transformers_layers(config)
