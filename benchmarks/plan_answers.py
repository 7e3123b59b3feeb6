"""The answers of a fixed set of `gpuplan plan` asks, as JSON (each ask's --json report less the search's own
timing), so a change meant to keep every answer (a speed-up) can be checked: run it before and after, compare.

    python benchmarks/plan_answers.py > /tmp/before.json      # on the commit before
    python benchmarks/plan_answers.py --check /tmp/before.json  # on the change: exit 1 naming the asks that moved

The asks: the bare `plan`, README's plan examples, the long-context asks the FEW_SEQUENCES rule slowed (session
24, review R2 S1), deepseek-v2-lite's more-GPUs-asked family (docs/training.md) and --days asks."""

from __future__ import annotations

import argparse
import json
import re
import sys

ASKS = [
    [],
    ["--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "30", "--top", "5"],
    ["llama-2-7b", "--tokens", "2T", "--gpu", "a100", "--gpus", "1113"],
    ["llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024", "--tp", "8", "--pp", "4", "--vpp", "2"],
    ["llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "512-4096", "--rank-by", "cost"],
    ["llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "512", "--framework", "torchtitan",
     "--shard-group", "auto"],
    ["mixtral-8x7b", "--tokens", "2T", "--gpu", "h100", "--gpus", "256"],
    ["qwen3-30b-a3b", "--gpu", "h100", "--seq-len", "65536", "--gpus", "8191"],
    ["qwen3-30b-a3b", "--gpu", "h100", "--seq-len", "65536", "--gpus", "3000"],
    ["deepseek-v3", "--gpu", "h200", "--seq-len", "131072", "--gpus", "10000"],
    ["llama-3.1-8b", "--gpu", "a100", "--seq-len", "131072", "--gpus", "3000"],
    ["deepseek-v2-lite", "--tokens", "100B", "--gpu", "l40s", "--seq-len", "131072", "--gpus", "512"],
    ["deepseek-v2-lite", "--tokens", "100B", "--gpu", "l40s", "--seq-len", "131072", "--gpus", "768"],
    ["deepseek-v2-lite", "--tokens", "100B", "--gpu", "l40s", "--seq-len", "131072", "--gpus", "2304"],
    ["llama-3.1-8b", "--tokens", "15T", "--gpu", "h100", "--days", "2"],
    ["qwen2.5-7b", "--gpu", "b200", "--framework", "deepspeed", "--days", "10"],
    ["llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--days", "90"],
]
TIMING = re.compile(r"(distinct layouts in |fit; )[0-9,]+ (ms|layouts/s)")  # the search's own timing


def answers() -> dict[str, object]:
    """{ask as typed: its --json report, the search's time cut out}, in the process (gpuplan.cli.main)."""
    import contextlib
    import io

    from gpuplan.cli import main

    out = {}
    for ask in ASKS:
        written, said = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(written), contextlib.redirect_stderr(said):
            code = main(["plan", *ask, "--json"])
        text = TIMING.sub(r"\1(timed) \2", written.getvalue())
        out[" ".join(ask) or "(bare)"] = json.loads(text) if code == 0 else f"exit {code}: {said.getvalue()}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", help="a JSON file this script wrote: exit 1 naming each ask whose answer differs")
    args = parser.parse_args()
    found = answers()
    if not args.check:
        json.dump(found, sys.stdout, indent=1, sort_keys=True)
        return
    with open(args.check, encoding="utf-8") as fh:
        before = json.load(fh)
    moved = [ask for ask in found if found[ask] != before.get(ask)]
    print(f"{len(found) - len(moved)} of {len(found)} asks answer as before" + "".join(f"\nmoved: {a}" for a in moved))
    sys.exit(1 if moved else 0)


if __name__ == "__main__":
    main()
