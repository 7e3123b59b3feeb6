"""Regenerate the framework reference set: torchtitan, Megatron-Core and PEFT training memory,
measured with each framework's own code on a CPU (fake tensors, fake process group, rank 0).

    python scripts/measure_frameworks.py [--out src/gpuplan/catalog/reference/framework_measurements.yaml]
        [--only SUBSTRING] [--jobs 2]

Needs the ``frameworks`` extra (pip install -e '.[frameworks]'; torch CPU wheel first). Every
run is measured at two reduced depths and extrapolated linearly to the full depth
(gpuplan.profile.frameworks). Each run goes to a fresh subprocess of this interpreter, so that
framework global state (Megatron's parallel_state, torchtitan's SPMD backend, the default
process group) never carries from one run to the next. Units: bytes, allocated (tensors only:
no caching-allocator reserve, CUDA context or NCCL buffers).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.profile.frameworks import FrameworkRun, measure_framework, run_id  # noqa: E402

OUT = ROOT / "src/gpuplan/catalog/reference/framework_measurements.yaml"
M = "llama-3.1-8b"


def _titan(**kw) -> FrameworkRun:
    return FrameworkRun("torchtitan", model=M, **{"dp": 8, **kw})


def _megatron(**kw) -> FrameworkRun:
    return FrameworkRun("megatron", model=M, **{"dp": 8, "seq_len": 4096, "optimizer_impl": "fused", **kw})


def _peft(**kw) -> FrameworkRun:
    return FrameworkRun("peft", model=M, **{"seq_len": 4096, "optimizer_impl": "fused", **kw})


S8 = {"seq_len": 8192}
MATRIX: list[FrameworkRun] = [
    # torchtitan, FSDP2 over 8 ranks: sequence, batch, AC, loss, optimizer implementation
    _titan(),
    _titan(loss="chunked"),
    _titan(optimizer_impl="fused"),
    _titan(micro_batch=2),
    _titan(**S8),
    _titan(**S8, micro_batch=2),
    _titan(**S8, micro_batch=2, recompute="selective"),  # the Dec-2024 8B benchmark setting
    _titan(**S8, micro_batch=2, recompute="full"),
    _titan(**S8, micro_batch=2, recompute="selective", optimizer_impl="fused"),
    _titan(**S8, micro_batch=2, recompute="selective", loss="chunked", optimizer_impl="fused"),
    _titan(**S8, micro_batch=2, recompute="selective", reshard="never"),
    # Float8 (emulated kernels; torchao's own Float8Linear modules)
    _titan(**S8, recompute="selective"),
    _titan(**S8, recompute="selective", float8="rowwise"),
    _titan(**S8, recompute="selective", float8="tensorwise"),
    _titan(**S8, recompute="selective", float8="tensorwise+fp8-allgather"),
    _titan(seq_len=32768, recompute="full", float8="tensorwise+fp8-allgather"),
    # tensor parallel (sequence parallel and loss parallel on)
    _titan(**S8, recompute="selective", dp=4, tp=2),
    _titan(**S8, recompute="none", dp=4, tp=2),
    # PP-stage emulation (FSDP state of one stage: unsharded params and fp32 grads held)
    _titan(recompute="full"),
    _titan(recompute="full", pp=2, microbatches=2),
    _titan(recompute="full", pp=2, microbatches=8),
    _titan(recompute="full", pp=4, microbatches=4),
    _titan(recompute="full", pp=2, microbatches=2, reshard="always"),  # PP stage without the default no-reshard (docs/memory.md)
    # Megatron-Core, DDP + distributed optimizer over 8 ranks
    _megatron(),
    _megatron(recompute="selective"),
    _megatron(recompute="full"),
    _megatron(attention="local"),
    _megatron(attention="local", recompute="selective"),
    _megatron(optimizer_impl="foreach"),
    _megatron(distributed_optimizer=False),
    _megatron(distributed_optimizer=False, optimizer_impl="foreach"),
    _megatron(dp=4, tp=2),
    _megatron(dp=4, pp=2, microbatches=1),
    _megatron(dp=4, pp=2, microbatches=2),
    _megatron(dp=4, pp=2, microbatches=8),
    _megatron(dp=2, pp=4, microbatches=8),
    _megatron(**S8, recompute="selective"),
    # PEFT LoRA r16 on transformers Llama (one GPU), and full fine-tune
    _peft(),
    _peft(lora_targets="q,v"),
    _peft(recompute="full"),
    _peft(autocast=True),
    _peft(recompute="full", autocast=True),
    _peft(lora_targets="q,v", recompute="full"),
    _peft(micro_batch=4, recompute="full"),
    _peft(lora_rank=0),
    _peft(lora_rank=0, recompute="full"),
    _peft(lora_rank=0, optimizer_impl="foreach"),
]


def measure_one(config: dict) -> dict:
    """Child process: measure one run and return its record."""
    run = FrameworkRun(**{k: tuple(v) if isinstance(v, list) else v for k, v in config.items()})
    m = measure_framework(run)
    rec = m.as_record()
    rec["versions"] = m.versions
    return rec


def _child(config: dict, python: str) -> dict:
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([python, __file__, "--one", json.dumps(config)], capture_output=True,
                          text=True, env=env, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip()][-3:]
        raise RuntimeError(f"{config}: exit {proc.returncode}: {' | '.join(err)}")
    rec = json.loads(lines[-1])
    rec["process_seconds"] = round(time.perf_counter() - t0, 1)
    return rec


def _header(records: list[dict], args, started: str, seconds: float) -> dict:
    versions: dict = {}
    for rec in records:
        versions.update(rec["versions"])
    patches: dict = {}
    for rec in records:
        fw = patches.setdefault(rec["config"]["framework"], [])
        fw.extend(p for p in rec["patches"] if p not in fw)
    return {
        "generated_by": "scripts/measure_frameworks.py (gpuplan.profile.frameworks)",
        "command": " ".join([Path(sys.executable).name, "scripts/measure_frameworks.py", *sys.argv[1:]]),
        "date": started,
        "units": "bytes, allocated on rank 0 (PyTorch tensors; no caching-allocator reserve, "
                 "no CUDA context, no NCCL buffers)",
        "method": "each framework's own model, parallelisation, optimizer and loss run two training "
                  "steps on a CPU under FakeTensorMode and a fake process group, tracked by gpuplan's "
                  "MemTracker/FSDPMemTracker; two depths (layers per pipeline stage), each phase's peak "
                  "extrapolated linearly to the full depth and the largest taken: "
                  "full = peak(depth_a) + (full_layers - depth_a) * slope",
        "machine": f"{platform.machine()} CPU, {os.cpu_count()} cores, no GPU",
        "versions": versions,
        "script_wall_seconds": round(seconds, 1),
        "patches": patches,
    }


def _entry(rec: dict) -> dict:
    return {"id": rec["id"], "config": rec["config"], "depths": rec["depths"],
            "full_depth": rec["full_depth"], "activation_bytes_per_layer": rec["activation_bytes_per_layer"],
            "activation_per_layer_sbh": rec["activation_per_layer_sbh"], "note": rec["notes"],
            "wall_seconds": rec["wall_seconds"], "process_seconds": rec["process_seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", default="", help="measure only runs whose id contains this")
    ap.add_argument("--jobs", type=int, default=1, help="runs measured at the same time")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_one(json.loads(args.one))))
        return
    runs = [r for r in MATRIX if args.only in run_id(r)]
    ids = [run_id(r) for r in runs]
    assert len(set(ids)) == len(ids), "duplicate runs in the matrix"
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%MZ")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_child, r.as_dict(), sys.executable) for r in runs]
        records = []
        for run, fut in zip(runs, futures, strict=True):
            rec = fut.result()
            print(f"{rec['process_seconds']:6.1f} s  {rec['full_depth']['peak_gib']:8.2f} GiB  {run_id(run)}",
                  flush=True)
            records.append(rec)
    doc = {**_header(records, args, started, time.perf_counter() - t0), "runs": [_entry(r) for r in records]}
    args.out.write_text(yaml.safe_dump(doc, sort_keys=False, width=100))
    print(f"wrote {len(records)} runs to {args.out} in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
