"""Memory estimate latency and `gpuplan measure` wall time.

    python benchmarks/bench_memory.py [--write docs/performance.md]

Goals (issue #3): one memory estimate under 1 ms; measuring a 2-layer Llama-2-7B shape at
s=4096 well under a minute on this machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from results import (  # benchmarks/results.py; a script's own folder is on sys.path
    median_seconds,
    publish,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write")
    args = parser.parse_args()
    from gpuplan.catalog import load_model
    from gpuplan.core.memory.training import MemorySettings, peak_memory
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.memory.estimate import MemoryInputs, estimate_memory

    spec = load_model("llama-3.1-70b")
    layout = ParallelLayout(dp=8, tp=8, pp=2, zero=1, micro_batch=1, global_batch=64)
    settings = MemorySettings(seq_len=8192, recipe="megatron", implementation="megatron")
    one = median_seconds(lambda: peak_memory(spec, layout, settings), 2000)
    inputs = MemoryInputs(model="llama-3.1-70b", gpu="h100", gpus=128, tp=8, pp=2, zero=1, seq_len=8192,
                          recipe="megatron", implementation="megatron")
    report = median_seconds(lambda: estimate_memory(inputs), 50)
    code = ("import time; t=time.perf_counter(); "
            "import torch, transformers; "
            "from gpuplan.catalog import model_entries; from gpuplan.profile import measure_training_memory; "
            "i=time.perf_counter(); measure_training_memory(model_entries()['llama-2-7b']['config'], seq_len=4096, "
            "num_layers=2); print(i-t, time.perf_counter()-i)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    rows = [("one memory estimate (core peak_memory, 70B, TP8 x PP2)", f"{one * 1e6:.0f} µs", "< 1 ms"),
            ("full memory report incl. 7-GPU verdict table and advice", f"{report * 1e3:.1f} ms", "-"),
            ("gpuplan measure: import torch + transformers", f"{float(out[0]):.1f} s", "-"),
            ("gpuplan measure: 2-layer Llama-2-7B, s=4096 (first call)", f"{float(out[1]):.1f} s", "well under 60 s")]
    publish(rows, args.write, "Memory (`python benchmarks/bench_memory.py`)")


if __name__ == "__main__":
    main()
