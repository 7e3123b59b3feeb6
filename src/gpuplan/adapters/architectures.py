"""What a config.json's ``architectures`` and ``is_encoder_decoder`` say about the model, checked
against what gpuplan models: decoder-only transformer language models. A config whose
``model_type`` says llama but whose ``architectures`` names T5, BERT or Mamba is refused naming
``architectures`` instead of being read as a Llama (issue 40); a multimodal config is read for its
language model, and the answer says that its vision or audio tower is left out.

A class name's family is the name without its head (``T5ForConditionalGeneration`` -> t5,
``GPT2LMHeadModel`` -> gpt2), compared with model types with underscores removed
(``GPTNeoXForCausalLM`` -> gptneox = gpt_neox). The families below are transformers' own model
folders (``src/transformers/models/<family>``).
"""

from __future__ import annotations

import re
from typing import Any

from gpuplan.errors import InputError

NOT_DECODER_ONLY = {
    "an encoder-decoder model": ("t5", "mt5", "umt5", "bart", "mbart", "pegasus", "pegasusx", "marian", "whisper",
                                 "fsmt", "prophetnet", "led", "blenderbot", "blenderbotsmall", "m2m100", "nllbmoe",
                                 "seamlessm4t", "seamlessm4tv2", "switchtransformers", "encoderdecoder", "speecht5",
                                 "longt5", "mvp", "plbart", "bigbirdpegasus", "xlmprophetnet", "t5gemma"),
    "an encoder-only model": ("bert", "roberta", "electra", "distilbert", "deberta", "debertav2", "albert",
                              "xlmroberta", "xlmrobertaxl", "modernbert", "camembert", "mpnet", "ernie", "megatronbert",
                              "bigbird", "convbert", "funnel", "layoutlm", "longformer", "nomicbert", "jinabert"),
    "a state-space / recurrent model": ("mamba", "mamba2", "falconmamba", "jamba", "rwkv", "zamba", "zamba2",
                                        "bamba", "nemotronh", "recurrentgemma", "falconh1", "granitemoehybrid",
                                        "lfm2", "xlstm"),
}
TASK_HEADS = {"ForSequenceClassification": "a sequence-classification head", "ForTokenClassification":
              "a token-classification head", "ForQuestionAnswering": "a question-answering head",
              "ForMultipleChoice": "a multiple-choice head", "ForMaskedLM": "a masked-LM head"}
"""transformers' task heads (modeling_auto.py's MODEL_FOR_*_MAPPING_NAMES classes, e.g. LlamaForSequenceClassification:
a `score` Linear of num_labels outputs on the last token where LlamaForCausalLM has its vocab-sized lm_head and a loss
over every token). gpuplan estimates the causal-LM model (measure and profile build AutoModelForCausalLM), so such a
config was answered for a model other than its own (hostile w30)."""
LM_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
TOWERS = ("vision_config", "audio_config")
_HEAD = re.compile(r"(For[A-Z]\w*|LMHeadModel|Model)$")


def family(class_name: str) -> str:
    """``LlamaForCausalLM`` -> llama, ``Qwen3MoeForCausalLM`` -> qwen3moe."""
    return _HEAD.sub("", class_name).replace("_", "").lower()


NESTING_TYPES = ("gemma3",)
"""Supported model types whose config wraps the language model in ``text_config`` (Gemma3ForConditionalGeneration:
a gemma3_text config inside); every other supported type's modeling file reads its own top-level fields."""


def language_config(config: dict[str, Any], text_types: Any) -> dict[str, Any]:
    """The language-model part of a config: VLM configs nest it under ``text_config`` (merged over the top level).
    A text_config inside a decoder type of ``text_types`` (a Llama, Mistral, Qwen2 ...) is refused: its modeling file
    builds the model from the top-level fields (LlamaForCausalLM reads config.hidden_size) and transformers keeps the
    nested mapping as an unread attribute, so the two descriptions contradict (hostile w25: the nested one was read,
    a model of another size than the one transformers builds)."""
    if not isinstance(config, dict):
        raise InputError("config.json", config, "expected a JSON object ({...}) at the top level")
    inner = config.get("text_config")
    if inner is not None and not isinstance(inner, dict):
        raise InputError("config.json: text_config", inner, "expected a mapping (a VLM's language model), or null")
    if not (isinstance(inner, dict) and inner):
        return config
    outer = config.get("model_type")
    if isinstance(outer, str) and outer in text_types and outer not in NESTING_TYPES:
        raise InputError("config.json: text_config", f"a mapping of {len(inner)} keys", f"a {outer} config's "
                         "modeling file reads its top-level fields, not a nested text_config (a multimodal model's): "
                         "remove text_config, or give the multimodal model's own model_type (e.g. llava)")
    merged = {k: v for k, v in config.items() if k not in ("text_config", "vision_config")}
    if outer == "gemma3":  # the nested text config is a gemma3_text one
        merged["model_type"] = "gemma3_text"
    merged.update(inner)
    return merged


def _kind(name: str) -> str | None:
    found = family(name)
    return next((kind for kind, names in NOT_DECODER_ONLY.items() if found in names), None)


def check_architecture(config: dict[str, Any], text: dict[str, Any], model_type: str, overridden: bool) -> list[str]:
    """InputError when the config describes a model that is not decoder-only, or an architecture
    other than its model_type (unless --model-type chose how to read it); the notes to show."""
    for where in (config, text):
        if where.get("is_encoder_decoder") is True:
            raise InputError("config.json: is_encoder_decoder", True, "an encoder-decoder model (T5, BART, Whisper "
                             "...); gpuplan models decoder-only language models")
    listed = text.get("architectures") or config.get("architectures") or []
    if not isinstance(listed, list):  # "LlamaForCausalLM" as text was read letter by letter ('L', wave 6c)
        raise InputError("config.json: architectures", listed, 'must be a list of class names, e.g. ["LlamaForCausalLM"]')
    names = [n for n in listed if isinstance(n, str)]
    for name in names:
        kind = _kind(name)
        if kind is not None:
            raise InputError("config.json: architectures", name, f"is {kind}; gpuplan models decoder-only "
                             "transformer language models (model_type does not change that)")
    tasks = [n for n in names if n.endswith(tuple(TASK_HEADS))]
    if tasks and not any(n.endswith(LM_HEADS) for n in names):
        suffix = next(h for h in TASK_HEADS if tasks[0].endswith(h))
        raise InputError("config.json: architectures", tasks[0], f"is {TASK_HEADS[suffix]}; gpuplan models language "
                         f"models with their LM head: give a causal-LM config (e.g. "
                         f"[\"{tasks[0].removesuffix(suffix)}ForCausalLM\"])")
    types = {str(t).replace("_", "").lower().removesuffix("text") for t in (config.get("model_type"),
                                                                              text.get("model_type"), model_type) if t}
    strangers = [n for n in names if family(n) not in types]
    if strangers and not overridden:
        raise InputError("config.json: architectures", strangers[0], f"does not match model_type "
                         f"{config.get('model_type')!r}; a config is read by its model type, so give --model-type to "
                         "read it as one (e.g. --model-type llama for a Llama-style decoder)")
    notes = [f"architectures {', '.join(strangers)} read as {model_type!r} (--model-type)"] if strangers else []
    towers = [key for key in TOWERS if isinstance(config.get(key), dict) and config[key]]
    if towers:
        left_out = " and ".join(key.removesuffix("_config") for key in towers)
        notes.append(f"{left_out} tower left out: only the language model (text_config) is estimated; the "
                     f"{left_out} encoder's weights, activations and FLOPs are not counted")
    return notes
