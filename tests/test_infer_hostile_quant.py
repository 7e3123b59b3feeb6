"""`gpuplan infer` on a checkpoint whose quantization_config is hostile: every bad field is one line
naming it (exit 2), never an internal error, never read as a default; good configs still work."""

from __future__ import annotations

import json

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.inference.quant_config import weight_format_from_hf


def _ct(weights, **scheme):
    return {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": weights, **scheme}}}


# (quantization_config, the field the error must name)
HOSTILE = [
    # 1. crashed with "internal error"
    ({"quant_method": "gptq", "bits": "abc"}, "quantization_config.bits"),
    ({"quant_method": "gptq", "bits": [4]}, "quantization_config.bits"),
    ({"quant_method": "gptq", "group_size": "abc"}, "quantization_config.group_size"),
    ({"quant_method": "gptq", "group_size": [128]}, "quantization_config.group_size"),
    ({"quant_method": "awq", "q_group_size": "abc"}, "quantization_config.q_group_size"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": "abc"}}, "quantization_config.config_groups.g"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": 5}}, "quantization_config.config_groups.g"),
    (_ct("abc"), "quantization_config.config_groups.g.weights"),
    (_ct(5), "quantization_config.config_groups.g.weights"),
    (_ct({"num_bits": "abc"}), "weights.num_bits"),
    (_ct({"num_bits": None}), "weights.num_bits"),
    (_ct({"num_bits": 4, "strategy": "group", "group_size": "abc"}), "weights.group_size"),
    (_ct({"num_bits": 4, "strategy": "group", "group_size": [128]}), "weights.group_size"),
    ({"quant_method": "modelopt", "quantization": "abc"}, "quantization_config.quantization"),
    ({"quant_method": "modelopt", "quantization": 5}, "quantization_config.quantization"),
    ({"quant_method": "modelopt", "quantization": [1]}, "quantization_config.quantization"),
    # 2. silently read as defaults or nonsense
    ({"quant_method": "gptq", "bits": 0}, "quantization_config.bits"),
    ({"quant_method": "gptq", "bits": None}, "quantization_config.bits"),
    ({"quant_method": "awq", "bits": 0}, "quantization_config.bits"),
    ({"quant_method": "awq", "w_bit": 8}, "quantization_config.w_bit"),  # vLLM: AWQ is 4-bit only
    ({"quant_method": "gptq", "bits": 4.7}, "quantization_config.bits"),
    ({"quant_method": "gptq", "bits": True}, "quantization_config.bits"),
    ({"quant_method": "gptq", "group_size": 0}, "quantization_config.group_size"),
    ({"quant_method": "awq", "q_group_size": 0}, "quantization_config.q_group_size"),
    ({"quant_method": "gptq", "group_size": 3.5}, "quantization_config.group_size"),
    ({"quant_method": "gptq", "group_size": -5}, "quantization_config.group_size"),
    ({"quant_method": "gptq", "group_size": 1e300}, "quantization_config.group_size"),
    ({"quant_method": "gptq", "group_size": 2**70}, "quantization_config.group_size"),
    ({"quant_method": "gptq", "group_size": True}, "quantization_config.group_size"),
    ({"quant_method": "awq", "zero_point": "false"}, "quantization_config.zero_point"),
    (_ct({"num_bits": 4, "strategy": "group", "group_size": True}), "weights.group_size"),
    (_ct({"num_bits": 4, "strategy": "group", "group_size": 3.5}), "weights.group_size"),
    (_ct({"num_bits": 4, "strategy": "group", "group_size": -5}), "weights.group_size"),
    (_ct({"num_bits": 4, "strategy": "group"}), "weights.group_size"),  # strategy group needs one
    ({"quant_method": "compressed-tensors", "config_groups": "abc"}, "quantization_config.config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": 5}, "quantization_config.config_groups"),
    ({"quant_method": "compressed-tensors", "config_groups": []}, "quantization_config.config_groups"),
    ({"quant_method": "compressed-tensors"}, "quantization_config.config_groups"),
    (_ct({"num_bits": 8, "type": "abc"}), "weights.type"),
    (_ct({"num_bits": 3.5}), "weights.num_bits"),
    (_ct({"num_bits": 4, "strategy": "rows"}), "weights.strategy"),
    (_ct({"num_bits": 4, "symmetric": "no"}), "weights.symmetric"),
    (_ct({"num_bits": 8}, input_activations="yes"), "config_groups.g.input_activations"),
    ({"quant_method": "fp8", "ignored_layers": "self_attn"}, "quantization_config.ignored_layers"),
    ({"quant_method": "fp8", "ignored_layers": 5}, "quantization_config.ignored_layers"),
    ({"quant_method": "fp8", "ignored_layers": {"self_attn": True}}, "quantization_config.ignored_layers"),
    ({"quant_method": "fp8", "ignored_layers": [["self_attn"]]}, "quantization_config.ignored_layers"),
    ({"quant_method": "awq", "modules_to_not_convert": "self_attn"}, "quantization_config.modules_to_not_convert"),
    ({"quant_method": "fp8", "weight_block_size": "abc"}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [0, 0]}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [-1, 128]}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": []}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [2**70, 128]}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128, 128]}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "weight_block_size": [100, 128]}, "quantization_config.weight_block_size"),
    ({"quant_method": "fp8", "fmt": "e9m9"}, "quantization_config.fmt"),
    ({"quant_method": "fp8", "activation_scheme": "sometimes"}, "quantization_config.activation_scheme"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": "false"}, "quantization_config.load_in_4bit"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": True}, "quantization_config.load_in_8bit"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": False, "load_in_8bit": False},
     "quantization_config.load_in_4bit"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "int4"},
     "quantization_config.bnb_4bit_quant_type"),
    ({"quant_method": 5}, "quantization_config.quant_method"),
    ({"quant_method": "modelopt", "quant_algo": 5}, "quantization_config.quant_algo"),
]


def _config(tmp_path, qcfg, raw: str | None = None) -> str:
    """A copy of a catalog model's config.json with ``qcfg`` (or raw JSON text) as its
    quantization_config."""
    from gpuplan.catalog import model_entry

    config = dict(model_entry("llama-3.1-8b")["config"])
    text = json.dumps(config)
    text = text[:-1] + ', "quantization_config": ' + (raw if raw is not None else json.dumps(qcfg)) + "}"
    path = tmp_path / "config.json"
    path.write_text(text)
    return str(path)


def _refused(run_cli, *args: str) -> str:
    code, out, err = run_cli("infer", *args)
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in out + err
    assert out == ""
    return err


@pytest.mark.parametrize("qcfg, field", HOSTILE, ids=[json.dumps(q)[:70] for q, _ in HOSTILE])
def test_hostile_quantization_config_is_one_line_naming_the_field(run_cli, tmp_path, qcfg, field):
    with pytest.raises(InputError) as info:
        weight_format_from_hf(qcfg)
    assert field in info.value.field
    err = _refused(run_cli, _config(tmp_path, qcfg), "--gpu", "h100", "--no-search", "--json")
    assert field in err


@pytest.mark.parametrize("raw, field", [
    ('{"quant_method": "gptq", "bits": 1e400}', "quantization_config.bits"),
    ('{"quant_method": "gptq", "bits": -1e400}', "quantization_config.bits"),
    ('{"quant_method": "gptq", "group_size": 1e400}', "quantization_config.group_size"),
    ('{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 1e400}}}}',
     "num_bits"),
    ('{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "strategy": '
     '"group", "group_size": 1e400}}}}', "group_size"),
])
def test_overflowing_numbers_in_the_file_are_one_line(run_cli, tmp_path, raw, field):
    # 1e400 is valid JSON text that Python reads as inf
    assert field in _refused(run_cli, _config(tmp_path, None, raw=raw), "--gpu", "h100", "--no-search")
    with pytest.raises(InputError) as info:
        weight_format_from_hf(json.loads(raw))
    assert field in info.value.field


def test_mxfp4_on_a_dense_model_is_refused(run_cli, tmp_path):
    err = _refused(run_cli, _config(tmp_path, {"quant_method": "mxfp4"}), "--gpu", "h100", "--no-search")
    assert "quantization_config.quant_method" in err and "experts" in err


@pytest.mark.parametrize("qcfg, name, bits", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}, "int4-g128", 4.15625),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1}, "int8", 8),
    ({"quant_method": "gptq", "bits": 4.0, "group_size": 128.0}, "int4-g128", 4.15625),  # whole JSON floats
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "modules_to_not_convert": None},
     "int4-g128", 4.15625),
    ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "zero_point": False}, "int4-g64", 4.25),
    (_ct({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True,
          "dynamic": False, "block_structure": None}, input_activations=None), "int4-g128", 4.125),
    (_ct({"num_bits": 8, "type": "float", "strategy": "channel", "group_size": None, "symmetric": True},
         input_activations={"num_bits": 8, "type": "float", "dynamic": True}), "fp8", 8),
    ({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
     "fp8", 8),
    ({"quant_method": "fp8", "ignored_layers": ["model.layers.0.self_attn.q_proj"]}, "fp8 (attention bf16)", 8),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
      "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": False}, "nf4", 4.5),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, "int8-llm.int8", 8),
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}, "fp8", 8),
])
def test_good_quantization_configs_still_work(run_json, tmp_path, qcfg, name, bits):
    data = run_json("infer", _config(tmp_path, qcfg), "--gpu", "h100", "--no-search")
    assert data["inputs"]["quantization"] == name
    assert data["results"]["bits_per_weight"] == pytest.approx(bits)


def test_mxfp4_on_gpt_oss_still_works(run_json):
    # the catalog keeps gpt-oss-120b's own quantization_config (quant_method mxfp4)
    data = run_json("infer", "gpt-oss-120b", "--gpu", "h100", "--no-search")
    assert data["inputs"]["quantization"] == "mxfp4"
    assert data["results"]["bits_per_weight"] == pytest.approx(4.25)
    assert data["results"]["weights_total"] == pytest.approx(65.2e9, rel=0.01)  # docs/inference.md
