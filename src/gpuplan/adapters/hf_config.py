"""Hugging Face ``config.json`` -> :class:`ModelSpec`.

HF configs name the same thing many ways (``hidden_size``/``n_embd``/``d_model``,
``num_local_experts``/``num_experts``/``n_routed_experts``, ...) and leave architectural facts
implicit in ``model_type`` (GPT-2 has biases, Qwen2 has q/k/v biases, Gemma 2 has four norms per
layer). The per-``model_type`` traits below mirror the corresponding ``modeling_<type>.py`` and
``configuration_<type>.py`` files of transformers. An unknown ``model_type`` is refused with the
supported families (``--model-type llama`` reads it as Llama-style); hybrid state-space models
are refused until modelled. Every numeric field is checked (a positive finite integer within a
bound), so a malformed or hostile config gets one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuplan.adapters.architectures import check_architecture, language_config
from gpuplan.adapters.class_shapes import READ_EXPERT_KEYS, check_class_shapes, read_keys
from gpuplan.adapters.config_fields import (
    KNOWN_LAYER_TYPES,
    WINDOW_FLAG_TYPES,
    activation_clamp,
    check_expert_groups,
    check_flags,
    check_routing,
    class_defaults,
    config_activation,
    config_dropout,
    first,
    int_field,
    layer_indices,
    list_refusal,
    mpt_fields,
    nested_settings,
    sliding_window,
)
from gpuplan.adapters.mlp_width import mlp_width
from gpuplan.adapters.quant_fields import check_quantization_config
from gpuplan.adapters.rope_fields import check_even_rotary, check_rope, rope_attention_factor
from gpuplan.adapters.window_layers import default_layer_types
from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec, MoESpec
from gpuplan.errors import InputError, printable


@dataclass(frozen=True)
class ArchTraits:
    """What a model_type implies beyond its config fields (from transformers' modeling files)."""

    gated_mlp: bool = True
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: str = "none"
    tie_default: bool = False  # the config class's default for tie_word_embeddings
    parallel_residual: bool = False
    fused_qkv: bool = False
    fused_gate_up: bool = False
    gemma_norm: bool = False
    norm_bias: bool = True


_GPT2 = ArchTraits(gated_mlp=False, norm="layernorm", qkv_bias=True, out_bias=True,
                   mlp_bias=True, tie_default=True, fused_qkv=True)
_NEOX = ArchTraits(gated_mlp=False, norm="layernorm", qkv_bias=True, out_bias=True,
                   mlp_bias=True, parallel_residual=True, fused_qkv=True)
# GPTBigCode (SantaCoder, StarCoder; transformers models/gpt_bigcode/modeling_gpt_bigcode.py@5.25.0): GPT-2 blocks of
# nn.Linear with biases (c_attn L156, c_proj L158, c_fc / c_proj L246-247), LayerNorms ln_1 / ln_2 (L266, L270),
# LM head tied to wte (L509); multi-query K/V in _attention
_BIGCODE = ArchTraits(gated_mlp=False, norm="layernorm", qkv_bias=True, out_bias=True,
                      mlp_bias=True, tie_default=True, fused_qkv=True)
_GEMMA2 = ArchTraits(norms_per_layer=4, tie_default=True, gemma_norm=True)
_GEMMA3 = ArchTraits(norms_per_layer=4, qk_norm="per_head", tie_default=True, gemma_norm=True)
TRAITS: dict[str, ArchTraits] = {
    "llama": ArchTraits(), "mistral": ArchTraits(), "mixtral": ArchTraits(),
    "phi3": ArchTraits(fused_qkv=True, fused_gate_up=True), "deepseek_v2": ArchTraits(), "deepseek_v3": ArchTraits(),
    "qwen2": ArchTraits(qkv_bias=True), "qwen2_moe": ArchTraits(qkv_bias=True),
    "qwen3": ArchTraits(qk_norm="per_head"), "qwen3_moe": ArchTraits(qk_norm="per_head"),
    "olmo2": ArchTraits(qk_norm="full"),
    # OLMo 3 is OLMo 2's block with sliding windows on three layers of four, read from the config's layer_types
    # (transformers models/olmo3/modular_olmo3.py: Olmo3Attention subclasses Olmo2Attention)
    "olmo3": ArchTraits(qk_norm="full"),
    "gemma": ArchTraits(tie_default=True, gemma_norm=True), "gemma2": _GEMMA2,
    "gemma3": _GEMMA3, "gemma3_text": _GEMMA3,
    "gpt2": _GPT2, "gpt_neox": _NEOX, "gpt_bigcode": _BIGCODE,
    "falcon": ArchTraits(gated_mlp=False, norm="layernorm", tie_default=True,
                         parallel_residual=True, fused_qkv=True),
    # Llama 4 (modeling_llama4.py): RMSNorm, weightless L2 qk-norm, MoE with a shared expert
    "llama4_text": ArchTraits(),
    # DBRX (modeling_dbrx.py): LayerNorm without bias, fused Wqkv, 16 experts top-4; nested config
    "dbrx": ArchTraits(norm="layernorm", norm_bias=False, fused_qkv=True),
    # gpt-oss (modeling_gpt_oss.py@5.25.0): q/k/v/o biased unless attention_bias is false (L271-280), one sink a head
    # (L283, _attention), RMSNorm, MoE of gated experts with biases, sliding-window (128) / full layers (layer_types)
    "gpt_oss": ArchTraits(qkv_bias=True, out_bias=True),
    # MPT (llm-foundry modeling_mpt.py / blocks.py @34f47ade1): pre-LN blocks, fused Wqkv, GELU 4h MLP, tied
    # logits, biases unless no_bias (which drops the norms' too: config_fields.mpt_fields); ALiBi or learned positions
    "mpt": ArchTraits(gated_mlp=False, norm="layernorm", tie_default=True, fused_qkv=True),
}
# Hybrid state-space / recurrent families: their state memory and FLOPs are not modelled yet.
STATE_SPACE = ("mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "nemotron_h", "rwkv",
               "recurrent_gemma", "granitemoehybrid", "falcon_h1", "lfm2", "minimax")
# Config-class defaults that official config.json files rely on (fields they leave out).
# Gemma 3: transformers configuration_gemma3.py, Gemma3TextConfig.__init__ defaults.
_GEMMA3_DEFAULTS = {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6}
# GPT-2: configuration_gpt2.py, GPT2Config.__init__ (dropouts 0.1, activation gelu_new).
_GPT2_DEFAULTS = {"resid_pdrop": 0.1, "attn_pdrop": 0.1, "embd_pdrop": 0.1, "activation_function": "gelu_new"}
# GPTBigCode: configuration_gpt_bigcode.py@5.25.0 L59-77 (n_positions 1024, gelu_pytorch_tanh, dropouts 0.1,
# multi_query true); n_inner None is 4 x n_embd (modeling_gpt_bigcode.py L264), mlp_width's default.
_BIGCODE_DEFAULTS = {"n_positions": 1024, "activation_function": "gelu_pytorch_tanh", "resid_pdrop": 0.1,
                     "embd_pdrop": 0.1, "attn_pdrop": 0.1, "multi_query": True}
# OLMo 3 / GPT-OSS: their sliding window when config.json leaves it out (configuration_olmo3.py@5.25.0 L85: 4096;
# configuration_gpt_oss.py@5.25.0 L59: 128; hostile wave 22: a config with sliding layer_types and no window was read
# as windowless); their layer_types default is WINDOW_PATTERN's. Gemma 2: configuration_gemma2.py@5.25.0 L87, 4096
# (hostile wave 23: read as windowless).
CONFIG_DEFAULTS: dict[str, dict[str, Any]] = {"gemma3": _GEMMA3_DEFAULTS, "gemma3_text": _GEMMA3_DEFAULTS,
                                              "gpt2": _GPT2_DEFAULTS, "gpt_bigcode": _BIGCODE_DEFAULTS,
                                              "olmo3": {"sliding_window": 4096}, "gpt_oss": {"sliding_window": 128},
                                              "gemma2": {"sliding_window": 4096}}


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a config: VLM configs nest it under ``text_config`` (architectures.language_config:
    a text_config inside a decoder type gpuplan reads flat is refused)."""
    return language_config(config, TRAITS)


def _attention(cfg: dict[str, Any], t: ArchTraits, hidden: int) -> AttentionSpec:
    heads = int_field(cfg, "num_attention_heads", "n_head", "num_heads")
    bigcode = cfg.get("model_type") == "gpt_bigcode"
    if bigcode:  # modeling_gpt_bigcode.py@5.25.0 L125-127: head_dim = n_embd // n_head, one K/V head under multi_query
        if hidden % heads:  # L132-136 raise ValueError: n_embd must be divisible by n_head (no head_dim field)
            raise InputError("config.json: n_head", heads, f"must divide n_embd {hidden} (GPTBigCode's head width "
                             "is n_embd / n_head)")
        kv_heads = 1 if cfg["multi_query"] else heads
    elif cfg.get("model_type") == "falcon":
        if cfg.get("new_decoder_architecture"):
            kv_heads = int_field(cfg, "num_kv_heads", default=heads)
        else:
            kv_heads = 1 if cfg.get("multi_query", True) else heads
    else:
        kv_heads = int_field(cfg, "num_key_value_heads", "num_kv_heads", default=heads)
    if cfg.get("head_dim") is None and hidden % heads:
        raise InputError("config.json: num_attention_heads", heads,
                         f"must divide hidden_size {hidden} (or give head_dim)")
    if heads % kv_heads:
        raise InputError("config.json: num_key_value_heads", kv_heads,
                         f"must divide num_attention_heads {heads}")
    head_dim = hidden // heads if bigcode else int_field(cfg, "head_dim", default=hidden // heads)
    bias = cfg.get("attention_bias", cfg.get("bias"))
    mla = cfg.get("kv_lora_rank") is not None
    return AttentionSpec(
        num_heads=heads, num_kv_heads=heads if mla else kv_heads, head_dim=head_dim,
        qkv_bias=t.qkv_bias if bias is None else bool(bias),  # GPT-OSS / GPT-NeoX too (modeling_gpt_oss L271-280)
        out_bias=t.out_bias if bias is None else bool(bias),
        qk_norm=t.qk_norm, attention_sinks=cfg.get("model_type") == "gpt_oss",  # type: ignore[arg-type]
        q_lora_rank=int_field(cfg, "q_lora_rank") if mla and cfg.get("q_lora_rank") is not None else None,
        kv_lora_rank=int_field(cfg, "kv_lora_rank") if mla else None,
        qk_nope_head_dim=int_field(cfg, "qk_nope_head_dim") if mla else 0,
        qk_rope_head_dim=int_field(cfg, "qk_rope_head_dim") if mla else 0,
        v_head_dim=int_field(cfg, "v_head_dim") if mla else 0,
        rope_attention_factor=rope_attention_factor(cfg),
    )


MOE_MODEL_TYPES = ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "gpt_oss", "dbrx",
                   "llama4_text")
"""Architectures that are mixtures of experts by definition (their configs must name experts)."""


def _moe(cfg: dict[str, Any], num_layers: int) -> tuple[MoESpec | None, tuple[bool, ...]]:
    experts = first(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        if cfg.get("model_type") in MOE_MODEL_TYPES:
            key = next((k for k in ("num_local_experts", "num_experts", "n_routed_experts") if k in cfg),
                       READ_EXPERT_KEYS.get(cfg["model_type"], ("num_local_experts",))[0])  # the type's own key
            raise InputError(f"config.json: {key}", experts, f"a {cfg['model_type']} model routes to experts: "
                             "a positive integer")
        return None, ()
    experts = int_field(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    top_k = int_field(cfg, "num_experts_per_tok", "top_k", "moe_topk")
    if top_k > experts:
        raise InputError("config.json: num_experts_per_tok", top_k, f"must be <= the {experts} experts")
    check_expert_groups(cfg, experts, top_k)
    width = int_field(cfg, "moe_intermediate_size", "intermediate_size")
    shared = int_field(cfg, "n_shared_experts", required=False) * width
    shared = shared or int_field(cfg, "shared_expert_intermediate_size", required=False)
    moe = MoESpec(
        num_experts=experts, experts_per_token=top_k, expert_intermediate_size=width,
        shared_intermediate_size=shared,
        shared_expert_gate=bool(cfg.get("shared_expert_intermediate_size")),
        # one value per expert: DeepSeek-V3's e_score_correction_bias, GptOssTopKRouter.bias
        router_bias=cfg.get("topk_method") == "noaux_tc" or cfg.get("model_type") == "gpt_oss",
        # GptOssExperts.gate_up_proj_bias / down_proj_bias (transformers models/gpt_oss/modeling_gpt_oss.py)
        expert_bias=cfg.get("model_type") == "gpt_oss",
        activation_clamp=activation_clamp(cfg),
    )
    first_dense = int_field(cfg, "first_k_dense_replace", required=False, minimum=0)  # 0: every layer may be MoE
    every = int_field(cfg, "moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", default=1)
    dense_only = layer_indices(cfg, "mlp_only_layers", num_layers)
    if cfg.get("model_type") == "llama4_text":
        # Llama4TextConfig: moe_layers = range(step - 1, layers, step); each MoE block also has a
        # shared expert of the routed width (Llama4TextMoe.shared_expert = Llama4TextMLP(config)).
        moe = MoESpec(num_experts=experts, experts_per_token=top_k, expert_intermediate_size=width,
                      shared_intermediate_size=width)
        mask = tuple((i + 1) % every == 0 for i in range(num_layers))
    elif cfg.get("model_type") in ("qwen2_moe", "qwen3_moe"):  # no other class reads their keys (hostile w30)
        # Qwen-MoE: outside mlp_only_layers and (i + 1) % step == 0 (modeling_qwen2_moe.py@5.25.0 L358-359)
        mask = tuple(i not in dense_only and (i + 1) % every == 0 for i in range(num_layers))
    else:  # DeepSeek: i >= first_k_dense_replace and i % moe_layer_freq == 0; Mixtral, GPT-OSS, DBRX: every layer (their
        deepseek = cfg.get("model_type") in ("deepseek_v2", "deepseek_v3")  # classes read neither key; hostile w30)
        mask = tuple(not deepseek or (i >= first_dense and i % every == 0) for i in range(num_layers))
    if not any(mask):
        raise InputError("config.json: num_experts", experts, f"is set but no layer of {num_layers} would be MoE "
                         "(check first_k_dense_replace, decoder_sparse_step / moe_layer_freq, mlp_only_layers)")
    return moe, mask


def _layer_types(cfg: dict[str, Any], num_layers: int) -> tuple[int | None, tuple[str, ...]]:
    """Sliding-window size and per-layer 'full'/'sliding' (empty when no layer slides)."""
    types = cfg.get("layer_types")
    if types is not None:
        kinds = " or ".join(KNOWN_LAYER_TYPES)
        refusal = list_refusal("config.json: layer_types", types, lambda t: t in KNOWN_LAYER_TYPES,
                               f"must be a list of {num_layers} layer types ({kinds})",
                               f"must be {kinds} (one type per layer)")
        if refusal:
            raise refusal
        if len(types) != num_layers:
            raise InputError("config.json: layer_types", f"{len(types)} entries", f"must be a list of {num_layers} "
                             f"layer types (one per layer: {kinds})")
    window = sliding_window(cfg)
    if window is None:
        return None, ()
    # stated, else as the type's config class builds them; none sliding: no window either way (review R3 N2)
    kinds = tuple("sliding" if "sliding" in t else "full" for t in types) if types else \
        default_layer_types(cfg, num_layers)
    return (window, kinds) if "sliding" in kinds else (None, ())


def model_spec_from_hf_config(config: dict[str, Any], name: str = "custom", source: str = "",
                              model_type: str | None = None, *, checkpoint_format: bool = True) -> ModelSpec:
    """Build a ModelSpec from a parsed HF config.json (VLM configs: the ``text_config``).
    ``model_type`` overrides the config's own (e.g. 'llama' to read an unsupported type
    Llama-style); ``checkpoint_format`` False skips the quantization_config check (``infer
    --quantization`` replaces the checkpoint's format). A malformed config raises InputError naming
    the field, never another error."""
    try:
        return _model_spec(config, name, source, model_type, checkpoint_format)
    except InputError as exc:
        raise _named_for(exc, source) from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError, RecursionError) as exc:
        raise InputError("config.json", name, f"could not be read as a Hugging Face config ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None


def _named_for(exc: InputError, source: str) -> InputError:
    """A refusal naming 'config.json: <field>' retold to name the file the user gave when that file is called
    something else (wave 14: `gpuplan train p.json` with no model_type was told "config.json: model_type", a file
    it never named). A Hub source ('huggingface.co/...') or a file called config.json keeps the name; the web
    door's temporary file is renamed config.json again by web.service._without_path."""
    if not source or not exc.field.startswith("config.json") or source.startswith("huggingface.co/"):
        return exc
    try:
        given = Path(source)
        is_other_file = given.is_file() and given.name.lower() != "config.json"
    except (OSError, ValueError):
        return exc
    if not is_other_file:
        return exc
    return exc.retold(printable(source) + exc.field[len("config.json"):], exc.value, exc.expected)


def supported_model_types() -> tuple[str, ...]:
    return tuple(sorted(TRAITS))


def _model_type(cfg: dict[str, Any], override: str | None) -> tuple[str, list[str]]:
    given = str(cfg.get("model_type") or "")
    if override:
        chosen = override.strip().lower()
        if chosen not in TRAITS:
            raise InputError("model_type", override, f"must be one of {', '.join(supported_model_types())}")
        return chosen, ([f"model_type {given or '(none)'!r} read as {chosen!r} (--model-type)"]
                        if chosen != given else [])
    if given in TRAITS:
        return given, []
    if given in STATE_SPACE or "mamba" in given:
        raise InputError("config.json: model_type", given, "hybrid state-space / recurrent models (Mamba, Jamba, "
                         "...) are not modelled yet: their state memory and FLOPs differ from attention layers")
    fields = [key for key in ("model", "gpu", "gpus", "tokens", "days", "params") if key in cfg]
    if not given and fields:  # `gpuplan train plan.json` read a plan's fields as a model config (wave 9)
        raise InputError("config.json: model_type", None, f"this JSON holds gpuplan's fields ({', '.join(fields)}), "
                         "not a Hugging Face config: a plan file is YAML or TOML (.yaml, .yml, .toml)")
    raise InputError("config.json: model_type", given or None, f"{'is not supported; ' if given else ''}supported: "
                     f"{', '.join(supported_model_types())}; --model-type llama reads it as Llama-style "
                     "(gated MLP, RMSNorm, no biases)")


def _dbrx_flat(cfg: dict[str, Any]) -> dict[str, Any]:
    """DBRX nests attention and FFN settings (configuration_dbrx.py: attn_config, ffn_config; kv_n_heads 1 if none)."""
    attn, ffn = nested_settings(cfg, "DBRX")
    flat = dict(cfg)
    flat.update({"num_hidden_layers": cfg.get("n_layers"), "num_attention_heads": cfg.get("n_heads"),
                 "num_key_value_heads": attn.get("kv_n_heads", 1), "intermediate_size": ffn.get("ffn_hidden_size"),
                 "num_local_experts": ffn.get("moe_num_experts"), "num_experts_per_tok": ffn.get("moe_top_k"),
                 "max_position_embeddings": cfg.get("max_seq_len")})
    return flat


def _model_spec(config: dict[str, Any], name: str, source: str, override: str | None,
                checkpoint_format: bool = True) -> ModelSpec:
    cfg = text_config(config)
    model_type, notes = _model_type(cfg, override)
    notes += check_architecture(config, cfg, model_type, overridden=bool(override))
    left_out = check_class_shapes(cfg, model_type)  # nulls; the class defaults of what cfg leaves out
    notes += [note for _, note in left_out.values()]
    if model_type in WINDOW_FLAG_TYPES and cfg.get("use_sliding_window") is True and "sliding_window" not in cfg:
        # left out (not null): the Qwen classes' 4,096 (configuration_qwen2.py@5.25.0 L74; qwen3 L77, *_moe L89 / L92)
        cfg = {**cfg, "sliding_window": 4096}
    cfg = {**class_defaults(cfg, CONFIG_DEFAULTS.get(model_type, {})),
           **read_keys(cfg, model_type, left_out, bool(override)), "model_type": model_type}  # nulls, unread keys
    if model_type == "dbrx":
        cfg = _dbrx_flat(cfg)
    if model_type == "gpt_bigcode" and cfg.get("add_cross_attention"):  # L151-152: no multi-query cross-attention
        raise InputError("config.json: add_cross_attention", cfg["add_cross_attention"], "GPTBigCode blocks with "
                         "cross-attention (an encoder-decoder use) are not modelled: give false or leave it out")
    traits = TRAITS[model_type]
    if model_type == "mpt":
        cfg = mpt_fields(cfg)
        traits = replace(traits, norm=cfg["mpt_norm"], norm_bias=cfg["bias"])
    check_rope(cfg)  # rope_scaling, or transformers 5's rope_parameters (adapters.rope_fields)
    if checkpoint_format:
        check_quantization_config(config.get("quantization_config"))  # the checkpoint's own, as infer reads it
    check_flags(cfg)
    check_routing(cfg)
    hidden = int_field(cfg, "hidden_size", "n_embd", "d_model")
    layers = int_field(cfg, "num_hidden_layers", "n_layer", "num_layers")
    vocab = int_field(cfg, "vocab_size", minimum=2)  # one token: nothing to predict
    attention = _attention(cfg, traits, hidden)
    check_even_rotary(cfg, model_type, attention.head_dim)
    intermediate = mlp_width(cfg, model_type, hidden)  # the type's own key (review R3 S1)
    mlp_bias = cfg.get("mlp_bias", cfg.get("bias"))
    mlp = MLPSpec(intermediate_size=intermediate, gated=traits.gated_mlp,
                  bias=traits.mlp_bias if mlp_bias is None else bool(mlp_bias),
                  activation=config_activation(cfg))
    moe, moe_mask = _moe(cfg, layers)
    norms_per_layer = traits.norms_per_layer
    if model_type == "falcon" and not cfg.get("new_decoder_architecture"):
        norms_per_layer = 1 if cfg.get("parallel_attn", True) else 2
    elif cfg.get("parallel_attn") is True and cfg.get("use_parallel_residual") is True:
        norms_per_layer = 1  # Falcon's key on a parallel block of another reader: one norm feeds both branches (PaLM)
    window, layer_types = _layer_types(cfg, layers)
    tie = cfg.get("tie_word_embeddings")
    return ModelSpec(
        name=name, hidden_size=hidden, num_layers=layers, vocab_size=vocab,
        attention=attention, mlp=mlp, moe=moe, moe_layers=moe_mask,
        tie_embeddings=traits.tie_default if tie is None else bool(tie),
        learned_positions=_learned_positions(cfg, model_type),
        max_position_embeddings=int_field(cfg, "max_position_embeddings", "n_positions",  # >= 2: a prompt token
                                           "seq_length", default=2048, minimum=2),  # and one generated (H1 w21)
        norm=traits.norm, norm_bias=traits.norm_bias,  # type: ignore[arg-type]
        norms_per_layer=norms_per_layer,
        parallel_residual=traits.parallel_residual or bool(cfg.get("use_parallel_residual")),
        sliding_window=window, layer_types=layer_types,
        dtype=str(first(cfg, "dtype", "torch_dtype") or "bfloat16").replace("auto", "bfloat16"),  # dtype first, as HF
        # eager softmax in the scores' dtype: GPT-2; GPT-OSS (modeling_gpt_oss.py@5.25.0 L248, dtype=combined_logits.dtype)
        # MPT's torch attention: torch.softmax on the bf16 scores (llm-foundry layers/attention.py @34f47ade1 L91)
        # GPTBigCode's eager softmax is fp32 (modeling_gpt_bigcode.py@5.25.0 L107, dtype=torch.float32)
        dropout=config_dropout(cfg), eager_softmax_fp32=model_type not in ("gpt2", "gpt_oss", "mpt"),
        fused_qkv=traits.fused_qkv, fused_gate_up=traits.fused_gate_up,
        rotary=cfg.get("mpt_rope", True) if model_type == "mpt" else model_type not in ("gpt2", "gpt_bigcode"),
        gemma_norm=traits.gemma_norm, attn_logit_softcap=cfg.get("attn_logit_softcapping"),
        final_logit_softcap=cfg.get("final_logit_softcapping"),
        # multi-token-prediction modules (DeepSeek-V3 num_nextn_predict_layers): 0 when absent
        mtp_layers=int_field(cfg, "num_nextn_predict_layers", required=False, default=0, minimum=0),
        model_type=model_type, source=source, notes=tuple(notes),
    )


def _learned_positions(cfg: dict[str, Any], model_type: str) -> int:
    """Rows of a learned position table: GPT-2's and GPTBigCode's n_positions (wpe, modeling_gpt_bigcode.py@5.25.0
    L374); MPT's wpe (none under ALiBi: mpt_fields)."""
    if model_type == "mpt":
        return int(cfg["mpt_learned_positions"])
    return int_field(cfg, "n_positions") if model_type in ("gpt2", "gpt_bigcode") else 0


def load_hf_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json, or the config.json inside a folder. Bad files raise InputError."""
    from gpuplan.adapters.files import MAX_BYTES, parse_json, read_text

    p = Path(path)
    try:
        if p.is_dir():
            p = p / "config.json"
            if not p.exists() and not p.is_symlink():  # was 'config: got 'config.json'; no such file'
                raise InputError("model", str(path), "is a folder without a config.json; give a catalog name, "
                                 "a config.json or a folder holding one")
    except OSError:  # a name too long for the file system
        raise InputError("model", str(path), "no such file; give a catalog name, a config.json "
                         "or a folder holding one") from None
    try:  # the field is --model; a bad number's key named with the file as the reader's others are (wave 23)
        data = parse_json(read_text(p, "model", MAX_BYTES["config"]), "config.json", p)
    except InputError as exc:
        raise (_named_for(exc, str(p)) if exc.field.startswith("config.json: ") else exc) from None
    if not isinstance(data, dict):
        raise InputError("config.json", str(p), "expected a JSON object at the top level")
    return data
