"""More hostile config.json values (adapters/config_fields.py, adapters/quant_fields.py): a malformed
quantization_config, RoPE type or factor, DeepSeek expert groups, sliding window and layer lists are
refused by every job that reads the model (one line naming the field, exit 2), not only by `infer`;
the valid neighbour of each still reads."""

import json
from pathlib import Path

import pytest

from gpuplan.adapters import quant_fields
from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.errors import InputError
from gpuplan.jobs.inference.quant_config import weight_format_from_hf

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "src" / "gpuplan" / "catalog" / "models"
LLAMA2 = json.loads((ROOT / "examples/llama-2-7b/config.json").read_text())


def _catalog(name: str) -> dict:
    return json.loads((MODELS / f"{name}.json").read_text())["config"]


def _with(model: str, change: dict) -> dict:
    """A catalog config (or the Llama 2 example) with ``change``; a VLM's text fields change inside
    its text_config."""
    config = LLAMA2 if model == "llama-2-7b" else _catalog(model)
    if "text_config" in config and "quantization_config" not in change:
        return {**config, "text_config": {**config["text_config"], **change}}
    return {**config, **change}


# (model, change, the config.json field the one error line must name)
REFUSED = [
    ("llama-2-7b", {"quantization_config": [1]}, "quantization_config"),
    ("llama-2-7b", {"quantization_config": "gptq"}, "quantization_config"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "wat"}}, "quantization_config.quant_method"),
    ("llama-2-7b", {"quantization_config": {"bits": 4}}, "quantization_config.quant_method"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "gptq", "bits": 0}}, "quantization_config.bits"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "awq", "w_bit": 8}}, "quantization_config.w_bit"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "gptq", "group_size": 0}},
     "quantization_config.group_size"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "awq", "q_group_size": 1e300}},
     "quantization_config.q_group_size"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "fp8", "weight_block_size": [0, 0]}},
     "quantization_config.weight_block_size"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "fp8", "ignored_layers": "self_attn"}},
     "quantization_config.ignored_layers"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": "yes"}},
     "quantization_config.load_in_4bit"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                            "load_in_8bit": True}}, "quantization_config.load_in_8bit"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {}}},
     "quantization_config.config_groups"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "g": {"weights": {"num_bits": 0}}}}}, "quantization_config.config_groups.g.weights.num_bits"),
    ("llama-2-7b", {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "g": {"weights": {"num_bits": 4, "group_size": 0}}}}}, "quantization_config.config_groups.g.weights.group_size"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "linear"}}, "rope_scaling.factor"),
    ("llama-2-7b", {"rope_scaling": {"type": "dynamic"}}, "rope_scaling.factor"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 4096}},
     "rope_scaling.factor"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "wat", "factor": 2.0}}, "rope_scaling.rope_type"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling.low_freq_factor"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "longrope", "long_factor": [1.0]}}, "rope_scaling.short_factor"),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "longrope", "short_factor": "abc", "long_factor": [1.0]}},
     "rope_scaling.short_factor"),
    ("deepseek-v3", {"n_group": 7}, "n_group"),
    ("deepseek-v3", {"n_group": 8, "topk_group": 9}, "topk_group"),
    ("deepseek-v3", {"n_group": 64, "topk_group": 1}, "topk_group"),  # 1 group of 4 experts < top-8
    ("mistral-7b-v0.1", {"sliding_window": 0}, "sliding_window"),
    ("mistral-7b-v0.1", {"sliding_window": False}, "sliding_window"),
    ("mistral-7b-v0.1", {"sliding_window": -5}, "sliding_window"),
    ("gemma-3-12b", {"sliding_window_pattern": 0}, "sliding_window_pattern"),
    ("gemma-3-12b", {"sliding_window_pattern": -6}, "sliding_window_pattern"),
    ("gemma-3-12b", {"sliding_window_pattern": 2.5}, "sliding_window_pattern"),
    ("qwen3-30b-a3b", {"mlp_only_layers": [1, 1, 1]}, "mlp_only_layers"),
    ("llama-2-7b", {"vocab_size": 1}, "vocab_size"),
]
IDS = [f"{m}-{f}-{i}" for i, (m, _, f) in enumerate(REFUSED)]


@pytest.mark.parametrize(("model", "change", "field"), REFUSED, ids=IDS)
def test_refused_in_the_adapter(model, change, field):
    with pytest.raises(InputError) as err:
        model_spec_from_hf_config(_with(model, change))
    assert err.value.field == f"config.json: {field}"


@pytest.mark.parametrize("command", ["memory", "train", "infer"])
@pytest.mark.parametrize(("model", "change", "field"), REFUSED, ids=IDS)
def test_every_job_refuses_in_one_line(run_cli, tmp_path, command, model, change, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_with(model, change)))
    extra = ("--gpu", "h100", "--no-search") if command == "infer" else ("--gpu", "h100")
    code, out, err = run_cli(command, "--model", str(path), *extra)
    assert code == 2 and out == ""
    assert err.startswith(f"error: config.json: {field}: got ") and err.count("\n") == 1, err


def test_train_qlora_refuses_a_malformed_quantization_config(run_cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA2, "quantization_config": {"quant_method": "gptq", "bits": 0}}))
    code, _, err = run_cli("train", "--model", str(path), "--finetune", "qlora")
    assert code == 2 and err == "error: config.json: quantization_config.bits: got 0; must be 2, 3, 4 or 8 for gptq\n"


ACCEPTED = [
    ("llama-2-7b", {"quantization_config": None}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": " GPTQ ", "bits": 8.0, "group_size": -1}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "awq", "w_bit": 4, "q_group_size": 64}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "compressed-tensors", "config_groups": {
        "group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}}}),
    ("llama-2-7b", {"quantization_config": {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}}),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}),
    ("llama-2-7b", {"rope_scaling": {"type": "dynamic", "factor": 2.0}}),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "default"}}),
    ("llama-2-7b", {"rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}),  # Qwen2-VL
    ("llama-2-7b", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}),
    ("llama-2-7b", {"rope_scaling": {"rope_type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                                     "original_max_position_embeddings": 4096}}),
    # Llama 4 Scout (meta-llama/Llama-4-Scout-17B-16E config.json): low = high = 1.0
    ("llama-2-7b", {"rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}}),
    ("deepseek-v3", {}),  # 8 groups of 32, top-4 groups, 8 experts
    ("deepseek-v3", {"n_group": 16, "topk_group": 16}),
    ("deepseek-v3", {"n_group": 7, "topk_method": "greedy"}),  # DeepSeek-V2 greedy routing ignores groups
    ("deepseek-v2-lite", {}),
    ("mistral-7b-v0.1", {"sliding_window": None}),
    ("mistral-7b-v0.1", {"sliding_window": 1}),
    ("qwen2.5-7b", {"sliding_window": 0, "use_sliding_window": False}),  # an unused window is not read
    ("gemma-3-12b", {"sliding_window_pattern": 1}),
    ("qwen3-30b-a3b", {"mlp_only_layers": [0, 47]}),
    ("llama-2-7b", {"vocab_size": 2}),
    ("mixtral-8x7b", {"num_local_experts": 1, "num_experts_per_tok": 1}),  # pointless but legal
]


@pytest.mark.parametrize(("model", "change"), ACCEPTED, ids=[f"{m}-{i}" for i, (m, _) in enumerate(ACCEPTED)])
def test_valid_neighbours_still_read(model, change):
    """Read, and read as the same model: depth and width those of the unchanged config; a changed
    vocabulary or expert count is the one given."""
    base = model_spec_from_hf_config(_with(model, {}))
    spec = model_spec_from_hf_config(_with(model, change))
    assert (spec.num_layers, spec.hidden_size) == (base.num_layers, base.hidden_size)
    assert spec.vocab_size == change.get("vocab_size", base.vocab_size)
    if "num_local_experts" in change:
        assert (spec.moe.num_experts, spec.moe.experts_per_token) == (change["num_local_experts"],
                                                                      change["num_experts_per_tok"])


def test_a_gemma3_pattern_of_one_plans(run_json, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_with("gemma-3-12b", {"sliding_window_pattern": 1})))
    assert run_json("memory", "--model", str(path), "--gpu", "h100")["results"]


def test_a_quantised_checkpoint_still_plans_in_every_job(run_cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA2, "quantization_config": {"quant_method": "gptq", "bits": 4,
                                                                  "group_size": 128}}))
    for args in (("memory", "--gpu", "h100"), ("train", "--finetune", "qlora"), ("infer", "--gpu", "h100",
                                                                                   "--no-search")):
        code, _, err = run_cli(args[0], "--model", str(path), *args[1:])
        assert code == 0, err


def test_the_adapter_knows_the_methods_and_widths_the_inference_reader_reads():
    # the adapter's structural check must never refuse what `infer` reads (the widths and limits
    # are one list: quant_config imports them from adapters.quant_fields)
    minimal = {"fp8": {}, "bitsandbytes": {"load_in_8bit": True}, "mxfp4": {},
               "modelopt": {"quant_algo": "NVFP4"},
               "compressed-tensors": {"config_groups": {"g": {"weights": {"num_bits": 4, "group_size": 128}}}}}
    for method in quant_fields.QUANT_METHODS:
        qcfg = {"quant_method": method, **minimal.get(method, {})}
        quant_fields.check_quantization_config(qcfg)
        weight_format_from_hf(qcfg)  # the inference reader reads it too
    with pytest.raises(InputError):
        weight_format_from_hf({"quant_method": "hqq"})


def test_the_api_refuses_a_pasted_malformed_quantization_config():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app())
    bad = client.post("/api/memory", json={"config": {**LLAMA2, "quantization_config": {"quant_method": "wat"}}})
    assert bad.status_code == 422 and bad.json()["field"] == "config.json: quantization_config.quant_method"
    good = client.post("/api/memory", json={"config": {**LLAMA2, "quantization_config": {"quant_method": "fp8"}}})
    assert good.status_code == 200


def test_infer_quantization_replaces_an_unknown_checkpoint_format(run_cli, tmp_path):
    # an HQQ checkpoint: its quantization_config is refused by name, unless --quantization sets the
    # format (the checkpoint's own is then not read)
    config = json.loads((ROOT / "examples/llama-2-7b/config.json").read_text())
    config["quantization_config"] = {"quant_method": "hqq", "nbits": 4}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, _, err = run_cli("infer", "--model", str(path))
    assert code == 2 and err.startswith("error: config.json: quantization_config.quant_method: got 'hqq'"), err
    assert "--quantization" in err and err.count("\n") == 1
    code, out, err = run_cli("infer", "--model", str(path), "--quantization", "int4", "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"]["quantization"].startswith("int4")
