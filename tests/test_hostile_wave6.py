"""Hostile inputs, wave 6 (2026-12-05): classes the earlier sweeps left open. Each case is one line
on stderr naming the field, exit status 2, no traceback, and its valid neighbour still answers.

- subnormal floats ('5e-324': not 0, below the smallest normal float) in every numeric field:
  `--mfu 5e-324` ended in a ZeroDivisionError (exit 70), `--failure-rate 5e-324` in NumPy
  RuntimeWarnings on stderr and a refusal naming `days`, the rest were taken (a $0 budget);
- an MFU below 0.1% (`--mfu 1e-300 --gpus 8`: exit 70);
- a sequence above the 4M-token default batch (`--seq-len 8M`): the default batch was half a
  sequence and the refusal named `gpus`;
- `--engine vllm==` (no release) was read as the newest release;
- a `--step-time` faster than the GPUs' peak allows (`1e-300s` printed a 300-digit input rate);
- `measure` with a step whose tensors pass torch's 8 EiB storage limit (exit 70);
- an activation transformers does not know in config.json (`hidden_act: "nope"` was taken);
- `--micro-batch` that does not divide `--global-batch` (named `gpus`);
- a folder without a config.json as the model (named `config`, value 'config.json').
"""

import json
import shutil
from pathlib import Path

import pytest

from helpers import field_refusal

ROOT = Path(__file__).resolve().parents[1]
LLAMA2 = json.loads((ROOT / "examples/llama-2-7b/config.json").read_text())


# ---- 1. subnormal floats -------------------------------------------------------------------

SUBNORMAL = [
    (("train", "--gpus", "8", "--mfu", "5e-324"), "mfu"),  # was exit 70: ZeroDivisionError
    (("budget", "--failure-rate", "5e-324"), "failure_rate"),  # was RuntimeWarnings + 'days'
    (("train", "--price", "5e-324"), "price"),  # was a $0 budget, exit 0
    (("budget", "--spot-price", "1e-310"), "spot_price"),
    (("budget", "--spot-discount", "5e-324"), "spot_discount"),
    (("train", "--comm-allowance", "5e-324"), "comm_allowance"),
    (("budget", "--restart", "5e-324s"), "restart"),
    (("budget", "--checkpoint-interval", "5e-324s"), "checkpoint_interval"),
    (("budget", "--storage-read", "5e-324"), "storage_read"),
    (("memory", "--params", "7B", "--margin", "5e-324"), "margin"),
    (("plan", "llama-2-7b", "--gpus", "64", "--dp-overlap", "5e-324"), "dp_overlap"),
    (("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--bandwidth-efficiency", "5e-324"),
     "bandwidth_efficiency"),
]


@pytest.mark.parametrize("args, field", SUBNORMAL, ids=[f for _, f in SUBNORMAL])
def test_a_subnormal_number_is_too_small_to_tell_from_zero(run_cli, args, field):
    field_refusal(run_cli(*args), field, "too small to tell from 0")


@pytest.mark.parametrize("args", [("train", "--gpus", "8", "--mfu", "0"), ("budget", "--comm-allowance", "0"),
                                  ("budget", "--restart", "0s")])
def test_zero_is_still_zero_and_the_smallest_normal_float_is_a_number(run_cli, args):
    """0 keeps its own rule (refused where a field needs a positive value, taken where 0 is valid);
    the check is on magnitudes below 2.2250738585072014e-308 only."""
    from gpuplan.schema.types import _not_subnormal

    _not_subnormal(0.0, "0", "x")
    _not_subnormal(2.2250738585072014e-308, "2.2250738585072014e-308", "x")
    code, _, err = run_cli(*args)
    assert "too small to tell from 0" not in err


def test_the_api_refuses_a_subnormal_json_number():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    response = TestClient(create_app(), raise_server_exceptions=False).post(
        "/api/training", json={"params": "7B", "gpus": 8, "mfu": 5e-324})
    assert response.status_code == 422 and response.json()["field"] == "mfu", response.text[:300]


# ---- 2. an MFU below 0.1% ------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1e-300", "0.0009", "0.05%", "0.01%-50%"])
def test_an_mfu_below_a_tenth_of_a_percent_is_refused(run_cli, value):
    """--mfu 1e-300 --gpus 8 ran the wall-clock past float range: ZeroDivisionError, exit 70."""
    field_refusal(run_cli("train", "--gpus", "8", "--mfu", value), "mfu", "at least 0.001 (0.1%)")


def test_an_mfu_of_a_tenth_of_a_percent_answers(run_json):
    """8.4e22 FLOPs (6 x 7e9 x 2e12) on 8 A100 (312 TFLOP/s) at 0.1% MFU, no communication
    allowance: 8.4e22 / 2.496e12 FLOP/s = 3.365e10 s = 389,500 days (the generic 7B counts 7e9)."""
    days = run_json("train", "--gpus", "8", "--mfu", "0.001", "--comm-allowance", "0")["results"]["wall_days"]
    assert days == pytest.approx(6 * 7e9 * 2e12 / (8 * 312e12 * 0.001) / 86400, rel=1e-3)


# ---- 3. a sequence past the default batch --------------------------------------------------

@pytest.mark.parametrize("command", ["plan", "train"])
def test_a_sequence_above_the_default_batch_is_one_sequence_per_step(run_json, command):
    """The default batch is 4M tokens = 4,194,304; at 8M (8,388,608) it was 0.5 sequences and the
    search answered 'gpus: no layout can use these GPU counts'. It is now one sequence."""
    results = run_json(command, "llama-2-7b", "--gpus", "256", "--seq-len", "8M")["results"]
    assert results.get("global_batch", results.get("mem_global_batch")) == 1
    assert results["io_global_batch_tokens"] == 8 * 2**20


def test_the_api_plans_a_sequence_above_the_default_batch():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    response = TestClient(create_app(), raise_server_exceptions=False).post(
        "/api/plan", json={"model": "llama-2-7b", "gpus": 256, "seq_len": "8M"})
    assert response.status_code == 200, response.text[:300]


# ---- 4. an engine pinned to no release ------------------------------------------------------

@pytest.mark.parametrize("engine", ["vllm==", "sglang== ", "trtllm=="])
def test_an_engine_pinned_to_no_release_is_refused(run_cli, engine):
    field_refusal(run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--engine", engine), "engine",
            "release must read like")


def test_an_engine_without_a_pin_is_its_newest_release():
    from gpuplan.core.serving.releases import NEWEST, parse_release

    assert parse_release("vllm").version == NEWEST["vllm"]
    assert parse_release("VLLM==0.19").version[:2] == (0, 19)


# ---- 5. a step time faster than the GPUs' peak -----------------------------------------------

@pytest.mark.parametrize("value", ["1e-300s", "1ms", "0.5s"])
def test_a_step_time_faster_than_the_peak_allows_is_refused(run_cli, value):
    """The generic 7B (6.5e9 non-embedding parameters x 6 FLOPs) on 4,194,304 tokens and 1,336
    A100s at 312 TFLOP/s needs at least 0.399 s a step; 1e-300 s printed a 300-digit input rate."""
    err = field_refusal(run_cli("budget", "--step-time", value), "step_time", "needs at least")
    assert "TFLOP/s" in err and len(err) < 400


def test_a_step_time_the_peak_allows_answers(run_json):
    results = run_json("budget", "--step-time", "2s")["results"]
    assert results["io_step_seconds"] == 2.0


# ---- 6. measure: a step past torch's tensor limit ------------------------------------------

@pytest.mark.parametrize("args", [("--micro-batch", "1e9", "--seq-len", "16M"),
                                  ("--micro-batch", "1000", "--seq-len", "16M", "--attention-kernel", "eager")])
def test_measure_refuses_a_tensor_past_torchs_storage_limit_before_building(run_cli, args):
    """1e9 x 16,777,216 tokens x 32,000 (the vocabulary) x 4 B = 2.1e21 B > 2^63 - 1: torch raised
    'Storage size calculation overflowed' (exit 70). Eager attention's scores: 1,000 x 32 heads x
    (2^24)^2 x 4 B = 3.6e19 B. Refused before torch is imported."""
    field_refusal(run_cli("measure", "llama-2-7b", "--depths", "2,4", *args), "micro_batch/seq_len", "8 EiB limit")


def test_measure_tensor_limit_leaves_a_real_step_alone():
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.jobs.measure.estimate import check_tensor_sizes
    from gpuplan.jobs.measure.schema import MeasureInputs

    inputs = MeasureInputs.parse({"model": "llama-2-7b", "seq_len": "16M", "micro_batch": 1})
    check_tensor_sizes(resolve_model("llama-2-7b"), inputs)  # 2^24 x 32,000 x 4 B = 2.1e12 B


# ---- 7. config.json: an activation transformers does not know ---------------------------------

@pytest.mark.parametrize("key, value", [("hidden_act", "nope"), ("hidden_act", 5), ("hidden_act", ["silu"]),
                                        ("hidden_activation", "swiglu2")])
def test_an_unknown_activation_is_refused_naming_its_key(run_cli, tmp_path, key, value):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA2, "hidden_act": None, key: value}))
    for command in (("train", "--gpus", "8"), ("infer", "--gpu", "h100", "--no-search")):
        field_refusal(run_cli(command[0], "--model", str(tmp_path), *command[1:]), f"config.json: {key}",
                "an activation transformers knows: gelu")


def test_every_catalog_activation_is_one_transformers_knows():
    from gpuplan.adapters.config_fields import ACTIVATIONS
    from gpuplan.adapters.resolve import resolve_model
    from gpuplan.catalog import model_entries

    assert {resolve_model(name).mlp.activation for name in model_entries()} <= set(ACTIVATIONS)
    transformers = pytest.importorskip("transformers.activations")
    assert set(ACTIVATIONS) <= set(transformers.ACT2CLS)  # each name builds in the installed release


# ---- 8. a micro-batch that does not divide the global batch ---------------------------------

@pytest.mark.parametrize("command", ["train", "plan", "budget"])
def test_a_micro_batch_that_does_not_divide_the_global_batch_is_named(run_cli, command):
    """Megatron asserts global_batch % (micro_batch x dp) == 0 (a --global-batch is kept exactly):
    --global-batch 8 --micro-batch 3 was 'gpus: no layout can use these GPU counts'."""
    err = field_refusal(run_cli(command, "--params", "7B", "--gpus", "8", "--global-batch", "8", "--micro-batch", "3"),
                  "micro_batch", "must divide --global-batch 8")
    assert "e.g. 1, 2, 4, 8" in err


def test_a_micro_batch_that_divides_it_or_a_token_batch_answers(run_json):
    assert run_json("train", "--params", "7B", "--gpus", "8", "--global-batch", "8",
                    "--micro-batch", "2")["results"]["mem_global_batch"] == 8
    # a batch in tokens is a target the planner rounds: 32K tokens = 8 sequences, rounded to 9 = 3 x 3
    run_json("train", "--params", "7B", "--gpus", "8", "--global-batch-tokens", "32K", "--micro-batch", "3")


def test_the_api_names_the_micro_batch_too():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    response = TestClient(create_app(), raise_server_exceptions=False).post(
        "/api/plan", json={"params": "7B", "gpus": 8, "global_batch": 12, "micro_batch": 5})
    assert response.status_code == 422 and response.json()["field"] == "micro_batch", response.text[:300]


# ---- 9. a folder without a config.json -----------------------------------------------------

def test_a_folder_without_a_config_is_named_as_the_model(run_cli, tmp_path):
    err = field_refusal(run_cli("train", "--model", str(tmp_path)), "model", "is a folder without a config.json")
    assert str(tmp_path) in err
    shutil.copy(ROOT / "examples/llama-2-7b/config.json", tmp_path / "config.json")
    assert run_cli("train", "--model", str(tmp_path))[0] == 0


# ---- 10. a terminal width no table can be drawn at -------------------------------------------

@pytest.mark.parametrize("columns", ["0", "-5", "abc", "1", "1e9", "99999999"])
def test_a_bad_columns_variable_never_hides_the_answer(run_cli, monkeypatch, columns):
    """rich read COLUMNS=0 as a width of 0 and drew nothing: `gpuplan train` on a terminal printed no
    answer at all, exit 0. A width outside 20..10,000 is ignored (the terminal's own size, else 80)."""
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("gpuplan.commands.build.on_terminal", lambda: True)
    code, out, err = run_cli("train")
    assert code == 0 and err == "" and "Training budget" in out and "1,352" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_valid_columns_variable_is_the_width(monkeypatch):
    from gpuplan.commands.build import terminal_width

    monkeypatch.setenv("COLUMNS", "132")
    assert terminal_width() == 132


def test_a_deadline_needing_astronomically_many_gpus_is_a_short_line(run_cli):
    """--days 1e-300: 8.4e22 FLOPs x 1.2 / (312e12 x 0.4 x 86,400 x 1e-300) = 9.35e303 GPUs, printed
    with all 304 digits before (551 characters)."""
    err = field_refusal(run_cli("train", "--days", "1e-300"), "days", "needs 9.35e+303 GPUs")
    assert len(err) < 200


# ---- 11. a model path that is a link loop, a dangling link or missing --------------------------

@pytest.mark.parametrize("kind", ["loop", "dangling", "missing"])
def test_a_model_path_that_cannot_be_read_names_model(run_cli, tmp_path, kind):
    """A symbolic-link loop or a dangling link was looked up in the catalog ('not in the catalog');
    a missing config.json named `config`. Each now names --model and why the path cannot be read."""
    path = tmp_path / "model"
    if kind == "loop":
        path.symlink_to(path)
    elif kind == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    else:
        path = tmp_path / "missing.json"
    reason = "Too many levels of symbolic links" if kind == "loop" else "no such file"
    field_refusal(run_cli("train", "--model", str(path)), "model", reason)
    field_refusal(run_cli("infer", "llama-3.1-8b", "--speculative", "draft", "--draft-model", str(path)), "draft_model",
            reason)


# ---- 12. serve --host in full-width or other non-ASCII letters --------------------------------

@pytest.mark.parametrize("host", ["ｌｏｃａｌｈｏｓｔ", "１２７.０.０.１"])
def test_serve_refuses_a_non_ascii_host_before_binding(run_cli, host):
    """getaddrinfo folds full-width letters (NFKC), so the server started on 'http://ｌｏｃａｌｈｏｓｔ:8000/'
    and checked Host headers against that spelling; it is refused before anything is bound."""
    field_refusal(run_cli("serve", "--host", host, "--port", "18765"), "host", "must be written in ASCII")


# ---- 13. a prompt and output past the context bound -------------------------------------------

def test_prompt_and_output_past_the_context_bound_are_refused(run_cli):
    """--context is at most 2^24 = 16,777,216 tokens; --prompt 16M --output-tokens 16M (2^25) was
    served as a 33,554,432-token context."""
    field_refusal(run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--prompt", "16M",
                    "--output-tokens", "16M"), "output_tokens", "16,777,216-token context bound")
    assert run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--no-search", "--prompt", "8M",
                   "--output-tokens", "8M", "--engine", "sglang")[0] == 0  # vLLM refuses past 131,072


# ---- 14. an output path that names a folder, or sits in a file ---------------------------------

@pytest.mark.parametrize("flag", ["--out", "--markdown"])
def test_report_refuses_an_output_ending_in_a_separator_and_writes_nothing(run_cli, tmp_path, flag):
    """Path('r.html/') drops the separator: `report plan.yaml --out r.html/` wrote r.html and said
    'wrote r.html/' (calibrate alone refused it). The rule is in adapters.files.check_writable now."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: llama-2-7b\ngpus: 8\n")
    name = "r.html" if flag == "--out" else "r.md"
    other = ("--out", str(tmp_path / "o.html")) if flag == "--markdown" else ()
    field_refusal(run_cli("report", str(plan), flag, str(tmp_path / name) + "/", *other), flag[2:],
            "ends in a path separator, so names a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.yaml"]


def test_an_output_inside_a_file_says_the_file_is_not_a_folder(run_cli, tmp_path):
    """'plan.yaml/r.html' was 'in a folder that does not exist (plan.yaml)': it exists, as a file."""
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: llama-2-7b\ngpus: 8\n")
    field_refusal(run_cli("report", str(plan), "--out", str(plan / "r.html")), "out", "which is not a folder")
    assert plan.read_text() == "model: llama-2-7b\ngpus: 8\n"
