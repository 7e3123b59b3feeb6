"""The CLI's option reference, read from the commands themselves: which option each command
takes, with its help and default. docs/cli.md's table of shared options is generated from it
(``python -m gpuplan.commands.reference``) and tests/test_vocabulary.py checks that every option
name means one thing everywhere."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import click


@dataclass(frozen=True)
class OptionInfo:
    command: str
    name: str
    """The long flag, e.g. --seq-len (for an on/off pair: the 'on' flag)."""
    help: str
    is_flag: bool


def all_commands() -> dict[str, click.Command]:
    """Every leaf command by its full name ('catalog models', 'train', ...)."""
    from gpuplan.cli import COMMANDS, app

    found: dict[str, click.Command] = {}
    context = click.Context(app)
    for name in COMMANDS:
        command = app.get_command(context, name)
        if isinstance(command, click.Group):
            for sub_name, sub in command.commands.items():
                found[f"{name} {sub_name}"] = sub
        elif command is not None:
            found[name] = command
    return found


def options(command_name: str, command: click.Command) -> list[OptionInfo]:
    out = []
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        long = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        out.append(OptionInfo(command_name, long, param.help or "", param.is_flag))
    return out


def options_by_name() -> dict[str, list[OptionInfo]]:
    """Option flag -> its occurrences across commands."""
    table: dict[str, list[OptionInfo]] = defaultdict(list)
    for name, command in all_commands().items():
        for info in options(name, command):
            table[info.name].append(info)
    return dict(table)


def shared_options_markdown() -> str:
    """The table of options that more than one command takes (docs/cli.md)."""
    rows = ["| option | commands | meaning [default] |", "|---|---|---|"]
    for flag, uses in sorted(options_by_name().items()):
        if len(uses) < 2:
            continue
        commands = ", ".join(sorted({u.command for u in uses}))
        help_text = uses[0].help.replace("|", "\\|")
        rows.append(f"| `{flag}` | {commands} | {help_text} |")
    return "\n".join(rows) + "\n"


START, END = "<!-- shared-options:start -->\n", "<!-- shared-options:end -->"


def update_doc(path: str) -> None:
    """Rewrite the table between the markers of ``path`` (docs/cli.md)."""
    from pathlib import Path

    doc = Path(path)
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    doc.write_text(head + START + shared_options_markdown() + END + rest.split(END, 1)[1], encoding="utf-8")


if __name__ == "__main__":  # python -m gpuplan.commands.reference [docs/cli.md]
    import sys

    if len(sys.argv) > 1:
        update_doc(sys.argv[1])
    else:
        sys.stdout.write(shared_options_markdown())
