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
    (or --prompt) and the model's maximum (jobs/inference/context_limits.py); SGLang and TensorRT-LLM keep the note;
(3) a training log whose reserved peak is below its allocated one (a table's memory_reserved_gib under memory_gib, a
    Megatron memory report's max reserved under max allocated) calibrated, exit 0, reading the allocated column alone:
    PyTorch reserves every allocated byte, so such a log swapped columns or units; refused naming the reserved column
    (adapters/log_records.check_reserved);
(4) a table logging both tokens_per_s (the whole job) and tokens_per_s_per_device that disagree by a factor (100 vs
    200 a device on 8 GPUs) calibrated from tokens_per_s alone, the other column ignored; refused naming
    tokens_per_s_per_device (calibrate/log_checks.check_rates_agree);
(5) a table logging step_time_s and tokens_per_s was fitted with the step time and the batch the flags give, whatever
    tokens a step the log's own rates say (table.csv: 2.02 s x 64,887 tokens/s = 131,072 tokens, read with --tp 8
    --seq-len 8192 as 1 sequence of 8,192 tokens: a compute factor 16x off, exit 0); refused naming --global-batch
    and the batch the log implies (16 sequences of 8,192);
(6) a torchtitan memory of '1e300' GiB was echoed as 'memory (GiB): got inf' (the bytes overflowed): now 'got
    '1e300'' (adapters/training_logs._size);
(7) a trainer_state.json whose global_step differs from its final entry's step (999 vs 10), or whose
    train_runtime x train_steps_per_second is no Trainer's (100 s x 5 = 500 against 10), calibrated from the
    final step alone (10 s a step); refused naming global_step / train_steps_per_second (adapters/hf_steps: max_steps
    / runtime before transformers 5.19, the steps run since a resume from 5.19; test_hostile_w25_mend (1));
(8) a config.json of a type gpuplan reads flat (llama, mistral, qwen2 ...) that also nests a text_config was read
    from the nested mapping (hidden 512 where the top level says 256: 16.7 MB of weights for 6.3), where
    LlamaForCausalLM builds from the top-level fields and transformers keeps text_config as an unread attribute;
    refused naming text_config at every door (adapters/architectures.language_config); a VLM type (llava, gemma3)
    still reads its text_config;
(9) a config.json naming a shape field by another family's key (a Llama's n_layer / n_head / n_embd / num_kv_heads,
    a Falcon's n_layer) was read by that key, where the type's config class ignores it and builds its own default
    (LlamaConfig(n_layer=2): 32 layers; LlamaConfig(num_kv_heads=2): 8 K/V heads of 8): given alone it is now refused
    naming the key and the one to write (seq_length too: Qwen2Config(seq_length=8192) keeps 32,768 positions);
    beside the field's own key it is not read (adapters/class_shapes.
    SHAPE_ALIASES / READ_ALIASES: GPT-2 / GPTBigCode keep n_embd, n_layer, n_head, n_positions, Falcon num_kv_heads,
    MPT / DBRX d_model, as their classes' attribute_map / __init__ read them).
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
    # no key stated: vLLM reads the config class's default (LlamaConfig 2,048, Qwen2Config 32,768; w25 mend (3))
    ({}, 2048),
    ({"model_type": "qwen2"}, 32768),
    ({"model_type": "no_such_type"}, None),  # a class gpuplan does not list
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


# ---- (3)-(6) training logs whose columns contradict each other or the flags -----------------------------------------

LOG_FLAGS = ("--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "4096")


def _calibrate(run_cli, tmp_path, name: str, text: str, *flags: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return run_cli("calibrate", str(path), *(flags or LOG_FLAGS)), str(path)


def test_3_a_table_reserved_peak_below_the_allocated_one_is_refused(run_cli, tmp_path):
    result, path = _calibrate(run_cli, tmp_path, "t.csv", "step,memory_gib,memory_reserved_gib\n1,60,10\n2,60,10\n")
    assert field_refusal(result, "memory_reserved_gib") == (
        f"error: memory_reserved_gib: got 10; in {path}, row 1: below memory_gib 60; PyTorch reserves every allocated "
        "byte (reserved = allocated + cached), so the reserved peak is at least the allocated one: check the columns "
        "and their units\n")
    # --zero 1: at the table's ZeRO 0, train's memory for these flags (megatron; session 26) is 154.60 GiB: refused
    equal, _ = _calibrate(run_cli, tmp_path, "e.csv", "step,memory_gib,memory_reserved_gib\n1,60,60\n2,60,61.5\n",
                          *LOG_FLAGS, "--zero", "1")
    assert equal[0] == 0, equal[2]


def test_3_a_megatron_max_reserved_below_max_allocated_is_refused(run_cli, tmp_path):
    # 420 ms a step: ~5x gpuplan's for the flags (5,000 ms fit 59x, past the 0.1-10 a calibration factor may be since
    # hostile wave 27b, calibrate/model.FACTOR_RANGE)
    iterations = "".join(f" iteration {i}/ 100 | elapsed time per iteration (ms): 420.0 |\n" for i in (1, 2, 3))
    report = "[Rank 0] (after 1 iterations) memory (MB) | allocated: 1 | max allocated: 12606 | reserved: 6 | " \
             "max reserved: {}\n"
    result, path = _calibrate(run_cli, tmp_path, "m.log", report.format(100) + iterations)
    assert field_refusal(result, "max reserved (MB)").startswith(
        f"error: max reserved (MB): got 100; in {path}: below max allocated (MB) 12606; PyTorch reserves")
    kept, _ = _calibrate(run_cli, tmp_path, "k.log", report.format(17482) + iterations, *LOG_FLAGS, "--tp", "8")
    assert kept[0] == 0, kept[2]


def test_4_whole_job_and_per_device_rates_that_disagree_are_refused(run_cli, tmp_path):
    # 200 tokens/s a device x 8 GPUs = 1,600, against a whole-job 100: a factor 16 apart
    result, path = _calibrate(run_cli, tmp_path, "r.csv",
                              "step,tokens_per_s,tokens_per_s_per_device\n1,100,200\n2,100,200\n")
    assert field_refusal(result, "tokens_per_s_per_device") == (
        f"error: tokens_per_s_per_device: got 200; in {path} (median): x 8 GPUs (--gpus) = 1,600 tokens/s, but "
        "tokens_per_s (the whole job) is 100; the job's rate is the sum over its devices: check the columns and "
        "--gpus\n")


def test_4_rates_that_agree_within_5_percent_are_answered(run_cli, tmp_path):
    # 8 x 8,000 = 64,000 against 65,536: 2.3 % apart (a per-device rate rounded as a log prints it)
    result, _ = _calibrate(run_cli, tmp_path, "ok.csv", "step,tokens_per_s,tokens_per_s_per_device\n"
                           "1,65536,8000\n2,65536,8000\n3,65536,8000\n", *LOG_FLAGS, "--tp", "8",
                           "--global-batch", "32")
    assert result[0] == 0, result[2]


def test_5_a_step_and_rate_that_contradict_the_batch_are_refused(run_cli):
    from pathlib import Path

    table = str(Path(__file__).parent / "fixtures" / "logs" / "table.csv")
    flags = ("--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "8", "--seq-len", "8192")
    # after the warm-up row: median step 2.02 s (2.02, 2.00, 2.04) x median 64,887 tokens/s (64,887, 65,536,
    # 64,251) = 131,071.7 tokens a step = 16.0 sequences of 8,192; the flags read dp 1 x micro-batch 1 = 1 sequence
    line = field_refusal(run_cli("calibrate", table, *flags), "global_batch")
    assert line == (f"error: global_batch: got 'not given'; 1 sequence x --seq-len 8,192 = 8,192 tokens a step "
                    f"(--micro-batch x dp), but {table} logs 2.02 s a step at 64,887 tokens/s = 131,072 tokens a step "
                    "= 16 sequences of 8,192: give --global-batch 16 (or check --seq-len and --gpus)\n")
    given = field_refusal(run_cli("calibrate", table, *flags, "--global-batch", "4"), "global_batch")
    assert given.startswith("error: global_batch: got 4; 4 sequences x --seq-len 8,192 = 32,768 tokens a step, but")
    code, out, err = run_cli("calibrate", table, *flags, "--global-batch", "16")
    assert code == 0 and out.startswith("Calibration from measurements"), err


def test_6_a_memory_past_the_float_range_is_echoed_as_logged(run_cli, tmp_path):
    line = ("[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  {}  loss:  7.62585  grad_norm: 26.6250  memory: "
            "1e300GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%\n")
    result, path = _calibrate(run_cli, tmp_path, "t.log", "".join(line.format(i) for i in (1, 2, 3)))
    assert field_refusal(result, "memory") == (f"error: memory: got '1e300'; in {path}: overflows the float range in "
                                               "bytes; a real run logs under 1e14 B\n")


def _state(**final) -> str:
    entry = {"step": 10, "train_runtime": 100.0, "train_steps_per_second": 0.1, "train_samples_per_second": 0.8,
             "train_loss": 2.0, **final.pop("entry", {})}
    return json.dumps({"log_history": [{"loss": 2.0, "step": 5}, entry], "global_step": 10, "max_steps": 10, **final})


HF_FLAGS = ("--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "4096", "--tp", "8")


def test_7_a_trainer_state_whose_counts_disagree_is_refused(run_cli, tmp_path):
    result, path = _calibrate(run_cli, tmp_path, "g.json", _state(global_step=999), *HF_FLAGS)
    assert field_refusal(result, "global_step") == (
        f"error: global_step: got 999; in {path}: the final entry logs step 10; trainer_state.json saves the two equal "
        "at the end of training: give one run's file\n")
    result, path = _calibrate(run_cli, tmp_path, "s.json", _state(entry={"train_steps_per_second": 5.0}), *HF_FLAGS)
    assert field_refusal(result, "train_steps_per_second") == (
        f"error: train_steps_per_second: got 5; in {path}: x train_runtime 100 s = 500 steps, above both global_step "
        "10 and max_steps 10; the Trainer divides max_steps (transformers before 5.19) or the steps its train() call "
        "ran (5.19 on: at most global_step) by train_runtime: give one run's file\n")


def test_7_the_fixture_and_a_consistent_state_are_answered(run_cli, tmp_path):
    from pathlib import Path

    # the fixture: 21,062.2956 s x 0.138 steps/s = 2,906.6 steps against max_steps 2,907 (0.138 is rounded)
    fixture = str(Path(__file__).parent / "fixtures" / "logs" / "hf_trainer_state.json")
    code, _, err = run_cli("calibrate", fixture, "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1",
                           "--seq-len", "512")
    assert code == 0, err
    # 20 s over 10 steps of 8 sequences: 2 s a step, ~3.3x gpuplan's; _state's 100 s fit 16.7x, past the 0.1-10 a
    # calibration factor may be (calibrate/model.FACTOR_RANGE, hostile wave 27b)
    entry = {"train_runtime": 20.0, "train_steps_per_second": 0.5, "train_samples_per_second": 4.0}
    result, _ = _calibrate(run_cli, tmp_path, "ok.json", _state(entry=entry), *HF_FLAGS)
    assert result[0] == 0, result[2]


LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 8, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096}


def test_8_a_text_config_inside_a_flat_decoder_type_is_refused_at_every_door(run_cli, client, tmp_path):
    config = {**LLAMA, "text_config": {**LLAMA, "hidden_size": 512}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    words = ("text_config: got 'a mapping of 8 keys'; a llama config's modeling file reads its top-level fields, not "
             "a nested text_config (a multimodal model's): remove text_config, or give the multimodal model's own "
             "model_type (e.g. llava)")
    for job in (("memory", str(path), "--gpus", "1"), ("infer", "--model", str(path), "--no-search"),
                ("plan", str(path), "--gpus", "8", "--tokens", "1e9")):
        assert field_refusal(run_cli(*job), "config.json: text_config") == f"error: config.json: {words}\n", job
    web = web_refusal(client.post("/api/inference", json={"config": config}), "config.json: text_config")
    assert web == f"config.json: {words}"


def test_8_a_multimodal_type_still_reads_its_text_config(run_json, tmp_path):
    """llava (not a type gpuplan reads flat) nests the Llama: its weights are the flat Llama's exactly."""
    config = {"model_type": "llava", "text_config": LLAMA}
    flat, nested = tmp_path / "flat.json", tmp_path / "nested.json"
    flat.write_text(json.dumps(LLAMA), encoding="utf-8")
    nested.write_text(json.dumps(config), encoding="utf-8")
    weights = [run_json("infer", "--model", str(p), "--no-search")["results"]["weights_per_gpu"] for p in (flat, nested)]
    assert weights[0] == weights[1] > 0


@pytest.mark.parametrize("model_type, fields, alias, key", [
    ("llama", {"hidden_size": 256, "n_layer": 2, "num_attention_heads": 8}, "n_layer", "num_hidden_layers"),
    ("llama", {"n_embd": 256, "num_hidden_layers": 2, "num_attention_heads": 8}, "n_embd", "hidden_size"),
    ("llama", {"hidden_size": 256, "num_hidden_layers": 2, "n_head": 8}, "n_head", "num_attention_heads"),
    ("llama", {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8, "num_kv_heads": 2}, "num_kv_heads",
     "num_key_value_heads"),
    ("mistral", {"hidden_size": 256, "num_layers": 2, "num_attention_heads": 8, "head_dim": 32,
                 "num_key_value_heads": 8}, "num_layers", "num_hidden_layers"),
    ("falcon", {"hidden_size": 256, "n_layer": 2, "num_attention_heads": 8}, "n_layer", "num_hidden_layers"),
    ("qwen2", {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
               "max_position_embeddings": None,
               "seq_length": 8192}, "seq_length", "max_position_embeddings"),
])
def test_9_another_familys_key_alone_is_refused(model_type, fields, alias, key):
    """transformers builds the class default for the field, not the alias's value (checked on the installed class)."""
    from transformers import AutoConfig

    from gpuplan.adapters.hf_config import model_spec_from_hf_config
    from gpuplan.errors import InputError

    config = {"model_type": model_type, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 4096,
              **fields}
    config = {k: v for k, v in config.items() if v is not None}
    built = AutoConfig.for_model(model_type, **{k: v for k, v in config.items() if k != "model_type"})
    assert getattr(built, key) != fields[alias]  # the class ignored the alias
    with pytest.raises(InputError) as refused:
        model_spec_from_hf_config(dict(config))
    assert str(refused.value) == (f"config.json: {alias}: got {fields[alias]}; a {model_type} config does not read it "
                                  f"(its config class reads {key} and would build its own default): write {key}")


def test_9_beside_the_own_key_it_is_not_read_and_the_families_that_read_it_keep_it(run_cli, tmp_path):
    from transformers import AutoConfig

    from gpuplan.adapters.hf_config import model_spec_from_hf_config

    config = {**LLAMA, "n_layer": 9, "n_head": 2, "num_kv_heads": 2}  # LlamaConfig: 4 layers, 8 heads, 8 K/V heads
    built = AutoConfig.for_model("llama", **{k: v for k, v in config.items() if k != "model_type"})
    spec = model_spec_from_hf_config(dict(config))
    assert (spec.num_layers, spec.attention.num_heads, spec.attention.num_kv_heads) == \
        (built.num_hidden_layers, built.num_attention_heads, built.num_key_value_heads) == (4, 8, 8)
    gpt2 = {"model_type": "gpt2", "n_embd": 256, "n_layer": 2, "n_head": 8, "vocab_size": 1000, "n_positions": 1024}
    spec = model_spec_from_hf_config(dict(gpt2))
    assert (spec.hidden_size, spec.num_layers, spec.attention.num_heads, spec.max_position_embeddings) == \
        (256, 2, 8, 1024)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "num_hidden_layers": None, "n_layer": 2}), encoding="utf-8")
    field_refusal(run_cli("infer", "--model", str(path), "--no-search"), "config.json: n_layer",
                  "write num_hidden_layers")
