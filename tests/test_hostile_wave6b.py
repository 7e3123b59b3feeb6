"""Hostile inputs, wave 6 (2026-12-05), second part (the first: tests/test_hostile_wave6.py): options
that did nothing and said nothing. Each refusal is one line on stderr naming the field, exit 2;
the valid neighbour still answers."""

import pytest

from helpers import field_refusal, one_line_refusal


# ---- a communication allowance where the step model prices communication ----------------------

@pytest.mark.parametrize("command", ["train", "budget"])
@pytest.mark.parametrize("extra", [("--mfu", "predicted"), ("--tp", "2"), ("--recompute", "full")])
def test_a_communication_allowance_with_a_predicted_time_is_refused(run_cli, command, extra):
    """With --mfu predicted (or fixed degrees, which predict it) the time is the layout's modelled
    step, communication included; --comm-allowance 0.3 was read as 0 (results comm_allowance 0.0,
    the same wall-clock) and the answer did not say so."""
    field_refusal(run_cli(command, "llama-2-7b", "--gpus", "64", "--comm-allowance", "0.3", *extra), "comm_allowance",
            "applies when the MFU is given")


def test_the_allowance_still_applies_to_a_given_or_solved_mfu(run_json):
    given = run_json("train", "llama-2-7b", "--gpus", "64", "--mfu", "0.4", "--comm-allowance", "0.3")["results"]
    assert given["comm_allowance"] == pytest.approx(0.3)
    assert given["wall_days_with_comm"] == pytest.approx(1.3 * given["wall_days"], rel=1e-9)
    # 0 is what the predicted time uses: it contradicts nothing
    predicted = run_json("train", "llama-2-7b", "--gpus", "64", "--mfu", "predicted", "--comm-allowance", "0")
    assert predicted["results"]["comm_allowance"] == 0


def test_the_api_refuses_the_allowance_with_a_predicted_mfu():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    response = TestClient(create_app(), raise_server_exceptions=False).post(
        "/api/training", json={"model": "llama-2-7b", "gpus": 64, "mfu": "predicted", "comm_allowance": 0.2})
    assert response.status_code == 422 and response.json()["field"] == "comm_allowance", response.text[:300]


# ---- a flag and its negation together ---------------------------------------------------------

@pytest.mark.parametrize("args, field, shown", [
    (("infer", "llama-3.1-8b", "--no-search", "--search"), "search", "--no-search and --search"),
    (("train", "--tokenize", "--no-tokenize"), "tokenize", "--tokenize and --no-tokenize"),
    (("plan", "llama-2-7b", "--gpus", "8", "--explain", "--no-explain"), "explain", "--explain and --no-explain"),
    (("train", "--no-tokenize", "--no-tokenize"), "tokenize", "given twice (--no-tokenize)"),
])
def test_a_flag_and_its_negation_together_are_refused(run_cli, args, field, shown):
    """`--search --no-search` was answered with the last one (click keeps it), as `--gpus 8 --gpus 9`
    was before the given-twice rule; every --no-X negates --X, so they count as one option."""
    field_refusal(run_cli(*args), field, shown)


def test_a_negation_alone_still_answers(run_cli):
    assert run_cli("train", "--no-tokenize")[0] == 0
    assert run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search")[0] == 0


# ---- a duration in 'M' ------------------------------------------------------------------------

@pytest.mark.parametrize("flag, value", [("--days", "3M"), ("--days", "1M"), ("--restart", "10M"),
                                         ("--checkpoint-interval", "30M")])
def test_a_duration_in_capital_m_is_refused_as_minutes_or_months(run_cli, flag, value):
    """The unit was lower-cased: `--days 3M` (three months, as systemd.time reads M) was 3 minutes and
    the answer asked for 13,461,539 x 3 GPUs. Lower-case m stays minutes; min is the documented form."""
    field_refusal(run_cli("budget", "--params", "7B", flag, value), flag[2:].replace("-", "_"), "minutes or months")


def test_minutes_and_other_capital_units_still_read():
    from gpuplan.core.units import parse_duration

    assert parse_duration("90min") == parse_duration("90m") == 5400.0
    assert parse_duration("2W") == 2 * 604800.0 and parse_duration("36H") == 36 * 3600.0


# ---- report: a plots folder planted as a symbolic link ------------------------------------------

def test_report_refuses_a_plots_folder_that_is_a_symbolic_link_and_writes_nothing(run_cli, tmp_path):
    """--markdown r.md puts its plots in r-plots/; a link planted there (a shared /tmp) was followed
    and the SVGs were written wherever it pointed, where --out and --markdown themselves refuse a link."""
    pytest.importorskip("matplotlib")
    plan, victim, out = tmp_path / "plan.yaml", tmp_path / "victim", tmp_path / "out"
    plan.write_text("model: llama-2-7b\ngpus: 8\n")
    victim.mkdir()
    out.mkdir()
    (out / "r-plots").symlink_to(victim)
    field_refusal(run_cli("report", str(plan), "--out", str(out / "r.html"), "--markdown", str(out / "r.md")),
            "markdown", "a symbolic link (to")
    assert list(victim.iterdir()) == [] and sorted(p.name for p in out.iterdir()) == ["r-plots"]


# ---- memory: an HSDP shard group with nothing sharded -------------------------------------------

@pytest.mark.parametrize("extra,stages", [(("--zero", "0"), "1, 2 or 3"), (("--framework", "hf"), "2 or 3")])
def test_a_shard_group_without_sharding_is_refused(run_cli, extra, stages):
    """--shard-group 2 with ZeRO 0 (given, or hf's DDP default) left the peak unchanged (187.49 GB
    on 8 H100 for llama-3.1-8b with and without it) and said nothing; the stages named are the framework's
    (hf's HYBRID_SHARD: 2 or 3, review R1 M4)."""
    field_refusal(run_cli("memory", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--shard-group", "2", *extra),
            "shard_group", f"give --zero {stages};")


def test_a_shard_group_with_sharding_changes_the_peak(run_json):
    args = ("memory", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--zero", "3")
    whole, grouped = run_json(*args)["results"], run_json(*args, "--shard-group", "2")["results"]
    assert grouped["peak_total"] > whole["peak_total"]  # states sharded over 2 ranks, not 8


# ---- measure / profile: an unknown activation reaches transformers no more ----------------------

@pytest.mark.parametrize("command", [("measure", "--seq-len", "16"),
                                     ("profile", "--seq-len", "16", "--steps", "1", "--warmup", "0")])
def test_an_unknown_activation_is_refused_before_the_model_is_built(run_cli, tmp_path, command):
    """transformers' ACT2FN['nope'] raised KeyError inside the build: `measure` ended 'internal error:
    KeyError: 'nope'' (exit 70). The config reader refuses the name first (adapters/config_fields.py)."""
    import json
    from pathlib import Path

    config = json.loads((Path(__file__).resolve().parents[1] / "examples/llama-2-7b/config.json").read_text())
    config.update(hidden_act="nope", num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                  num_attention_heads=4, num_key_value_heads=4, vocab_size=1000)
    (tmp_path / "config.json").write_text(json.dumps(config))
    field_refusal(run_cli(command[0], "--model", str(tmp_path), *command[1:]), "config.json: hidden_act", "got 'nope'")


# ---- measure: config.json fields only transformers reads ----------------------------------------

TINY = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            num_key_value_heads=4, vocab_size=1000)


@pytest.mark.parametrize("change, field, fragment", [
    ({"rope_theta": "x"}, "config.json: rope_theta", "positive number"),  # TypeError in the forward
    ({"pad_token_id": 5000}, "config.json: pad_token_id", "below vocab_size (1000)"),  # nn.Embedding assert
    ({"use_cache": "x"}, "config.json: use_cache", "transformers"),  # StrictDataclassFieldValidationError
    ({"initializer_range": "x"}, "config.json: initializer_range", "transformers"),
    ({"head_dim": 7}, "config.json: head_dim", "RoPE turns channel pairs"),  # its validate_rope (now the reader's)
])
def test_measure_refuses_what_transformers_refuses_in_one_line(run_cli, tmp_path, change, field, fragment):
    """Each ended `measure` with 'internal error: ...' (exit 70; the strict-dataclass ones over several
    lines). Fields gpuplan reads are checked by the reader; the rest by transformers' own config
    checks, reported as one line naming the field (profile/measure.py _build_config)."""
    import json
    from pathlib import Path

    pytest.importorskip("transformers")
    config = json.loads((Path(__file__).resolve().parents[1] / "examples/llama-2-7b/config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **TINY, **change}))
    field_refusal(run_cli("measure", "--model", str(tmp_path), "--seq-len", "16"), field, fragment)


# ---- a sequence past a learned position table (GPT-2) -------------------------------------------

@pytest.mark.parametrize("args", [("profile", "gpt2", "--seq-len", "2048", "--steps", "1"),
                                  ("measure", "gpt2", "--seq-len", "2048"),
                                  ("train", "gpt2", "--gpus", "8", "--seq-len", "4096"),  # typed: the default now
                                  # follows the table (tests/test_defaults_follow_model.py)
                                  ("memory", "gpt2", "--seq-len", "1025")])
def test_a_sequence_past_gpt2s_learned_positions_is_refused(run_cli, args):
    """GPT-2's 1,024-row position table (n_positions) has no row past it: `profile gpt2 --seq-len 2048`
    ended 'internal error: IndexError' (exit 70), while measure (fake tensors) and train answered for a
    model that cannot run. Refused before torch is imported; RoPE models keep extrapolating."""
    field_refusal(run_cli(*args), "seq_len", "gpt2's 1,024 learned positions")


def test_a_sequence_within_the_table_and_a_rope_model_past_its_maximum_answer(run_cli):
    assert run_cli("train", "gpt2", "--gpus", "8", "--seq-len", "1024")[0] == 0
    assert run_cli("train", "llama-2-7b", "--gpus", "64", "--seq-len", "8K")[0] == 0  # 4,096 positions, RoPE


@pytest.mark.parametrize("change, field", [({"bos_token_id": 5000}, "config.json: bos_token_id"),
                                           ({"eos_token_id": [1, 5000]}, "config.json: eos_token_id"),
                                           ({"eos_token_id": "x"}, "config.json: eos_token_id")])
def test_token_ids_past_the_vocabulary_are_refused_by_every_job(run_cli, tmp_path, change, field):
    import json
    from pathlib import Path

    config = json.loads((Path(__file__).resolve().parents[1] / "examples/llama-2-7b/config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **TINY, **change}))
    for command in (("train", "--gpus", "8"), ("measure", "--seq-len", "16")):
        field_refusal(run_cli(command[0], "--model", str(tmp_path), *command[1:]), field, "below vocab_size (1000)")


def test_a_transformers_default_pad_id_past_a_small_vocabulary_is_named(run_cli, tmp_path):
    """Phi3Config fills in pad_token_id 32000: a phi3 config.json with 1,000 tokens and no pad_token_id
    failed nn.Embedding's padding_idx assert (exit 70), after two '[transformers] Model config' lines."""
    import json

    pytest.importorskip("transformers")
    config = {"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], **TINY, "max_position_embeddings": 4096}
    (tmp_path / "config.json").write_text(json.dumps(config))
    field_refusal(run_cli("measure", "--model", str(tmp_path), "--seq-len", "16"), "config.json: pad_token_id",
            "transformers' default")
    (tmp_path / "config.json").write_text(json.dumps({**config, "pad_token_id": None}))
    code, _, err = run_cli("measure", "--model", str(tmp_path), "--seq-len", "16")
    assert code == 0 and "[transformers]" not in err, err


@pytest.mark.parametrize("model, change, field", [
    ("pythia-70m", {"rotary_emb_base": "x"}, "config.json: rotary_emb_base"),  # TypeError in the forward
    ("gemma-3-12b", {"rope_local_base_freq": {}}, "config.json: rope_local_base_freq"),
    ("gemma-2-2b", {"hidden_activation": "x"}, "config.json: hidden_activation"),  # KeyError beside hidden_act
])
def test_family_fields_transformers_runs_on_are_checked(run_cli, tmp_path, model, change, field):
    """A sweep of every key of 13 catalog configs (shrunk) x {'x', -1, {}, 0} through `measure`: 880
    cases, these 5 ended in 'internal error' (exit 70); each key is now checked by the reader."""
    import json
    from pathlib import Path

    config = json.loads((Path(__file__).resolve().parents[1] / f"src/gpuplan/catalog/models/{model}.json").read_text())
    config = config["config"]
    target = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    target.update(change)
    (tmp_path / "config.json").write_text(json.dumps(config))
    field_refusal(run_cli("train", "--model", str(tmp_path), "--gpus", "8"), field)


# ---- profile: adapter options as train holds them ----------------------------------------------

@pytest.mark.parametrize("extra, fragment", [(("--lora-rank", "8"), "give --finetune lora"),
                                             (("--finetune", "lora", "--lora-rank", "1000"), "hidden size 512")])
def test_profile_holds_adapter_options_as_train_does(run_cli, extra, fragment):
    """`profile pythia-70m --lora-rank 8` trained in full and `--finetune lora --lora-rank 1000` (above
    pythia-70m's 512 hidden units) ran, exit 0; `train` refuses both. Refused before torch is imported."""
    field_refusal(run_cli("profile", "pythia-70m", "--seq-len", "16", "--steps", "1", *extra), "lora_rank", fragment)


# ---- a list or range of GPU counts outside `plan` -------------------------------------------------

@pytest.mark.parametrize("args", [("train", "--gpus", "8,16"), ("budget", "--gpus", "512-4096"),
                                  ("memory", "llama-3.1-8b", "--gpus", "8,16"),
                                  ("infer", "llama-3.1-8b", "--gpus", "2-4")])
def test_a_list_of_gpu_counts_outside_plan_says_plan_takes_it(run_cli, args):
    """It was 'expected a number with an optional K/M/B/T suffix', which '8,16' reads as to a user who
    saw `plan --gpus 256,512`."""
    field_refusal(run_cli(*args), "gpus", "is for `gpuplan plan`")
    assert run_cli("plan", "llama-2-7b", "--gpus", "8,16")[0] == 0


def test_a_yaml_list_of_gpu_counts_outside_plan_says_so_too(run_cli, tmp_path):
    plan = tmp_path / "train.yaml"
    plan.write_text("params: 7B\ngpus: [8, 16]\n")
    code, _, err = run_cli("train", str(plan))
    one_line_refusal(code, err, "gpus: got [8, 16]; one total GPU count")


# ---- fewer training tokens than one optimizer step ------------------------------------------------

@pytest.mark.parametrize("args", [("train", "--params", "7B", "--tokens", "1e3", "--gpus", "8"),
                                  ("budget", "--tokens", "4M"), ("plan", "llama-2-7b", "--tokens", "1M", "--gpus", "8")])
def test_fewer_tokens_than_one_step_are_refused(run_cli, args):
    """--tokens 1e3 on 8 A100 answered a wall-clock of 0.04 s while one step of the default 4,194,304-token
    batch takes 212 s; 4M (4,000,000) is also under 4 x 2^20."""
    field_refusal(run_cli(*args), "tokens", "fewer than one optimizer step's global batch of 4,194,304 tokens")


def test_one_step_of_tokens_or_a_smaller_batch_answers(run_cli):
    assert run_cli("train", "--params", "7B", "--tokens", "4194304", "--gpus", "8")[0] == 0
    assert run_cli("train", "--params", "7B", "--tokens", "1M", "--global-batch", "8", "--gpus", "8")[0] == 0


# ---- infer --rps with a setup the sizing does not take ---------------------------------------------

@pytest.mark.parametrize("flag, value", [("--tp", "2"), ("--pp", "2"), ("--gpus", "4"), ("--batch", "8")])
def test_sizing_refuses_a_fixed_setup_it_would_ignore(run_cli, flag, value):
    """`infer llama-3.1-8b --rps 20 --ttft-p99 500ms --tpot 50ms --tp 2` answered '2 x (tp 1 on B200)',
    the same as without --tp: the sizing chooses TP, replicas and batch itself."""
    field_refusal(run_cli("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms", flag, value),
            flag[2:], "--rps sizes the GPU type, TP, replicas and batch itself")


def test_sizing_still_takes_the_gpu_and_context(run_cli):
    code, out, _ = run_cli("infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms",
                           "--gpu", "h100", "--context", "8K")
    assert code == 0 and "H100" in out


def test_tp_comm_overlap_with_a_stated_tp_1_is_refused(run_cli):
    """Megatron turns sequence parallelism off at tp 1 and then asserts it for --tp-comm-overlap
    (arguments.py@core_v0.15.0 L922-931); gpuplan answered the same 82.2 days as without it."""
    field_refusal(run_cli("train", "llama-2-7b", "--gpus", "64", "--tp", "1", "--tp-comm-overlap"), "tp_comm_overlap",
            "with --tp 1 there are none")
    assert run_cli("train", "llama-2-7b", "--gpus", "64", "--tp", "2", "--tp-comm-overlap")[0] == 0
