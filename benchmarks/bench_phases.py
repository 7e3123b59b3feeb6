"""Where a command's time goes, phase by phase: the floor under issue 39's speed goals.

Run: python benchmarks/bench_phases.py [--repeats 7] [--write docs/performance.md]

Each repeat starts a fresh interpreter that walks the path `gpuplan <command>` takes, one phase at
a time, and reads the process's CPU clock (time.process_time) after each: the CLI and click, the
CLI's start-up settings (commands/dataclass_code.bin loaded), pydantic, numpy, the job's schema
modules, the click options, the estimate's modules, the planner's modules (train and plan search
layouts) and the numpy submodules the search pulls in, the inputs checked (pydantic builds the
schema's validator), the estimate itself, the plain-text rendering. The last row is the whole
command (`python -m gpuplan ...`, a separate process) less the sum of the phases: the
interpreter's start, runpy, click's parsing and the exit. Two rows after the whole command: the
floor the libraries set before any gpuplan code runs (python -c pass, click, the start-up settings,
pydantic, numpy, summed), and the estimate run a second time in the same process (its compute
alone, without the imports and tables its first run loads). CPU time, not wall: on this 2-core
machine shared by other work it is the figure that holds across load (an idle machine's wall time
is within a few ms of it). Medians per phase.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from results import publish  # benchmarks/results.py; a script's own folder is on sys.path

COMMANDS = {
    "train": ["train"],
    "plan": ["plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1024"],
    "memory": ["memory", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--zero", "3"],
}

CHILD = r'''
import io, json, sys, time
clock = time.process_time
laps, t0 = [], clock()
def lap(name):
    global t0
    now = clock(); laps.append((name, (now - t0) * 1e3)); t0 = now
import gpuplan.cli as cli; lap("click and gpuplan.cli")
cli._lean_start(sys.argv[1]); lap("CLI start-up settings (kept dataclass code loaded)")
import pydantic; from pydantic import BaseModel; lap("pydantic (BaseModel)")
import numpy; lap("numpy")
import importlib
from gpuplan.jobs import JOBS
cmd, argv = sys.argv[1], sys.argv[2:]
job = JOBS[{"train": "budget"}.get(cmd, cmd)]
schema = job.schema; lap("the job's schema modules (gpuplan.schema, core names)")
command = importlib.import_module(f"gpuplan.commands.{cmd}").command(); lap("click options from the schema")
run = job._load(job.estimate_path); lap("the estimate's modules")
if cmd in ("train", "plan"):
    for name in ("gpuplan.planner.plan", "gpuplan.planner.search", "gpuplan.planner.uncertainty",
                 "gpuplan.jobs.plan.search", "gpuplan.jobs.plan.estimate", "gpuplan.jobs.training.layout"):
        importlib.import_module(name)
    lap("the planner's modules (layout search, step time, collectives)")
ctx = command.make_context(cmd, list(argv))
from gpuplan.commands import build
flags = {k: v for k, v in ctx.params.items() if k not in ("target", "fmt", "as_json", "full")}
raw, where = build.raw_inputs(ctx.params.get("target"), flags, schema)
inputs = schema.parse(raw, where); lap("inputs checked (pydantic builds the validator)")
if cmd == "plan":
    from gpuplan.jobs.plan.estimate import plan_report as run
report = run(inputs); lap("the estimate (layout search, memory, budget, report)")
real, sys.stdout = sys.stdout, io.StringIO()
build.emit(report)
sys.stdout = real; lap("plain-text rendering")
run(inputs); warm = (clock() - t0) * 1e3  # again, every module imported and every table read: the compute alone
print(json.dumps({"laps": laps, "warm_estimate": warm}))
'''


LIBRARY_PHASES = ("click and gpuplan.cli", "CLI start-up settings (kept dataclass code loaded)", "pydantic (BaseModel)",
                  "numpy")
"""The phases that are the libraries every answer command loads (gpuplan.cli itself is ~0.4 ms of the first)."""


def cpu_of(cmd: list[str], write_bytecode: bool = False) -> tuple[float, str]:
    """(CPU ms of the child process, its stdout); ``write_bytecode``: as bench_cli.child_env."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return (usage.ru_utime + usage.ru_stime) * 1e3, out


def phases(name: str, repeats: int) -> list[tuple[str, float]]:
    """Median CPU ms of each phase of ``name``, then the rest of the whole command."""
    laps, warm, whole, bare = [], [], [], []
    argv = COMMANDS[name]
    cpu_of([sys.executable, "-m", "gpuplan", *argv], write_bytecode=True)  # the bytecode of edited modules
    for _ in range(repeats):
        # the child runs with the CLI's own settings (cli._lean_start sets them before numpy loads)
        child = json.loads(cpu_of([sys.executable, "-c", CHILD, name, *argv[1:]])[1].strip().splitlines()[-1])
        laps.append(child["laps"])
        warm.append(child["warm_estimate"])
        whole.append(cpu_of([sys.executable, "-m", "gpuplan", *argv])[0])
        bare.append(cpu_of([sys.executable, "-c", "pass"])[0])
    rows = [(label, statistics.median(run[i][1] for run in laps)) for i, (label, _) in enumerate(laps[0])]
    total = statistics.median(whole)
    rows.append(("interpreter start, runpy, click parsing and exit (the whole command less the phases)",
                 total - sum(ms for _, ms in rows)))
    rows.append(("whole command", total))
    libraries = sum(ms for label, ms in rows if label in LIBRARY_PHASES) + statistics.median(bare)
    rows.append(("the floor under any gpuplan code: python -c pass, click, the CLI's start-up settings, pydantic and "
                 "numpy (summed)", libraries))
    rows.append(("the same estimate run again in that process (warm: its compute without first-use costs)",
                 statistics.median(warm)))  # CHILD times the estimate for every command
    rows.append(("python -c pass", statistics.median(bare)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", help="put the result table in this Markdown file")
    parser.add_argument("commands", nargs="*", default=list(COMMANDS))
    args = parser.parse_args()
    table = []
    for name in args.commands:
        rows = phases(name, args.repeats)
        bare = rows[-1][1]
        for label, ms in rows[:-1]:
            table.append((f"{name}: {label}", f"{ms:.1f} ms CPU ({ms / bare:.1f}x python -c pass)", "-"))
    preface = (f"Medians of {args.repeats} fresh processes per command; CPU time (user + system); load average "
               f"{os.getloadavg()[0]:.1f} at the end")
    publish(table, args.write, heading="Where the time goes (`python benchmarks/bench_phases.py`)", preface=preface)


if __name__ == "__main__":
    main()
