"""Whole-process speed of the commands people run most, as ratios to fixed references (issue 39).

Run: python benchmarks/bench_cli.py [--repeats 15] [--write docs/performance.md]
     LLM_ANALYSIS_PYTHON=/tmp/venv-llma/bin/python python benchmarks/bench_cli.py   # with the comparison

Each command runs as a fresh process from the shell (output to /dev/null: the piped, plain-text
path), interleaved with its reference so that both see the same machine load; the medians of
wall time and of CPU time (user + system of the child) are reported. Goals:
  * `gpuplan train` <= 12x `python -c pass`
  * `gpuplan plan llama-3.1-70b --gpu h100 --gpus 1024` <= 0.3 s and <= 25x `python -c pass`
  * `gpuplan memory llama-2-7b --gpu a100-80gb --gpus 8 --zero 3` <= 0.5x llm-analysis's CLI for the
    same question (llm-analysis 0.2.2, `python -m llm_analysis.analysis train` with
    NousResearch_Llama-2-7b-hf on a100-sxm-80gb, 8 GPUs, ZeRO-3, sequence 4096; installed in a
    separate virtual environment named by LLM_ANALYSIS_PYTHON, never in the project's)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time

from results import publish  # benchmarks/results.py; a script's own folder is on sys.path

GPUPLAN = [sys.executable, "-m", "gpuplan"]
BARE = [sys.executable, "-c", "pass"]
TRAIN = GPUPLAN + ["train"]
PLAN = GPUPLAN + ["plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1024"]
MEMORY = GPUPLAN + ["memory", "llama-2-7b", "--gpu", "a100-80gb", "--gpus", "8", "--zero", "3"]
LLM_ANALYSIS = ["-m", "llm_analysis.analysis", "train", "--model_name", "NousResearch_Llama-2-7b-hf", "--gpu_name",
                "a100-sxm-80gb", "--total_num_gpus", "8", "--ds_zero", "3", "--seq_len", "4096",
                "--batch_size_per_gpu", "1"]


def child_env(write_bytecode: bool = False) -> dict[str, str]:
    """The children's environment. ``write_bytecode``: without PYTHONDONTWRITEBYTECODE, so that a
    warm-up run writes the bytecode of every module edited since it was last written (an installed
    package has its bytecode compiled at install; with the variable set, as in this project's
    shells, each measured run compiled the edited modules again: ~35 ms of `plan` on 2026-12-05)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(cmd: list[str], write_bytecode: bool = False) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run, output discarded."""
    env = child_env(write_bytecode)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def paired(cmds: dict[str, list[str]], repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each command, the commands interleaved run by run."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for name, cmd in cmds.items():
        run_once(cmd, write_bytecode=True)  # warm the file cache and the bytecode
    for _ in range(repeats):
        for name, cmd in cmds.items():
            samples[name].append(run_once(cmd))
    return {name: (statistics.median(w for w, _ in s), statistics.median(c for _, c in s))
            for name, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--write", help="put the result table in this Markdown file")
    args = parser.parse_args()
    cmds = {"bare": BARE, "train": TRAIN, "plan": PLAN, "memory": MEMORY}
    other = os.environ.get("LLM_ANALYSIS_PYTHON")
    if other:
        cmds["llm-analysis"] = [other, *LLM_ANALYSIS]
    m = paired(cmds, args.repeats)

    def ms(name: str) -> str:
        return f"{m[name][0] * 1e3:.0f} ms wall, {m[name][1] * 1e3:.0f} ms CPU"

    def ratio(name: str, ref: str, digits: int = 1) -> str:
        return f"{m[name][0] / m[ref][0]:.{digits}f}x wall, {m[name][1] / m[ref][1]:.{digits}f}x CPU"

    rows = [
        ("python -c pass (the reference)", ms("bare"), "-"),
        ("gpuplan train (the article's example)", f"{ms('train')}; {ratio('train', 'bare')}", "<= 12x"),
        ("gpuplan plan llama-3.1-70b --gpu h100 --gpus 1024", f"{ms('plan')}; {ratio('plan', 'bare')}",
         "<= 0.3 s, <= 25x"),
        ("gpuplan memory llama-2-7b --gpu a100-80gb --gpus 8 --zero 3", ms("memory"), "-"),
    ]
    if other:
        rows += [("llm-analysis 0.2.2 train, the same question", ms("llm-analysis"), "-"),
                 ("gpuplan memory / llm-analysis", ratio("memory", "llm-analysis", 2), "<= 0.5x")]
    preface = (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; medians "
               f"of {args.repeats} interleaved runs; load average {os.getloadavg()[0]:.1f} at the end")
    publish(rows, args.write, heading="Whole commands against fixed references (`python benchmarks/bench_cli.py`)",
            preface=preface)


if __name__ == "__main__":
    main()
