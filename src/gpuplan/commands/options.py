"""Options shared by every command (output format), and the renderer dispatch."""

import sys
from enum import Enum
from typing import Annotated

import typer


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


FormatOpt = Annotated[OutputFormat, typer.Option("--format", "-f", help="table, json or markdown")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Same as --format json.")]


def parse_format(fmt: "str | None") -> OutputFormat:
    """A --format value given as free text (commands that take it as a string): InputError
    naming the valid formats instead of a Typer usage error."""
    from gpuplan.errors import InputError

    try:
        return OutputFormat(fmt or "table")
    except ValueError:
        raise InputError("format", fmt, "must be table, json or markdown") from None


def emit(report, fmt: OutputFormat, as_json: bool) -> None:
    """Render a Report to stdout in the chosen format."""
    from gpuplan.report import render

    if as_json or fmt is OutputFormat.json:
        sys.stdout.write(render.to_json(report) + "\n")
    elif fmt is OutputFormat.markdown:
        sys.stdout.write(render.to_markdown(report))
    else:
        render.print_rich(report)
