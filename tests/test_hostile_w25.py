"""Hostile inputs, wave 25 (2026-12-07, helper H of session 23). Found, each fixed where every door passes (one line
naming the field, exit 2):

(1) --bytes-per-token took any number above 0 (`budget ... --tokenize --bytes-per-token 1e-300` answered, a raw-text
    read rate of 1e-294 B/s a node): raw text holds at least one byte a token (byte-level BPE, SentencePiece's byte
    fallback), so it now takes 1 to 1,000 (core.economics.io.MIN_RAW_BYTES_PER_TOKEN / MAX_RAW_BYTES_PER_TOKEN), and
    a BudgetSettings built directly says the same bounds;
(2) `infer llama-3.1-8b --context 1M` was answered with a note where vLLM, the default engine, refuses at start-up a
    max_model_len above the length it derives from config.json (vllm/config/model.py _get_and_verify_max_len: the
    smallest stated length key, model_max_length where stated, times a rope_scaling factor but for llama3 / longrope
    / su and Gemma 3, from original_max_position_embeddings for YaRN), unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (from
    0.5.4: absent from 0.5.3.post1's vllm/envs.py, present in 0.5.4's). Under vLLM it is now refused naming --context
    (or --prompt) and the model's maximum (jobs/inference/context_limits.py); SGLang and TensorRT-LLM keep the note.
"""

from __future__ import annotations

import json

import pytest
from helpers import field_refusal, web_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite

BUDGET = ("budget", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--tokens", "1e12", "--tokenize")


# ---- (1) --bytes-per-token ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e-300", "0.5", "0.999", "0", "-1", "1001", "1e308"])
def test_1_bytes_per_token_outside_1_to_1000_is_refused(run_cli, value):
    line = field_refusal(run_cli(*BUDGET, f"--bytes-per-token={value}"), "bytes_per_token")
    assert line == f"error: bytes_per_token: got '{value}'; must be >= 1 and <= 1000 bytes a token\n", line


@pytest.mark.parametrize("value, read", [("1", 1.0), ("3.94", 3.94), ("1000", 1000.0)])
def test_1_bytes_per_token_inside_is_answered_and_read(run_json, value, read):
    """The raw-text read rate is tokens/s a node x bytes a token (core.economics.io.bytes_per_s): 1 and 1,000 B a
    token give rates 1,000 x apart, the default 4 B a token 4 x the 1 B one."""
    rates = {v: run_json(*BUDGET, f"--bytes-per-token={v}")["results"]["io_bytes_per_s_raw"] for v in ("1", value)}
    assert rates[value] == pytest.approx(rates["1"] * read, rel=1e-9)


def test_1_every_door_says_the_same(run_cli, client, tmp_path):
    """Text ('0.5': the CLI, a text body) is echoed quoted, a number (a plan file, a JSON number) bare."""
    import gpuplan
    from gpuplan.errors import InputError

    bound = "must be >= 1 and <= 1000 bytes a token"
    ask = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "tokens": "1e12", "tokenize": True}
    assert field_refusal(run_cli(*BUDGET, "--bytes-per-token", "0.5"), "bytes_per_token") == \
        f"error: bytes_per_token: got '0.5'; {bound}\n"
    plan = tmp_path / "budget.yaml"
    plan.write_text("model: llama-3.1-8b\ngpus: 8\ntokens: 1e12\ntokenize: true\nbytes_per_token: 0.5\n")
    assert field_refusal(run_cli("budget", str(plan)), f"{plan}: bytes_per_token") == \
        f"error: {plan}: bytes_per_token: got 0.5; {bound}\n"
    for value, shown in ((0.5, "0.5"), ("0.5", "'0.5'")):
        web = web_refusal(client.post("/api/budget", json={**ask, "bytes_per_token": value}), "bytes_per_token")
        with pytest.raises(InputError) as api:
            gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask, bytes_per_token=value))
        assert web == str(api.value) == f"bytes_per_token: got {shown}; {bound}"


def test_1_a_budget_settings_built_directly_says_the_schema_bounds():
    from gpuplan.errors import InputError
    from gpuplan.jobs.budget.model import BudgetSettings, validate_settings

    for value in (0.5, 0.0, float("nan"), 1001.0):
        with pytest.raises(InputError) as refused:
            validate_settings(BudgetSettings(raw_bytes_per_token=value))
        assert str(refused.value).endswith("must be >= 1 and <= 1000 bytes a token"), refused.value


# ---- (2) vLLM's max_model_len ---------------------------------------------------------------------------------------

LLAMA31 = ("vLLM refuses a max_model_len above llama-3.1-8b's 131,072 (max_position_embeddings) unless "
           "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, which runs positions never trained; --engine sglang or trtllm answers it "
           "with a note")


def test_2_llama_31_past_its_131072_positions_is_refused_under_vllm(run_cli, client):
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--context", "1M"), "context")
    assert line == f"error: context: got '1M'; must be at most 131,072: {LLAMA31}\n"
    one_past = field_refusal(run_cli("infer", "llama-3.1-8b", "--context", "131073", "--no-search"), "context")
    assert one_past == f"error: context: got 131073; must be at most 131,072: {LLAMA31}\n"
    web = web_refusal(client.post("/api/inference", json={"model": "llama-3.1-8b", "context": "1M"}), "context")
    assert f"error: {web}\n" == line


def test_2_a_prompt_and_output_past_it_name_the_prompt(run_cli):
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--prompt", "130K", "--output-tokens", "2K"), "prompt")
    assert line == ("error: prompt: got '130K'; --prompt 133,120 + --output-tokens 2,048 = 135,168 tokens; at most "
                    f"131,072 in all: {LLAMA31}\n")


def test_2_at_the_maximum_it_is_answered(run_json):
    answer = run_json("infer", "llama-3.1-8b", "--context", "128K", "--no-search")
    assert answer["inputs"]["context"] == 131072
    assert not any("exceeds the model's maximum" in note for note in answer["notes"])


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_2_other_engines_keep_the_note(run_json, engine):
    notes = run_json("infer", "llama-3.1-8b", "--context", "1M", "--engine", engine, "--no-search")["notes"]
    assert any(note.startswith("context 1,048,576 exceeds the model's maximum of 131,072 positions, already extended "
                               "by llama3 rope_scaling (factor 8.0)") for note in notes), notes


def test_2_before_054_no_override_is_offered(run_cli):
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--context", "1M", "--engine", "vllm==0.5.3"), "context")
    assert "(no override before vLLM 0.5.4)" in line and "VLLM_ALLOW_LONG" not in line, line
    line = field_refusal(run_cli("infer", "llama-3.1-8b", "--context", "1M", "--engine", "vllm==0.5.4"), "context")
    assert "unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in line, line


def test_2_a_rope_model_without_scaling_is_offered_rope_scaling(run_cli):
    line = field_refusal(run_cli("infer", "llama-2-7b", "--context", "8192", "--no-search"), "context")
    assert line.startswith("error: context: got 8192; must be at most 4,096: vLLM refuses a max_model_len above "
                           "llama-2-7b's 4,096 (max_position_embeddings)") and "YaRN factor 2 via rope_scaling" in line


@pytest.mark.parametrize("config, derived", [
    # YaRN: original_max_position_embeddings x factor (vLLM), not max_position_embeddings
    ({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                         "original_max_position_embeddings": 32768}}, 131072),
    # linear / dynamic: max_position_embeddings x factor
    ({"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}}, 8192),
    ({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "dynamic", "factor": 3.0}}, 12288),
    # llama3 / longrope: already counted in max_position_embeddings
    ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072),
    ({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "longrope", "factor": 32.0}}, 131072),
    # Gemma 3: skipped
    ({"model_type": "gemma3_text", "max_position_embeddings": 131072,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0}}, 131072),
    # the smallest stated key; model_max_length wins where stated
    ({"max_position_embeddings": 4096, "seq_length": 2048}, 2048),
    ({"max_position_embeddings": 4096, "model_max_length": 8192}, 8192),
    # rope_parameters nested by layer type (transformers 5): each type's factor
    ({"max_position_embeddings": 4096, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0},
                                                           "sliding_attention": {"rope_type": "default"}}}, 8192),
    ({}, None),  # no key stated: vLLM reads the config class's default, which gpuplan does not know
])
def test_2_vllm_max_model_len_is_derived_as_vllm_does(config, derived):
    from gpuplan.jobs.inference.context_limits import vllm_max_model_len

    got = vllm_max_model_len({"model_type": "llama", **config})
    assert (got[0] if got else None) == derived, got


def test_2_a_config_json_with_yarn_runs_to_its_scaled_length(run_cli, run_json, tmp_path):
    """A Qwen2.5-style YaRN config (32,768 positions, factor 4): vLLM derives 131,072, so 100K is answered (with the
    'already extended' note: positions past 32,768 were scaled, not trained) and 131,073 refused."""
    config = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 32768,
              "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    assert run_json("infer", "--model", str(path), "--context", "100K", "--no-search")["inputs"]["context"] == 102400
    line = field_refusal(run_cli("infer", "--model", str(path), "--context", "131073", "--no-search"), "context")
    assert "must be at most 131,072" in line and "rope_scaling factor 4" in line, line
