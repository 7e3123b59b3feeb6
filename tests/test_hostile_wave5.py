"""Hostile inputs, wave 5 sweep (2026-12-05): what a fuzz of every command's text options, plan-file
keys, config.json fields, calibrate files, --out paths, torchrun's variables and the Python API
found at 54c46f5. Each refusal: one line naming the field and what would be valid, exit status 2
(InputError on the Python API), nothing written."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import one_line_refusal

import gpuplan
from gpuplan.errors import MAX_SHOWN_CHARS, InputError

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "fixtures" / "logs"
TRAIN = ("train", "--model", "llama-2-7b", "--gpu", "h100", "--gpus", "64")
TABLE_FLAGS = ("--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "2048", "--global-batch", "64",
               "--micro-batch", "1", "--zero", "1")
# --zero 1: since session 26 calibrate predicts a log's memory as train does for its flags (train's default framework,
# megatron: fp32 gradients and master weights), and at the table format's ZeRO 0 llama-3.1-8b needs 144.61 GiB a GPU,
# which calibrate.log_checks.check_layout_given refuses as not the run (the log shows 62 GiB)


# ---- durations that need a unit: every bare number, not only '30' --------------------------------
# At 54c46f5 '--restart 15' was refused ("give a unit"), but '+15', '1.5e1' and '1e3' were read as
# DAYS (parse_duration's bare unit) and refused as over the 604,800 s bound, and '--step-time 1e-9'
# / '--checkpoint-interval 1e-9' were accepted as 1e-9 days = 86.4 microseconds.

@pytest.mark.parametrize("flag", ["--restart", "--step-time", "--checkpoint-interval"])
@pytest.mark.parametrize("value", ["+15", "30.", "1.5e1", "1e3", "1e-9", "2E1"])
def test_a_bare_number_duration_in_any_spelling_asks_for_a_unit(run_cli, flag, value):
    code, _, err = run_cli(*TRAIN, flag, value)
    examples = "6s" if flag == "--step-time" else "30min"  # a step time's own examples (review w10 r3)
    one_line_refusal(code, err, f"{flag[2:].replace('-', '_')}: got {value!r}; give a unit, e.g. {examples}")


@pytest.mark.parametrize(("value", "seconds"), [("30min", 1800.0), ("1e3s", 1000.0), (".5h", 1800.0), ("90s", 90.0)])
def test_a_duration_with_a_unit_is_still_read(value, seconds):
    inputs = gpuplan.BudgetInputs(model="llama-2-7b", gpu="h100", gpus=64, restart=value)
    assert inputs.restart == pytest.approx(seconds)


def test_a_json_number_duration_stays_seconds_on_the_api():
    # the API's base unit (types.seconds): a number is seconds, only text needs the unit
    assert gpuplan.BudgetInputs(model="llama-2-7b", gpu="h100", gpus=64, restart=900).restart == 900.0


# ---- a long value is quoted cut short, the valid choices still on the line ----------------------
# At 54c46f5 a 5,000-character choice in a plan file came back whole (a 5,078-character line, the
# valid choices after it); the API already cut at 80 characters (web/errors.shown).

def test_a_long_choice_in_a_plan_file_is_quoted_cut_short(run_cli, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-2-7b\ngpu: h100\ngpus: 8\nframework: " + "x" * 5000 + "\n")
    code, _, err = run_cli("memory", str(plan))
    one_line_refusal(code, err, "framework: got 'xxx")
    # the whole line: the first MAX_SHOWN_CHARS (240) characters quoted, the length named (errors.shown), the
    # choices after it (was: '...' in err and len(err) < 240 + the path + 150, a slack with no reason); the
    # choices are --framework's vocabulary (core.frameworks.FRAMEWORKS: llmc joined in wave 12)
    from gpuplan.core.frameworks import FRAMEWORKS

    assert err == (f"error: {plan}: framework: got {'x' * MAX_SHOWN_CHARS!r}... (5,000 characters); "
                   f"must be one of {', '.join(FRAMEWORKS)}\n")


def test_a_long_list_is_quoted_cut_short_on_the_python_api():
    with pytest.raises(InputError) as caught:
        gpuplan.MemoryInputs(model="llama-2-7b", gpu="h100", gpus=8, recipe=["x"] * 10_000)
    # reprlib's six items of a long list (errors.shown), then the choices (was: length < 240 + 200)
    assert str(caught.value).startswith("recipe: got ['x', 'x', 'x', 'x', 'x', 'x', ...]; must be one of ")


def test_a_short_value_is_quoted_whole():
    assert str(InputError("gpus", "8.5", "must be a whole number")) == "gpus: got '8.5'; must be a whole number"
    assert str(InputError("x", "y" * MAX_SHOWN_CHARS, "z")) == f"x: got '{'y' * MAX_SHOWN_CHARS}'; z"


# ---- the Python API: a wrong type is an InputError, not an AttributeError from deep inside -------

@pytest.mark.parametrize(("call", "fragment"), [
    (lambda: gpuplan.estimate_training(None), "inputs: got 'NoneType'; expected TrainingInputs(...)"),
    (lambda: gpuplan.estimate_budget("llama"), "inputs: got 'str'; expected BudgetInputs(...)"),
    (lambda: gpuplan.estimate_memory(gpuplan.TrainingInputs(params="7B", gpu="a100", days=7)),
     "inputs: got 'TrainingInputs'; expected MemoryInputs(...)"),
    (lambda: gpuplan.estimate_inference(gpuplan.MemoryInputs(model="llama-2-7b")),
     "inputs: got 'MemoryInputs'; expected InferenceInputs(...)"),
    (lambda: gpuplan.plan_report(42), "inputs: got 'int'; expected PlanInputs(...)"),
    (lambda: gpuplan.resolve_model(123), "model: got 'int'; expected a name (text) or a path"),
    (lambda: gpuplan.resolve_model({"hidden_size": 1}), "model: got 'dict'; expected a name"),
    (lambda: gpuplan.resolve_gpu(None), "gpu: got no value; give a catalog id or alias"),
    (lambda: gpuplan.resolve_gpu(""), "gpu: got ''; give a catalog id or alias"),
    (lambda: gpuplan.resolve_gpu(8), "gpu: got 'int'; expected a name (text)"),
    (lambda: gpuplan.count_parameters("llama-2-7b"), "spec: got 'str'; expected a ModelSpec"),
])
def test_the_python_api_refuses_a_wrong_type_by_name(call, fragment):
    with pytest.raises(InputError) as caught:
        call()
    assert str(caught.value).startswith(fragment), str(caught.value)


def test_an_estimate_reads_a_mapping_through_its_schema():
    # Llama 2 7B: 6 x 6,738,415,616 params x 1e12 tokens = 4.043e22 FLOPs (6ND)
    report = gpuplan.estimate_training({"model": "llama-2-7b", "tokens": "1T", "gpu": "h100", "gpus": 64})
    assert report.value("flops_6nd") == pytest.approx(6 * 6_738_415_616 * 1e12, rel=1e-9)
    with pytest.raises(InputError, match="^gpus: got '8.5'; must be a whole number"):
        gpuplan.estimate_training({"model": "llama-2-7b", "gpu": "h100", "gpus": "8.5"})


def test_plan_report_reads_a_mapping_through_its_schema():
    # review wave 5: the mapping reached search() but rank_by_of / top read the dict ('dict' has no 'given');
    # the same plan through the dict and through PlanInputs: one schema, one answer, on the 64 GPUs asked
    from gpuplan.jobs.plan.schema import PlanInputs

    asked = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 64}
    by_dict, by_inputs = gpuplan.plan_report(asked), gpuplan.plan_report(PlanInputs(**asked))
    assert by_dict.line("best_days").value == by_inputs.line("best_days").value
    assert by_dict.line("best_gpus").value == 64
    with pytest.raises(InputError, match="^gpus: got '8.5'; must be a whole number"):
        gpuplan.plan_report({**asked, "gpus": "8.5"})


def test_a_path_object_names_a_config():
    spec = gpuplan.resolve_model(ROOT / "examples" / "llama-2-7b" / "config.json")
    assert gpuplan.count_parameters(spec).total == 6_738_415_616


# ---- torchrun's variables read by `gpuplan profile` ---------------------------------------------
# At 54c46f5: WORLD_SIZE=abc, LOCAL_RANK=x -> "internal error: ValueError", exit 70; WORLD_SIZE=-3 ->
# torch's arange RuntimeError, exit 70; WORLD_SIZE=2 without RANK / MASTER_ADDR -> torch's rendezvous
# ValueError, exit 70; RANK=5 with WORLD_SIZE=1 ran as rank 5 of 1.

@pytest.mark.parametrize(("env", "fragment"), [
    ({"WORLD_SIZE": "abc"}, "WORLD_SIZE: got 'abc'; must be a whole number from 1 to 10000000"),
    ({"WORLD_SIZE": "-3"}, "WORLD_SIZE: got '-3'; must be a whole number from 1"),
    ({"WORLD_SIZE": "1", "RANK": "5"}, "RANK: got '5'; must be a whole number from 0 to 0"),
    ({"LOCAL_RANK": "x"}, "LOCAL_RANK: got 'x'; must be a whole number from 0 to 0"),
    ({"WORLD_SIZE": "2"}, "RANK: got no value; WORLD_SIZE is 2: RANK must be set too"),
    ({"WORLD_SIZE": "2", "RANK": "1"}, "MASTER_ADDR: got no value; WORLD_SIZE is 2"),
    ({"WORLD_SIZE": "4", "RANK": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1", "LOCAL_WORLD_SIZE": "8"},
     "LOCAL_WORLD_SIZE: got '8'; must be a whole number from 1 to 4"),
])
def test_torchrun_variables_are_checked(env, fragment):
    from gpuplan.profile._trial_runtime import launcher_ranks

    with pytest.raises(InputError) as caught:
        launcher_ranks(env)
    assert str(caught.value).startswith(fragment), str(caught.value)


def test_torchrun_variables_as_torchrun_sets_them():
    from gpuplan.profile._trial_runtime import launcher_ranks

    assert launcher_ranks({}) == (1, 0, 0, 1)
    env = {"WORLD_SIZE": "16", "RANK": "9", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "n0",
           "MASTER_PORT": "29500"}
    assert launcher_ranks(env) == (16, 9, 1, 8)


def test_profile_with_a_bad_world_size_is_one_line_and_writes_nothing(run_cli, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("WORLD_SIZE", "abc")
    out = tmp_path / "trial.json"
    code, _, err = run_cli("profile", "pythia-70m", "--layers", "1", "--seq-len", "32", "--steps", "1", "--warmup", "0",
                           "--device", "cpu", "--out", str(out))
    one_line_refusal(code, err, "WORLD_SIZE: got 'abc'")
    assert not out.exists()


# ---- --out names a file of the format written ---------------------------------------------------
# At 54c46f5 `report plan.yaml --out other.yaml` replaced other.yaml with HTML, `calibrate --out
# train.log` a log with JSON (validate already required .md).

@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "other.yaml"
    path.write_text("model: llama-2-7b\n")
    return path


def test_report_out_must_be_html_and_markdown_md(run_cli, tmp_path, victim):
    plan = tmp_path / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", plan)
    for flag, fragment in (("--out", "must end in .html or .htm"), ("--markdown", "must end in .md or .markdown")):
        code, _, err = run_cli("report", str(plan), flag, str(victim), "--no-plots")
        one_line_refusal(code, err, f"{flag[2:]}: got '{victim}'; {fragment}")
    assert victim.read_text() == "model: llama-2-7b\n"
    code, out, err = run_cli("report", str(plan), "--out", str(tmp_path / "r.HTML"), "--no-plots")
    assert code == 0 and (tmp_path / "r.HTML").read_text().lstrip().lower().startswith("<!doctype html"), err


def test_calibrate_out_must_be_json(run_cli, tmp_path, victim):
    code, _, err = run_cli("calibrate", str(LOGS / "table.csv"), *TABLE_FLAGS, "--out", str(victim))
    one_line_refusal(code, err, f"out: got '{victim}'; must end in .json")
    assert victim.read_text() == "model: llama-2-7b\n"
    code, _, err = run_cli("calibrate", str(LOGS / "table.csv"), *TABLE_FLAGS, "--out", str(tmp_path / "c.json"))
    assert code == 0 and json.loads((tmp_path / "c.json").read_text()), err


def test_profile_out_must_be_json(run_cli, victim):
    code, _, err = run_cli("profile", "pythia-70m", "--device", "cpu", "--out", str(victim))
    one_line_refusal(code, err, f"out: got '{victim}'; must end in .json")
    assert victim.read_text() == "model: llama-2-7b\n"


# ---- click's usage errors name what would be valid ----------------------------------------------
# At 54c46f5: "No such command 'nope'." (no command named), "Got unexpected extra arguments (b c)"
# and "Missing argument 'PLAN'." (no usage).

@pytest.mark.parametrize(("args", "line"), [
    (("nope",), "error: command: got 'nope'; `gpuplan` has train, budget, campaign, memory, plan, infer, measure, "
                "profile, calibrate, validate, catalog, report, serve\n"),
    (("trian",), "error: command: got 'trian'; did you mean train? `gpuplan` has train, budget,"),
    (("catalog", "model"), "error: command: got 'model'; did you mean models? `gpuplan catalog` has gpus, models\n"),
    (("memory", "a", "b", "c"), "error: arguments: got 'b c'; not expected; usage: gpuplan memory [OPTIONS] [TARGET]\n"),
    (("serve", "x"), "error: arguments: got 'x'; not expected; usage: gpuplan serve [OPTIONS]\n"),
    (("report",), "error: plan: got no value; is required; usage: gpuplan report [OPTIONS] PLAN\n"),
])
def test_usage_errors_say_what_would_be_valid(run_cli, args, line):
    code, out, err = run_cli(*args)
    one_line_refusal(code, err)
    assert err.startswith(line), err
    assert out == ""


# ---- a plan file's bare number for a duration that needs a unit --------------------------------
# At 54c46f5 `restart: 15` in a plan file was 15 seconds (the API's unit for a JSON number) where
# `--restart 15` is refused as minutes-or-days; `tpot: 0.05` was 50 ms where `--tpot 0.05` is refused.

@pytest.mark.parametrize(("command", "text", "field"), [
    ("train", "model: llama-2-7b\ngpu: h100\ngpus: 64\nrestart: 15\n", "restart"),
    ("train", 'model = "llama-2-7b"\ngpu = "h100"\ngpus = 64\nrestart = 900.5\n', "restart"),
    ("budget", "model: llama-2-7b\ngpu: h100\ngpus: 64\nstep_time: 6\n", "step_time"),
    ("infer", "model: llama-2-7b\ngpu: h100\nrps: 1\ntpot: 0.05\n", "tpot"),
])
def test_a_plan_files_bare_number_duration_asks_for_a_unit(run_cli, tmp_path, command, text, field):
    plan = tmp_path / ("p.toml" if "=" in text else "p.yaml")
    plan.write_text(text)
    code, _, err = run_cli(command, str(plan))
    one_line_refusal(code, err, f"{plan}: {field}: got ")
    examples = {"tpot": "50ms or 0.2s", "step_time": "6s or 1.5min"}.get(field, "30min, 2h or 90s")  # the
    # field's own: a latency's (review w10 r2 M2), a step time's (review w10 r3)
    assert err.endswith(f"give a unit, e.g. {examples}\n"), err


def test_a_plan_files_duration_with_a_unit_and_the_apis_number_are_read(run_json, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-2-7b\ngpu: h100\ngpus: 64\nrestart: 15min\n")
    data = run_json("train", str(plan))
    restart = next(a for a in data["assumptions"] if a["key"] == "budget_restart_seconds")
    assert restart["value"] == "15.0 min", restart  # 15min = 900 s, as --restart 15min reads
    # outside a plan file a number stays seconds (the API's base unit), also after a plan file was read
    assert gpuplan.BudgetInputs(model="llama-2-7b", gpu="h100", gpus=64, restart=15).restart == 15.0


# ---- the API: a query parameter given twice ----------------------------------------------------
# At 54c46f5 `?lang=zh&lang=en` was answered in English and `?filter=a&filter=b` filtered by 'b'.

def test_a_query_parameter_given_twice_is_refused():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app())
    for url, method, field in (("/api/catalog/models?filter=a&filter=b", "get", "filter"),
                               ("/api/memory?lang=zh&lang=en", "post", "lang")):
        kwargs = {"json": {"model": "llama-2-7b", "gpu": "h100", "gpus": 8}} if method == "post" else {}
        reply = getattr(client, method)(url, **kwargs)
        assert reply.status_code == 422 and reply.json()["field"] == field, reply.text
        assert "is given more than once in the query; give it once" in reply.json()["message"]
    assert client.get("/api/catalog/models?filter=llama&lang=zh").status_code == 200


def test_a_deadline_no_layout_meets_says_the_fastest_in_a_readable_unit(run_cli):
    # at 54c46f5: "the fastest layout needs 0.0 days before failures and checkpoints on 131,072 GPUs"
    # (the planner's fastest layout for 2T tokens of Llama 2 7B there read 37.4 min with this change)
    code, _, err = run_cli("plan", "--model", "llama-2-7b", "--gpu", "h100", "--days", "1e-9")
    one_line_refusal(code, err, "days: got 1e-09; no searched GPU count meets it")
    assert "0.0 days" not in err
    assert re.search(r"the fastest layout needs [0-9.]+ (min|h|s) before failures", err), err


# ---- environment variables read on the way (huggingface_hub's, the output encoding) ------------

def _gpuplan(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuplan", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)


def test_a_bad_hugging_face_hub_variable_is_one_line_naming_it():
    # at 54c46f5: "Error importing huggingface_hub.file_download: ..." on stdout, then
    # "internal error: ValueError: invalid literal for int()" and exit 70
    pytest.importorskip("huggingface_hub")
    done = _gpuplan("memory", "--model", "someorg/somemodel", "--gpu", "h100", HF_HUB_ETAG_TIMEOUT="abc",
                    HF_HUB_OFFLINE="1")
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: environment: got '") and "HF_HUB_ETAG_TIMEOUT" in done.stderr
    assert "huggingface_hub cannot read its settings" in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_encoding_without_the_answers_characters_still_answers(encoding):
    # at 54c46f5: the en dash of a range ended `train` with "internal error: UnicodeEncodeError", exit 70
    done = _gpuplan("train", "--model", "llama-2-7b", "--gpu", "h100", "--gpus", "64", PYTHONIOENCODING=encoding)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("wall-clock with comm allowance"))
    assert " days ? " in line, line  # '40.64 days – 48.03 days' with '?' for the dash


def test_the_api_words_a_missing_value_as_the_cli_does():
    # at 54c46f5 the API said "config.json: hidden_size: got None; need one of ..." where the CLI
    # says "got no value" (errors.InputError), for the same config
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    config = json.loads((ROOT / "examples" / "llama-2-7b" / "config.json").read_text())
    del config["hidden_size"]
    reply = TestClient(create_app()).post("/api/memory", json={"config": config, "gpu": "h100", "gpus": 8})
    assert reply.status_code == 422
    assert reply.json()["message"].startswith("config.json: hidden_size: got no value; need one of hidden_size"), \
        reply.json()["message"]


# ---- serving: a vLLM scheduler vLLM itself refuses ----------------------------------------------
# vllm/config/scheduler.py SchedulerConfig raises "max_num_batched_tokens (8) must be greater than or
# equal to max_num_seqs (16)"; at 54c46f5 `infer --prefill-tokens 8 --max-num-seqs 16` was answered.
# A max_num_seqs left out is min(its default, max_num_batched_tokens) in vLLM's engine/arg_utils.py,
# so --prefill-tokens alone stays an answer.

@pytest.mark.parametrize(("args", "line"), [
    (("--prefill-tokens", "8", "--max-num-seqs", "16"), "error: prefill_tokens: got 8; must be at least max_num_seqs (16)"),
    (("--max-num-seqs", "100000"), "error: max_num_seqs: got 100000; must be at most prefill_tokens (8,192, vLLM's "
                                   "default here"),
])
def test_vllm_max_num_batched_tokens_below_max_num_seqs_is_refused(run_cli, args, line):
    code, _, err = run_cli("infer", "--model", "llama-2-7b", "--gpu", "h100", *args)
    one_line_refusal(code, err, "(SchedulerConfig: max_num_batched_tokens >= max_num_seqs)")
    assert err.startswith(line), err


@pytest.mark.parametrize("args", [("--prefill-tokens", "8", "--max-num-seqs", "8"), ("--prefill-tokens", "8")])
def test_vllm_schedulers_vllm_starts_are_answered(run_cli, args):
    code, out, err = run_cli("infer", "--model", "llama-2-7b", "--gpu", "h100", *args)
    assert code == 0 and out.startswith("Serving llama-2-7b"), err


# ---- profile --sweep --out: a folder, checked before training ------------------------------------
# At 54c46f5 an existing file (or /dev/null) ended in "internal error: FileExistsError", /proc/x in
# "internal error: FileNotFoundError" (exit 70, after the model was built); a/b/c created a and b.

def test_a_sweep_out_that_is_a_file_is_refused(run_cli, victim):
    code, _, err = run_cli("profile", "pythia-70m", "--sweep", "--out", str(victim), "--device", "cpu")
    one_line_refusal(code, err, f"out: got '{victim}'; is not a folder")
    assert victim.read_text() == "model: llama-2-7b\n"


def test_a_sweep_out_in_a_missing_folder_is_refused_and_nothing_is_created(run_cli, tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    code, _, err = run_cli("profile", "pythia-70m", "--sweep", "--out", str(deep), "--device", "cpu")
    one_line_refusal(code, err, f"is in a folder that does not exist ({tmp_path / 'a' / 'b'}); create it first")
    assert not (tmp_path / "a").exists()


def test_a_sweep_out_that_is_a_link_is_refused(run_cli, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    code, _, err = run_cli("profile", "pythia-70m", "--sweep", "--out", str(tmp_path / "link"), "--device", "cpu")
    one_line_refusal(code, err, "is a symbolic link")


def test_a_sweep_out_folder_is_made_one_level_deep(tmp_path):
    from gpuplan.adapters.files import check_out_folder

    assert check_out_folder(tmp_path / "sweep").is_dir()
    assert check_out_folder(tmp_path / "sweep").is_dir()  # an existing folder is fine
    assert list((tmp_path / "sweep").iterdir()) == []  # the write probe is gone


def test_an_empty_key_is_named_as_such_with_no_guess(run_cli, tmp_path):
    # at 54c46f5: "inputs: got 1; unknown field; did you mean framework, compile, recipe?" ('' is in every name)
    plan = tmp_path / "p.yaml"
    plan.write_text("model: llama-2-7b\n'': 1\n")
    code, _, err = run_cli("memory", str(plan))
    one_line_refusal(code, err, f"{plan}: '': got 1; unknown field; valid fields: ")
    assert "did you mean" not in err


@pytest.mark.parametrize(("flag", "value"), [("--dp-overlap", "0.4_0"), ("--mfu", "4_0%"), ("--contingency", "0_2"),
                                             ("--tokens", "1_000B")])
def test_a_number_with_underscores_is_refused_everywhere(run_cli, flag, value):
    # at 54c46f5 float() read '0.4_0' as 0.4 and '4_0%' as 40% (PEP 515), where '1_000B' was refused
    code, _, err = run_cli(*TRAIN, flag, value)
    one_line_refusal(code, err, f"got {value!r}; must be written without '_'")


@pytest.mark.parametrize("sections, position", [("budget,,memory", "2 of 3"), ("budget,", "2 of 2")])
def test_report_sections_with_an_empty_name_are_refused_as_gpus_are(run_cli, tmp_path, sections, position):
    # at 54c46f5 the empty names were dropped ('budget,,memory' wrote a report) where --gpus '8,,16' is refused
    plan = tmp_path / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", plan)
    code, _, err = run_cli("report", str(plan), "--sections", sections, "--no-plots", "--out", str(tmp_path / "r.html"))
    one_line_refusal(code, err, f"sections: got {sections!r}; entry {position} is empty; give comma-separated names "
                                "from budget, memory, plan")  # session 26 (schema.list_field): its position named
    assert not (tmp_path / "r.html").exists()


# ---- calibrate: flags that make the log's step faster than the GPUs' peak -----------------------
# At 54c46f5 `--global-batch 10000000` on tests/fixtures/logs/table.csv (a 2.02 s step on 8 H100)
# fit "compute time 0.000x" and "attention efficiency 20.0% -> 2319191.4%", exit 0.

def test_a_log_read_faster_than_the_gpus_peak_is_refused(run_cli):
    flags = list(TABLE_FLAGS)
    flags[flags.index("--global-batch") + 1] = "10000000"
    code, _, err = run_cli("calibrate", str(LOGS / "table.csv"), *flags)
    one_line_refusal(code, err, "global_batch/seq_len/gpus: got '20,480,000,000 tokens per 2.02 s step on 8 GPUs'")
    assert "above the NVIDIA H100 80GB SXM5's peak" in err


def test_the_same_log_read_as_its_run_calibrates(run_cli):
    # 64 x 2,048 tokens x 6 x ~7.5e9 active non-embedding parameters / 2.02 s / 8 GPUs ~ 365 TFLOP/s a GPU
    code, out, err = run_cli("calibrate", str(LOGS / "table.csv"), *TABLE_FLAGS)
    assert code == 0 and out.startswith("Calibration from measurements"), err


@pytest.mark.parametrize(("value", "line"), [("50", "margin: got '50'; must be between 0 and 0.9 (0.2 = 20%)"),
                                             ("1", "margin: got '1'; must be between 0 and 0.9 (0.2 = 20%)")])
def test_a_share_names_its_own_upper_bound(run_cli, value, line):
    # at 54c46f5 '--margin 50' said "must be between 0 and 5" (parse_allowance's bound) where 0.9 is the margin's
    code, _, err = run_cli(*TRAIN, "--margin", value)
    one_line_refusal(code, err, line)


@pytest.mark.parametrize(("command", "flag", "value", "expected"), [
    ("train", "--dp-overlap", "40%", 0.4), ("train", "--tp-overlap", "25%", 0.25), ("infer", "--prefix-hit", "50%", 0.5)])
def test_a_share_reads_a_percentage_as_every_fraction_does(command, flag, value, expected):
    # at 54c46f5 '--dp-overlap 40%' was "expected a number between 0 and 1" (docs/cli.md: fractions take 0.4 or 40%)
    from gpuplan.jobs.inference.schema import InferenceInputs
    from gpuplan.jobs.training.schema import TrainingInputs

    schema = TrainingInputs if command == "train" else InferenceInputs
    field = flag[2:].replace("-", "_")
    inputs = schema.parse({"model": "llama-2-7b", "gpu": "h100", field: value})
    assert getattr(inputs, field) == pytest.approx(expected)


def test_a_share_over_its_top_in_percent_is_refused(run_cli):
    code, _, err = run_cli("infer", "--model", "llama-2-7b", "--gpu", "h100", "--prefix-hit", "100%")
    one_line_refusal(code, err, "prefix_hit: got '100%'; must be >= 0 and <= 0.99")


# ---- Markdown output: a hostile model name writes no HTML and keeps the table ------------------
# At 54c46f5 a config in a folder named 'x<img src=x onerror=alert(1)>' put that tag raw into
# `report --markdown` and `--format markdown` (the HTML report escaped it); a '|' split the row.

def _hostile_config(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "llama-2-7b" / "config.json", folder / "config.json")
    return folder


def test_markdown_escapes_a_tag_in_a_model_name(run_cli, tmp_path):
    folder = _hostile_config(tmp_path, "x<img src=x onerror=alert(1)>")
    code, out, err = run_cli("memory", "--model", str(folder / "config.json"), "--gpu", "h100", "--gpus", "8",
                             "--format", "markdown")
    assert code == 0, err
    assert "<img" not in out and "| model | x&lt;img src=x onerror=alert(1)> |" in out
    (folder / "p.yaml").write_text("model: ./config.json\ngpu: h100\ngpus: 8\ntokens: 1T\n")
    code, _, err = run_cli("report", str(folder / "p.yaml"), "--no-plots", "--sections", "memory",
                           "--markdown", str(tmp_path / "r.md"), "--out", str(tmp_path / "r.html"))
    assert code == 0, err
    text = (tmp_path / "r.md").read_text()
    assert "<img" not in text and "## Training memory: x&lt;img src=x onerror=alert(1)> on" in text


def test_markdown_keeps_a_pipe_in_a_model_name_inside_its_cell(run_cli, tmp_path):
    folder = _hostile_config(tmp_path, "a|b")
    code, out, err = run_cli("memory", "--model", str(folder / "config.json"), "--gpu", "h100", "--gpus", "8",
                             "--format", "markdown")
    assert code == 0, err
    assert "| model | a\\|b |" in out


def test_a_model_named_after_a_folder_with_escape_sequences_prints_none(run_cli, tmp_path, monkeypatch):
    # at 54c46f5 `--model config.json` inside a folder named 'e\x1b[31mRED\x1b]0;pwned\x07' wrote the raw
    # ESC sequences (colour, terminal title) in the answer's title line
    folder = _hostile_config(tmp_path, "e\x1b[31mRED\x1b]0;pwned\x07")
    monkeypatch.chdir(folder)
    code, out, err = run_cli("memory", "--model", "config.json", "--gpu", "h100", "--gpus", "8")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("Training memory: e\\u001b[31mRED\\u001b]0;pwned\\u0007 on NVIDIA H100 80GB SXM5")


@pytest.mark.parametrize("args", [("-f", "json", "-f", "csv"), ("-f", "json", "--format", "csv"),
                                  ("-fjson", "--format=csv")])
def test_format_given_twice_by_its_short_name_is_refused(run_cli, args):
    # at 54c46f5 `-f json -f csv` printed CSV (the last), where `--model a --model b` is refused
    code, out, err = run_cli(*TRAIN, *args)
    one_line_refusal(code, err, "format: given twice (--format); give it once")
    assert out == ""


@pytest.mark.parametrize("folder", ["/nonexistent-gpuplan-folder", "file"])
def test_the_server_factory_refuses_a_calibration_folder_that_is_none(tmp_path, monkeypatch, folder):
    # at 54c46f5 `uvicorn gpuplan.web:create_app_from_env` with GPUPLAN_CALIBRATION_DIR=/nonexistent started,
    # and each request naming a calibration failed; `gpuplan serve --calibration-dir` checks it already
    pytest.importorskip("fastapi")
    from gpuplan.web import create_app_from_env

    if folder == "file":
        folder = str(tmp_path / "cal.json")
        Path(folder).write_text("{}")
    monkeypatch.setenv("GPUPLAN_CALIBRATION_DIR", folder)
    with pytest.raises(InputError, match=r"^calibration_dir: got .*; is not an existing folder"):
        create_app_from_env()
