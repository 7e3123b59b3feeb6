"""Hostile inputs, wave 24 (2026-12-07, helper H). Probed first (in-process CLI, the web test client, the Python API)
and found answered or refused as the house rule asks:

- every option of infer, memory, train and plan (~110 options x 25 values: 0, -1, -0, +8, ' 8 ', 1e308, 1e400, 1e9,
  1e-320, 0.0001, 2.5, nan, inf, 1_000, 0x10, '８', '٨', 'ⅷ', '½', true, [1,2], '', '8\\x00', '8 8', a path), each
  either answered or refused in one line, exit 2; `profile` --steps and --out (a folder, a missing folder, /proc, a
  wrong suffix, '') refused before any step runs;
- jointly impossible layouts: tp not dividing the heads, pp (and pp x vpp) past the layers, cp whose 2 x cp does not
  divide the sequence, ep not dividing the experts or on a dense model, etp on a dense model, a micro-batch above the
  global batch, --recompute-layers / --offload-layers past the layers;
- plan files with case-variant keys, duplicate keys (YAML and JSON), a BOM, !!int tags, 4_096, full-width digits,
  0b / 0x literals, TOML sub-tables.

Found, each fixed where every door passes (one line naming the field, exit 2):

(1) a config.json written by transformers 5 (``save_pretrained`` writes ``rope_parameters``, holding rope_theta, and
    no rope_scaling or top-level rope_theta: LlamaConfig(...).to_dict() under 5.25.0) was read without its RoPE
    settings: any ``rope_parameters`` was taken unchecked ('yarn', [1, 2], {"rope_type": "bogus"}, a factor of -4, a
    rope_theta of 'x' or -1: memory / infer / plan answered), `measure` on such a file ended in exit 70 (TypeError:
    unsupported operand type(s) for ** or pow(): 'str' and 'FakeTensor'; KeyError: 'bogus'), and a YaRN factor in it
    was dropped (rope_attention_factor 1.0 where the same settings under rope_scaling read 0.1 ln 4 + 1). The reader
    now takes ``rope_scaling or rope_parameters`` as transformers 5.25.0 does (modeling_rope_utils.py L792-821), checks
    either (nested per layer type too, as Gemma 3's) and rope_theta / partial_rotary_factor inside them, naming the
    key the file wrote (adapters/rope_fields.py).
"""

import json
import math

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (1) transformers 5's rope_parameters ---------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072}
"""Llama 3.1 8B's shape (its config.json), RoPE settings left to each case."""


@pytest.mark.parametrize("parameters, field, words", [
    ({"rope_type": "bogus", "rope_theta": 5e5}, "rope_parameters.rope_type",
     "got 'bogus'; must be one of default, linear, dynamic, yarn, longrope, llama3, su, mrope"),
    ("yarn", "rope_parameters", "got 'yarn'; expected a mapping"),
    ([1, 2], "rope_parameters", "got [1, 2]; expected a mapping"),
    ({"rope_type": "yarn", "factor": -4, "rope_theta": 1e6}, "rope_parameters.factor",
     "got -4; must be a number in (0, 1024]"),
    ({"rope_type": "yarn", "rope_theta": 1e6}, "rope_parameters.factor",
     "got no value; rope_type yarn requires it: a number in (0, 1024]"),
    ({"rope_type": "default", "rope_theta": "x"}, "rope_parameters.rope_theta", "got 'x'; must be a positive number"),
    ({"rope_type": "default", "rope_theta": -1}, "rope_parameters.rope_theta", "got -1; must be a positive number"),
    ({"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 2}, "rope_parameters.partial_rotary_factor",
     "got 2; must be the rotary share of a head, in (0, 1]"),
    ({"full_attention": {"rope_type": "linear", "rope_theta": 1e6}, "sliding_attention": None},
     "rope_parameters.full_attention.factor", "got no value; rope_type linear requires it"),
    ({"full_attention": {"rope_type": "default", "rope_theta": 1e6}, "sliding_attention": "default"},
     "rope_parameters.sliding_attention", "got 'default'; expected a mapping"),
])
def test_1_malformed_rope_parameters_are_refused_at_every_door(run_cli, client, tmp_path, parameters, field, words):
    config = {**LLAMA, "rope_parameters": parameters}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = f"config.json: {field}: {words}"
    for job in (("memory", str(path), "--gpus", "8"), ("infer", "--model", str(path))):
        assert line in field_refusal(run_cli(*job), f"config.json: {field}")  # a file called config.json: its name
    assert line in web_refusal(client.post("/api/memory", json={"config": config, "gpus": 8}),
                               f"config.json: {field}")
    assert line in web_refusal(client.post("/api/inference", json={"config": config}), f"config.json: {field}")
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.errors import InputError

    with pytest.raises(InputError) as refused:
        model_spec_from_hf_config(config)
    assert str(refused.value).startswith(line)


def test_1_measure_refuses_them_where_it_ended_in_exit_70(run_cli, tmp_path):
    small = {**LLAMA, "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
             "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096}
    for parameters, field in (({"rope_type": "default", "rope_theta": "x"}, "rope_parameters.rope_theta"),
                              ({"rope_type": "bogus", "rope_theta": 1e4}, "rope_parameters.rope_type")):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**small, "rope_parameters": parameters}), encoding="utf-8")
        field_refusal(run_cli("measure", "--model", str(path), "--seq-len", "64", "--micro-batch", "1"),
                      f"config.json: {field}")


def _saved_by_transformers(**rope) -> dict:
    """A tiny Llama config as transformers 5.25.0 writes it (LlamaConfig(...).to_dict(): rope_parameters only)."""
    from transformers import LlamaConfig

    saved = LlamaConfig(hidden_size=512, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
                        intermediate_size=1024, vocab_size=1000, max_position_embeddings=131072, **rope).to_dict()
    assert "rope_parameters" in saved and "rope_scaling" not in saved and "rope_theta" not in saved, saved
    return saved


def test_1_a_yarn_factor_in_rope_parameters_is_read_as_under_rope_scaling():
    """YaRN factor 4, no attention_factor or mscale: 0.1 ln 4 + 1 (transformers _compute_yarn_parameters' get_mscale),
    whichever key holds it; the default RoPE of the same file reads 1."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    saved = _saved_by_transformers(rope_theta=1e6, rope_scaling=dict(yarn))
    legacy = {k: v for k, v in saved.items() if k != "rope_parameters"} | {"rope_scaling": yarn, "rope_theta": 1e6}
    for config in (saved, legacy):
        assert model_spec_from_hf_config(config).attention.rope_attention_factor == pytest.approx(0.1 * math.log(4) + 1)
    assert model_spec_from_hf_config(_saved_by_transformers(rope_theta=1e6)).attention.rope_attention_factor == 1.0


def test_1_rope_scaling_wins_over_rope_parameters_as_in_transformers():
    """``rope_scaling or rope_parameters`` (L793-794): a stated rope_scaling is read and the other left alone; an
    empty one leaves rope_parameters in force."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.errors import InputError

    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    spec = model_spec_from_hf_config({**LLAMA, "rope_scaling": yarn, "rope_parameters": {"rope_type": "default"}})
    assert spec.attention.rope_attention_factor == pytest.approx(0.1 * math.log(4) + 1)
    with pytest.raises(InputError, match=r"^config.json: rope_parameters.factor: got 0;"):
        model_spec_from_hf_config({**LLAMA, "rope_scaling": {}, "rope_parameters": {**yarn, "factor": 0}})


def test_1_gemma3_nested_parameters_as_transformers_writes_them_are_answered(run_json, tmp_path):
    from transformers import Gemma3TextConfig

    saved = Gemma3TextConfig(hidden_size=512, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4,
                             head_dim=64, intermediate_size=1024, vocab_size=1000, pad_token_id=0, eos_token_id=1,
                             bos_token_id=2).to_dict()
    assert set(saved["rope_parameters"]) == {"full_attention", "sliding_attention"}, saved["rope_parameters"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(saved), encoding="utf-8")
    assert run_json("memory", str(path), "--gpus", "1")
