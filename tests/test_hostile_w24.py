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
(2) a config whose heads RoPE rotates whole are of odd width (head_dim 63, or hidden 252 over 4 heads) was answered by
    memory / infer / plan, where transformers 5.25.0 refuses the config (validate_rope: 'RoPE requires an even rotary
    dimension') or, for a class that keeps no head_dim attribute (Qwen2, GPT-NeoX), builds it and fails in the first
    forward (`measure` exit 70 with a fake-tensor traceback on stderr); now refused at the reader, naming head_dim (or
    num_attention_heads where the width is hidden / heads), for every door (adapters/rope_fields.check_even_rotary); a
    partial rotation of an odd head (GPT-NeoX rotary_pct 0.5) and models without RoPE (GPT-2) stay answered.
(3) `measure` on a Qwen2 config with sliding_attention in layer_types and use_sliding_window left false (transformers
    then drops the window: configuration_qwen2.py@5.25.0 L83) ended in exit 70 ('Could not find a `sliding_window`
    argument'); measure / profile, which build the model, now refuse it naming layer_types (config_fields.
    check_transformers_defaults); memory and the other estimates read such layers windowless, as before (w23c N1).
(4) `measure gemma-2-2b` (the default --attention-kernel flash) was refused as "attention: got 'sdpa'; an
    implementation this model supports (Gemma2ForCausalLM does not support ... Please request the support ...: https:
    //github.com/...)", naming no option the command has and offering no value; it now names --attention-kernel as
    given and offers eager ('attention_kernel: got 'flash'; Gemma2ForCausalLM does not support an attention
    implementation through torch.nn.functional.scaled_dot_product_attention yet (--attention-kernel flash and sdpa
    build SDPA): give --attention-kernel eager'; config_fields.kernel_refusal, retold by jobs/measure/estimate).
(5) a Qwen2-MoE / Qwen3-MoE config.json that states mlp_only_layers but leaves decoder_sparse_step to its default
    (1) had mlp_only_layers ignored: every layer was read as MoE (with [0, 1, 2, 3] on 4 layers: answered, where the
    sister case of no MoE layer is refused), while transformers builds those layers dense (modeling_qwen2_moe.py@
    5.25.0 L358-359); the Qwen rule now applies by model type (adapters/hf_config._moe), cross-checked against the
    layers transformers builds on the meta device.
(6) (tested in test_hostile_w24b.py, as (7)-(11)) (2)'s rule for multi-latent attention: an odd qk_rope_head_dim
    (15) was answered, where transformers refuses it (DeepseekV3Config sets head_dim = qk_rope_head_dim, then
    validate_rope); refused naming qk_rope_head_dim.
(7) a config.json that leaves out num_key_value_heads or head_dim was read as multi-head with hidden / heads wide
    heads, where ten config classes default them to fixed numbers (transformers 5.25.0: Qwen2Config K/V heads 32,
    Qwen2MoeConfig 16, Qwen3MoeConfig 4, Mistral / Mixtral / GPT-OSS / Llama 4 8, Gemma 16, Gemma 2 4; head_dim Qwen3
    128, Gemma / Gemma 2 256, GPT-OSS 64, Llama 4 128): a Qwen2 of 8 heads was answered as MHA where transformers
    builds 32 K/V heads (and cannot run it), a Qwen3 of hidden 1,024 and 16 heads with 64-wide heads where
    transformers builds 128 (parameters 218,880 vs the meta-built model's 317,952 in the first case). As wave 23 (3)
    did for the MLP width, such a config is refused naming the field and the class default, unless that default is
    what gpuplan reads (a Qwen2 of 32 heads: answered); Gemma 3's defaults stay filled (adapters/class_shapes.py,
    called by hf_config._model_spec).
(8) bias keys were read whatever the type: a Mistral / Mixtral / Qwen2 / Phi-3 config with "attention_bias": true, an
    OLMo 2 / Qwen3 / Gemma one with "mlp_bias": true or a Llama one with a stray "bias": true was counted with linear
    biases transformers does not build (their modeling files read no such key: `config.<key>` in modeling_<type>.py
    @5.25.0). Each type now reads only its own bias keys (class_shapes.READ_BIAS_KEYS; hf_config drops the others
    with the nulls), cross-checked against the parameters of the meta-built models.
(9) a DeepSeek config with "first_k_dense_replace": 0 (no leading dense layer; DeepseekV3Config takes it, every
    layer MoE) was refused as 'first_k_dense_replace: got 0; must be a positive integer'; 0 is read now.
(10) a GPT-NeoX or GPT-2 config with "num_key_value_heads" (or num_kv_heads) was read as grouped-query attention,
    where those modeling files read no such key and build multi-head attention (class_shapes.MHA_TYPES).
(11) a DeepSeek-V2 / V3 config that leaves out kv_lora_rank (or the MLA head widths) was read as plain attention,
    where DeepseekV3Config builds MLA of rank 512 (128 / 64 / 128 wide heads): refused naming the field and the
    default, as (7). q_lora_rank left out stays 'no query compression' (the catalog's deepseek-v2-lite convention;
    transformers would build 1,536: reported, not changed).
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
    if isinstance(parameters, dict) and "full_attention" in parameters:  # nested only where the config declares the
        config["layer_types"] = ["full_attention", "sliding_attention"] * 16  # types (review R2 M6, helper H2)
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


# ---- (2) an odd head that RoPE rotates whole ------------------------------------------------------------------------

SMALL = {**LLAMA, "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
         "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096}
"""A two-layer Llama small enough to measure in a second under fake tensors."""
ODD_WORDS = ("gives heads 63 channels wide, all rotated: RoPE turns channel pairs, so the rotated width must be even "
             "(transformers refuses an odd one)")


@pytest.mark.parametrize("config, field, value", [
    ({**SMALL, "head_dim": 63}, "head_dim", 63),
    ({**SMALL, "model_type": "qwen2", "hidden_size": 252, "num_key_value_heads": 4}, "num_attention_heads", 4),
    ({**SMALL, "model_type": "gpt_neox", "hidden_size": 252, "rotary_pct": 1.0}, "num_attention_heads", 4),
])
def test_2_an_odd_fully_rotated_head_is_refused_at_every_door(run_cli, client, tmp_path, config, field, value):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    line = f"error: config.json: {field}: got {value}; {ODD_WORDS}\n"
    assert field_refusal(run_cli("memory", str(path), "--gpus", "1"), f"config.json: {field}") == line
    assert field_refusal(run_cli("infer", "--model", str(path)), f"config.json: {field}") == line
    assert field_refusal(run_cli("measure", "--model", str(path), "--seq-len", "32", "--micro-batch", "1"),
                         f"config.json: {field}") == line
    web = web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}), f"config.json: {field}")
    assert f"error: {web}\n" == line


@pytest.mark.parametrize("config", [
    {**SMALL, "model_type": "gpt_neox", "hidden_size": 252, "rotary_pct": 0.5},  # 31 of 63 channels rotate
    {"model_type": "gpt2", "n_embd": 252, "n_layer": 2, "n_head": 4, "vocab_size": 1000, "n_positions": 1024},
    {**SMALL, "head_dim": 64},
])
def test_2_a_partial_rotation_no_rope_or_an_even_head_is_answered(run_json, tmp_path, config):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert run_json("memory", str(path), "--gpus", "1")


def test_2_the_rule_is_transformers_own():
    """The installed transformers refuses the llama case the reader refuses (its message, not ours)."""
    from transformers import LlamaConfig

    with pytest.raises(Exception, match="RoPE requires an even rotary dimension"):
        LlamaConfig(**{k: v for k, v in SMALL.items() if k != "model_type"}, head_dim=63)


# ---- (3) measure: sliding layers transformers builds with no window -------------------------------------------------

def test_3_measure_refuses_sliding_layers_without_a_window_where_it_ended_in_exit_70(run_cli, run_json, tmp_path):
    config = {**SMALL, "model_type": "qwen2", "num_key_value_heads": 4, "sliding_window": 16,
              "layer_types": ["sliding_attention", "full_attention"]}  # use_sliding_window left out: false
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    err = field_refusal(run_cli("measure", "--model", str(path), "--seq-len", "32", "--micro-batch", "1"),
                        "config.json: layer_types", "give use_sliding_window true with a sliding_window")
    assert "got 'sliding_attention'; transformers builds these layers with no window here" in err
    assert run_json("memory", str(path), "--gpus", "1")  # the estimate reads them windowless (w23c N1)


# ---- (4) measure: the attention kernel a class lacks -----------------------------------------------------------------

@pytest.mark.parametrize("flags, given", [((), "flash"), (("--attention-kernel", "sdpa"), "sdpa")])
def test_4_a_missing_sdpa_path_names_the_option_and_offers_eager(run_cli, flags, given):
    err = field_refusal(run_cli("measure", "--model", "gemma-2-2b", "--seq-len", "32", "--micro-batch", "1", *flags),
                        "attention_kernel")
    assert err == (f"error: attention_kernel: got '{given}'; Gemma2ForCausalLM does not support an attention "
                   "implementation through torch.nn.functional.scaled_dot_product_attention yet (--attention-kernel "
                   "flash and sdpa build SDPA): give --attention-kernel eager\n")


# ---- (5) Qwen-MoE mlp_only_layers without decoder_sparse_step --------------------------------------------------------

QWEN_MOE = {"model_type": "qwen2_moe", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 4, "intermediate_size": 512, "moe_intermediate_size": 128,
            "shared_expert_intermediate_size": 256, "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1000,
            "max_position_embeddings": 4096}
"""A four-layer Qwen2-MoE without decoder_sparse_step (Qwen2MoeConfig's default 1: every layer may be MoE)."""


@pytest.mark.parametrize("model_type", ["qwen2_moe", "qwen3_moe"])
@pytest.mark.parametrize("dense", [[0, 2], [3], []])
def test_5_mlp_only_layers_are_dense_as_transformers_builds_them(model_type, dense):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    config = {**QWEN_MOE, "model_type": model_type, "mlp_only_layers": dense}
    spec = model_spec_from_hf_config(config)
    assert spec.moe_layers == tuple(i not in dense for i in range(4))
    built = AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(built)
    assert spec.moe_layers == tuple("Sparse" in type(layer.mlp).__name__ for layer in model.model.layers)


def test_5_every_layer_dense_is_refused_at_every_door(run_cli, client, tmp_path):
    config = {**QWEN_MOE, "mlp_only_layers": [0, 1, 2, 3]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    words = "config.json: num_experts: got 8; is set but no layer of 4 would be MoE"
    assert words in field_refusal(run_cli("memory", str(path), "--gpus", "1"), "config.json: num_experts")
    assert words in field_refusal(run_cli("infer", "--model", str(path)), "config.json: num_experts")
    assert words in web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}),
                                "config.json: num_experts")
