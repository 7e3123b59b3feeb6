"""Build a click command from a job schema: one option per schema field, one help text.

Every option takes the raw text ("2T", "8K", "40%") and hands it to the schema, so the CLI
refuses exactly what a plan file or the API refuses, with the same message. A boolean field
becomes a ``--name/--no-name`` flag. Each option's help is the field's description plus its
default, so ``--help`` shows every default.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from gpuplan.errors import CAMPAIGN_KEY, InputError, as_typed

FORMATS = ("table", "json", "markdown", "csv")


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def default_text(info: Any) -> str:
    """The default as --help prints it."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if "default_text" in extra:
        return str(extra["default_text"])
    default = info.default
    if default is None:
        return "none"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, tuple):
        return ",".join(map(str, default))
    if isinstance(default, float) and default >= 1e5:
        return f"{default:g}"
    return str(default)


def is_bool(info: Any) -> bool:
    return info.annotation is bool


def schema_options(schema: type, skip: tuple[str, ...] = ()) -> list[click.Option]:
    """One click option per field of ``schema`` (raw text; booleans as on/off flags)."""
    options = []
    for name, info in schema.model_fields.items():
        if name in skip:
            continue
        help_text = f"{info.description or ''} [default: {default_text(info)}]"
        if is_bool(info):
            options.append(click.Option([f"{flag_name(name)}/--no-{name.replace('_', '-')}", name], default=None,
                                        help=help_text))
        else:
            options.append(click.Option([flag_name(name), name], type=str, default=None, help=help_text,
                                        metavar=_metavar(info), callback=not_an_option))
    return options


def not_an_option(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Refuse a value that is one of the command's own options: its value forgotten, an option took the next option
    as its value (`serve --host --port 8000` was told "arguments: got '8000'; not expected", `catalog models --filter
    --json` listed 0 models; hostile wave 27). A negative number or other text starting with '-' is left to the field."""
    if isinstance(value, str) and value.startswith("-") and any(value.split("=", 1)[0] in (
            *p.opts, *getattr(p, "secondary_opts", ()), *ctx.help_option_names) for p in ctx.command.params):
        flag = param.opts[0]
        raise InputError(param.name or flag, value, f"is an option of `{ctx.command_path}`, not a value: give {flag} "
                         f"its value ({flag} VALUE), then {value}")
    return value


def _metavar(info: Any) -> str:
    from typing import Literal, get_args, get_origin

    def literals(annotation: Any) -> list[str]:
        found: list[str] = []
        for arg in get_args(annotation) or ():
            if get_origin(arg) is Literal:
                found += [str(v) for v in get_args(arg)]
            else:
                found += literals(arg)
        if get_origin(annotation) is Literal:
            found += [str(v) for v in get_args(annotation)]
        return found

    def takes_int(annotation: Any) -> bool:
        return annotation is int or any(takes_int(arg) for arg in get_args(annotation) or ()
                                        if get_origin(arg) is not Literal)

    values = literals(info.annotation)
    if values and len(values) <= 8 and all(isinstance(v, str) for v in values):
        # a whole number or a word (--shard-group N|auto): the number first, as the help's text reads
        return "[" + "|".join((["N"] if takes_int(info.annotation) else []) + list(dict.fromkeys(values))) + "]"
    return "TEXT"


def _check_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if value not in FORMATS:
        raise InputError("format", value, f"must be one of {', '.join(FORMATS)}")
    return value


def format_options(with_full: bool = True) -> list[click.Option]:
    """Output options of every report-printing command."""
    options = [
        click.Option(["--format", "-f", "fmt"], type=str, default="table", callback=_check_format,
                     metavar="[table|json|markdown|csv]",
                     help="table (plain text when piped), json, markdown or csv (the result lines and tables). "
                          "[default: table]"),
        click.Option(["--json", "as_json"], is_flag=True, default=False, help="Same as --format json."),
    ]
    if with_full:
        options.append(click.Option(["--full"], is_flag=True, default=False,
                                    help="Show every section and every assumption (default: the answer first)."))
    return options


def check_format(fmt: str, as_json: bool) -> None:
    """--json with --format markdown asks for two answers: refused (every command, before any work); so is --json
    beside a typed --format table (the default, so not told apart before: it printed JSON, hostile wave 27)."""
    if as_json and (fmt not in ("table", "json") or fmt == "table" and _typed("fmt")):
        raise InputError("format", fmt, f"--json asks for JSON; give --json or --format {fmt}, not both")


def _typed(param: str) -> bool:
    """Whether the running command's ``param`` was given on the command line (not its default)."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.get_parameter_source(param) is ParameterSource.COMMANDLINE


def on_terminal() -> bool:
    """stdout is a terminal (else a pipe or a file: plain text, full width, nothing cut)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def emit(report: Any, fmt: str = "table", as_json: bool = False, full: bool = False) -> None:
    """Render a Report to stdout in the chosen format: a table on a terminal through rich, plain
    text anywhere else (report/plain.py: no rich import, every column at its full width)."""
    check_format(fmt, as_json)
    if not (as_json or fmt in ("json", "csv")):  # a TPU's titles, columns, formulas and notes in chips (not JSON keys)
        from gpuplan.report.device_words import for_display

        report = for_display(report)
    if as_json or fmt == "json":
        from gpuplan.report.render import to_json

        sys.stdout.write(to_json(report) + "\n")
    elif fmt == "markdown":
        from gpuplan.report.render import to_markdown

        sys.stdout.write(to_markdown(report))
    elif fmt == "csv":
        from gpuplan.report.render import to_csv

        sys.stdout.write(to_csv(report))
    elif not on_terminal():
        from gpuplan.report import plain

        plain.write(plain.full_lines(report) if full else plain.summary_lines(report), sys.stdout)
    else:
        from gpuplan.report import render

        (render.print_rich if full else render.print_summary)(report, terminal_width())


MIN_WIDTH = 20
"""Narrowest terminal a table is drawn for: rich drew nothing at COLUMNS=0 (exit 0, no answer)."""


def terminal_width() -> int:
    """The width to draw at: COLUMNS when it is a whole number from MIN_WIDTH to 10,000 (rich's own
    reading), else the terminal's size, else 80. COLUMNS=0, -5, 1e9 or abc is ignored as GNU ls
    ignores it, so a bad value never hides the answer."""
    import os
    import shutil

    text = os.environ.get("COLUMNS", "").strip()
    if text.isascii() and text.isdigit() and MIN_WIDTH <= int(text) <= 10_000:
        return int(text)
    try:
        columns = os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, ValueError, OSError):
        columns = shutil.get_terminal_size((80, 24)).columns
    return columns if MIN_WIDTH <= columns <= 10_000 else 80


PATH_FIELDS = ("model", "draft_model", "calibration")
"""Plan-file fields that may name a file (a config.json, a calibration)."""


def plan_relative_paths(raw: dict[str, Any], plan: str) -> dict[str, Any]:
    """A relative path in a plan file is read from the plan file's folder when it is there (as a
    compose or CI file's paths are), else as given (from the working directory). Only values that
    look like paths move: a catalog name or a Hugging Face id stays a name."""
    from pathlib import Path

    folder = Path(plan).parent
    out = dict(raw)
    for name in PATH_FIELDS:
        value = raw.get(name)
        if not isinstance(value, str) or Path(value).is_absolute():
            continue
        looks_like_path = value.endswith(".json") or value.startswith(".") or "/" in value
        try:
            beside = folder / value
            if looks_like_path and beside.exists() and not Path(value).exists():
                out[name] = str(beside)
        except (OSError, ValueError):  # a name no file system can hold: the schema names it
            continue
    return out


def raw_inputs(target: str | None, flags: dict[str, Any], schema: type) -> tuple[dict[str, Any], str | None]:
    """The raw inputs of a job command: a plan file's fields (when ``target`` is one) overridden
    by the flags given; a ``target`` that is not a plan file is the model. Returns (raw, where)."""
    from gpuplan.adapters.plan_file import is_plan_file, read_plan_file

    given = {k: v for k, v in flags.items() if v is not None}
    raw: dict[str, Any] = {}
    where = None
    if is_plan_file(target):
        raw, where = plan_relative_paths(read_plan_file(target), target), str(target)
        unknown = sorted((k for k in raw if k not in schema.model_fields), key=lambda k: k != CAMPAIGN_KEY)  # a campaign's
        if unknown:  # list named first (schema.base.campaign_refusal), not its title or a default this job lacks
            schema.parse({unknown[0]: raw[unknown[0]]}, where)  # raises: unknown field, with the valid ones
    elif target is not None:
        if "model" in given:
            raise InputError("model", given["model"], f"given twice (also as the argument {target!r})")
        given["model"] = target
    if "model" in given or "params" in given:
        raw = {k: v for k, v in raw.items() if k not in ("model", "params")}
    schema.check_values({k: v for k, v in raw.items() if k in given}, where)  # a value a flag overrides is checked too
    return raw | given, where


def run_typed(run: Callable[[Any], Any], schema: type, raw: dict[str, Any], where: str | None) -> Any:
    """``run`` on ``schema.parse(raw, where)``; a refusal after parsing quotes the text written for its field
    (errors.as_typed: `--days 90min` was refused as 'got 0.0625'), as every command's door does (job_command,
    commands.report's sections)."""
    inputs = schema.parse(raw, where)  # its refusals quote the text already (schema.base)
    try:
        return run(inputs)
    except InputError as exc:  # a later check quoting a converted value: the text typed instead
        raise as_typed(exc, raw) from None


def job_command(name: str, schema: type, run: Callable[[Any], Any], help: str,
                target_help: str = "A plan file (.yaml/.yml/.toml) or a model (catalog name, Hugging Face id, "
                                   "config.json).") -> click.Command:
    """A command that reads ``schema`` from a plan file and flags, runs ``run`` and prints its Report."""

    def callback(target: str | None = None, fmt: str = "table", as_json: bool = False, full: bool = False,
                 **flags: Any) -> None:
        from gpuplan.adapters.plan_file import refusals_name

        check_format(fmt, as_json)
        raw, where = raw_inputs(target, flags, schema)
        with refusals_name(where):  # every refusal of a plan file's ask names the file (adapters.plan_file)
            report = run_typed(run, schema, raw, where)
        if report is not None:
            emit(report, fmt, as_json, full)

    params: list[click.Parameter] = [click.Argument(["target"], required=False, metavar="[TARGET]")]
    params += schema_options(schema) + format_options()
    return with_schema(click.Command(name, callback=callback, params=params, help=f"{help}\n\nTARGET: {target_help}",
                                     short_help=help.split(". ")[0].rstrip(".")), schema)


def with_schema(command: click.Command, schema: type) -> click.Command:
    """Remember which schema a command's options come from (docs and the vocabulary tests read it)."""
    command.gpuplan_schema = schema  # type: ignore[attr-defined]
    return command
