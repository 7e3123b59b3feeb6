"""Attention shapes a config.json may leave out only where its config class would build what gpuplan reads.

gpuplan reads a left-out ``num_key_value_heads`` as ``num_attention_heads`` (multi-head) and a left-out ``head_dim`` as
hidden_size / num_attention_heads, as LlamaConfig builds them. Other classes default the field to a fixed number
whatever the model's width (transformers 5.25.0, configuration_<type>.py: Qwen2Config num_key_value_heads = 32,
Qwen3Config head_dim = 128, GemmaConfig 16 and 256, ...), so a config that leaves it out is built with another
model's shape: a Qwen2 of 8 heads gets 32 K/V heads (its forward fails), one of 64 heads 32 K/V heads (GQA, half
the KV cache gpuplan would count). As mlp_width does for the MLP width (wave 23 (3)), such a config is refused, naming
the field and the class default, unless the default is what gpuplan reads. Gemma 3 configs rely on their class
defaults and hf_config.CONFIG_DEFAULTS fills them, as transformers does.
"""

from __future__ import annotations

from typing import Any

from gpuplan.errors import InputError

CLASS_KV_HEADS = {"gemma": ("GemmaConfig", 16), "gemma2": ("Gemma2Config", 4), "gpt_oss": ("GptOssConfig", 8),
                  "llama4_text": ("Llama4TextConfig", 8), "mistral": ("MistralConfig", 8),
                  "mixtral": ("MixtralConfig", 8), "qwen2": ("Qwen2Config", 32), "qwen2_moe": ("Qwen2MoeConfig", 16),
                  "qwen3": ("Qwen3Config", 32), "qwen3_moe": ("Qwen3MoeConfig", 4)}
"""The fixed num_key_value_heads each config class builds when the key is left out (the field's default in
configuration_<type>.py, transformers 5.25.0; tests/test_hostile_w24.py checks each against the installed classes).
DeepSeek's 128 is left out: its multi-latent attention has no separate K/V heads (hf_config reads kv = heads)."""

CLASS_HEAD_DIMS = {"gemma": ("GemmaConfig", 256), "gemma2": ("Gemma2Config", 256), "gpt_oss": ("GptOssConfig", 64),
                   "llama4_text": ("Llama4TextConfig", 128), "qwen3": ("Qwen3Config", 128)}
"""The fixed head_dim each config class builds when the key is left out (as CLASS_KV_HEADS)."""


CLASS_MLA = {"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
"""DeepseekV2Config's and DeepseekV3Config's multi-latent attention defaults (configuration_deepseek_v2.py@5.25.0
L102-114, configuration_deepseek_v3.py L94-98): a DeepSeek config.json that leaves kv_lora_rank out is built with MLA
of rank 512 (gpuplan read it as plain attention). q_lora_rank (default 1,536) is not here: the catalog's
deepseek-v2-lite leaves it out to mean null (no query compression, as the official config states), which the reader
keeps."""


def check_class_shapes(cfg: dict[str, Any], model_type: str) -> None:
    """Refuse a config.json (``cfg`` as written, before nulls are dropped) that leaves out num_key_value_heads or
    head_dim where its class would build a fixed default other than what gpuplan reads for it, or a DeepSeek
    attention field (CLASS_MLA)."""
    if model_type in ("deepseek_v2", "deepseek_v3"):
        name = "DeepseekV2Config" if model_type == "deepseek_v2" else "DeepseekV3Config"
        for key, default in CLASS_MLA.items():
            if key not in cfg:
                raise InputError(f"config.json: {key}", None, f"a {model_type} config must state it: transformers "
                                 f"would build {name}'s default {default:,}")
    heads, hidden = cfg.get("num_attention_heads"), cfg.get("hidden_size")
    if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1:
        return  # the reader refuses it, naming num_attention_heads
    reads = {"num_key_value_heads": (CLASS_KV_HEADS, heads, f"num_attention_heads ({heads})"),
             "head_dim": (CLASS_HEAD_DIMS, hidden // heads if isinstance(hidden, int) else None,
                          f"hidden_size / num_attention_heads ({hidden} / {heads})")}
    for key, (table, read, said) in reads.items():
        if key in cfg or model_type not in table or read is None:
            continue
        name, default = table[model_type]
        if default != read:
            raise InputError(f"config.json: {key}", None, f"a {model_type} config must state it: transformers would "
                             f"build {name}'s default {default}, not {said}")


BIAS_KEYS = ("attention_bias", "mlp_bias", "bias")
"""config.json keys that switch linear biases on (hf_config._attention and the MLP read them)."""

_ATTENTION_BIAS_ONLY = ("deepseek_v3", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt_neox", "gpt_oss",
                        "llama4_text", "olmo2", "olmo3", "qwen3", "qwen3_moe")
READ_BIAS_KEYS = {"llama": ("attention_bias", "mlp_bias"), "deepseek_v2": ("attention_bias", "mlp_bias"),
                  "falcon": ("bias",), "mpt": ("bias",), **dict.fromkeys(_ATTENTION_BIAS_ONLY, ("attention_bias",))}
"""The bias keys each type's modeling file reads (transformers 5.25.0, `config.<key>` in modeling_<type>.py: Llama and
DeepSeek-V2 attention_bias and mlp_bias; Falcon bias; the types above attention_bias only; Mistral, Mixtral, Qwen2,
Qwen2-MoE, Phi-3, GPT-2, GPTBigCode, DBRX none: their biases are fixed by the architecture, hf_config.TRAITS). MPT's
``bias`` is hf_config's own, from attn_config.no_bias (config_fields.mpt_fields). Another type's key is not read: a
Mistral config with "attention_bias": true or a Qwen2 one with "mlp_bias": true builds no such biases."""


MHA_TYPES = ("gpt2", "gpt_neox")
"""Types whose attention has one K/V head per query head whatever the config says (modeling_gpt2.py and
modeling_gpt_neox.py@5.25.0 read no num_key_value_heads / num_kv_heads): a GPT-NeoX config with "num_key_value_heads":
1 builds multi-head attention, not MQA."""


def read_keys(cfg: dict[str, Any], model_type: str) -> dict[str, Any]:
    """``cfg`` without its nulls (the config class's defaults fill them) and without the bias keys ``model_type``'s
    modeling file does not read (READ_BIAS_KEYS), or the K/V head keys where it reads none (MHA_TYPES)."""
    unread = set(BIAS_KEYS) - set(READ_BIAS_KEYS.get(model_type, ()))
    unread |= {"num_key_value_heads", "num_kv_heads"} if model_type in MHA_TYPES else set()
    return {key: value for key, value in cfg.items() if value is not None and key not in unread}
