"""Small items the wave-9 hostile sweep left (2026-12-06): a config.json refusal quotes the value given, not its
type's name; the Python API refuses a path object for a number and reads a datetime.timedelta for a duration (the
schema is the one place it is converted); Ctrl-C ends a command with 130 (128 + SIGINT) and leaves no half-written
file. Each refusal is one line naming the field, what was given and what is valid, exit status 2.
"""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import field_refusal

import gpuplan
from gpuplan.errors import MAX_SHOWN_CHARS, InputError

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite
ROOT = Path(__file__).resolve().parents[1]
LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
         "max_position_embeddings": 8192}
LONGROPE = {"rope_type": "longrope", "factor": 2.0, "long_factor": [1.0], "original_max_position_embeddings": 4096}


# ---- 1. a config.json refusal quotes the value, not its type ('rope_scaling: got 'str'') ----------------------

@pytest.mark.parametrize("extra, field, given, valid", [
    ({"rope_scaling": "yarn"}, "config.json: rope_scaling", "got 'yarn'", 'expected a mapping, e.g. {"rope_type"'),
    ({"text_config": 7}, "config.json: text_config", "got 7", "expected a mapping (a VLM's language model)"),
    ({"rope_scaling": LONGROPE | {"short_factor": "1,2"}}, "config.json: rope_scaling.short_factor", "got '1,2'",
     "must be a list of numbers"),
    ({"rope_scaling": LONGROPE | {"short_factor": [1.0, "a"]}}, "config.json: rope_scaling.short_factor",
     "got 'a'", "entry 1 (from 0) must be a finite number"),
    ({"architectures": ["LlamaForCausalLM", 5]}, "config.json: architectures", "got 5",
     "entry 1 (from 0) must be a class name"),
    ({"layer_types": ["full_attention"] * 31 + ["linear"]}, "config.json: layer_types", "got 'linear'",
     "entry 31 (from 0) must be full_attention or sliding_attention"),
    ({"layer_types": "full_attention"}, "config.json: layer_types", "got 'full_attention'",
     "must be a list of 32 layer types"),
])
def test_a_config_refusal_quotes_the_value(run_cli, tmp_path, extra, field, given, valid):
    """Each was 'got 'str'' / 'got 'int'' / 'got '2 entries'' on the parent: the type or a count, not what was written.
    The field stays the key (the web API's 'field'); a list's wrong entry is named by its place after the value."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA | extra))
    line = field_refusal(run_cli("memory", str(path), "--gpu", "h100"), field, valid)
    assert line.startswith(f"error: {field}: {given}; "), line


def test_mpt_nested_settings_quote_the_value(run_cli, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mpt", "d_model": 4096, "n_layers": 32, "n_heads": 32,
                                "vocab_size": 50432, "max_seq_len": 2048, "attn_config": "flash"}))
    line = field_refusal(run_cli("memory", str(path), "--gpu", "h100"), "config.json: attn_config", "or null")
    assert "got 'flash'; expected a mapping (MPT)" in line, line


def test_a_huge_config_value_is_quoted_cut(run_cli, tmp_path):
    """A 100,000-character rope_scaling text is quoted cut (errors.shown: MAX_SHOWN_CHARS) with its length named."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA | {"rope_scaling": "y" * 100_000}))
    line = field_refusal(run_cli("memory", str(path), "--gpu", "h100"), "config.json: rope_scaling", "or null")
    assert "(100,000 characters)" in line and len(line) < MAX_SHOWN_CHARS + 200, len(line)


def test_a_list_config_quotes_the_list(run_cli, tmp_path):
    """Python's reader: a config that is a JSON list was 'got 'list''."""
    from gpuplan.adapters.hf_config import text_config

    with pytest.raises(InputError, match=r"^config.json: got \[1, 2\]; expected a JSON object"):
        text_config([1, 2])


# ---- 2. the Python API: a path is not a number; a timedelta is a duration ----------------------------------

@pytest.mark.parametrize("field, value, valid", [
    ("gpus", Path("8"), "expected a number or its text, e.g. 8, '8' or '7B', not a PosixPath"),
    ("tokens", Path("2T"), "expected a number or its text"),
    ("mfu", Path("0.4"), "expected a fraction or its text, e.g. 0.4 or '40%'"),
    ("days", Path("7"), "expected a number of days, text such as '7d', '36h' or '2w', or a datetime.timedelta"),
    ("seq_len", b"4096", "not a bytes"),
])
def test_the_api_refuses_an_object_for_a_number(field, value, valid):
    """The parent read str(value): Path("8") was 8 GPUs, Path("7") 7 days."""
    with pytest.raises(InputError) as caught:
        gpuplan.TrainingInputs(model="llama-2-7b", **{field: value})
    message = str(caught.value)
    assert message.startswith(f"{field}: got {value!r}; ") and valid in message and "\n" not in message, message


@pytest.mark.parametrize("value, days", [(timedelta(days=7), 7.0), (timedelta(hours=36), 1.5),
                                         (timedelta(weeks=2), 14.0)])
def test_the_api_reads_a_timedelta_for_days(value, days):
    """schema.types.days converts it (total_seconds / 86,400), as '36h' is read; the parent refused it
    ("days: got '1 day, 12:00:00'; expected a duration such as 7d ...")."""
    assert gpuplan.TrainingInputs(model="llama-2-7b", days=value).days == days
    assert gpuplan.TrainingInputs(model="llama-2-7b", days="36h").days == 1.5  # the text forms as before


def test_a_timedelta_is_read_by_the_duration_options():
    """schema.types.seconds: budget's --step-time as a timedelta is its seconds, as '6s' is."""
    from gpuplan.jobs.budget.schema import BudgetInputs

    assert BudgetInputs(model="llama-2-7b", step_time=timedelta(seconds=6)).step_time == 6.0
    assert BudgetInputs(model="llama-2-7b", step_time="6s").step_time == 6.0


@pytest.mark.parametrize("value", [timedelta(0), timedelta(days=-1), timedelta(days=36_501)])
def test_a_timedelta_out_of_range_is_refused_by_name(value):
    with pytest.raises(InputError, match=rf"^days: got {value!r}; must be > 0 and <= 36500 days$".replace("(", r"\(")
                       .replace(")", r"\)")):
        gpuplan.TrainingInputs(model="llama-2-7b", days=value)


def test_numbers_and_text_are_read_as_before():
    """Decimal and numpy numbers are numbers (numbers.Number), text is parsed; only other objects are refused."""
    from decimal import Decimal

    import numpy as np

    for value in (8, 8.0, "8", Decimal("8"), np.int64(8)):
        assert gpuplan.TrainingInputs(model="llama-2-7b", gpus=value).gpus == 8


def test_the_cli_and_web_keep_their_text_forms(run_cli, client):
    """The web body and CLI give text or numbers: a timedelta cannot come through them; '36h' reads as before."""
    field_refusal(run_cli("train", "llama-2-7b", "--days", "1 day, 12:00:00"), "days", "expected a duration")
    response = client.post("/api/training", json={"model": "llama-2-7b", "days": "36h", "tokens": "10B"})
    assert response.status_code == 200, response.text[:300]


# ---- 3. Ctrl-C: exit 130 (128 + SIGINT), nothing half-written -------------------------------------------

def test_ctrl_c_inside_a_command_exits_130(run_cli, monkeypatch):
    """click turns a KeyboardInterrupt raised inside a command into Abort: the parent answered 'aborted', exit 1."""
    import gpuplan.jobs.memory.estimate as memory_job

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(memory_job, "estimate_memory", interrupted)
    code, out, err = run_cli("memory", "llama-2-7b", "--gpu", "h100")
    assert (code, out) == (130, "") and err.strip() == "interrupted", (code, err)


def test_ctrl_c_while_writing_out_leaves_the_old_file(run_cli, monkeypatch, tmp_path):
    """Interrupted mid-write (inside adapters.files.write_atomic, before os.replace): the --out file keeps its old
    text and no temporary file is left beside it."""
    import gpuplan.adapters.files as files

    out = tmp_path / "report.html"
    out.write_text("old report")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    code, _, err = run_cli("report", str(ROOT / "examples" / "article-7b.yaml"), "--out", str(out), "--no-plots")
    assert code == 130 and err.strip() == "interrupted", (code, err)
    assert out.read_text() == "old report" and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_an_abort_that_is_not_ctrl_c_still_exits_1(run_cli, monkeypatch):
    """click's Abort from an EOFError (a prompt with stdin closed) keeps its 'aborted', exit 1."""
    import gpuplan.jobs.memory.estimate as memory_job

    def end_of_input(*args, **kwargs):
        raise EOFError

    monkeypatch.setattr(memory_job, "estimate_memory", end_of_input)
    code, _, err = run_cli("memory", "llama-2-7b", "--gpu", "h100")
    assert code == 1 and err.strip() == "aborted", (code, err)
