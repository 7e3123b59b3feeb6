"""Reading single fields of a Hugging Face ``config.json``: whole numbers within bounds, flags,
dropout probabilities, RoPE scaling, layer lists and the GPT-OSS activation clamp. Every value is
checked (hostile or malformed input gets one InputError naming the ``config.json`` field); the
architecture is assembled from them in adapters/hf_config.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gpuplan.errors import InputError

# Upper bounds per config field: far above any released model, low enough that per-layer tuples
# and products stay small (a config asking for 10^9 layers is refused, not built).
LIMITS = {"num_hidden_layers": 10_000, "hidden_size": 1 << 20, "vocab_size": 1 << 27,
          "num_attention_heads": 1 << 16, "num_key_value_heads": 1 << 16, "head_dim": 1 << 16,
          "intermediate_size": 1 << 24, "num_local_experts": 100_000, "max_position_embeddings": 1 << 31,
          "num_nextn_predict_layers": 64}
DEFAULT_LIMIT = 1 << 31

DROPOUT_KEYS = ("resid_pdrop", "hidden_dropout", "hidden_dropout_prob", "attention_dropout", "attn_pdrop")


FOUR_X_WIDTH_TYPES = ("gpt2", "gpt_bigcode", "falcon", "mpt")
"""Types whose transformers code makes an unstated MLP width 4 x hidden_size (modeling_gpt2.py@5.25.0 L252 and
modeling_gpt_bigcode.py L264: n_inner None; configuration_falcon.py L97-98: ffn_hidden_size None; MPT:
mpt_fields' expansion_ratio 4). Every other type's config class defaults intermediate_size to a fixed width that is
not the model's (LlamaConfig 11,008 whatever the hidden size, GPTNeoXConfig 24,576: configuration_llama.py L65,
configuration_gpt_neox.py L65), so a config of theirs that leaves it out is refused, not read as 4 x hidden_size
(hostile wave 23: llama with hidden 4,096 and no intermediate_size was sized at 16,384 where transformers builds
11,008)."""


def is_finite_number(value: Any) -> bool:
    """An int or float (not a boolean) that is finite: what every numeric config field must be."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def config_dropout(cfg: dict[str, Any]) -> float:
    """The largest residual/attention dropout probability the config trains with."""
    values = []
    for key in DROPOUT_KEYS:
        value = cfg.get(key)
        if value is not None:
            if not (is_finite_number(value) and 0 <= value < 1):
                raise InputError(f"config.json: {key}", value, "must be a probability in [0, 1)")
            values.append(float(value))
    return max(values, default=0.0)


def first(cfg: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return None


ACTIVATIONS = ("gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python", "gelu_python_tanh",
               "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear", "mish", "prelu", "quick_gelu",
               "relu", "relu2", "relu6", "sigmoid", "silu", "sqrtsoftplus", "swish", "tanh", "xielu")
"""The activation names transformers builds (transformers 5.25.0 src/transformers/activations.py ACT2CLS);
any other raises KeyError in ACT2FN when the model is built."""


def config_activation(cfg: dict[str, Any]) -> str:
    """The MLP activation (hidden_act / hidden_activation / activation_function; silu if none), one
    transformers knows: `hidden_act: "nope"` or `5` was read as a GeLU-free activation, exit 0."""
    keys = ("hidden_act", "hidden_activation", "activation_function")
    for key in keys:  # each one given: Gemma 2 runs hidden_activation beside a hidden_act (KeyError, exit 70)
        value = cfg.get(key)
        if value is not None and (not isinstance(value, str) or value not in ACTIVATIONS):
            raise InputError(f"config.json: {key}", value, "an activation transformers knows: " + ", ".join(ACTIVATIONS))
    return first(cfg, *keys) or "silu"


def int_field(cfg: dict[str, Any], *keys: str, required: bool = True, default: int | None = None,
               minimum: int = 1) -> int:
    value = first(cfg, *keys)
    present = next((key for key in keys if cfg.get(key) is not None), keys[0])
    if value is None:
        if required and default is None:
            raise InputError(f"config.json: {keys[0]}", None,
                             f"need one of {', '.join(keys)} (a positive integer)")
        return default if default is not None else 0
    if not is_finite_number(value) or value != int(value) or value < minimum:
        raise InputError(f"config.json: {present}", value, "must be a positive integer" if minimum == 1
                         else f"must be a whole number >= {minimum}")
    limit = LIMITS.get(keys[0], DEFAULT_LIMIT)
    if value > limit:
        raise InputError(f"config.json: {present}", value, f"must be at most {limit:,}")
    if isinstance(value, float):  # 32.0: transformers 5.25.0's strict config fields refuse it ("expected int, got
        # float"), older ones pass it to nn.Linear, which refuses a float size (hostile wave 23)
        raise InputError(f"config.json: {present}", value, f"must be a JSON integer ({int(value)}, not {value!r})")
    return int(value)


KNOWN_LAYER_TYPES = ("full_attention", "sliding_attention")
"""transformers' layer_types values gpuplan models (configuration_utils.ALLOWED_LAYER_TYPES holds
more: chunked, linear and state-space layers, which it does not)."""
DTYPES = ("bfloat16", "float16", "float32", "auto")
"""torch_dtype / dtype values of a config.json (transformers writes the torch dtype's name). Where both are given,
transformers 5.25.0 reads dtype (configuration_utils.py L440-442: torch_dtype only where dtype is None), as here."""


def list_refusal(field: str, values: Any, ok: Callable[[Any], bool], listed: str, entry: str) -> InputError | None:
    """A config.json list field's refusal: ``values`` itself when it is no list (``listed`` says what is valid),
    else its first entry that is not ``ok``, quoted with its place ('entry 31 (from 0) ' + ``entry``); None when
    every entry is. The value given is quoted, not its type's name or '32 entries' (wave 9)."""
    if not isinstance(values, list):
        return InputError(field, values, listed)
    bad = next((i for i, v in enumerate(values) if not ok(v)), None)
    return None if bad is None else InputError(field, values[bad], f"entry {bad} (from 0) {entry}")


def check_routing(cfg: dict[str, Any]) -> None:
    """DeepSeek-style routing fields (configuration_deepseek_v3.py): names are text, the scaling
    factor a positive number, the expert groups positive whole numbers with topk_group <= n_group."""
    for key in ("topk_method", "scoring_func"):
        value = cfg.get(key)
        if value is not None and not isinstance(value, str):
            raise InputError(f"config.json: {key}", value, "expected text (e.g. noaux_tc, sigmoid)")
    factor = cfg.get("routed_scaling_factor")
    if factor is not None and not (is_finite_number(factor) and factor > 0):
        raise InputError("config.json: routed_scaling_factor", factor, "must be a positive number (DeepSeek-V3: 2.5)")
    groups = int_field(cfg, "n_group", required=False, default=1) if cfg.get("n_group") is not None else None
    picked = int_field(cfg, "topk_group", required=False, default=1) if cfg.get("topk_group") is not None else None
    if groups is not None and picked is not None and picked > groups:
        raise InputError("config.json: topk_group", picked, f"must be at most n_group ({groups})")
    names = cfg.get("architectures")
    if names is not None and (refusal := list_refusal(
            "config.json: architectures", names, lambda n: isinstance(n, str),
            'must be a list of class names, e.g. ["LlamaForCausalLM"]',
            'must be a class name (text), e.g. "LlamaForCausalLM"')):
        raise refusal


FLAG_RULES: tuple[tuple[tuple[str, ...], Any, str], ...] = (
    (("tie_word_embeddings", "attention_bias", "mlp_bias", "bias", "use_parallel_residual", "new_decoder_architecture",
      "multi_query", "parallel_attn", "use_sliding_window"), lambda v: isinstance(v, bool), "must be true or false"),
    (("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon"), lambda v: is_finite_number(v) and 0 < v < 1,
     "must be a small positive number (e.g. 1e-5)"),
    # rope_theta 'x' and Gemma's query_pre_attn_scalar 0 ended measure / profile with exit 70; GPT-NeoX's and
    # Gemma 3's local RoPE bases too
    (("attn_logit_softcapping", "final_logit_softcapping", "rope_theta", "query_pre_attn_scalar", "rotary_emb_base",
      "rope_local_base_freq"), lambda v: is_finite_number(v) and v > 0, "must be a positive number or null"),
    # GPT-NeoX rotary_pct 2: a shape error in transformers
    (("rotary_pct", "partial_rotary_factor"), lambda v: is_finite_number(v) and 0 < v <= 1,
     "must be the rotary share of a head, in (0, 1]"),
)
"""(config keys, test a given value passes, what would be valid), checked in this order by check_flags."""


def check_flags(cfg: dict[str, Any]) -> None:
    """Boolean switches must be booleans, norm epsilons positive numbers, the dtype a float dtype."""
    for keys, valid, expected in FLAG_RULES:
        for key in keys:
            value = cfg.get(key)
            if value is not None and not valid(value):
                raise InputError(f"config.json: {key}", value, expected)
    vocab = cfg.get("vocab_size")
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):  # pad: nn.Embedding's padding_idx, in [-vocab, vocab)
        value = cfg.get(key)
        ids = value if isinstance(value, list) and key == "eos_token_id" else [value]
        if value is not None and not all(isinstance(i, int) and not isinstance(i, bool) and (
                not isinstance(vocab, int) or -vocab <= i < vocab) for i in ids):
            raise InputError(f"config.json: {key}", value, f"must be a token id below vocab_size ({vocab}) or null")
    key = "dtype" if cfg.get("dtype") is not None else "torch_dtype"  # PretrainedConfig reads dtype first (w30)
    if cfg.get(key) is not None and cfg[key] not in DTYPES:
        raise InputError(f"config.json: {key}", cfg[key], f"one of {', '.join(DTYPES)}")


def activation_clamp(cfg: dict[str, Any]) -> float | None:
    """GPT-OSS's ``swiglu_limit`` (GptOssConfig; GptOssExperts clamps gate and linear halves at it)."""
    limit = cfg.get("swiglu_limit")
    if limit is None:
        return None
    if not (is_finite_number(limit) and limit > 0):
        raise InputError("config.json: swiglu_limit", limit, "must be a positive number (GPT-OSS: 7.0)")
    return float(limit)


def layer_indices(cfg: dict[str, Any], key: str, num_layers: int) -> set[int]:
    """A list of layer indices (Qwen-MoE mlp_only_layers): whole numbers in [0, layers)."""
    value = cfg.get(key)
    if value is None:
        return set()
    if (not isinstance(value, list) or len(set(map(repr, value))) != len(value)
            or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < num_layers for i in value)):
        raise InputError(f"config.json: {key}", value if not isinstance(value, list) or len(value) <= 8
                         else f"{len(value)} entries", f"must be a list of distinct layer indices in 0..{num_layers - 1}")
    return set(value)


def check_expert_groups(cfg: dict[str, Any], experts: int, top_k: int) -> None:
    """DeepSeek group-limited routing (modeling_deepseek_v3 DeepseekV3TopkRouter: scores viewed as
    n_group groups of n_routed_experts // n_group, the best topk_group groups kept, top-k picked
    among their experts): n_group divides the experts and the kept groups hold at least top-k."""
    if cfg.get("n_group") is None or cfg.get("topk_method") == "greedy":  # DeepSeek-V2 greedy: no groups
        return
    groups = int(cfg["n_group"])  # both checked positive whole numbers by check_routing
    picked = None if cfg.get("topk_group") is None else int(cfg["topk_group"])
    if experts % groups:
        raise InputError("config.json: n_group", groups, f"must divide the {experts} routed experts into equal "
                         "groups (DeepSeek-V3: 8 groups of 32)")
    if picked is not None and picked * (experts // groups) < top_k:
        raise InputError("config.json: topk_group", picked, f"its groups hold {picked * (experts // groups)} experts, "
                         f"fewer than num_experts_per_tok ({top_k}); need at least "
                         f"{-(-top_k // (experts // groups))}")


WINDOW_FLAG_TYPES = ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe")
"""Slide only with use_sliding_window true (default False: configuration_qwen2.py@5.25.0 L73/L83, qwen3 L86, qwen2_moe L109)"""


def sliding_window(cfg: dict[str, Any]) -> int | None:
    """The sliding-window size: null, or use_sliding_window false (left out, for the WINDOW_FLAG_TYPES), for none."""
    pattern = cfg.get("sliding_window_pattern")  # Gemma 3: every pattern-th layer is global
    if pattern is not None and not (is_finite_number(pattern) and pattern == int(pattern) and pattern >= 1):
        raise InputError("config.json: sliding_window_pattern", pattern, "must be a positive integer (every n-th "
                         "layer is global; Gemma 3: 6)")
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False or (
            cfg.get("model_type") in WINDOW_FLAG_TYPES and cfg.get("use_sliding_window") is not True):
        return None
    if not (is_finite_number(window) and window == int(window) and window >= 1):
        raise InputError("config.json: sliding_window", window, "null for no window, or a positive token count")
    return int_field(cfg, "sliding_window")


def class_defaults(cfg: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """The config class's ``defaults`` that fill what ``cfg`` leaves out (or states null). Where they hold a sliding
    window (the class defaults it and its layer_types: OLMo 3 4,096, GPT-OSS 128, Gemma 2 / 3), a stated
    ``"sliding_window": null`` is not the default: transformers keeps the null (Olmo3Config(sliding_window=None)
    .sliding_window is None; review s20b N7). With a sliding layer (its layer_types, or their default) transformers
    5.25.0 cannot run the model (masking_utils.create_sliding_window_causal_mask: "Could not find a `sliding_window`
    argument in the config, or it is not set"; with a cache, cache_utils' sliding layer: TypeError): refused. With
    every layer full_attention no layer uses it: no window (malformed layer_types: refused where they are read)."""
    if not ("sliding_window" in cfg and cfg["sliding_window"] is None and "sliding_window" in defaults):
        return defaults
    types = cfg.get("layer_types")
    if types is None or (isinstance(types, list) and any(isinstance(t, str) and "sliding" in t for t in types)):
        raise InputError("config.json: sliding_window", None, "its sliding_attention layers need a window "
                         "(transformers cannot run a null one): give a positive token count, leave it out for the "
                         f"default {defaults['sliding_window']:,}, or mark every layer full_attention in layer_types")
    return {key: value for key, value in defaults.items() if key != "sliding_window"}


def transformers_refusal(exc: Exception, version: str) -> InputError:
    """One line naming the config.json field transformers' own config checks refused (profile / measure
    build the model; a StrictDataclassError spans lines); its text cut to 160 characters."""
    text = " ".join(str(exc).split())
    named = text.split("for field '", 1)[1].split("'", 1)[0] if "for field '" in text else ""
    if not named and text.startswith("property '") and text.endswith("has no setter"):  # use_return_dict (w30)
        named = text.split("'", 2)[1]
    if not named and text.startswith("`") and "` " in text:  # GenerationConfig's '`max_new_tokens` must be ...'
        named = text[1:].split("`", 1)[0]
    return InputError(f"config.json: {named}".rstrip(": "), text[:160], f"transformers {version} refuses it")


def kernel_refusal(attention: str, exc: Exception, field: str = "attention_kernel") -> InputError:
    """A model class without the attention path measure / profile build (--attention-kernel flash and sdpa both build
    transformers' SDPA one there): named as the option (``field``: profile.measure_training_memory's own argument is
    ``attention``), with the path every class has (Gemma 2 under transformers 5.25.0: 'Gemma2ForCausalLM does not
    support an attention implementation through ... scaled_dot_product_attention yet'), its first sentence kept."""
    said = " ".join(str(exc).split()).split(". ")[0][:200]
    if attention == "eager":
        return InputError(field, attention, f"an implementation this model supports ({said})")
    return InputError(field, attention, f"{said} (--attention-kernel flash and sdpa build SDPA): give "
                      "--attention-kernel eager")


@contextmanager
def transformers_quiet(transformers) -> Iterator[None]:
    """transformers' logging at CRITICAL while measure / profile build a config or a model: its warnings and errors on
    a config's values are gpuplan's one line (hostile w30: a read-only property set logged the whole config, 40 lines;
    pad_token_id -1, the LLaMA-1 conversions' value, a 'generation flags are not valid' line beside the answer)."""
    import warnings

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity(transformers.logging.CRITICAL)
    try:
        with warnings.catch_warnings():  # and its deprecations: rope_scaling on a GPT-2 / MPT config (no RoPE class)
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        transformers.logging.set_verbosity(verbosity)


def static_rope(text_config: Any) -> None:
    """A built config's dynamic NTK RoPE read as default RoPE for a step under fake tensors (profile.measure): each
    forward asks `if seq_len > max_seq_len_cached` (transformers 5.25.0 modeling_rope_utils.dynamic_frequency_update),
    which a fake tensor cannot answer (measure exit 70, DataDependentOutputException; hostile w30). The same memory:
    at build it is default RoPE (_compute_dynamic_ntk_parameters at max_position_embeddings scales the base by 1),
    and past the positions it swaps one inv_freq buffer of head_dim / 2 floats for another."""
    def static(entry: Any) -> Any:  # each mapping read as RoPE settings: flat, or nested by layer type (Gemma 3)
        if not isinstance(entry, dict):
            return entry
        kept = {k: static(v) for k, v in entry.items()}
        if "dynamic" in str(entry.get("rope_type", "")):
            kept = {k: v for k, v in kept.items() if k != "factor"} | {"rope_type": "default"}
        return kept

    rope = getattr(text_config, "rope_parameters", None)
    if isinstance(rope, dict):
        text_config.rope_parameters = static(rope)


def check_transformers_defaults(text_config: Any) -> None:
    """The values transformers fills in checked as the config's own are: Phi3Config's default
    pad_token_id 32000 on a smaller vocabulary failed nn.Embedding's padding_idx assert (exit 70)."""
    vocab, pad = getattr(text_config, "vocab_size", None), getattr(text_config, "pad_token_id", None)
    if isinstance(vocab, int) and isinstance(pad, int) and not -vocab <= pad < vocab:
        raise InputError("config.json: pad_token_id", pad, f"is transformers' default for this model type and past "
                         f"vocab_size ({vocab}); give pad_token_id (null or a token id below it)")
    # Qwen2Config.__post_init__ (configuration_qwen2.py@5.25.0 L83) drops the window unless use_sliding_window is
    # true; a sliding layer with none fails the first forward (masking_utils.create_sliding_window_causal_mask:
    # "Could not find a `sliding_window` argument", measure exit 70). The estimates read such layers windowless.
    types = getattr(text_config, "layer_types", None) or ()
    if getattr(text_config, "sliding_window", None) is None and "sliding_attention" in types:
        raise InputError("config.json: layer_types", "sliding_attention", "transformers builds these layers with no "
                         "window here (use_sliding_window false, or sliding_window null) and cannot run them: give "
                         "use_sliding_window true with a sliding_window, or mark every layer full_attention")


# MPT (mosaicml/llm-foundry llmfoundry/models/mpt/configuration_mpt.py @34f47ade1, the MPT-7B release week):
# attn_type -> K/V heads; norm_type -> gpuplan's norm. grouped_query_attention (kv_n_heads) came later.
MPT_KV_HEADS = {"multihead_attention": None, "multiquery_attention": 1, "grouped_query_attention": "kv_n_heads"}
MPT_NORMS = {"layernorm": "layernorm", "low_precision_layernorm": "layernorm", "rmsnorm": "rmsnorm",
             "low_precision_rmsnorm": "rmsnorm"}


def nested_settings(cfg: dict[str, Any], family: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attn_config and ffn_config mappings MPT and DBRX nest their settings in ({} where absent: a null
    was dropped; [] or 0 is refused by name)."""
    nested = {key: cfg.get(key, {}) for key in ("attn_config", "ffn_config")}
    for key, value in nested.items():
        if not isinstance(value, dict):
            raise InputError(f"config.json: {key}", value, f"expected a mapping ({family}), or null")
    return nested["attn_config"], nested["ffn_config"]


def mpt_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """An MPT config.json (llm-foundry's MPTConfig) in the names the reader takes. MPTConfig defaults where left
    out (configuration_mpt.py @34f47ade1 L38-50): expansion_ratio 4, max_seq_len 2048, learned_pos_emb true,
    no_bias false. The MLP is up 4 x d_model, GELU (nn.GELU(approximate='none'), layers/blocks.py L22-26), down;
    no_bias drops every bias, the norms' too (modeling_mpt.py L113-118); Wqkv is one fused projection
    (attention.py L301); the logits reuse wte (L472-473: tied). Positions: the release code builds wpe only without
    ALiBi (modeling_mpt.py L79-80), so MPT-7B (alibi and learned_pos_emb both true) has none; llm-foundry from
    2023-09 builds it whenever learned_pos_emb is set: the checkpoints trained before, MPT-7B's, hold no wpe."""
    attn, ffn = nested_settings(cfg, "MPT")
    attn_type, norm = attn.get("attn_type", "multihead_attention"), cfg.get("norm_type", "low_precision_layernorm")
    if not isinstance(attn_type, str) or attn_type not in MPT_KV_HEADS:
        raise InputError("config.json: attn_config.attn_type", attn_type, "one of " + ", ".join(MPT_KV_HEADS))
    if not isinstance(norm, str) or norm not in MPT_NORMS:
        raise InputError("config.json: norm_type", norm, "one of " + ", ".join(MPT_NORMS))
    if ffn.get("ffn_type", "mptmlp") != "mptmlp" or set(ffn) - {"ffn_type", "ffn_hidden_size"}:
        raise InputError("config.json: ffn_config", ffn, "MPT's GELU MLP only ({'ffn_type': 'mptmlp'}, optionally "
                         "ffn_hidden_size); other MPT feed-forward types are not read")
    flags = {key: cfg.get(key, default) for key, default in (("no_bias", False), ("learned_pos_emb", True))}
    flags |= {f"attn_config.{key}": attn.get(key, False) for key in ("alibi", "rope", "qk_ln", "qk_gn")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise InputError(f"config.json: {key}", value, "must be true or false")
    for key in ("attn_config.qk_ln", "attn_config.qk_gn"):  # extra q / k norms: weights the reader does not count
        if flags[key]:
            raise InputError(f"config.json: {key}", True, "q / k normalisation (llm-foundry attention.py @34f47ade1 "
                             "L306-309: q_ln, k_ln) is not read; false, or leave it out")
    hidden, layers, heads = (int_field(cfg, key) for key in ("d_model", "n_layers", "n_heads"))
    kv = MPT_KV_HEADS[attn_type]
    if isinstance(kv, str):  # grouped_query_attention names its K/V heads
        kv = int_field({f"attn_config.{kv}": attn.get(kv)}, f"attn_config.{kv}")
    learned = flags["learned_pos_emb"] and not flags["attn_config.alibi"]
    return {**cfg, "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "intermediate_size": (mpt_ffn_width(cfg.get("expansion_ratio", 4), hidden)  # a given 0 is refused,
                                  if ffn.get("ffn_hidden_size") is None else  # under its own name
                                  int_field({"ffn_config.ffn_hidden_size": ffn["ffn_hidden_size"]},
                                            "ffn_config.ffn_hidden_size")),
            "max_position_embeddings": cfg.get("max_seq_len", 2048), "bias": not flags["no_bias"],
            "hidden_act": "gelu", "attn_pdrop": attn.get("attn_pdrop"), "mpt_norm": MPT_NORMS[norm],
            "mpt_learned_positions": int_field(cfg, "max_seq_len", default=2048) if learned else 0,
            "mpt_rope": flags["attn_config.rope"]}


def mpt_ffn_width(ratio: Any, d_model: int) -> int:
    """MPT's MLP width without ffn_hidden_size: int(d_model x expansion_ratio), a float ratio allowed where the
    product is whole (llm-foundry resolve_ffn_hidden_size, llmfoundry/models/layers/ffn.py@8c8dd48f7 L117-121;
    34f47ade1, MPT-7B's, took an int ratio: layers/blocks.py L19-23). Another product is refused as there."""
    if isinstance(ratio, bool) or not is_finite_number(ratio) or ratio <= 0:
        raise InputError("config.json: expansion_ratio", ratio, "must be a positive number (the MLP is d_model x it)")
    width = d_model * ratio
    if width != int(width) or width > LIMITS.get("intermediate_size", DEFAULT_LIMIT):
        raise InputError("config.json: expansion_ratio", ratio, f"d_model ({d_model}) x expansion_ratio must be a "
                         f"whole number of at most {LIMITS.get('intermediate_size', DEFAULT_LIMIT):,} (llm-foundry)")
    return int(width)
