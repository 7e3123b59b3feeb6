"""Hostile inputs, wave 23 (2026-12-07, helper H). Probed first (in-process CLI, the web test client, the Python API)
and found answered or refused as the house rule asks:

- --batch-ramp with --eval-interval / --eval-iters on budget / train / plan, plan files and POST /api/budget (~90
  asks): zero, negative, NaN, 1e400, full-width digits, ',', '', ';' separators, a ramp longer than or equal to
  --tokens, a batch above the steady one, FROM > TO, 1tok, 33 phases, 1,000 phases in a body, a bare mapping or pair,
  numpy / Decimal / Fraction / bytes / complex values, an interval of 1.5 / 10steps / inf / 1e9 / 1e300 / a list /
  true / null, --eval-iters without an interval (also inherited in a campaign), 1e6 iterations every step at 1e18
  tokens, 32 linear phases with an evaluation every step (plan 2.7 s, budget --days 7.4 s; a campaign of 32 such
  stages 96 s on the CLI, the web's 20 s budget answering 503 with the fewer-stages hint); YAML plan-file spellings
  of the interval (1_000, 0x10, 0o17, 0b101, 1:30, .NaN, !!float .inf, a date, yes, ~, [100], {a: 1}, '1,000');
- plan / train / budget --days from 1e-300 to 36,500 and past it (36500d, 5214w, 5215w, 1e6h), with and without
  evaluation and a ramp, a solved GPU count and a solved MFU;
- campaign files: empty / one / 5,000 / 9,000 stages (YAML block, flow, TOML arrays of tables: refused in < 3 s),
  duplicate names, anchors ('billion laughs'), 50,000-deep nesting, a 5,000-digit number, BOM, Latin-1, UTF-16,
  control and bidi characters in a name, a stage that is a path, a nested mapping, a python/object tag, an empty or
  blank file, a 2 MiB file, .json files (list / string / number / null / 200,000-deep); ramps and evaluation in
  stages and inherited; POST /api/campaign with a list / string / number body, 5,000 stages and 3 MiB (413),
  duplicate keys, text/plain and YAML content types, 100,000-deep arrays, a BOM (read, as RFC 8259 allows);
- config.json files (48 under memory and infer): negative / zero / fractional / text / boolean head counts, K/V heads
  not dividing or above the heads, a hidden size the heads do not divide, vocab 0 / 1e12 / 1e308, missing hidden /
  layers / heads / vocab / model_type, an empty / numeric / unknown model_type, layer_types short / 100,000 long /
  unknown ('chunked_attention', 'linear_attention') / text / a mapping / null entries, head_dim -128 / 1e9, 1e6
  layers, negative intermediate size and positions, NaN rope_theta, tie_word_embeddings 'yes', a window of 0 / -1 /
  4096.5, top-k above the experts, zero experts, a list text_config, an unknown quant_method;
- serving (38 asks, CLI and POST /api/inference): --engine vllm==99.0.0 (answered with 'rules of vllm==0.29, the
  newest modelled'), 'vllm==', 'vllm==0.x', 'sglang>=1', 'vllm===0.8.0', two '==', '==0.8.0', 'vllm@0.8.0', 1e400
  and 23-digit releases, rc / post / v-prefixed / upper-case / spaced releases; --rps 0 / inf / 1e308 / 1e-7 / 1e7,
  --ttft-p99 and --tpot at 0, 1ns, 1us, 0.001ms and 1e-300 s (each told the fastest a catalog GPU reaches),
  --prompt 1M / 16M / 16M + 1 output token, --context 1e30, --disaggregate alone, on trtllm==0.5 and sglang==0.3,
  LoRA ranks 0 / 7 / 512, --max-loras 0 / 4096, --max-cpu-loras below --max-loras, LoRA on vllm==0.2 and trtllm;
- the web API never opened a path a request named (an audit hook on open(): a model, a GPU, a calibration, a
  campaign stage's model or calibration, a batch ramp given as /etc/passwd, a config file, a folder, file://, '~',
  '../..'), over /api/memory, /api/inference, /api/budget, /api/plan and /api/campaign;
- `calibrate` on hostile logs (empty, binary, 10 MiB lines, NaN / inf / zero / negative tps, mfu 4000%, Megatron
  NaN iteration times, CSV and JSON tables with 1e400 / 1e999); `report` with --out / --markdown naming an input,
  each other, a folder, a missing folder, /dev/null, a wrong suffix, and unknown / empty --sections.

Found, each fixed where every door passes (one line naming the field, exit 2):

(1) an OLMo 3 / GPT-OSS config.json stating ``"sliding_window": null`` was read with the config class's default window
    (4,096 / 128): the reader dropped every null before filling its defaults (review s20b N7). transformers 5.25.0
    keeps the null (Olmo3Config(sliding_window=None).sliding_window is None) and cannot run such a model when any
    layer slides (masking_utils.create_sliding_window_causal_mask: "Could not find a `sliding_window` argument in the
    config, or it is not set"; with a cache, cache_utils' sliding layer raises TypeError), so it is now refused,
    naming the window (adapters/config_fields.null_window_refusal); with every layer full_attention no layer needs a
    window and the config is answered, windowless.
(2) a number-bound refusal named no unit (review s20b N12): `budget ... --storage-read 1e-9` read 'must be >= 1e-06 and
    <= 1000000', where --help says GB/s a node; `--days 1e30` '<= 36500' (days), a JSON restart of -5 '<= 604800'
    (seconds). The bound words now end with the field's unit (schema/bound_words.py: UNITS by field name, days and
    seconds from their readers), the wording otherwise unchanged; a degree or a share still has none.
(3) a llama (or any gated, NeoX, MoE ...) config.json without intermediate_size was read with 4 x hidden_size (16,384
    for hidden 4,096), where transformers builds its config class's fixed default (LlamaConfig 11,008 whatever the
    hidden size, GPTNeoXConfig 24,576): memory and speed of a model transformers does not build, said nowhere. Only
    GPT-2, GPTBigCode, Falcon and MPT, whose code makes an unstated width 4 x hidden, keep that default; the others
    are refused naming intermediate_size (adapters/config_fields.FOUR_X_WIDTH_TYPES).
(4) a config.json head count (or any whole-number field) written 32.0 was read as 32: transformers 5.25.0 refuses it
    (LlamaConfig: StrictDataclassFieldValidationError "Field 'num_attention_heads' expected int, got float (value:
    32.0)"), and older releases hand it to nn.Linear, which refuses a float size; now refused, naming the field and
    the integer to write (adapters/config_fields.int_field, after the range checks: 1e9 layers still reads 'at most
    10,000').
(5) a config.json file under another name whose number is NaN / Infinity / past float range was refused as
    'config.json: rope_theta: got 'NaN'; ...', naming a file the user never gave, where every other refusal of the
    reader names the file (wave 14, hf_config._named_for): load_hf_config now retells parse_json's keyed refusals
    the same way ('/path/shape.json: rope_theta: ...'); a file called config.json keeps its name.
(6) `infer llama-3.1-8b --rps 1 --ttft-p99 1s --tpot 50ms --enable-lora --max-loras 4096 --max-lora-rank 512` was
    refused 'no catalog GPU type holds llama-3.1-8b (bf16) with one 4,096-token sequence on one such replica: a
    smaller format (--quantization) or a shorter --context / --prompt': what fills every replica is the 4,096 slots of
    rank 512 (2.68 GB each, 10,995 GB), which neither remedy frees. With LoRA on, the refusal now names the slots and
    their size and offers fewer or lower-rank slots first (jobs/inference/inputs_target._lora_words). Without --rps
    the same ask answered 'fits NO (weights alone exceed it)' (16 GB of weights on an 80 GB H100) and a note offering
    more GPUs, a smaller format or a larger GPU: it now says 'NO (weights and LoRA slots exceed it)' and the note
    adds fewer or lower-rank slots with their GB a GPU, where the weights without the slots would fit
    (jobs/inference/memory_report.py, jobs/inference/estimate._notes).
(7) a Qwen2 / Qwen3 / Qwen2-MoE config.json with use_sliding_window true and no layer_types was read as sliding on
    every layer, where transformers' config classes slide only layers i >= max_window_layers (Qwen2 / Qwen3, default
    28: a 28-layer model has none) or every other layer below it (Qwen2-MoE): a 32K-context ask was costed with a
    4,096-token window on layers that attend to everything. adapters/window_layers.default_layer_types builds the list
    as each class does (a list with no sliding layer is windowless).
(8) (1)'s reading held for Gemma 2 and Gemma 3 too: a Gemma 3 config stating "sliding_window": null took the class's
    4,096 (the null dropped before the defaults), and a Gemma 2 config that left the window out (or stated null) was
    read as windowless, where Gemma2Config defaults it to 4,096 (configuration_gemma2.py@5.25.0 L87) and
    transformers cannot run either with a null window (the same ValueError, reproduced on tiny Gemma2ForCausalLM /
    Gemma3ForCausalLM models). CONFIG_DEFAULTS gains Gemma 2's window and class_defaults refuses a stated null for
    every type whose class defaults a window.
(9) a ramp under a one-sequence steady batch read '(1 sequences of 4,096 tokens: ...)'; now '1 sequence'
    (schema/batch_ramp_field.py).
(10) review s20b N8: an integer past float range was quoted as if typed ("gpus: got 'an integer of about 5,001
    digits'", where an unknown field's said it unquoted), -10**5000 read 'is too large a number (past 1.8e308)' with no
    sign, and an object whose repr raises was 'got a E' ('not a E' after it). errors.shown describes such an integer
    itself, unquoted and signed (errors.huge_integer; core.units.refuse_huge_integer passes the value and says 'too
    large a negative number (past -1.8e308)'), an unprintable object is 'an object of type E', and types' 'not a
    <type>' takes its article (errors.a_or_an: 'not an E', 'not a bytes').
"""

import json

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- (1) an explicit null window where the config class defaults one -------------------------------------------------

OLMO3 = {"model_type": "olmo3", "hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32,
         "intermediate_size": 11008, "vocab_size": 100352, "max_position_embeddings": 65536}
GPT_OSS = {"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 4, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 32,
           "num_experts_per_tok": 4, "vocab_size": 201088, "max_position_embeddings": 131072}
NULL_WINDOW = "its sliding_attention layers need a window (transformers cannot run a null one)"


@pytest.mark.parametrize("config, default", [(OLMO3, "4,096"), (GPT_OSS, "128")])
@pytest.mark.parametrize("layer_types", [None, "one sliding"])
def test_1_a_stated_null_window_with_sliding_layers_is_refused(run_cli, tmp_path, config, default, layer_types):
    import gpuplan

    document = {**config, "sliding_window": None}
    if layer_types:  # every layer full but the last
        document["layer_types"] = ["full_attention"] * (config["num_hidden_layers"] - 1) + ["sliding_attention"]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    err = field_refusal(run_cli("memory", "--model", str(path), "--gpu", "h100"), f"{path}: sliding_window",
                        NULL_WINDOW)
    assert f"leave it out for the default {default}" in err, err
    with pytest.raises(gpuplan.InputError, match="sliding_window: got no value; its sliding_attention"):
        gpuplan.estimate_memory(gpuplan.MemoryInputs(model=str(path), gpu="h100"))


@pytest.mark.parametrize("config", [OLMO3, GPT_OSS])
def test_1_a_null_window_over_full_layers_is_windowless_and_a_left_out_one_the_default(config):
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    layers = config["num_hidden_layers"]
    full = model_spec_from_hf_config({**config, "sliding_window": None, "layer_types": ["full_attention"] * layers})
    assert full.sliding_window is None and full.layer_types == ()
    left_out = model_spec_from_hf_config(dict(config))  # the config class's default (test_window_defaults)
    assert left_out.sliding_window == (4096 if config is OLMO3 else 128)


def test_1_a_mistral_null_window_still_means_no_window():
    """Mistral 7B v0.2 ships "sliding_window": null: no window (MistralConfig has no layer_types), as before."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    spec = model_spec_from_hf_config({**OLMO3, "model_type": "mistral", "sliding_window": None,
                                      "num_key_value_heads": 32})  # stated: MistralConfig's default is 8 (w24 (7))
    assert spec.sliding_window is None


# ---- (2) a bound refusal says the field's unit ---------------------------------------------------------------------

BUDGET_ASK = {"model": "gpt2", "gpu": "h100", "gpus": 8, "tokens": "1e9", "mfu": 0.4}


@pytest.mark.parametrize("field, value, words", [
    ("storage_read", "1e-9", "must be >= 1e-06 and <= 1000000 GB/s a node"),
    ("host_copy", "2e6", "must be >= 1e-06 and <= 1000000 GB/s a GPU"),
    ("failure_rate", "0.5", "must be >= 1e-09 and <= 0.01 interruptions a GPU-hour"),
    ("spot_preemption", "1001", "must be >= 0 and <= 1000 reclaims a node-month"),
    ("eval_interval", "2e9", "must be >= 1 and <= 1000000000 optimizer steps"),
])
def test_2_a_bound_refusal_names_the_unit_at_every_door(run_cli, client, tmp_path, field, value, words):
    import gpuplan

    flags = [f"--{k.replace('_', '-')}={v}" for k, v in {**BUDGET_ASK, field: value}.items() if k != "model"]
    cli = field_refusal(run_cli("budget", "--model", "gpt2", *flags), field)
    assert cli == f"error: {field}: got '{value}'; {words}\n"
    plan = tmp_path / "ask.yaml"  # YAML reads the value as a number: quoted without its quotes
    plan.write_text("".join(f"{k}: {v}\n" for k, v in {**BUDGET_ASK, field: value}.items()), encoding="utf-8")
    assert field_refusal(run_cli("budget", str(plan)), f"{plan}: {field}").endswith(f"; {words}\n")
    assert web_refusal(client.post("/api/budget", json={**BUDGET_ASK, field: value}), field) == \
        f"{field}: got '{value}'; {words}"
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.estimate_budget(gpuplan.BudgetInputs(**BUDGET_ASK, **{field: value}))
    assert str(api.value) == f"{field}: got '{value}'; {words}"


def test_2_days_and_seconds_say_their_unit(run_cli, client):
    import gpuplan

    field_refusal(run_cli("train", "--model", "gpt2", "--gpu", "h100", "--days", "1e30"), "days",
                  "days: got '1e30'; must be > 0 and <= 36500 days")
    web_refusal(client.post("/api/budget", json={**BUDGET_ASK, "restart": -5}), "restart",
                "must be > 0 and <= 604800 s")
    with pytest.raises(gpuplan.InputError, match=r"^restart: got -5; must be > 0 and <= 604800 s$"):
        gpuplan.BudgetInputs(**BUDGET_ASK, restart=-5)


@pytest.mark.parametrize("job, flag, value, words", [
    ("infer", "--prompt", "1e30", "prompt: got '1e30'; must be > 0 and <= 16777216 tokens"),
    ("infer", "--rps", "1e30", "rps: got '1e30'; must be >= 1e-06 and <= 10000000 requests/s"),
    ("memory", "--tp", "1e30", "tp: got '1e30'; must be > 0 and <= 1048576"),  # a degree: no unit
    ("infer", "--prefix-hit", "100%", "prefix_hit: got '100%'; must be >= 0 and <= 0.99"),  # a share: none
])
def test_2_counts_in_tokens_and_rates_say_theirs_degrees_and_shares_none(run_cli, job, flag, value, words):
    code, out, err = run_cli(job, "--model", "gpt2", "--gpu", "h100", flag, value)
    assert (code, out, err) == (2, "", f"error: {words}\n")


# ---- (3) an unstated MLP width is 4 x hidden only where transformers makes it so -----------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 4096}


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "gpt_neox", "olmo2"])
def test_3_a_config_without_its_mlp_width_is_refused(run_cli, client, tmp_path, model_type):
    import gpuplan

    path = tmp_path / "shape.json"
    path.write_text(json.dumps({**LLAMA, "model_type": model_type}), encoding="utf-8")
    words = f"intermediate_size: got no value; a {model_type} config must state its MLP width: transformers would " \
            "build"  # the class and its default: tests/test_hostile_w23c.py (review R3 S1)
    assert field_refusal(run_cli("memory", "--model", str(path), "--gpu", "h100"), f"{path}: intermediate_size") \
        .startswith(f"error: {path}: {words} ")
    with pytest.raises(gpuplan.InputError, match="intermediate_size: got no value"):
        gpuplan.estimate_inference(gpuplan.InferenceInputs(model=str(path), gpu="h100"))
    web_refusal(client.post("/api/memory", json={"config": {**LLAMA, "model_type": model_type}, "gpu": "h100"}),
                "config.json: intermediate_size", "must state its MLP width")


@pytest.mark.parametrize("model_type, config, width", [
    ("gpt2", {"n_embd": 768, "n_layer": 2, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}, 3072),
    ("falcon", {"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 16, "vocab_size": 65024,
                "new_decoder_architecture": False, "multi_query": True}, 4096),
])
def test_3_gpt2_and_falcon_keep_four_times_hidden(model_type, config, width):
    """modeling_gpt2.py@5.25.0 L252: n_inner None -> 4 x hidden; configuration_falcon.py L97-98 likewise."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    assert model_spec_from_hf_config({"model_type": model_type, **config}).mlp.intermediate_size == width


def test_3_a_stated_width_is_read():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    assert model_spec_from_hf_config({**LLAMA, "intermediate_size": 11008}).mlp.intermediate_size == 11008


# ---- (4) a whole-number config field written as a float ------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("num_attention_heads", 32.0), ("num_key_value_heads", 8.0),
                                          ("num_hidden_layers", 8.0), ("vocab_size", 32000.0)])
def test_4_a_whole_float_in_a_config_is_refused_as_transformers_refuses_it(run_cli, tmp_path, field, value):
    path = tmp_path / "shape.json"
    path.write_text(json.dumps({**LLAMA, "intermediate_size": 11008, field: value}), encoding="utf-8")
    err = field_refusal(run_cli("infer", "--model", str(path), "--gpu", "h100"), f"{path}: {field}")
    assert err == f"error: {path}: {field}: got {value!r}; must be a JSON integer ({int(value)}, not {value!r})\n"


def test_4_a_fractional_count_keeps_its_words():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.errors import InputError

    with pytest.raises(InputError, match=r"num_attention_heads: got 32\.5; must be a positive integer$"):
        model_spec_from_hf_config({**LLAMA, "intermediate_size": 11008, "num_attention_heads": 32.5})


# ---- (5) a bad number in a config file under another name names that file ------------------------------------------

@pytest.mark.parametrize("literal, shown", [("NaN", "NaN"), ("1e400", "1e400"), ("-Infinity", "-Infinity")])
def test_5_a_bad_number_names_the_file_it_is_in(run_cli, tmp_path, literal, shown):
    text = json.dumps({**LLAMA, "intermediate_size": 11008})[:-1] + f', "rope_theta": {literal}}}'
    named = tmp_path / "shape.json"
    named.write_text(text, encoding="utf-8")
    assert field_refusal(run_cli("memory", "--model", str(named), "--gpu", "h100"), f"{named}: rope_theta") == \
        f"error: {named}: rope_theta: got '{shown}'; must be a finite JSON number\n"
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(text, encoding="utf-8")  # the Hugging Face layout keeps its name
    field_refusal(run_cli("memory", "--model", str(tmp_path / "m"), "--gpu", "h100"), "config.json: rope_theta")


# ---- (6) a load no replica holds for its LoRA slots names them -----------------------------------------------------

LORA_ASK = {"model": "llama-3.1-8b", "gpu": "h100", "rps": 1, "ttft_p99": "1s", "tpot": "50ms", "max_loras": 4096,
            "max_lora_rank": 512}


def test_6_lora_slots_no_replica_holds_are_named_with_their_remedy(run_cli, client):
    import gpuplan

    # one slot of rank 512 on llama-3.1-8b: 512 x (q 8,192 + k 5,120 + v 5,120 + o 8,192 + 3 x 18,432 MLP in + out)
    # x 32 layers x 2 bytes = 2.684 GB; 4,096 slots = 10,995 GB, more than any replica of one NVLink domain holds
    words = ("max_loras: got 4096; 4,096 LoRA slots of rank 512 (10,995 GB before tensor parallelism) leave no catalog "
             "GPU type room for one 4,096-token sequence of llama-3.1-8b (bf16) within one NVLink domain, which its "
             "weights alone leave: fewer or lower-rank slots (--max-loras, --max-lora-rank)")  # review R3 S4: max_loras
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in LORA_ASK.items() if k != "model"]
    assert field_refusal(run_cli("infer", "--model", "llama-3.1-8b", *flags), "max_loras") == f"error: {words}\n"
    # the plan-file door: tests/test_hostile_w23c.py test_s4 (four doors)
    assert web_refusal(client.post("/api/inference", json=LORA_ASK), "max_loras") == words
    with pytest.raises(gpuplan.InputError) as api:
        gpuplan.estimate_inference(gpuplan.InferenceInputs(**LORA_ASK))
    assert str(api.value) == words


def test_6_without_lora_the_refusal_keeps_its_words(run_cli):
    err = field_refusal(run_cli("infer", "--model", "llama-3.1-405b", "--gpu", "h100", "--rps", "1", "--ttft-p99",
                                "1h", "--tpot", "1min", "--prompt", "8M", "--engine", "sglang"), "rps")  # vLLM refuses 8M
    assert "with one 8,388,864-token sequence on one such replica: a smaller format (--quantization) or a shorter " \
        "--context / --prompt\n" in err and "LoRA" not in err, err


def test_6_without_rps_the_memory_answer_names_the_slots(run_json):
    out = run_json("infer", "--model", "llama-3.1-8b", "--gpu", "h100", "--max-loras", "4096", "--max-lora-rank", "512")
    lines = {line["key"]: line for section in out["sections"] for line in section["lines"]}
    assert lines["fits"]["text"] == "NO (weights and LoRA slots exceed it)", lines["fits"]
    assert any("or fewer or lower-rank LoRA slots (--max-loras, --max-lora-rank: 10,995 GB a GPU)" in note
               for note in out["notes"]), out["notes"]
    big = run_json("infer", "--model", "llama-3.1-405b", "--gpu", "h100", "--enable-lora")  # 810 GB of weights
    big_lines = {line["key"]: line for section in big["sections"] for line in section["lines"]}
    assert big_lines["fits"]["text"] == "NO (weights alone exceed it)"
    assert not any("LoRA slots" in note for note in big["notes"]), big["notes"]


# ---- (7) which layers slide: as each config class builds layer_types ----------------------------------------------

QWEN = {"model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16,
        "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 32768,
        "use_sliding_window": True, "sliding_window": 4096}
QWEN_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 512}


@pytest.mark.parametrize("model_type, extra, max_window_layers, sliding", [
    ("qwen2", {}, 6, (6, 7)),  # configuration_qwen2.py@5.25.0 L87-93: i >= max_window_layers
    ("qwen3", {"head_dim": 64}, 6, (6, 7)),  # stated: Qwen3Config's default is 128 (w24 (7))
    ("qwen2", {}, None, ()),  # the default 28 of an 8-layer model: no sliding layer, no window
    ("qwen2_moe", {**QWEN_MOE, "shared_expert_intermediate_size": 512}, 6, (0, 2, 4)),  # (i + 1) % 2 and i < 6
    ("qwen3_moe", QWEN_MOE, 6, tuple(range(8))),  # one window on every layer (modeling_qwen3_moe.py L149)
    ("mistral", {}, 6, tuple(range(8))),
])
def test_7_sliding_layers_are_those_transformers_builds(model_type, extra, max_window_layers, sliding):
    """Checked against transformers 5.25.0 here (Qwen2Config(num_hidden_layers=8, use_sliding_window=True,
    sliding_window=4096, max_window_layers=6).layer_types and its siblings) when writing this test."""
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    config = {**QWEN, **extra, "model_type": model_type}
    if max_window_layers is not None:
        config["max_window_layers"] = max_window_layers
    spec = model_spec_from_hf_config(config)
    if not sliding:
        assert spec.sliding_window is None and spec.layer_types == ()
        return
    assert spec.sliding_window == 4096
    assert spec.layer_types == tuple("sliding" if i in sliding else "full" for i in range(8))


def test_7_a_malformed_max_window_layers_is_refused(run_cli, tmp_path):
    path = tmp_path / "qwen.json"
    path.write_text(json.dumps({**QWEN, "max_window_layers": -1}), encoding="utf-8")
    assert field_refusal(run_cli("memory", "--model", str(path), "--gpu", "h100"), f"{path}: max_window_layers") == \
        f"error: {path}: max_window_layers: got -1; must be a whole number >= 0\n"


# ---- (8) Gemma 2 / Gemma 3 windows as their config classes read them -----------------------------------------------

GEMMA2 = {"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 4, "num_attention_heads": 8,
          "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216, "vocab_size": 256000,
          "max_position_embeddings": 8192}


def test_8_a_gemma2_config_without_a_window_takes_the_class_default():
    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    spec = model_spec_from_hf_config(dict(GEMMA2))  # Gemma2Config: 4,096; layer_types sliding where (i + 1) % 2
    assert spec.sliding_window == 4096 and spec.layer_types == ("sliding", "full", "sliding", "full")


GEMMA3 = {**GEMMA2, "model_type": "gemma3_text", "num_hidden_layers": 6}


@pytest.mark.parametrize("config, default", [(GEMMA2, "4,096"), (GEMMA3, "4,096")])
def test_8_a_stated_null_window_is_refused_for_gemma_too(run_cli, tmp_path, config, default):
    path = tmp_path / "gemma.json"
    path.write_text(json.dumps({**config, "sliding_window": None}), encoding="utf-8")
    err = field_refusal(run_cli("memory", "--model", str(path), "--gpu", "h100"), f"{path}: sliding_window",
                        NULL_WINDOW)
    assert f"leave it out for the default {default}" in err, err


# ---- (9) one sequence, not '1 sequences' ---------------------------------------------------------------------------

def test_9_a_one_sequence_steady_batch_is_singular(run_cli):
    field_refusal(run_cli("budget", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1e12",
                          "--mfu", "predicted", "--global-batch", "1", "--seq-len", "4096", "--batch-ramp", "1B:1"),
                  "batch_ramp", "must be below the steady batch (1 sequence of 4,096 tokens: --global-batch")


# ---- (10) a huge integer or an unprintable object, described -------------------------------------------------------

class _NoRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


E = type("E", (_NoRepr,), {})


@pytest.mark.parametrize("value, words", [
    (10**5000, "gpus: got an integer of about 5,001 digits; is too large a number (past 1.8e308)"),
    (-10**5000, "gpus: got a negative integer of about 5,001 digits; is too large a negative number (past -1.8e308)"),
    (-10**400, "gpus: got a negative integer of about 401 digits; is too large a negative number (past -1.8e308)"),
    (E(), "gpus: got an object of type E; expected a number or its text, e.g. 8, '8' or '7B', not an E"),
], ids=["5001-digits", "minus-5001-digits", "minus-401-digits", "unprintable"])
def test_10_a_value_past_printing_is_described_with_its_sign_and_article(value, words):
    import gpuplan

    with pytest.raises(gpuplan.InputError) as refused:
        gpuplan.BudgetInputs(model="llama-3.1-8b", gpus=value)
    assert str(refused.value) == words


def test_10_an_unknown_field_and_a_json_body_say_the_same_words(client):
    import gpuplan

    with pytest.raises(gpuplan.InputError, match=r"^frob: got an integer of about 5,001 digits; unknown field"):
        gpuplan.BudgetInputs(model="llama-3.1-8b", frob=10**5000)
    body = '{"model": "llama-3.1-8b", "gpus": -' + "9" * 400 + "}"  # the web quotes the digits as sent, cut
    message = web_refusal(client.post("/api/budget", content=body, headers={"content-type": "application/json"}),
                          "gpus", "; is too large a negative number (past -1.8e308)")
    assert message.startswith("gpus: got -999") and len(message) < 200, message
