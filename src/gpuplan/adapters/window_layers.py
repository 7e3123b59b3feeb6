"""Which layers of a config.json slide, where it states a sliding window but no ``layer_types``: each type's config
class builds them (transformers 5.25.0), and gpuplan reads the same list ('full' / 'sliding' per layer)."""

from __future__ import annotations

from typing import Any

from gpuplan.adapters.config_fields import int_field

WINDOW_PATTERN = {"gemma2": 2, "olmo3": 4, "gpt_oss": 2}
"""Every n-th layer full (global), the rest sliding, where config.json gives no layer_types: Gemma 2 alternates;
OLMo 3's and GPT-OSS's configs default layer_types to 'sliding_attention' unless (i + 1) % 4 (OLMo 3) / % 2
(GPT-OSS) is 0 (configuration_olmo3.py@5.25.0 L92-95, configuration_gpt_oss.py@5.25.0 L84-87)."""
MAX_WINDOW_LAYERS = 28
"""Qwen2Config / Qwen3Config / Qwen2MoeConfig's max_window_layers default (configuration_qwen2.py@5.25.0 L75,
configuration_qwen3.py L78, configuration_qwen2_moe.py L90)."""


def default_layer_types(cfg: dict[str, Any], num_layers: int) -> tuple[str, ...]:
    """'full' / 'sliding' for each of ``num_layers`` layers of a config with a window and no layer_types (hostile wave
    23: a Qwen2 / Qwen3 / Qwen2-MoE config with use_sliding_window true was read as sliding on every layer):

    * Qwen2 / Qwen3: sliding from layer max_window_layers on (configuration_qwen2.py@5.25.0 L87-93, qwen3 L90-96:
      'sliding_attention' if i >= max_window_layers), so 28 layers under the default 28 have none;
    * Qwen2-MoE: sliding on every other layer below max_window_layers (configuration_qwen2_moe.py L110-116: (i + 1) % 2
      and i < max_window_layers);
    * Gemma 2 / OLMo 3 / GPT-OSS (WINDOW_PATTERN) and Gemma 3's sliding_window_pattern: every n-th layer full;
    * any other type (Mistral, Mixtral, Qwen3-MoE: one window on every layer, modeling_qwen3_moe.py L149): sliding."""
    model_type = cfg.get("model_type")
    if model_type in ("qwen2", "qwen3"):
        first = int_field(cfg, "max_window_layers", default=MAX_WINDOW_LAYERS, minimum=0)
        return tuple("sliding" if i >= first else "full" for i in range(num_layers))
    if model_type == "qwen2_moe":
        below = int_field(cfg, "max_window_layers", default=MAX_WINDOW_LAYERS, minimum=0)
        return tuple("sliding" if (i + 1) % 2 and i < below else "full" for i in range(num_layers))
    pattern = WINDOW_PATTERN.get(model_type) or (
        int_field(cfg, "sliding_window_pattern") if cfg.get("sliding_window_pattern") else None)
    if pattern:  # Gemma: every pattern-th layer is global
        return tuple("full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers))
    return ("sliding",) * num_layers
