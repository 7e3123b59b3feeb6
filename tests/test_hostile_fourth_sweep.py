"""Hostile inputs found by a fourth sweep (2026-12-04) outside the main options: a closed stdout,
the debug switch, empty plan files, serve hosts, validate's output, catalog filters."""

import json
import os
import subprocess
import sys

import pytest


def _closed_stdout(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run gpuplan with file descriptor 1 closed (the shell's `>&-`)."""
    return subprocess.run([sys.executable, "-m", "gpuplan", *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=60, preexec_fn=lambda: os.close(1), env=env)


@pytest.mark.parametrize("args", [("train", "--json"), ("train",), ("--version",)])
def test_a_closed_stdout_is_one_line_exit_2_not_a_crash_or_silence(args):
    done = _closed_stdout(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: output: stdout is closed") and done.stderr.count("\n") == 1


def test_gpuplan_debug_0_keeps_tracebacks_off(monkeypatch, capsys):
    from gpuplan import cli

    monkeypatch.setenv("GPUPLAN_DEBUG", "0")
    assert cli._internal_error(RuntimeError("boom")) == cli.INTERNAL_ERROR  # no raise: 0 means off
    assert capsys.readouterr().err.startswith("internal error: RuntimeError: boom")
    monkeypatch.setenv("GPUPLAN_DEBUG", "1")
    with pytest.raises(RuntimeError):
        cli._internal_error(RuntimeError("boom"))


@pytest.mark.parametrize(("name", "text"), [("empty.yaml", ""), ("comments.yaml", "# nothing here\n"),
                                            ("null.yaml", "null\n"), ("empty.toml", "# nothing\n")])
def test_an_empty_plan_file_is_refused_not_read_as_the_defaults(run_cli, tmp_path, name, text):
    plan = tmp_path / name
    plan.write_text(text)
    code, _, err = run_cli("train", str(plan))
    assert code == 2 and err.startswith("error: plan file: got ") and "has no fields" in err, err


def test_a_toml_plan_file_with_a_byte_order_mark_reads_like_yaml(run_cli, tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_bytes(b'\xef\xbb\xbfmodel = "llama-3-8b"\n')
    code, out, err = run_cli("train", str(plan))
    assert code == 0 and "llama-3-8b" in out, err


@pytest.mark.parametrize("host", ["999.1.1.1", "127.0.0.1:8000", "no-such-host.invalid"])
def test_serve_names_a_bad_host_not_the_port(run_cli, host):
    code, _, err = run_cli("serve", "--host", host, "--port", "8765")
    assert code == 2 and err.startswith(f"error: host: got '{host}'") and err.count("\n") == 1, err


def test_validate_out_is_markdown(run_cli, tmp_path):
    code, _, err = run_cli("validate", "--out", str(tmp_path / "v.html"))
    assert code == 2 and err.startswith("error: out: got ") and ".md" in err, err
    assert not (tmp_path / "v.html").exists()


def test_a_catalog_filter_that_matches_nothing_says_filters_are_plain_text(run_cli):
    code, out, err = run_cli("catalog", "models", "--filter", ".*", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["tables"]["models"] == []
    assert any("plain text" in note for note in data["notes"])


def test_a_plan_file_reads_relative_paths_from_its_own_folder(run_cli, tmp_path, monkeypatch):
    # `model: sub/config.json` beside the plan file works from any working directory; a catalog
    # name stays a name; a plan file given as the model is named as such
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "config.json").write_text((root / "examples/llama-2-7b/config.json").read_text())
    plan = tmp_path / "plan.yaml"
    plan.write_text("model: sub/config.json\ngpus: 64\n")
    monkeypatch.chdir(root)
    code, out, err = run_cli("train", str(plan), "--json")
    assert code == 0, err
    assert json.loads(out)["results"]["params_total"] == 6_738_415_616  # Llama-2-7B's published count
    plan.write_text(f"model: {plan}\n")
    code, _, err = run_cli("train", str(plan))
    assert code == 2 and err.startswith(f"error: {plan}: model: got ") and "is a plan file" in err, err


@pytest.mark.parametrize("command", [("catalog", "gpus"), ("validate",), ("calibrate", "x.csv"), ("train",)])
def test_json_with_format_markdown_is_refused_by_every_command(run_cli, command):
    code, _, err = run_cli(*command, "--json", "--format", "markdown")
    assert code == 2 and err.startswith("error: format: got 'markdown'") and err.count("\n") == 1, err
