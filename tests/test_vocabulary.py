"""One vocabulary across commands (docs/cli.md): an option name means one thing, with one default,
everywhere; every Assumptions row names a flag its command takes; the answer comes first."""

import re
from pathlib import Path

import pytest

from gpuplan.commands.reference import all_commands, options, options_by_name, shared_options_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_an_option_name_means_one_thing_everywhere():
    clashes = {flag: sorted({(u.help, u.is_flag) for u in uses}) for flag, uses in options_by_name().items()
               if len({(u.help, u.is_flag) for u in uses}) > 1}
    assert clashes == {}


def test_the_clash_check_sees_a_clash(monkeypatch):
    from gpuplan.commands import reference

    real = reference.options

    def with_a_clash(name, command):
        found = real(name, command)
        if name == "memory":
            found = [o if o.name != "--seq-len" else reference.OptionInfo(name, o.name, "another meaning", False)
                     for o in found]
        return found

    monkeypatch.setattr(reference, "options", with_a_clash)
    uses = reference.options_by_name()["--seq-len"]
    assert len({u.help for u in uses}) == 2


def test_every_option_shows_its_default():
    missing = [f"{o.command} {o.name}" for name, command in all_commands().items() for o in options(name, command)
               if "[default:" not in o.help and o.name not in ("--json", "--full", "--help")]
    assert missing == []


def test_booleans_are_flags_not_bool_placeholders(run_cli):
    code, out, _ = run_cli("budget", "--help")
    assert code == 0
    assert "--tokenize / --no-tokenize" in out and "--async-checkpoint / --no-async-checkpoint" in out
    assert "<bool>" not in out and "BOOLEAN" not in out


def test_docs_cli_lists_the_shared_options_as_the_code_defines_them():
    text = DOCS.read_text(encoding="utf-8")
    start, end = "<!-- shared-options:start -->\n", "<!-- shared-options:end -->"
    assert text[text.index(start) + len(start):text.index(end)] == shared_options_markdown(), \
        "regenerate with: python -m gpuplan.commands.reference docs/cli.md"


def test_version_and_bare_gpuplan(run_cli):
    import gpuplan

    code, out, _ = run_cli("--version")
    assert code == 0 and out.strip() == f"gpuplan {gpuplan.__version__}"
    code, out, _ = run_cli()
    assert code == 0 and "Usage: gpuplan" in out and "train" in out and "serve" in out


REPORTS = [
    ("train",), ("train", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024"),
    ("budget", "--params", "70B", "--gpu", "h100", "--days", "30", "--async-checkpoint"),
    ("memory", "llama-3.1-8b", "--gpus", "8", "--zero", "3"),
    ("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64-256"),
    ("infer", "llama-3.1-8b", "--gpu", "h100", "--tp", "2"),
]


@pytest.mark.parametrize("args", REPORTS, ids=lambda a: " ".join(a))
def test_every_assumption_names_a_flag_its_command_takes(run_json, args):
    data = run_json(*args)
    accepted = {o.name for o in options(args[0], all_commands()[args[0]])}
    accepted |= {f"--no-{n[2:]}" for n in accepted}
    named = {flag for a in data["assumptions"] for flag in re.findall(r"--[a-z0-9][a-z0-9-]*", a["flag"])}
    assert named, "assumptions name their flags"
    assert named - accepted == set()


def test_train_answers_first_in_under_40_lines(run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr("gpuplan.commands.build.on_terminal", lambda: True)  # the terminal view, 100 columns
    code, out, _ = run_cli("train")
    lines = out.splitlines()
    assert code == 0 and len(lines) <= 40
    head = "\n".join(lines[:15])
    # the article: 6ND = 8.4e22 FLOPs, ~7.8e3 GPU-days at 40% MFU on A100, 1,112.9 GPUs of compute for 7 days
    assert "8.400e+22" in head and "7,790" in head and "1,112.9" in head
    assert max(len(line) for line in lines) <= 100


def test_full_keeps_every_section(run_cli, run_json, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli("train", "--full")
    report = run_json("train")
    titles = [s["title"] for s in report["sections"]]
    assert code == 0 and all(title in out for title in titles)
    # piped: every line and every assumption with its whole source, one row each, nothing cut
    rows = out.splitlines()
    assert all(any(a["source"] in row and a["label"] in row for row in rows) for a in report["assumptions"])
    assert all(any(line["label"] in row for row in rows) for s in report["sections"] for line in s["lines"])
    assert "…" not in out


def test_ranges_print_in_the_values_unit(run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = run_cli("train", "--full")
    mtbi = next(line for line in out.splitlines() if "mean time between interruptions" in line)
    # MTBI = 1 / (GPUs x 1.973e-5 per GPU-hour): 1.57 days on the 1,349 GPUs that meet the 7 days
    gpus = int(re.search(r"1 / \(([\d,]+) GPUs", mtbi)[1].replace(",", ""))
    days = f"{1 / (gpus * 1.9733e-5) / 24:.2f} days"
    assert re.search(re.escape(days) + r" .* \d+\.\d\d days – \d+\.\d\d days", mtbi), mtbi
