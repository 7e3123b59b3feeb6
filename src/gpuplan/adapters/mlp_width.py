"""The dense MLP width a config.json gives, read from its own type's key only (review s21 R3 S1: gpuplan read
``intermediate_size``, ``n_inner`` and ``ffn_hidden_size`` for every type, so a llama config with ``n_inner`` was sized
at it while transformers ignores the key and builds LlamaConfig's 11,008)."""

from __future__ import annotations

from typing import Any

from gpuplan.adapters.config_fields import FOUR_X_WIDTH_TYPES, LIMITS, int_field
from gpuplan.errors import InputError

WIDTH_KEYS = {"gpt2": "n_inner", "gpt_bigcode": "n_inner", "falcon": "ffn_hidden_size",
              "llama4_text": "intermediate_size_mlp", "dbrx": "ffn_config.ffn_hidden_size"}
"""Each type's own MLP-width key where it is not ``intermediate_size`` (transformers 5.25.0: configuration_gpt2.py L82
and configuration_gpt_bigcode.py L63 ``n_inner``; configuration_falcon.py L86 ``ffn_hidden_size``; Llama 4's dense
layers configuration_llama4.py L132 ``intermediate_size_mlp``; DBRX configuration_dbrx.py L74 under ``ffn_config``,
which hf_config._dbrx_flat moves to ``intermediate_size``). MPT's comes from its expansion_ratio (mpt_fields)."""

CLASS_WIDTHS = {"dbrx": ("DbrxFFNConfig", 3584), "deepseek_v2": ("DeepseekV2Config", 11008),
                "deepseek_v3": ("DeepseekV3Config", 18432), "gemma": ("GemmaConfig", 24576),
                "gemma2": ("Gemma2Config", 9216), "gemma3": ("Gemma3TextConfig", 9216),
                "gemma3_text": ("Gemma3TextConfig", 9216), "gpt_neox": ("GPTNeoXConfig", 24576),
                "gpt_oss": ("GptOssConfig", 2880), "llama": ("LlamaConfig", 11008),
                "llama4_text": ("Llama4TextConfig", 16384), "mistral": ("MistralConfig", 14336),
                "mixtral": ("MixtralConfig", 14336), "olmo2": ("Olmo2Config", 11008), "olmo3": ("Olmo3Config", 11008),
                "phi3": ("Phi3Config", 8192), "qwen2": ("Qwen2Config", 22016), "qwen2_moe": ("Qwen2MoeConfig", 5632),
                "qwen3": ("Qwen3Config", 22016), "qwen3_moe": ("Qwen3MoeConfig", 6144)}
"""The fixed width each other type's config class builds when the key is left out (the field's default in
configuration_<type>.py, transformers 5.25.0; tests/test_hostile_w23c.py checks each against the installed classes)."""


def mlp_width(cfg: dict[str, Any], model_type: str, hidden: int) -> int:
    """The dense MLP width (elements): the type's own key; left out, 4 x ``hidden`` where transformers makes it so
    (FOUR_X_WIDTH_TYPES), else refused naming the key (the class default is another model's width)."""
    key = WIDTH_KEYS.get(model_type, "intermediate_size")
    read_as = "intermediate_size" if model_type == "dbrx" else key  # _dbrx_flat's name for it
    if cfg.get(read_as) is None:
        if model_type in FOUR_X_WIDTH_TYPES:
            return 4 * hidden
        name, width = CLASS_WIDTHS.get(model_type, ("its config class", 0))
        raise InputError(f"config.json: {key}", None, f"a {model_type} config must state its MLP width: transformers "
                         f"would build {name}'s default {width:,} whatever hidden_size is")
    width = int_field(cfg, read_as)
    if width > LIMITS["intermediate_size"]:  # one bound whatever the key's name
        raise InputError(f"config.json: {key}", width, f"must be at most {LIMITS['intermediate_size']:,}")
    return width
