"""Hostile values in a model's config.json (adapters/hf_config.py): each is refused with the field
named, never read as a default or a nonsense shape. Catalog configs (real checkpoints) still parse."""

import json
from pathlib import Path

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.errors import InputError

MODELS = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "catalog" / "models"


def _config(name: str) -> dict:
    return json.loads((MODELS / f"{name}.json").read_text())["config"]


CASES = [
    ("llama-3.1-8b", {"rope_scaling": [1, 2]}, "rope_scaling"),
    ("llama-3.1-8b", {"rope_scaling": "yarn"}, "rope_scaling"),
    ("llama-3.1-8b", {"rope_scaling": True}, "rope_scaling"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": "linear", "factor": "abc"}}, "rope_scaling.factor"),
    ("llama-3.1-8b", {"rope_scaling": {"type": "dynamic", "factor": 0}}, "rope_scaling.factor"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": "linear", "factor": -1}}, "rope_scaling.factor"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": "yarn", "factor": 1e30}}, "rope_scaling.factor"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": 5, "factor": 2.0}}, "rope_scaling.rope_type"),
    ("deepseek-v3", {"q_lora_rank": "abc"}, "q_lora_rank"),
    ("deepseek-v3", {"q_lora_rank": [1]}, "q_lora_rank"),
    ("deepseek-v3", {"q_lora_rank": 1.5}, "q_lora_rank"),
    ("deepseek-v3", {"q_lora_rank": 0}, "q_lora_rank"),
    ("deepseek-v3", {"q_lora_rank": -1}, "q_lora_rank"),
    ("deepseek-v3", {"q_lora_rank": 1e30}, "q_lora_rank"),
    ("llama-3.1-8b", {"torch_dtype": "abc"}, "torch_dtype"),
    ("llama-3.1-8b", {"torch_dtype": 5}, "torch_dtype"),
    ("llama-3.1-8b", {"torch_dtype": "int8"}, "torch_dtype"),
    ("llama-3.1-8b", {"rms_norm_eps": -1}, "rms_norm_eps"),
    ("llama-3.1-8b", {"rms_norm_eps": "abc"}, "rms_norm_eps"),
    ("llama-3.1-8b", {"tie_word_embeddings": "abc"}, "tie_word_embeddings"),
    ("llama-3.1-8b", {"attention_bias": "abc"}, "attention_bias"),
    ("deepseek-v3", {"first_k_dense_replace": 1000}, "num_experts"),
    ("qwen3-30b-a3b", {"decoder_sparse_step": 1000}, "num_experts"),
    ("qwen3-30b-a3b", {"mlp_only_layers": "abc"}, "mlp_only_layers"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [1000, -1]}, "mlp_only_layers"),
    ("qwen3-30b-a3b", {"mlp_only_layers": ["x"]}, "mlp_only_layers"),
    ("gpt-oss-120b", {"layer_types": ["banana"] * 36}, "layer_types"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0,
                                       "high_freq_factor": 4.0}}, "rope_scaling.high_freq_factor"),
    ("llama-3.1-8b", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                       "high_freq_factor": 2.0}}, "rope_scaling.high_freq_factor"),
    ("llama-3.1-8b", {"architectures": ["LlamaForCausalLM", 1e-3]}, "architectures"),
    ("deepseek-v3", {"routed_scaling_factor": "abc"}, "routed_scaling_factor"),
    ("deepseek-v3", {"topk_method": 5}, "topk_method"),
    ("deepseek-v3", {"scoring_func": []}, "scoring_func"),
    ("deepseek-v3", {"n_group": 0}, "n_group"),
    ("deepseek-v3", {"topk_group": 100}, "topk_group"),
]


@pytest.mark.parametrize(("model", "change", "field"), CASES, ids=[f"{m}-{f}-{i}" for i, (m, _, f) in enumerate(CASES)])
def test_refused_with_the_field_named(model, change, field):
    with pytest.raises(InputError) as err:
        model_spec_from_hf_config({**_config(model), **change})
    assert err.value.field == f"config.json: {field}"


def test_real_values_still_parse():
    llama = _config("llama-3.1-8b")
    for ok in ({"rope_scaling": None}, {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0}},
               {"torch_dtype": "auto"}, {"torch_dtype": "float16"}, {"tie_word_embeddings": True}):
        model_spec_from_hf_config({**llama, **ok})
    lite = {**_config("deepseek-v3"), "q_lora_rank": None}  # DeepSeek-V2-Lite: q projected directly
    assert model_spec_from_hf_config(lite).attention.q_lora_rank is None
    assert model_spec_from_hf_config(_config("deepseek-v3")).attention.q_lora_rank == 1536
    qwen = model_spec_from_hf_config({**_config("qwen3-30b-a3b"), "mlp_only_layers": [0, 47]})
    assert qwen.moe_layers[0] is False and qwen.moe_layers[1] is True and qwen.moe_layers[47] is False


def test_infer_refuses_a_list_rope_scaling_with_a_long_context(run_cli, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**_config("llama-3.1-8b"), "rope_scaling": [1, 2]}))
    code, _, err = run_cli("infer", "--model", str(cfg), "--gpu", "h100", "--no-search", "--context", "256K")
    assert code == 2 and err.startswith("error: config.json: rope_scaling") and err.count("\n") == 1
