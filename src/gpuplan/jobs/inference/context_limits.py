"""The longest context a serving request may ask of a model: refused past a learned position table (every engine)
and past vLLM's derived max_model_len (vLLM), else a note when it passes the trained positions.

vLLM derives the model's maximum length from config.json and raises ValueError for a longer --max-model-len
(vllm/config/model.py _get_and_verify_max_len; vllm/config.py@v0.5.3.post1..v0.10): the smallest of the length
keys VLLM_LENGTH_KEYS, or model_max_length where the config states it; times rope_scaling's factor unless its
type is llama3 / longrope / su (already counted in max_position_embeddings) or the model is Gemma 3 (likewise),
from original_max_position_embeddings for YaRN. From 0.5.4 (PR #7080, read in the 0.5.4 wheel's vllm/envs.py) the
env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 turns the error into a warning (positions past it give NaN under RoPE or
an out-of-bounds error under a learned table, vLLM's own warning); before 0.5.4 nothing overrides it.
SGLang and TensorRT-LLM keep the note (context_notes). Units: tokens."""

from __future__ import annotations

import math
from typing import Any

from gpuplan.core.model.spec import ModelSpec
from gpuplan.errors import InputError

VLLM_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
"""_get_and_verify_max_len's possible_keys, in its order (the smallest stated one wins)."""
VLLM_UNSCALED_ROPE = ("su", "longrope", "llama3")
"""rope types whose factor vLLM does not apply again (max_position_embeddings already counts it)."""
VLLM_LONG_LEN_OVERRIDE_SINCE = (0, 5, 4)
"""The first vLLM release with VLLM_ALLOW_LONG_MAX_MODEL_LEN (absent from 0.5.3.post1's vllm/envs.py)."""
VLLM_HF_OVERRIDES_SINCE = (0, 6, 4)
"""The first vLLM release whose engine takes --hf-overrides (a JSON dict laid over config.json): vllm/engine/
arg_utils.py@v0.6.4 L130 (EngineArgs.hf_overrides) and L514 (parser.add_argument('--hf-overrides')), from PR #5836
'[Frontend][Core] Override HF config.json via CLI'; absent from 0.6.3.post1's arg_utils.py (both read in the
PyPI sdists, s24)."""
VLLM_ROPE_SCALING_ARG_SINCE = (0, 4, 3)
"""The first vLLM release with --rope-scaling (a JSON dict for the config's rope_scaling): arg_utils.py@v0.4.3
L339; absent from 0.4.2's (PyPI sdists, s24). Still in 0.6.4 (L503), so before VLLM_HF_OVERRIDES_SINCE it is the
command-line way to scale RoPE."""


def _length(value: Any) -> float | None:
    """A stated length: a positive finite number (a bool, text or null is no length: vLLM's getattr finds the
    attribute, but gpuplan's reader refuses a malformed max_position_embeddings before this)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def _rope_entries(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """rope_scaling (or transformers 5's rope_parameters) as a list of entries: one, or one a layer type."""
    rope = raw.get("rope_scaling") or raw.get("rope_parameters")
    if not isinstance(rope, dict) or not rope:
        return []
    if all(isinstance(v, dict) for v in rope.values()):  # nested by layer type (vLLM's dict[str, TypedDict])
        return list(rope.values())
    return [rope]


def vllm_max_model_len(raw: dict[str, Any]) -> tuple[int, str] | None:
    """(vLLM's derived max_model_len, the key it came from) for a config.json's fields. Where the config states no
    length key vLLM reads the built config object's, its class default (adapters.class_shapes.CLASS_DEFAULTS:
    FalconConfig 2,048, Qwen2Config 32,768); None for a type whose class gpuplan does not list."""
    from gpuplan.adapters.class_shapes import class_positions

    stated = [(key, length) for key in VLLM_LENGTH_KEYS if (length := _length(raw.get(key))) is not None]
    if stated:
        key, derived = min(stated, key=lambda pair: pair[1])  # the first smallest, as vLLM's strict '<'
    elif (built := class_positions(raw, str(raw.get("model_type", "")))) is not None:
        derived, key = float(built[0]), f"{built[1]}'s default max_position_embeddings: config.json states none"
    else:
        return None
    if (model_max := _length(raw.get("model_max_length"))) is not None:  # Command-R / Cohere: it wins
        key, derived = "model_max_length", model_max
    if "gemma3" not in str(raw.get("model_type", "")):
        factor = 1.0
        for entry in _rope_entries(raw):
            kind = entry.get("rope_type") or entry.get("type")
            if kind in VLLM_UNSCALED_ROPE:
                continue
            factor = _length(entry.get("factor")) or factor
            if kind == "yarn" and (original := _length(entry.get("original_max_position_embeddings"))):
                derived, key = original, "rope_scaling original_max_position_embeddings"
        if factor != 1.0:
            derived, key = derived * factor, f"{key} x rope_scaling factor {factor:g}"
    return int(derived), key


DEFAULT_CONTEXT = 4096
"""infer's context where neither --context nor --prompt is given (tokens), capped by the model's limits."""


def default_context(spec: ModelSpec, derived: tuple[int, str] | None) -> tuple[int, str]:
    """(infer's default context, tokens; a note where vLLM's max_model_len set it, else ''): min(4096, the model's
    positions) and, under vLLM, min with the max_model_len it derives (``derived``: vllm_max_model_len's answer,
    None under another engine; a model_max_length, seq_length or rope factor < 1 below the positions: hostile w25
    mend, R2: the default 4,096 was refused 'context: got 4096'). The assumption line (jobs.inference.assumptions)
    says the rule."""
    context = min(DEFAULT_CONTEXT, spec.max_position_embeddings)
    if derived is None or not 2 <= derived[0] < context:  # below 2 no context runs: check_vllm_context refuses
        return context, ""
    return derived[0], (f"context {derived[0]:,} (the default, --context not given): vLLM's max_model_len for "
                        f"{spec.name}, from {derived[1]}, below min({DEFAULT_CONTEXT:,}, its "
                        f"{spec.max_position_embeddings:,} positions)")


def check_vllm_context(raw: dict[str, Any], derived: tuple[int, str] | None, spec: ModelSpec, context: int,
                       prompt: int | None, output: int, version: tuple[int, ...]) -> None:
    """Refuse a context (prompt + output, tokens) above vLLM's derived max_model_len (``derived``:
    vllm_max_model_len(raw), worked out once an answer by its caller), as vLLM's start-up does."""
    if derived is None or context <= derived[0]:
        return
    limit, key = derived
    override = ("unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which runs positions never trained" if
                version >= VLLM_LONG_LEN_OVERRIDE_SINCE else "(no override before vLLM 0.5.4)")
    if spec.rotary and not _rope_entries(raw):  # vLLM scales its limit by a configured factor (the old note)
        override += (f"; or configure RoPE scaling (e.g. YaRN factor {math.ceil(context / limit)} via "
                     f"{rope_scaling_ways(version)})")
    rule = (f"vLLM refuses a max_model_len above {spec.name}'s {limit:,} ({key}) {override}; "
            "--engine sglang or trtllm answers it with a note")
    if prompt is not None:
        raise InputError("prompt", prompt, f"--prompt {prompt:,} + --output-tokens {output:,} = {context:,} tokens; "
                         f"at most {limit:,} in all: {rule}")
    raise InputError("context", context, f"must be at most {limit:,}: {rule}")


def rope_scaling_ways(version: tuple[int, ...] | None) -> str:
    """Where a vLLM ``version`` takes a rope_scaling (None: any release, the option's first one named): config.json
    always, --hf-overrides from VLLM_HF_OVERRIDES_SINCE, --rope-scaling from VLLM_ROPE_SCALING_ARG_SINCE before it."""
    if version is None:
        return "rope_scaling in config.json or vLLM's --hf-overrides (from 0.6.4)"
    if version >= VLLM_HF_OVERRIDES_SINCE:
        return "rope_scaling in config.json or --hf-overrides"
    if version >= VLLM_ROPE_SCALING_ARG_SINCE:
        return "rope_scaling in config.json or --rope-scaling (no --hf-overrides before vLLM 0.6.4)"
    return "rope_scaling in config.json (no --rope-scaling before vLLM 0.4.3)"


def check_learned_context(spec: ModelSpec, context: int, prompt: int | None, output: int) -> None:
    """Refuse a context (tokens, prompt + output) past a learned absolute position table (GPT-2's n_positions,
    `wpe`): its nn.Embedding has no row beyond it, so no engine runs it. vLLM derives max_model_len from
    n_positions / max_position_embeddings and raises ValueError for a longer one unless VLLM_ALLOW_LONG_MAX_MODEL_LEN
    is set (vllm/config.py@v0.8.5:2977-3109, _get_and_verify_max_len: keys at L2987-2991, the ValueError at
    L3081-3109), as train / plan / memory refuse a --seq-len past it (schema.model_fields.check_positions). RoPE
    and ALiBi models keep their note (context_notes) outside vLLM: they run longer sequences, with a quality cost.
    Wave 9: `infer gpt2 --context 4096` answered 'shown as if it ran'."""
    limit = spec.learned_positions
    if not limit or context <= limit:
        return
    table = (f"past {spec.name}'s {limit:,} learned positions (n_positions: a table with no row beyond it; vLLM "
             f"refuses a longer max_model_len)")
    if prompt is not None:
        raise InputError("prompt", prompt, f"--prompt {prompt:,} + --output-tokens {output:,} = {context:,} tokens is "
                         f"{table}; at most {limit:,} in all")
    raise InputError("context", context, f"is {table}; at most {limit:,}")


def context_notes(spec: ModelSpec, raw: dict[str, Any], context: int) -> list[str]:
    """Warn when the context exceeds the model's maximum, and say what RoPE scaling would change."""
    limit = spec.max_position_embeddings
    if context <= limit:
        return []
    head = f"context {context:,} exceeds the model's maximum of {limit:,} positions"
    if not spec.rotary:  # a learned table is refused (check_learned_context): ALiBi (MPT), a bias with no table
        return [f"{head}: positions beyond it were never trained (a linear bias, no table to run out of): expect "
                "quality loss; vLLM refuses max_model_len above it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; memory "
                "and speed are shown as if it ran"]
    entries = _rope_entries(raw)  # rope_scaling or transformers 5's rope_parameters, as the vLLM check reads them
    if entries:
        rope = entries[0]
        kind = rope.get("rope_type") or rope.get("type")
        return [f"{head}, already extended by {kind} rope_scaling (factor {rope.get('factor')}); positions "
                "beyond it were never trained: expect quality loss; memory and speed are shown as if it ran"]
    factor = math.ceil(context / limit)
    return [f"{head}: vLLM refuses max_model_len above it unless RoPE scaling is configured (e.g. YaRN "
            f"factor {factor} via {rope_scaling_ways(None)}); scaling changes no memory or "
            "FLOPs formula here (KV grows linearly, attention FLOPs with the context) but may cost quality"]
