"""OLMo 3 and GPT-OSS config.json files read as transformers reads them when they leave out the sliding window or the
layer types (hostile wave 22, lead item 8): configuration_olmo3.py@5.25.0 defaults sliding_window to 4,096 and
layer_types to sliding unless (i + 1) % 4 == 0; configuration_gpt_oss.py@5.25.0 to 128 and (i + 1) % 2. Before, a
config with sliding layer_types and no window was read as windowless (full attention on every layer)."""

import json
from pathlib import Path

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config

MODELS = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "catalog" / "models"


def _config(name):
    data = json.loads((MODELS / f"{name}.json").read_text())
    return data.get("config", data)


@pytest.mark.parametrize("name, window, every", [("olmo-3-7b", 4096, 4), ("gpt-oss-120b", 128, 2)])
def test_the_config_class_defaults_fill_what_the_file_leaves_out(name, window, every):
    full = _config(name)
    layers = full["num_hidden_layers"]
    expected = tuple("full" if (i + 1) % every == 0 else "sliding" for i in range(layers))
    for dropped in (("sliding_window",), ("layer_types",), ("sliding_window", "layer_types")):
        spec = model_spec_from_hf_config({k: v for k, v in full.items() if k not in dropped})
        assert spec.sliding_window == window, dropped
        assert spec.layer_types == expected, dropped
    # a window the file states is kept
    assert model_spec_from_hf_config({**full, "sliding_window": 1024}).sliding_window == 1024
