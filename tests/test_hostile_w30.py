"""Hostile inputs, wave 30 (helper H4, session 26): each case is refused in one line naming the field, exit status 2,
or answered in time, at every door that takes it, with nothing half-written.

Probed first (~50,000 cases: in-process CLI, the web test client, the Python API, `measure` subprocesses) and found
answered or refused as the house rule asks: every TEXT option of train / budget / memory / infer / plan with 41 more
spellings (1e309, Arabic-Indic and mathematical digits, a zero-width space, '1e309%', '1e309d', 'nanh', NUL, 400
digits, '2**3', '8P' ...); 370 jointly impossible layouts and asks (tp past the heads, pp past the layers, cp on short
sequences, ep not dividing the experts, micro-batch above the global batch, framework x ZeRO x pp, infer's tp / pp /
draft / speculative / engine pairs) and 245 MoE ones; every field of the five *Inputs x 45 Python values (numpy,
Decimal, Fraction, bytes, sets, objects whose __index__ / __str__ lie, surrogates); every field of the five web routes
x 36 JSON values; every field of train / memory / infer plan files x 34 YAML and 20 TOML spellings; report / profile
--out paths; serve --host names; the public Python functions (resolve_model, resolve_gpu, count_parameters,
estimate_campaign) and the *Inputs' pydantic methods; ~400 config.json variants through `measure` (every supported
model type, PretrainedConfig's own fields, generation values, RoPE variants).

Found, each fixed where every door passes:
(1) adapters.read_once waited forever on a FIFO swapped in between its stat and its read;
(2) a task-head config (LlamaForSequenceClassification ...) was answered as the causal LM;
(3) resolve_model(model_type=5 / '') blamed the config or read '' as no override;
(4) - (8) measure / profile: return_dict false (exit 70), num_labels 1e9 (a hang), dynamic RoPE flat or nested by
    layer type (exit 70), a read-only config property (40 lines of stderr), max_new_tokens -5 (exit 70), and
    transformers' lines beside the answer (output flags, pad_token_id -1, xielu, GPT-2's loss_type, rope_scaling on
    GPT-2);
(9) report --sections wrote its report with training fields no section asked reads left unchecked (zero: 7);
(10) a partial_rotary_factor on a type that rotates each head whole, under a scaled rope_type (transformers fails);
(11) model_validate_strings raised pydantic's ValidationError;
(12) DeepSeek / Qwen-MoE layer-placement keys were read on Mixtral (a dense layer transformers does not build);
(13) torch_dtype was read before dtype (transformers reads dtype first), and a bad dtype named torch_dtype;
(14) a Phi-3 rope_type its config class refuses was answered by memory and infer.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from gpuplan.errors import InputError

# ---- 1. adapters.read_once: a FIFO swapped in for the file between its check and its read -------------------------


class _Waited(Exception):
    pass


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not hasattr(signal, "SIGALRM"), reason="needs FIFOs and SIGALRM")
def test_a_fifo_swapped_in_after_the_check_is_not_waited_on(tmp_path, monkeypatch):
    """read_once hashed the file by a stat of its name, then Path.read_bytes() of it: a FIFO put in its place between
    the two (a config.json or a calibration file swapped while `memory` or the web API reads it) was opened for a
    blocking read, which waits for a writer forever. The swap is made certain here: the name's stat reports the
    regular file it was. Now the descriptor is opened without waiting and checked; the reader refuses the FIFO."""
    from gpuplan.adapters import read_once as R

    monkeypatch.setattr(R, "_KEPT", {})
    regular = tmp_path / "was.json"
    regular.write_text("{}")
    fifo = tmp_path / "cal.json"
    os.mkfifo(fifo)
    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda self, **kw: real_stat(regular if self == fifo else self, **kw))

    def refuse():
        raise InputError("calibration", str(fifo), "is not a regular file (a device, FIFO or socket); expected a file")

    def waited(*_):
        raise _Waited

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(5)
    try:
        with pytest.raises(InputError, match="is not a regular file"):
            R.read_once(fifo, "calibration", refuse)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---- 2. a config.json of a task head (sequence classification, QA ...): not the causal LM it was answered as ---------

LLAMA_1B = os.path.join(os.path.dirname(__file__), os.pardir, "src", "gpuplan", "catalog", "models",
                        "llama-3.2-1b.json")


def _llama_1b(**changes) -> dict:
    import json

    with open(LLAMA_1B, encoding="utf-8") as handle:
        return json.load(handle)["config"] | changes


def _refused_at_every_config_door(run_cli, client, tmp_path, config: dict, field: str, line: str) -> None:
    """``config`` written as a config.json is refused with ``line`` (naming ``field``) by memory, infer and measure,
    and as a pasted config by the web API's memory route."""
    import json

    from helpers import field_refusal, web_refusal

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    for job in (("memory", str(path), "--gpus", "1"), ("infer", "--model", str(path)),
                ("measure", "--model", str(path), "--seq-len", "32", "--micro-batch", "1")):
        assert field_refusal(run_cli(*job), field) == line, job
    web = web_refusal(client.post("/api/memory", json={"config": config, "gpus": 1}), field)
    assert f"error: {web}\n" == line


@pytest.mark.parametrize("architecture, head", [
    ("LlamaForSequenceClassification", "a sequence-classification head"),
    ("LlamaForTokenClassification", "a token-classification head"),
    ("LlamaForQuestionAnswering", "a question-answering head")])
def test_a_task_head_config_is_refused_at_every_door(run_cli, client, tmp_path, architecture, head):
    """Llama 3.2 1B's config with architectures ["LlamaForSequenceClassification"] (a `score` head of num_labels on the
    last token) was answered by memory, infer and measure, exit 0, as LlamaForCausalLM (a 128,256-wide LM head and a
    loss over every token; measure built AutoModelForCausalLM from it): another model than the config's."""
    line = (f"error: config.json: architectures: got '{architecture}'; is {head}; gpuplan models language models "
            'with their LM head: give a causal-LM config (e.g. ["LlamaForCausalLM"])\n')
    _refused_at_every_config_door(run_cli, client, tmp_path, _llama_1b(architectures=[architecture]),
                                  "config.json: architectures", line)


def test_a_causal_lm_listed_beside_a_task_head_is_still_answered(run_json, tmp_path):
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(architectures=["LlamaForCausalLM", "LlamaForSequenceClassification"])))
    # 18 B a parameter on one GPU (2 bf16 weights + 4 fp32 grads + 4 master + 8 Adam moments) x the published
    # 1,235,814,400 of Llama 3.2 1B (the catalog entry's published_params)
    assert run_json("memory", str(path), "--gpus", "1")["results"]["model_states_total"] == 18 * 1_235_814_400


# ---- 3. the Python API's resolve_model: a model_type that is no text, or empty ---------------------------------------


@pytest.mark.parametrize("model_type, words", [(5, "model_type: got 'int'; expected a name (text)"),
                                               (b"llama", "model_type: got 'bytes'; expected a name (text)"),
                                               ("", "model_type: got ''; must not be empty"),
                                               ("  ", "model_type: got '  '; must not be empty")])
def test_resolve_model_names_a_model_type_that_is_no_name(model_type, words):
    """gpuplan.resolve_model('llama-3.1-8b', model_type=5) was refused as "config.json: got 'llama-3.1-8b'; could not be
    read as a Hugging Face config (AttributeError: 'int' object has no attribute 'strip')" (the catalog model blamed);
    '' was read as no override where the CLI, plan files and the web refuse it ('must not be empty')."""
    import gpuplan

    with pytest.raises(InputError) as caught:
        gpuplan.resolve_model("llama-3.1-8b", model_type=model_type)
    assert str(caught.value) == words


def test_resolve_model_reads_a_model_type_given_as_text():
    import gpuplan

    assert gpuplan.resolve_model("llama-3.1-8b", model_type="llama") == gpuplan.resolve_model("llama-3.1-8b")


# ---- 4. measure: a config.json whose forward returns a tuple, or its hidden states --------------------------------


def _measured(run_cli, path) -> tuple[int, str, str]:
    return run_cli("measure", str(path), "--seq-len", "64", "--micro-batch", "1", "--json")


def _measured_peaks(run_cli, tmp_path, *configs: dict) -> list[int]:
    """`measure`'s peak for each config.json (each answered, nothing on stderr), in order."""
    import json

    peaks = []
    for n, config in enumerate(configs):
        path = tmp_path / f"config_{n}" / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(config), encoding="utf-8")
        code, out, err = _measured(run_cli, path)
        assert code == 0 and err == "", (code, err[-300:])
        peaks.append(json.loads(out)["results"]["measured_peak"])
    return peaks


@pytest.mark.parametrize("key, value", [("return_dict", False), ("output_hidden_states", True),
                                        ("output_attentions", True)])
def test_measure_reads_a_config_that_asks_forward_for_other_outputs(run_cli, tmp_path, key, value):
    """Llama 3.2 1B at 2 layers with "return_dict": false ended `measure` in exit 70 ("internal error: AttributeError:
    'tuple' object has no attribute 'last_hidden_state'"; `profile` reads `.loss` the same way); output_hidden_states:
    true was answered with a transformers line on stderr ('The following generation flags are not valid ...'). These
    switch what forward returns, not the model: measured as the same config without them (a relation, not a pin)."""
    plain, asked = _measured_peaks(run_cli, tmp_path, _llama_1b(num_hidden_layers=2),
                                   _llama_1b(num_hidden_layers=2, **{key: value}))
    assert asked == plain > 0


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")
def test_measure_does_not_build_a_classification_head_s_labels(run_cli, tmp_path):
    """"num_labels": 1000000000 in a causal LM's config.json: `measure` (and `profile`) built transformers' config,
    whose num_labels names every label (id2label: LABEL_0 ...), 1e9 of them: no answer after 120 s, memory growing;
    10**6 took 42 s. LlamaForCausalLM reads no labels (memory and infer never did): measured as the plain config."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(num_hidden_layers=2, num_labels=10**9)), encoding="utf-8")

    def waited(*_):
        raise _Waited

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(60)
    try:
        code, out, err = _measured(run_cli, path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert code == 0 and err == "", (code, err[-300:])


# ---- 5. report --sections: fields only the sections left out read ---------------------------------------------------


@pytest.mark.parametrize("field, value, line", [
    ("zero", "7", "zero: got 7; must be >= 0 and <= 3"),
    ("days", "-5", "days: got -5; must be a positive, finite number"),
    ("tokens", "banana", "tokens: got 'banana'; expected a number with an optional K/M/B/T suffix, e.g. 7B or 2T"),
    ("rank_by", "nonsense", "rank_by: got 'nonsense'; must be one of time, cost, gpus")])
@pytest.mark.parametrize("sections", ["inference", "memory"])
def test_report_checks_training_fields_the_sections_asked_do_not_read(run_cli, tmp_path, field, value, line, sections):
    """`report plan.yaml --sections inference` (or memory) with `zero: 7`, `days: -5`, `tokens: banana` wrote its
    report, exit 0: no section asked reads them, so nothing checked them (a serving field beside training sections
    alone was checked already, commands.report). Now the cheapest training section that reads them checks them, and
    nothing is written."""
    from helpers import field_refusal

    plan, out = tmp_path / "p.yaml", tmp_path / "r.html"
    plan.write_text(f"model: llama-3.1-8b\ngpu: h100\n{field}: {value}\n", encoding="utf-8")
    err = field_refusal(run_cli("report", str(plan), "--no-plots", "--sections", sections, "--out", str(out)),
                        f"{plan}: {field}")
    assert err == f"error: {plan}: {line}\n" and not out.exists()


def test_report_with_valid_unread_training_fields_still_writes(run_cli, tmp_path):
    plan, out = tmp_path / "p.yaml", tmp_path / "r.html"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ntokens: 1T\nzero: 1\nrank_by: cost\n", encoding="utf-8")
    code, stdout, err = run_cli("report", str(plan), "--no-plots", "--sections", "inference", "--out", str(out))
    assert code == 0 and out.exists(), err


def test_report_parses_unread_training_fields_without_estimating_them(run_cli, tmp_path):
    """7d9a2399 ran the whole memory/budget/plan estimate to check fields no asked section reads, so a refusal of
    that estimate (8 GPUs hold no layout of 405B parameters) killed an inference-only report: exit 2, where 267d1641
    wrote it. The fields are parsed with the job's schema instead, not estimated."""
    plan, out = tmp_path / "p405.yaml", tmp_path / "r.html"
    plan.write_text("model: llama-3.1-405b\ngpu: h100\ngpus: 8\ntokens: 1T\n", encoding="utf-8")
    code, stdout, err = run_cli("report", str(plan), "--no-plots", "--sections", "inference", "--out", str(out))
    assert code == 0 and out.exists(), err


# ---- 6. measure: dynamic NTK RoPE; a read-only property of the config class ------------------------------------------


def _pythia_1b(**changes) -> dict:
    import json

    with open(LLAMA_1B.replace("llama-3.2-1b", "pythia-1b"), encoding="utf-8") as handle:
        return json.load(handle)["config"] | changes


@pytest.mark.parametrize("base, factor", [(_llama_1b, 2.0), (_llama_1b, 0.5), (_pythia_1b, 2.0)])
def test_measure_reads_dynamic_rope_as_the_plain_config(run_cli, tmp_path, base, factor):
    """rope_scaling {rope_type: dynamic} ended `measure` in exit 70 ('internal error: DataDependentOutputException:
    aten._local_scalar_dense.default'): dynamic NTK RoPE asks each forward whether the sequence outgrew its cache, which
    a fake tensor cannot answer; memory and infer answered the same file. Below the model's positions the forward is
    default RoPE's (adapters.config_fields.static_rope): the same peak as the config without rope_scaling. GPT-NeoX keeps
    its rotary share (rotary_pct 0.25) in rope_parameters: 12a48ff8 dropped it, a full-width rotary (Pythia 1B at 2
    layers: 3,067,659,888 B where the plain config measures 3,067,659,120 B)."""
    plain, dynamic = _measured_peaks(run_cli, tmp_path, base(num_hidden_layers=2), base(
        num_hidden_layers=2, rope_scaling={"rope_type": "dynamic", "factor": factor}))
    assert dynamic == plain > 0


def test_measure_names_a_read_only_config_property_in_one_line(run_cli, tmp_path):
    """"use_return_dict": false (a read-only property of transformers' config classes) printed transformers' log line
    with the whole config as JSON (40 lines) on stderr before gpuplan's refusal, which named no field ('config.json:
    got "property ... has no setter"')."""
    import json

    from helpers import field_refusal

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(num_hidden_layers=2, use_return_dict=False)), encoding="utf-8")
    err = field_refusal(_measured(run_cli, path), "config.json: use_return_dict")
    assert err == ("error: config.json: use_return_dict: got \"property 'use_return_dict' of 'LlamaConfig' object has "
                   "no setter\"; transformers 5.25.0 refuses it\n")


def test_measure_names_a_generation_value_transformers_refuses(run_cli, tmp_path):
    """"max_new_tokens": -5 in config.json (a generation value transformers copies into the model's GenerationConfig
    when it builds the model) ended `measure` in exit 70 ('internal error: ValueError: `max_new_tokens` must be greater
    than 0, but is -5.'); now the config's check names it, before anything is built."""
    import json

    from helpers import field_refusal

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(num_hidden_layers=2, max_new_tokens=-5)), encoding="utf-8")
    err = field_refusal(_measured(run_cli, path), "config.json: max_new_tokens")
    assert err == ("error: config.json: max_new_tokens: got '`max_new_tokens` must be greater than 0, but is -5.'; "
                   "transformers 5.25.0 refuses it\n")


@pytest.mark.parametrize("change", [{"pad_token_id": -1}, {"hidden_act": "xielu"}], ids=["pad-1", "xielu"])
def test_measure_answers_without_transformers_lines_on_stderr(run_cli, tmp_path, change):
    """pad_token_id -1 (LLaMA-1's converted configs) and hidden_act xielu were measured, exit 0, with transformers' own
    lines on stderr ('The following generation flags are not valid and may be ignored: ['pad_token_id']', 'CUDA-fused
    xIELU not available ... pip install git+https://...'): the answer alone now."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(num_hidden_layers=2, **change)), encoding="utf-8")
    code, out, err = _measured(run_cli, path)
    assert code == 0 and err == "" and json.loads(out)["results"]["measured_peak"] > 0, (code, err[-300:])


# ---- 7. a partial rotary share on a model type that rotates each head whole ---------------------------------------


@pytest.mark.parametrize("change, field, kind", [
    ({"partial_rotary_factor": 0.5}, "partial_rotary_factor", "llama3"),  # Llama 3.2's own rope_scaling
    ({"rope_scaling": {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}},
     "rope_scaling.partial_rotary_factor", "linear")])
def test_a_partial_rotary_share_a_whole_head_type_cannot_run_is_refused_at_every_door(run_cli, client, tmp_path, change,
                                                                                    field, kind):
    """Llama 3.2 1B's config with partial_rotary_factor 0.5: LlamaForCausalLM's apply_rotary_pos_emb multiplies q whole
    by cos (modeling_llama.py L146-148), and every scaled rope_type's init builds cos for half the head, so its first
    forward fails ('The size of tensor a (64) must match the size of tensor b (32)'; measure and profile exit 70),
    while memory and infer answered. Checked against transformers 5.25.0 building and stepping the model."""
    line = (f"error: config.json: {field}: got 0.5; a llama model rotates each head whole, and rope_type {kind} builds "
            "frequencies for 0.5 of it: transformers 5.25.0 fails its first forward (GPT-NeoX and Phi-3 rotate a "
            "share); give 1 or leave it out\n")
    _refused_at_every_config_door(run_cli, client, tmp_path, _llama_1b(**change), f"config.json: {field}", line)


def test_a_partial_share_under_default_rope_or_on_gpt_neox_is_still_answered(run_json, tmp_path):
    """Under default RoPE LlamaForCausalLM's own init ignores the share (a 64-wide inv_freq of 32 entries at head_dim
    64, checked): answered, as transformers builds it; GPT-NeoX (Pythia's rotary_pct 0.25) rotates a share."""
    import json

    path = tmp_path / "config.json"
    config = {k: v for k, v in _llama_1b(partial_rotary_factor=0.5).items() if k != "rope_scaling"}
    path.write_text(json.dumps(config), encoding="utf-8")
    assert run_json("memory", str(path), "--gpus", "1")["results"]["model_states_total"] == 18 * 1_235_814_400
    assert run_json("memory", "pythia-70m", "--gpus", "1")["results"]["fits"]


def test_measure_of_gpt2_writes_the_answer_alone():
    """`gpuplan measure gpt2` (and `profile gpt2`) printed transformers' "`loss_type=None` was set in the config but it
    is unrecognized. Using the default loss: `ForCausalLMLoss`." beside every answer: GPT2LMHeadModel's class name
    names no loss, so loss_function warns and falls back to ForCausalLM, the loss it now names (the same peak:
    1,244,399,184 B at --seq-len 64 before and after)."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gpuplan", "measure", "gpt2", "--seq-len", "64", "--micro-batch", "1",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-300:]
    assert json.loads(done.stdout)["results"]["measured_peak"] > 0


def test_measure_of_a_gpt2_config_with_rope_scaling_writes_one_line_or_the_answer(run_cli, tmp_path):
    """GPT-2 and MPT read no rope_scaling (learned or ALiBi positions); transformers' config class warned
    "FutureWarning: `rope_scaling` is deprecated ..." on stderr beside the answer (GPT-2) or before the one-line
    refusal of --attention-kernel flash (MPT), two lines."""
    import json
    import subprocess
    import sys

    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 128, "n_head": 4, "n_layer": 2,
              "n_positions": 256, "vocab_size": 1000, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run([sys.executable, "-W", "default", "-m", "gpuplan", "measure", str(path), "--seq-len", "64",
                           "--micro-batch", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-400:]


# ---- 8. the Python API: pydantic's third constructor -----------------------------------------------------------------


@pytest.mark.parametrize("cls_name", ["TrainingInputs", "BudgetInputs", "MemoryInputs", "PlanInputs", "InferenceInputs"])
@pytest.mark.parametrize("obj, words", [({"seq_len": "x"}, "seq_len: got 'x'; "),
                                        ([1], "inputs: got 'list'; expected a mapping of field names to values")])
def test_model_validate_strings_refuses_as_the_constructor(cls_name, obj, words):
    """MemoryInputs.model_validate_strings({"gpus": "x"}) raised pydantic's ValidationError (a 4-line message), where
    model_validate and model_validate_json raise InputError naming the field (session 25, 43416bcb)."""
    import gpuplan

    with pytest.raises(InputError) as caught:
        getattr(gpuplan, cls_name).model_validate_strings(obj)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value), str(caught.value)


def test_model_validate_strings_reads_text_as_the_flags():
    import gpuplan

    inputs = gpuplan.MemoryInputs.model_validate_strings({"model": "llama-3.1-8b", "gpus": "1K", "seq_len": "8K"})
    assert (inputs.gpus, inputs.seq_len) == (1000, 8192)


@pytest.mark.parametrize("rope", [
    {"full_attention": {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e6},
     "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
    {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}], ids=["nested", "flat-beside-the-class-nesting"])
def test_measure_reads_dynamic_rope_nested_by_layer_type(run_cli, tmp_path, rope):
    """Gemma 3 1B (layers nested by type: full / sliding attention) with dynamic RoPE in its rope_parameters: each
    entry a layer type reads is read as default RoPE, the nesting kept (a flat replacement lost the 'sliding_attention'
    entry: KeyError, exit 70, where the class had merged a flat dynamic entry beside its own nested ones)."""
    import json

    with open(os.path.join(os.path.dirname(LLAMA_1B), "gemma-3-1b.json"), encoding="utf-8") as handle:
        base = json.load(handle)["config"] | {"num_hidden_layers": 2}
    base["layer_types"] = base.get("layer_types", ["sliding_attention", "full_attention"])[:2]
    plain, dynamic = _measured_peaks(run_cli, tmp_path, base, {k: v for k, v in base.items() if k != "rope_scaling"}
                                     | {"rope_parameters": rope})
    assert dynamic == plain > 0


# ---- 9. an MoE layer-placement key the type's class does not read ----------------------------------------------------


@pytest.mark.parametrize("change", [{"first_k_dense_replace": 1}, {"moe_layer_freq": 2}, {"decoder_sparse_step": 2},
                                    {"mlp_only_layers": [0]}, {"decoder_sparse_step": 1, "mlp_only_layers": [0, 1]}])
def test_a_mixtral_config_with_deepseek_s_dense_layers_is_read_as_transformers_builds_it(run_json, tmp_path, change):
    """Mixtral 8x7B's config.json with "first_k_dense_replace": 1 (DeepSeek's key) was read with its first layer dense,
    45,469,634,560 parameters, where MixtralConfig / MixtralDecoderLayer read neither key and build every layer's
    experts (transformers 5.25.0: no first_k_dense_replace, moe_layer_freq, decoder_sparse_step or mlp_only_layers in
    models/mixtral); Qwen-MoE's decoder_sparse_step 2 was read as every other layer dense. 46,702,792,704, the
    published count (KerasHub preset mixtral_8_7b_en, the catalog entry's published_params), as without the key."""
    import json

    with open(os.path.join(os.path.dirname(LLAMA_1B), "mixtral-8x7b.json"), encoding="utf-8") as handle:
        config = json.load(handle)["config"] | change
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    states = run_json("memory", str(path), "--gpus", "1")["results"]["model_states_total"]
    assert states == 18 * 46_702_792_704  # 18 B a parameter on one GPU (bf16 weights, fp32 grads, master, Adam)


# ---- 10. a config.json giving both dtype and torch_dtype --------------------------------------------------------------


def test_a_config_with_dtype_and_torch_dtype_is_read_by_dtype_as_transformers_does(run_json, tmp_path):
    """transformers 5.25.0 reads torch_dtype only where dtype is None (configuration_utils.py L440-442); gpuplan read
    torch_dtype first: Llama 3.2 1B with torch_dtype float32 beside dtype bfloat16 was served as fp32 weights, 4.94 GB
    a GPU, where vLLM / transformers load bf16: 1,235,814,400 x 2 B = 2,471,628,800 B."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama_1b(torch_dtype="float32", dtype="bfloat16")), encoding="utf-8")
    results = run_json("infer", "--model", str(path), "--gpu", "h100")["results"]
    assert results["weights_per_gpu"] == 2 * 1_235_814_400


@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
def test_a_dtype_of_no_reading_is_refused_naming_the_key_written(run_cli, tmp_path, key):
    """"dtype": "float64" (transformers 5's key) was refused as 'config.json: torch_dtype: got 'float64'', a key the
    file does not have."""
    import json

    from helpers import field_refusal

    config = {k: v for k, v in _llama_1b().items() if k != "torch_dtype"} | {key: "float64"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    field_refusal(run_cli("memory", str(path), "--gpus", "1"), f"config.json: {key}", "got 'float64'; one of bfloat16")


# ---- 11. a RoPE type Phi-3's config class refuses ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dynamic", "linear", "llama3"])
def test_a_phi3_rope_type_its_class_refuses_is_refused_at_every_door(run_cli, client, tmp_path, kind):
    """Phi-3 mini with rope_scaling {rope_type: dynamic}: Phi3Config.validate_rope takes default or longrope alone
    (configuration_phi3.py L121-122, transformers 5.25.0), so measure refused it naming no field ('config.json: got
    "Class validation error ..."'), while memory and infer answered it."""
    import json

    with open(os.path.join(os.path.dirname(LLAMA_1B), "phi-3-mini-4k.json"), encoding="utf-8") as handle:
        config = json.load(handle)["config"]
    config["rope_scaling"] = {"rope_type": kind, "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 4096}
    line = (f"error: config.json: rope_scaling.rope_type: got '{kind}'; a phi3 config takes default or longrope (su "
            "and yarn read as longrope): transformers 5.25.0 refuses any other (Phi3Config.validate_rope)\n")
    _refused_at_every_config_door(run_cli, client, tmp_path, config, "config.json: rope_scaling.rope_type", line)


def test_phi3_s_own_rope_types_are_still_answered(run_json, tmp_path):
    """Phi-3 mini with longrope (and su, which Phi3Config reads as longrope): 18 B a parameter on one GPU x the
    published 3,821,079,552 (the catalog entry's published_params)."""
    import json

    with open(os.path.join(os.path.dirname(LLAMA_1B), "phi-3-mini-4k.json"), encoding="utf-8") as handle:
        config = json.load(handle)["config"]
    for kind in ("longrope", "su"):
        config["rope_scaling"] = {"rope_type": kind, "short_factor": [1.0] * 48, "long_factor": [1.0] * 48}
        path = tmp_path / f"{kind}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        assert run_json("memory", str(path), "--gpus", "1")["results"]["model_states_total"] == 18 * 3_821_079_552
