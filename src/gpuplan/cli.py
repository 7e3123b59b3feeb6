"""Command line: ``gpuplan <command>``. Each command lives in gpuplan/commands/<name>.py and is
imported only when invoked (``--help`` lists them from the table below without importing any).

Bad input anywhere (InputError from a schema or an estimate, or a click usage error) prints one
line on stderr and exits with status 2; no traceback.
"""

from __future__ import annotations

import errno
import gc
import os
import sys

import click

from gpuplan import __version__
from gpuplan.errors import InputError

# name -> one-line summary (the module gpuplan.commands.<name> builds the command)
COMMANDS = {
    "train": "The training budget in one view: compute, GPUs or time, memory, data, checkpoints, failures, cost.",
    "budget": "The same training budget, headed by its cost lines.",
    "campaign": "A training campaign in stages: each stage's budget, and the totals (GPU-hours, cost, calendar time).",
    "memory": "Per-GPU training memory of a layout, a verdict per GPU type, and what would make it fit.",
    "plan": "Search every parallel layout on the GPUs given; rank, explain, Pareto front.",
    "infer": "Serving memory, capacity, latency, throughput and cost; the GPUs that serve a load.",
    "measure": "Measure a training step's memory on the CPU (fake tensors) beside the estimate.",
    "profile": "A short real training run (CUDA or CPU; torchrun for several GPUs) into a measurement JSON.",
    "calibrate": "Fit correction factors from measurement files and training logs.",
    "validate": "The estimators against published runs: mean and max error per kind.",
    "catalog": "List the model and accelerator catalogs.",
    "report": "A self-contained HTML (and Markdown) report of a plan file, with plots.",
    "serve": "The web page and JSON API on a local port.",
}


GC_GENERATION0 = 100_000
"""Objects allocated between two collections of the youngest generation (CPython's default: 700)."""
INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): distinct from bad input (2)
PIPE_CLOSED = 141
"""Exit status when the reader of stdout went away (``gpuplan train | head -1``): 128 + SIGPIPE,
what a shell reports for ``yes | head -1``; nothing is printed (click would exit 1, silently)."""


class PipeClosed(Exception):
    """stdout's reader has gone (EPIPE); not an OSError, so click passes it on to main()."""
OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
"""Errors of writing the answer (stdout on a full device): one line, like bad input."""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        import importlib

        return importlib.import_module(f"gpuplan.commands.{cmd_name}").command()

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise PipeClosed from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, summary in COMMANDS.items()])


@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gpuplan", message="%(prog)s %(version)s")
@click.pass_context
def app(ctx: click.Context) -> None:
    """Plan the compute, memory, time and cost of training and serving LLMs.

    Every command prints the answer first; --full shows every section and assumption, --json
    everything in base units. Options, plan-file keys and API fields share one vocabulary
    (docs/cli.md)."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def repeated_option(argv: list[str]) -> tuple[str, str] | None:
    """(option, as given) for the first long option given twice (``--model a --model b``; click would
    keep the last silently), a flag and its negation counting as one (``--search --no-search``).
    No gpuplan option takes several values by repetition."""
    seen: dict[str, str] = {}
    for arg in argv:
        if arg == "--":
            break
        if arg.startswith("-f") and not arg.startswith("--"):  # -f json, -fjson: --format by its short name
            arg = "--format"
        if arg.startswith("--") and len(arg) > 2:
            name = arg.split("=", 1)[0]
            option = "--" + name[5:] if name.startswith("--no-") else name  # every --no-X negates --X
            if option in seen:
                return option, name if seen[option] == name else f"{seen[option]} and {name}"
            seen[option] = name
    return None


INTERRUPTED = 128 + 2  # SIGINT is 2 on every POSIX system (signal(7)); signal is not imported for it
"""Exit status of a run stopped by Ctrl-C (KeyboardInterrupt): 130, what a shell reports for SIGINT."""
ANSWER_COMMANDS = frozenset({"train", "budget", "campaign", "memory", "plan", "infer", "catalog"})
"""Commands that compute an answer, print it and are done: run as the process's entry, they end it
without the interpreter's teardown (_end_process)."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; bad input -> one line on stderr, exit status 2. Without ``argv``
    (the console script, ``python -m gpuplan``) it is the process's entry: an answer command ends
    the process itself once its answer is written."""
    threshold = gc.get_threshold()
    try:
        code = _run(list(sys.argv[1:] if argv is None else argv))
    except BaseException:
        gc.set_threshold(*threshold)
        raise
    if argv is None and sys.argv[1:2] and sys.argv[1] in ANSWER_COMMANDS:
        # before the caller's threshold is back: restored first (700), the next allocation started a
        # collection over the ~100,000 objects allocated since the last one (8-9 ms of `plan`)
        _end_process(code)
    gc.set_threshold(*threshold)  # a caller in the same process (the tests) keeps its own
    return code


def _end_process(code: int) -> None:
    """End the process with ``code`` once everything is written, skipping the interpreter's
    teardown: freeing the ~400 modules' objects and the final collections over them took 60-80 ms
    of CPU after `train` had printed (a quarter of the command). The exit handlers run and the
    output is flushed first, as at a normal exit; with another thread running, or output that
    cannot be flushed (its reader gone), this returns and the normal exit follows."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the normal exit reports it, as before
        return
    import atexit

    atexit._run_exitfuncs()  # what Py_FinalizeEx runs (weakref.finalize, logging, tempfile cleanup)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - what an exit handler wrote cannot be written: as at a normal exit
        code = code or 120  # Py_FinalizeEx's status when flushing the standard streams fails
    os._exit(code)


def _run(argv: list[str]) -> int:
    _lean_start(argv[0] if argv else None)
    if sys.stdout is None:  # started with stdout closed (`>&-`): the answer has nowhere to go
        if sys.stderr is not None:
            sys.stderr.write("error: output: stdout is closed; give the command somewhere to write (a file: "
                             "> answer.txt, or /dev/null)\n")
        return 2
    _tolerant_output()
    if not all(map(str.isascii, argv)):  # `train —gpus 8`: an option pasted with a Unicode dash (hostile wave 28)
        from gpuplan.commands.unknown_option import dash_typed_option

        dashed = dash_typed_option(argv)
        if dashed is not None:
            sys.stderr.write(f"error: {dashed}\n")
            return 2
    twice = repeated_option(argv)
    if twice is not None:
        sys.stderr.write(f"error: {twice[0][2:].replace('-', '_')}: given twice ({twice[1]}); give it once\n")
        return 2
    try:
        try:
            result = app.main(args=argv, prog_name="gpuplan", standalone_mode=False)
        except click.exceptions.NoArgsIsHelpError as exc:  # `gpuplan catalog`: its help is the answer, written
            sys.stdout.write(exc.ctx.get_help() + "\n")  # where an answer's failing write is caught (/dev/full, a
            sys.stdout.flush()  # closed pipe: a traceback, exit 1 before; hostile wave 29)
            result = 0
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except click.ClickException as exc:
        sys.stderr.write(f"error: {usage_line(exc, argv)}\n")
        return 2
    except click.exceptions.Abort as exc:  # click turns a Ctrl-C inside a command into Abort (core.py, main)
        if isinstance(exc.__cause__, KeyboardInterrupt):  # 128 + SIGINT, as a shell reports it (was 'aborted', 1)
            sys.stderr.write("interrupted\n")
            return INTERRUPTED
        sys.stderr.write("aborted\n")
        return 1
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (PipeClosed, BrokenPipeError):
        _silence_stdout()  # what is still buffered has no reader: the final flush must not fail
        return PIPE_CLOSED
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRNOS:
            return _internal_error(exc)
        _silence_stdout()  # what is still buffered cannot be written either
        sys.stderr.write(f"error: output: cannot be written ({exc.strerror}); write to a device with space\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return INTERRUPTED
    except Exception as exc:  # a bug, not bad input: one line, and the traceback on request
        return _internal_error(exc)
    return result if isinstance(result, int) else 0


def _tolerant_output() -> None:
    """Output streams whose encoding cannot write every character the answer uses (an en dash in
    ranges, CJK labels): PYTHONIOENCODING=ascii or latin-1 ended `train` with an internal error
    (UnicodeEncodeError) after part of the answer; such characters are written as '?' instead. A strict UTF-8
    stream writes a file name's undecodable byte escaped (m\\udcff.json), as the refusals on stderr name it."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        utf8 = encoding in ("utf-8", "utf8")
        if utf8 and getattr(stream, "errors", None) != "strict" or not hasattr(stream, "reconfigure"):
            continue  # the C locale's surrogateescape writes a name's bytes back as they were
        try:  # UTF-8 strict (a locale other than C): a file name's byte that is not UTF-8, read as a surrogate
            # (0xff: U+DCFF), ended `calibrate m<0xff>.json` in an internal error, exit 70 (hostile wave 27)
            stream.reconfigure(errors="backslashreplace" if utf8 or stream is not sys.stdout else "replace")
        except (ValueError, OSError):  # a stream that cannot be reconfigured keeps its settings
            pass


def usage_line(exc: click.ClickException, argv: list[str] = ()) -> str:
    """click's usage errors that name nothing valid, in the house style (what was given, what would
    be valid): an unknown command lists the commands ('No such command 'nope'.' before), extra
    or missing arguments show the command's usage, a file named with a leading '-' (read as options:
    `infer -plan.yaml` was told "No such option '-p'.") how to name it, an unknown option the command's closest
    (commands/unknown_option.py); the rest as click words them."""
    import re

    from gpuplan.adapters.plan_file import PLAN_SUFFIXES

    ctx = getattr(exc, "ctx", None)
    message = exc.format_message()
    if isinstance(exc, click.BadOptionUsage) and message.endswith("does not take a value."):  # click gives no ctx
        return _switch_given_a_value(exc.option_name, list(argv))
    if ctx is None:
        return message
    file_suffixes = PLAN_SUFFIXES + (".json",)  # a command's file argument: a plan file or a config.json
    dashed = next((a for a in argv if isinstance(exc, click.NoSuchOption) and a.startswith(exc.option_name)
                   and "=" not in a and a.lower().endswith(file_suffixes)), None)  # the token click split
    if dashed is not None:
        argument = next((p.name for p in ctx.command.params if isinstance(p, click.Argument)), None) or "file"
        return str(InputError(argument, dashed, f"reads as options (it starts with '-'); write ./{dashed}, or put "
                              f"-- before it"))
    if isinstance(exc, click.NoSuchOption):  # click's "No such option: '--x'" and its own guesses (wave 27b)
        from gpuplan.commands.unknown_option import unknown_option_line

        typed = next((a for a in argv if a.startswith(f"{exc.option_name}=")), exc.option_name) \
            if not exc.option_name.strip("-") else exc.option_name  # '--=8': click names '--' (hostile wave 28)
        return unknown_option_line(typed, ctx)
    unknown = re.fullmatch(r"No such command '(.*)'\.(?: Did you mean .*)?", message, re.DOTALL)
    if unknown and isinstance(ctx.command, click.Group):
        from gpuplan.errors import closest_names

        names = list(ctx.command.list_commands(ctx))
        near = closest_names(unknown.group(1), names)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        return str(InputError("command", unknown.group(1), f"{hint}`{ctx.command_path}` has {', '.join(names)}"))
    usage = f"usage: {ctx.command_path} {' '.join(ctx.command.collect_usage_pieces(ctx))}"
    extra = re.fullmatch(r"Got unexpected extra arguments? \((.*)\)", message, re.DOTALL)
    if extra:
        return str(InputError("arguments", extra.group(1), f"not expected; {usage}"))
    if isinstance(exc, click.MissingParameter) and exc.param is not None and exc.param.param_type_name == "argument":
        return str(InputError(exc.param.name or "argument", None, f"is required; {usage}"))
    return message


def _switch_given_a_value(name: str, argv: list[str]) -> str:
    """A switch written with '=VALUE' (`--sequence-parallel=false`): click said "Option '--sequence-parallel' does not
    take a value.", naming neither the field nor how to say it, where a plan file, the web API and the Python API
    take true/false for the same field (hostile wave 27). The field, the value typed and the switch's forms (the
    command's option, looked up along ``argv``: click's parser raises this with no context)."""
    typed = next((a.split("=", 1)[1] for a in argv if a.startswith(f"{name}=")), "")
    command: click.Command = app
    parent = click.Context(app, info_name="gpuplan")
    for token in (a for a in argv if not a.startswith("-")):
        found = command.get_command(parent, token) if isinstance(command, click.Group) else None
        if found is None:
            break
        command, parent = found, click.Context(found, parent=parent, info_name=token)
    option = next((p for p in command.params if name in (*p.opts, *getattr(p, "secondary_opts", ()))), None)
    forms = [*option.opts, *option.secondary_opts] if option is not None else [name]
    field = forms[0].lstrip("-").replace("-", "_")  # the flag's name as written: --json, not its parameter as_json
    write = " or ".join(forms) if len(forms) > 1 else f"{forms[0]} alone"
    return str(InputError(field, typed, f"is a switch, written without a value: {write}"))


def _lean_start(command: str | None = None) -> None:
    """Start-up work no answer needs (docs/performance.md, issue 39).

    * pydantic looks for third-party plugins (an entry-point scan of every installed package,
      ~20-50 ms) when a schema is first built; gpuplan's schemas use none. Its loader module still
      imports importlib.metadata (~12-15 ms here) to return no plugins: on the pydantic releases
      read for it, an import hook answers that import instead (commands/pydantic_plugins.py).
    * The cyclic garbage collector ran ~100 times during a command's start-up (every 700 new
      container objects: the imports' classes and functions, none of them garbage): ~20 ms of CPU.
      Its first generation is collected every GC_GENERATION0 objects instead (``serve`` and the
      long commands still collect, less often).
    * dataclasses compiles ~530 method texts for the ~110 dataclasses a command defines (30-40 ms):
      their compiled code is kept in commands/dataclass_code.bin and looked up by text.
    * OpenBLAS starts one spinning thread per core when numpy is imported (~70 ms of CPU on this
      2-core machine); an answer command's numpy is elementwise, and its one matrix-vector product
      (planner/uncertainty.py, layouts x ~10 coordinates) needs no second thread.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from gpuplan.commands import pydantic_plugins

    pydantic_plugins.install()
    if command in ANSWER_COMMANDS:  # not profile / measure: torch may use OpenBLAS for its matmuls
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(max(gc.get_threshold()[0], GC_GENERATION0), *gc.get_threshold()[1:])
    from gpuplan.commands import dataclass_code

    dataclass_code.install()


def _internal_error(exc: Exception) -> int:
    if os.environ.get("GPUPLAN_DEBUG", "").strip().lower() not in ("", "0", "false", "no", "off"):
        raise exc
    sys.stderr.write(f"internal error: {type(exc).__name__}: {str(exc)[:200]} (a gpuplan bug: please report it "
                     "with the command; GPUPLAN_DEBUG=1 shows the traceback)\n")
    return INTERNAL_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
