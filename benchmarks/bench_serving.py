"""Serving sizing latency: `gpuplan infer --rps --ttft-p99 --tpot` searches every catalog GPU type
and TP degree, a binary search on the request rate each.

    python benchmarks/bench_serving.py [--write docs/performance.md]
    python benchmarks/bench_serving.py --answers DIR   # ASKS' --json, to diff before / after a change

Goal (issue 16): the README's sizing example finishes in under a second, CLI start-up included.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from results import (  # benchmarks/results.py; a script's own folder is on sys.path
    median_seconds,
    publish,
)

COMMAND = ["infer", "llama-3.1-8b", "--rps", "20", "--ttft-p99", "500ms", "--tpot", "50ms", "--prompt", "2K",
           "--output-tokens", "512"]

ASKS = [
    "llama-3.1-8b --rps 20 --ttft-p99 500ms --tpot 50ms --prompt 2K --output-tokens 512",
    "llama-3.1-8b --rps 20 --ttft-p99 500ms --tpot 50ms --prompt 2K --output-tokens 512 --disaggregate",
    "llama-3.1-70b --rps 20 --ttft-p99 1s --tpot 50ms --prompt 2K --output-tokens 512 --disaggregate",
    "llama-3.1-8b --rps 50 --ttft-p99 500ms --tpot 20ms --prompt 4K --output-tokens 256 --disaggregate",
    "llama-3.1-8b --gpu h100 --rps 10",
    "llama-3.1-8b --gpu h100 --rps 10 --speculative eagle",
    "llama-3.1-8b --rps 5 --ttft-p99 2s --tpot 50ms --engine sglang",
    "llama-3.1-8b --rps 5 --ttft-p99 2s --tpot 50ms --engine trtllm",
    "llama-3.1-70b --rps 8 --ttft-p99 1s --tpot 40ms --engine sglang --gpu h100",
    "mixtral-8x7b --rps 5 --ttft-p99 1s --tpot 50ms --quantization fp8",
    "deepseek-v3 --rps 1 --ttft-p99 5s --tpot 100ms",
    "qwen3-30b-a3b --rps 30 --ttft-p99 800ms --tpot 40ms --prompt 1K --output-tokens 256",
    "llama-3.1-405b --rps 1 --ttft-p99 2s --tpot 50ms --gpu gb200",
    "llama-3.1-405b --rps 5 --ttft-p99 500ms --tpot 30ms --gpu gb200",
    "llama-3.1-8b --rps 1 --gpu h100 --price 2",
    "llama-3-8b --rps 3 --ttft-p99 300ms --tpot 30ms --speculative draft --draft-model llama-3.2-1b --no-p2p",
    "llama-3.1-8b --rps 12 --ttft-p99 400ms --tpot 25ms --speculative ngram --prefix-hit 0.5 --engine vllm==0.10.1"
    " --spec-acceptance 0.4",
    "qwen2.5-72b --rps 4 --ttft-p99 1s --tpot 60ms --engine trtllm --disaggregate --quantization fp8 --gpu h100",
    "gpt-oss-120b --rps 6 --ttft-p99 1s --tpot 40ms",
    "llama-3.1-8b --rps 1 --ttft-p99 1ms --tpot 1ms",
    "pythia-70m --rps 1000 --ttft-p99 100ms --tpot 10ms --max-num-seqs 4096 --prefill-tokens 8192",
    "llama-3.1-8b --rps 40 --ttft-p99 600ms --tpot 35ms --prompt 8K --output-tokens 1K --gpu a100 --speculative eagle3",
    "gemma-3-27b --rps 3 --tpot 45ms --kv-dtype fp8",
    "llama-3.1-70b --rps 15 --ttft-p99 800ms --tpot 45ms --quantization int4 --max-loras 4 --max-lora-rank 16"
    " --enable-lora",
    "deepseek-v3 --rps 4 --ttft-p99 3s --tpot 80ms --engine sglang --disaggregate --speculative mtp --gpu h200",
    "qwen3-235b-a22b --rps 2 --ttft-p99 3s --tpot 80ms --gpu h200 --price 3.5",
    "llama-3.1-70b --rps 30 --ttft-p99 2s --tpot 60ms --prompt 16K --output-tokens 512 --gpu h100 --no-p2p",
    "mixtral-8x22b --rps 3 --ttft-p99 1500ms --tpot 70ms --engine vllm==0.9.2 --disaggregate",
]
"""Sizing asks whose answers a speed change must leave byte-identical (`--answers DIR` writes each one's --json, stderr
and exit status; diff two folders): every engine, speculative kinds, --disaggregate, MoE and dense, TP > 1 winners,
several GPU types, a price, no latency target, a refused target (session 23, docs/performance.md 'Serving sizing')."""


def write_answers(folder: str) -> None:
    """Each of ASKS answered by `python -m gpuplan infer ... --json` in a fresh process: NN.json, NN.err, NN.rc."""
    os.makedirs(folder, exist_ok=True)
    for number, ask in enumerate(ASKS, 1):
        done = subprocess.run([sys.executable, "-m", "gpuplan", "infer", *ask.split(), "--json"], capture_output=True)
        for suffix, data in (("json", done.stdout), ("err", done.stderr), ("rc", b"%d\n" % done.returncode)):
            with open(os.path.join(folder, f"{number:02d}.{suffix}"), "wb") as handle:
                handle.write(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write")
    parser.add_argument("--answers", help="write ASKS' answers to this folder and stop")
    args = parser.parse_args()
    if args.answers:
        return write_answers(args.answers)
    from gpuplan.jobs.inference.estimate import estimate_inference
    from gpuplan.jobs.inference.schema import InferenceInputs

    from gpuplan.core.serving import step_memo

    def first(asked):  # a first answer: no decode steps kept from an earlier one (core.serving.step_memo)
        step_memo.clear()
        return estimate_inference(asked)

    inputs = InferenceInputs(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms", prompt="2K",
                             output_tokens=512)
    estimate = median_seconds(lambda: first(inputs), 10)
    again = median_seconds(lambda: estimate_inference(inputs), 10)
    split = inputs.model_copy(update={"disaggregate": True})
    disaggregated = median_seconds(lambda: first(split), 5)
    fresh = sorted(_fresh_answer_seconds() for _ in range(3))[1]
    walls, cpus = [], []
    for _ in range(5):  # the child's user + sys CPU beside its wall time: on a loaded host the wall is the CPU's share
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([sys.executable, "-m", "gpuplan", *COMMAND], check=True, capture_output=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    load = os.getloadavg()[0]
    publish([("sizing estimate (Python API, median of 10), a first answer", f"{estimate * 1e3:.0f} ms", "< 1 s"),
             ("the same asked again (decode steps kept: core/serving/step_memo.py)", f"{again * 1e3:.0f} ms", "-"),
             ("a first answer in a fresh process, after its imports (kernels' NCCL table empty; median of 3)",
              f"{fresh * 1e3:.0f} ms", "-"),
             ("the same with --disaggregate: prefill and decode pools, a first answer (median of 5)",
              f"{disaggregated * 1e3:.0f} ms", "< 1 s"),
             (f"`gpuplan infer ... --rps 20` wall time, start-up included (median of 5; load average {load:.1f})",
              f"{sorted(walls)[2]:.2f} s", "< 1 s"),
             ("the same, the process's user + sys CPU (median of 5)", f"{sorted(cpus)[2]:.2f} s", "-")],
            args.write, "Serving sizing (benchmarks/bench_serving.py)")


FRESH = """
import time
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.schema import InferenceInputs
inputs = InferenceInputs(model="llama-3.1-8b", rps=20, ttft_p99="500ms", tpot="50ms", prompt="2K", output_tokens=512)
start = time.perf_counter()
estimate_inference(inputs)
print(time.perf_counter() - start)
"""


def _fresh_answer_seconds() -> float:
    """Seconds of the README's sizing answer in a new interpreter, its imports not counted: what `gpuplan infer`
    pays beyond start-up (the all-reduces evaluated, no decode step kept)."""
    done = subprocess.run([sys.executable, "-c", FRESH], check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


if __name__ == "__main__":
    main()
