"""A config.json's RoPE settings: ``rope_scaling`` (transformers 4's key) or ``rope_parameters`` (transformers 5's,
which also holds ``rope_theta``), checked and read as transformers reads them.

transformers 5.25.0 (modeling_rope_utils.py, RotaryEmbeddingConfigMixin.convert_rope_params_to_dict L792-821 and
standardize_rope_params L823-880) takes ``rope_scaling or rope_parameters`` as the RoPE settings, fills their
``rope_theta`` from the top-level key only where they state none (``setdefault``), and nests them by layer type where
their keys are the config's layer types (Gemma 3: ``full_attention`` / ``sliding_attention``, each a mapping or null).
A config saved by transformers 5 writes ``rope_parameters`` and no top-level ``rope_theta`` or ``rope_scaling``.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan.adapters.config_fields import (KNOWN_LAYER_TYPES, WINDOW_FLAG_TYPES, first, is_finite_number,
                                           list_refusal)
from gpuplan.errors import InputError

MAX_ROPE_FACTOR = 1024.0
"""Largest RoPE scaling factor accepted (published configs use up to 64: Llama 4's 16 x 4, YaRN 32-40)."""


ROPE_SCALING_NUMBERS = ("original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
                        "attention_factor", "low_freq_factor", "high_freq_factor")


ROPE_TYPES = {"default": (), "linear": ("factor",), "dynamic": ("factor",), "yarn": ("factor",),
              "longrope": ("short_factor", "long_factor"), "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
              "su": ("short_factor", "long_factor"), "mrope": ()}
"""RoPE types transformers knows (modeling_rope_utils ``_validate_<type>_rope_parameters``) and the keys
each requires from config.json (original_max_position_embeddings and rope_theta are filled in from
the config); 'su' is Phi-3's older name for longrope, 'mrope' Qwen2-VL's for default."""


def rope_settings(cfg: dict[str, Any]) -> tuple[str, Any]:
    """(the key, the value) transformers 5.25.0 takes the RoPE settings from: ``rope_scaling`` where it is given and
    not empty (``rope_scaling or self.rope_parameters``, L793-794), else ``rope_parameters``; None where neither is."""
    scaling = cfg.get("rope_scaling")
    if scaling or "rope_parameters" not in cfg:
        return "rope_scaling", scaling
    return "rope_parameters", cfg.get("rope_parameters")


CLASS_LAYER_TYPES = {**dict.fromkeys(("gemma2", "gemma3", "gemma3_text", "gpt_oss", "olmo3"), KNOWN_LAYER_TYPES),
                     **dict.fromkeys(("qwen2", "qwen2_moe", "qwen3", "llama4_text"), ("full_attention",))}
"""The layer types a config class fills layer_types with where config.json states none (transformers 5.25.0, each
class's __post_init__; checked by building each type with rope_parameters nested under both types: the Gemma 2 / 3,
GPT-OSS and OLMo 3 classes nest both, Qwen2 / Qwen2-MoE / Qwen3 'full_attention' (and 'sliding_attention' with
use_sliding_window), Llama 4 'full_attention' (its 'chunked_attention' is not modelled); Llama, Mistral, Mixtral,
Phi-3, OLMo 2, Qwen3-MoE, DeepSeek and the others none, so their rope_parameters are flat (review R2 M6))."""


def _nested(settings: dict[str, Any], cfg: dict[str, Any]) -> list[str]:
    """The keys of ``settings`` that are layer types (nested_rope_parameter_keys L781-790: the config's own
    layer_types, or those its class fills in where it states none: CLASS_LAYER_TYPES)."""
    declared = cfg.get("layer_types")
    if isinstance(declared, list):
        types = {t for t in declared if isinstance(t, str)}
    else:
        types = set(CLASS_LAYER_TYPES.get(str(cfg.get("model_type")), ()))
        if types and cfg.get("model_type") in WINDOW_FLAG_TYPES and cfg.get("use_sliding_window"):
            types.add("sliding_attention")
    return [key for key in settings if key in types]


def check_rope(cfg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Check the config's RoPE settings (rope_settings) and return (their key, the flat ones the model's
    full-attention layers use: the ``full_attention`` entry where they are nested by layer type; {} where none), with
    their rope_theta checked as the top-level key is. Each refusal names the key the config wrote
    ('rope_parameters.factor', 'rope_parameters.full_attention.factor')."""
    key, settings = rope_settings(cfg)
    if key == "rope_scaling" or settings is None:
        check_rope_scaling(settings, key)
        return key, settings or {}
    if not isinstance(settings, dict):
        raise InputError("config.json: rope_parameters", settings, 'expected a mapping, e.g. {"rope_type": '
                         '"default", "rope_theta": 500000.0}, or one such mapping per layer type, or null')
    nested = _nested(settings, cfg)
    entries = {f"rope_parameters.{k}": settings[k] for k in nested} if nested else {"rope_parameters": settings}
    for name, entry in entries.items():
        check_rope_scaling(entry, name)
        for number, (valid, expected) in {"rope_theta": (lambda v: v > 0, "must be a positive number"),
                                          "partial_rotary_factor": (lambda v: 0 < v <= 1, "must be the rotary share "
                                                                    "of a head, in (0, 1]")}.items():
            value = (entry or {}).get(number)
            if value is not None and not (is_finite_number(value) and valid(value)):
                raise InputError(f"config.json: {name}.{number}", value, expected)
    if nested:
        return "rope_parameters.full_attention", settings.get("full_attention") or {}
    return "rope_parameters", settings


def check_rope_scaling(scaling: Any, key: str = "rope_scaling") -> None:
    """``rope_scaling`` (or the config's ``key``) is absent, null, or a mapping of a known type with the keys that type
    requires, whose ``factor`` (where given) is a number in (0, MAX_ROPE_FACTOR]."""
    if scaling is None:
        return
    if not isinstance(scaling, dict):
        raise InputError(f"config.json: {key}", scaling,
                         'expected a mapping, e.g. {"rope_type": "yarn", "factor": 4.0}, or null')
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind is not None and (not isinstance(kind, str) or kind not in ROPE_TYPES):
        raise InputError(f"config.json: {key}.rope_type", kind, f"must be one of {', '.join(ROPE_TYPES)}")
    for name in ROPE_TYPES[kind or "default"]:
        if scaling.get(name) is None:
            valid = (f"a number in (0, {MAX_ROPE_FACTOR:g}]" if name == "factor" else "a list of numbers"
                     if name in ("short_factor", "long_factor") else "a positive number")
            raise InputError(f"config.json: {key}.{name}", None, f"rope_type {kind} requires it: {valid}")
    factor = scaling.get("factor")
    if factor is not None and not (is_finite_number(factor) and 0 < factor <= MAX_ROPE_FACTOR):
        raise InputError(f"config.json: {key}.factor", factor, f"must be a number in (0, {MAX_ROPE_FACTOR:g}]")
    for name in ("short_factor", "long_factor"):  # LongRoPE: one rescale per rotary frequency
        value = scaling.get(name)
        if value is not None and (refusal := list_refusal(
                f"config.json: {key}.{name}", value, is_finite_number,
                "must be a list of numbers (one per rotary frequency)",
                "must be a finite number (one per rotary frequency)")):
            raise refusal
    for name in ROPE_SCALING_NUMBERS:  # YaRN / Llama 3 / LongRoPE parameters (transformers modeling_rope_utils)
        value = scaling.get(name)
        if value is not None and (not is_finite_number(value) or value < 0 or (
                name == "original_max_position_embeddings" and (value < 1 or value != int(value)))):
            raise InputError(f"config.json: {key}.{name}", value,
                             "must be a positive whole number" if name == "original_max_position_embeddings"
                             else "must be a number >= 0")
    if kind == "llama3":  # Llama 4 Scout ships low = high = 1.0 (no smoothed band); high < low is inverted
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        if not 0 < low <= high:
            raise InputError(f"config.json: {key}.high_freq_factor", high,
                             f"must be at least low_freq_factor ({low}), both positive (Llama 3.1: 1.0 and 4.0)")


NO_ROPE_TYPES = ("gpt2", "gpt_bigcode")
"""Model types with learned positions and no rotary embedding (hf_config's ModelSpec.rotary)."""


def check_even_rotary(cfg: dict[str, Any], model_type: str, head_dim: int) -> None:
    """A head RoPE rotates whole must be of even width: RoPE turns channel pairs (rotate_half splits the head in two),
    and transformers 5.25.0 refuses an odd one (modeling_rope_utils.py validate_rope L919-932: head_dim > 4, odd,
    int(head_dim x partial_rotary_factor) == head_dim: 'RoPE requires an even rotary dimension'); where a class keeps
    no head_dim attribute it skips the check and the model fails in its first forward (a Qwen2 of hidden 252 and 4
    heads: `measure` exit 70). Multi-latent attention rotates its qk_rope_head_dim channels, whole (DeepseekV2Config /
    DeepseekV3Config set head_dim = qk_rope_head_dim, configuration_deepseek_v2.py@5.25.0 L121). No RoPE (GPT-2,
    GPTBigCode, ALiBi MPT / Falcon): no check."""
    if (model_type in NO_ROPE_TYPES or cfg.get("alibi") is True
            or (model_type == "mpt" and not cfg.get("mpt_rope", True))):
        return
    mla = cfg.get("kv_lora_rank") is not None
    key, settings = check_rope(cfg)
    share = 1.0 if mla else settings.get("partial_rotary_factor") or cfg.get(
        "partial_rotary_factor") or cfg.get("rotary_pct") or 1.0
    width = cfg.get("qk_rope_head_dim") if mla else head_dim
    kind = settings.get("rope_type", settings.get("type")) or "default"
    _check_phi3_rope_type(key, kind, model_type)
    _check_part_rotated(key, settings, kind, cfg, model_type, mla)
    if isinstance(width, int) and width > 4 and width % 2 and int(width * share) == width:
        heads = first(cfg, "num_attention_heads", "n_head", "num_heads")
        field, value = (("qk_rope_head_dim", width) if mla else ("head_dim", head_dim)
                        if cfg.get("head_dim") is not None else ("num_attention_heads", heads))
        raise InputError(f"config.json: {field}", value, f"gives {'a rotary part' if mla else 'heads'} {width} "
                         "channels wide, all rotated: RoPE turns channel pairs, so the rotated width must be even "
                         "(transformers refuses an odd one)")


PART_ROTATED_TYPES = ("gpt_neox", "phi3")
"""Model types whose attention rotates a share of each head and passes the rest through (modeling_gpt_neox.py /
modeling_phi3.py apply_rotary_pos_emb: q_rot, q_pass, transformers 5.25.0); the others' rotate q whole."""


def _check_phi3_rope_type(key: str, kind: str, model_type: str) -> None:
    """A phi3 config's rope_type must be one Phi3Config takes (configuration_phi3.py L98-100 reads su and yarn as
    longrope; validate_rope L121-122 refuses the rest, transformers 5.25.0): measure refused the others naming no field,
    memory and infer answered them (hostile w30)."""
    if model_type == "phi3" and kind not in ("default", "longrope", "su", "yarn"):
        raise InputError(f"config.json: {key}.rope_type", kind, "a phi3 config takes default or longrope (su and yarn "
                         "read as longrope): transformers 5.25.0 refuses any other (Phi3Config.validate_rope)")


def _check_part_rotated(key: str, settings: dict[str, Any], kind: str, cfg: dict[str, Any], model_type: str,
                        mla: bool) -> None:
    """A partial_rotary_factor below 1 under a scaled rope_type (linear, dynamic, yarn, longrope, llama3: their
    modeling_rope_utils init functions build frequencies for that share) on a type that rotates q whole: cos and sin
    narrower than the head, and the first forward fails (`measure` and `profile` exit 70; memory and infer answered a
    model transformers cannot run; hostile w30). Under default RoPE the class's own init ignores the share, as here.
    ``key``, ``settings``: check_rope's; ``kind``: the rope_type."""
    if mla or model_type in PART_ROTATED_TYPES or kind == "default":
        return
    for name, value in ((f"{key}.partial_rotary_factor", settings.get("partial_rotary_factor")),
                        ("partial_rotary_factor", cfg.get("partial_rotary_factor"))):
        if is_finite_number(value) and value < 1:
            raise InputError(f"config.json: {name}", value, f"a {model_type} model rotates each head whole, and "
                             f"rope_type {kind} builds frequencies for {value:g} of it: transformers 5.25.0 fails "
                             "its first forward (GPT-NeoX and Phi-3 rotate a share); give 1 or leave it out")


def rope_attention_factor(cfg: dict[str, Any]) -> float:
    """YaRN's attention factor of the config's full-attention layers (check_rope, then yarn_attention_factor)."""
    key, settings = check_rope(cfg)
    return yarn_attention_factor(settings, key)


def yarn_attention_factor(scaling: Any, key: str = "rope_scaling") -> float:
    """YaRN's attention factor from ``rope_scaling`` (or the config's ``key``; transformers modeling_rope_utils.
    _compute_yarn_parameters: ``attention_factor`` if given, else get_mscale(factor, mscale) /
    get_mscale(factor, mscale_all_dim) when both are given, else get_mscale(factor); get_mscale(s, m)
    = 0.1 m ln s + 1 for s > 1, else 1). 1 for any other RoPE type."""
    if not isinstance(scaling, dict) or (scaling.get("rope_type") or scaling.get("type")) != "yarn":
        return 1.0

    def number(name: str, default: float | None, zero_ok: bool = False) -> float | None:
        value = scaling.get(name, default)
        if value is None:
            return None
        if not is_finite_number(value) or value < 0 or (value == 0 and not zero_ok):
            raise InputError(f"config.json: {key}.{name}", value,
                             "must be a number >= 0" if zero_ok else "must be a positive number")
        return float(value)

    def mscale(s: float, m: float) -> float:
        return 0.1 * m * math.log(s) + 1.0 if s > 1 else 1.0

    given = number("attention_factor", None)
    if given is not None:
        return given
    factor = number("factor", 1.0)
    m, m_all = number("mscale", None, zero_ok=True), number("mscale_all_dim", None, zero_ok=True)
    if m and m_all:  # truthiness, as _compute_yarn_parameters (modeling_rope_utils.py@5.25.0 L452-456): 0 is none
        return mscale(factor, m) / mscale(factor, m_all)
    return mscale(factor, 1.0)
