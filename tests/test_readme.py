"""Every `gpuplan ...` command and Python block in the README runs (litgpt-style README test)."""

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)
COMMANDS = [line.strip() for lang, body in BLOCKS if lang == "bash"
            for line in body.splitlines() if line.strip().startswith("gpuplan ")]


def test_readme_has_commands():
    assert len(COMMANDS) >= 5


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(run_cli, command, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = run_cli(*shlex.split(command, comments=True)[1:])
    assert code == 0, err
    assert out


def test_readme_python_blocks_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    for lang, body in BLOCKS:
        if lang == "python":
            exec(compile(body, "README.md", "exec"), {})
