"""Regenerate the memory reference set: `gpuplan measure` over a matrix of catalog models.

    python scripts/measure_memory_matrix.py [--out src/gpuplan/catalog/reference/memory_measurements.yaml]

Each case is measured with FakeTensorMode + MemTracker (no GPU, no weights) at two reduced
depths and extrapolated linearly to the model's full depth (gpuplan.profile.extrapolate_to_depth;
checked against full-depth runs in tests/test_measure.py), or measured at full depth when the
model is small. `gpuplan validate` compares the analytic estimate against these numbers; a test
re-measures a subset to keep this file honest. Needs the profile extra (torch, transformers).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.catalog import model_entries  # noqa: E402
from gpuplan.profile import extrapolate_to_depth, measure_training_memory  # noqa: E402

# (model, seq_len, micro_batch, precision, recompute, attention, world_size)
BASE = dict(seq_len=4096, micro_batch=1, precision="bf16", recompute="none", attention="sdpa", world_size=1)
CASES = [
    dict(model="llama-2-7b"),
    dict(model="llama-2-7b", micro_batch=2),
    dict(model="llama-2-7b", seq_len=1024, micro_batch=8),
    dict(model="llama-2-7b", recompute="full", micro_batch=8),
    dict(model="llama-2-7b", precision="fp32-autocast"),
    dict(model="llama-2-7b", world_size=8),
    dict(model="llama-2-7b", world_size=8, precision="fp32-autocast", micro_batch=2),
    dict(model="llama-2-7b", seq_len=1024, micro_batch=4, attention="eager"),
    dict(model="llama-3.1-8b"),
    dict(model="llama-3.1-8b", world_size=8, precision="fp32-autocast", seq_len=8192),
    dict(model="llama-3.1-8b", recompute="full", seq_len=8192, micro_batch=4),
    dict(model="qwen2.5-7b"),
    dict(model="qwen2.5-7b", world_size=4, recompute="full", micro_batch=4),
    dict(model="qwen3-8b"),
    dict(model="qwen3-8b", world_size=8, seq_len=2048, micro_batch=4),
    dict(model="mistral-7b-v0.1", seq_len=4096, micro_batch=2),
    dict(model="gemma-2-2b", seq_len=1024, attention="eager"),  # transformers has no SDPA path for Gemma 2
    dict(model="gemma-2-2b", seq_len=2048, attention="eager", world_size=8),
    dict(model="gemma-3-1b", seq_len=2048),
    dict(model="gemma-3-1b", seq_len=4096, recompute="full", micro_batch=4),
    # GPT-2 with its default dropout 0.1 runs SDPA's math fallback (see docs/memory.md); measured here
    # without dropout, as modern pre-training runs
    dict(model="gpt2", seq_len=1024, micro_batch=4, config_overrides=dict(resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0)),
    dict(model="gpt2-medium", seq_len=1024, micro_batch=8, attention="eager",
         config_overrides=dict(resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0)),
    dict(model="gpt2-medium", seq_len=1024, micro_batch=8, recompute="full",
         config_overrides=dict(resid_pdrop=0.0, attn_pdrop=0.0, embd_pdrop=0.0)),
    dict(model="pythia-1b", seq_len=2048, micro_batch=4),
    dict(model="llama-3.2-1b", seq_len=4096, micro_batch=2, world_size=8),
    dict(model="qwen2.5-1.5b", seq_len=4096, micro_batch=2, recompute="full"),
    dict(model="qwen2.5-1.5b", seq_len=2048, micro_batch=4, precision="fp32-autocast"),
    # the CPU-oracle misses of issue 14: eager attention with dropout (GPT-2's default 0.1), the
    # eager backward peak at long sequence, HF SDPA's materialised sliding-window mask, and the
    # for-loop AdamW step (MoE: its fused expert tensors are the largest; the step peak does not
    # depend on routing)
    dict(model="gpt2", seq_len=1024, micro_batch=4, attention="eager"),
    dict(model="llama-2-7b", seq_len=4096, attention="eager"),
    dict(model="mistral-7b-v0.1", seq_len=8192),
    dict(model="phi-3-mini-4k", seq_len=4096),
    dict(model="mixtral-8x7b", seq_len=512, foreach=False),
    dict(model="llama-2-7b", seq_len=1024, foreach=False),
]
# MoE models are in the set only where the peak is the optimizer step: under fake tensors the
# router's top-k is data-free, so which experts run (and how many tokens each sees) is not what a
# real step does.
FULL_DEPTH_BELOW_PARAMS = 2.5e9  # measure small models at full depth (also covers Gemma 3's 5:1 pattern)


def case_id(case: dict) -> str:
    c = {**BASE, **case}
    return (f"{c['model']}_s{c['seq_len']}_b{c['micro_batch']}_{c['precision']}_{c['recompute']}"
            f"_{c['attention']}_w{c['world_size']}" + ("_nodropout" if "config_overrides" in c else "")
            + ("_forloop" if c.get("foreach") is False else ""))


def measure_case(case: dict) -> dict:
    c = {**BASE, **case}
    entry = model_entries()[c["model"]]
    config = {**entry["config"], **c.get("config_overrides", {})}
    cfg = config.get("text_config", config)
    layers = cfg.get("num_hidden_layers") or cfg.get("n_layer")
    small = entry["published_params"] < FULL_DEPTH_BELOW_PARAMS
    kwargs = {k: c[k] for k in ("seq_len", "micro_batch", "precision", "recompute", "attention", "world_size")}
    kwargs["foreach"] = c.get("foreach", True)
    start = time.perf_counter()
    if small:
        m = measure_training_memory(config, **kwargs)
        peak, phase, at_peak, how = m.peak_bytes, m.peak_phase, m.at_peak, f"full depth ({layers} layers)"
        versions, act = m.versions, m.activation_bytes_end_of_forward
    else:
        a, b = (4, 8) if c["world_size"] > 1 else (2, 4)  # FSDP needs 4+ layers to be on the line
        ma = measure_training_memory(config, num_layers=a, **kwargs)
        mb = measure_training_memory(config, num_layers=b, **kwargs)
        ext = extrapolate_to_depth(ma, mb, layers)
        peak, phase, at_peak = ext["peak_bytes"], ext["peak_phase"], ext.get("at_peak", {})
        how, versions = f"extrapolated from {a} and {b} layers to {layers}", ma.versions
        act = ext["activation_bytes_end_of_forward"]
    return {"id": case_id(case), **c, "measured_peak_bytes": int(peak), "peak_phase": phase,
            "measured_activation_bytes": int(act), "at_peak": {k: int(v) for k, v in at_peak.items()},
            "method": how, "versions": {k: str(v) for k, v in versions.items()},
            "wall_seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "src/gpuplan/catalog/reference/memory_measurements.yaml"))
    parser.add_argument("--only", help="substring of case ids to run")
    args = parser.parse_args()
    results, failures = [], []
    for case in CASES:
        if args.only and args.only not in case_id(case):
            continue
        try:
            results.append(measure_case(case))
            print(f"{results[-1]['id']}: {results[-1]['measured_peak_bytes'] / 2**30:.3f} GiB "
                  f"({results[-1]['peak_phase']}, {results[-1]['wall_seconds']} s)", flush=True)
        except Exception as exc:  # keep going; record what could not be measured and why
            failures.append({"id": case_id(case), "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"})
            print(f"{case_id(case)}: FAILED {failures[-1]['reason']}", flush=True)
    if args.only and Path(args.out).is_file():  # a partial run replaces its cases, keeps the others
        old = yaml.safe_load(Path(args.out).read_text(encoding="utf-8"))
        done = {r["id"] for r in results} | {f["id"] for f in failures}
        order = [case_id(c) for c in CASES]
        kept = [r for r in old.get("cases", []) if r["id"] not in done]
        results = sorted(kept + results, key=lambda r: order.index(r["id"]) if r["id"] in order else len(order))
        failures = [f for f in old.get("not_measured", []) if f["id"] not in done] + failures
    doc = {"generated_by": "scripts/measure_memory_matrix.py (gpuplan measure: FakeTensorMode + MemTracker, CPU)",
           "units": "bytes, allocated (PyTorch tensors; no CUDA context, no allocator caching)",
           "cases": results, "not_measured": failures}
    Path(args.out).write_text(yaml.safe_dump(doc, sort_keys=False, width=120), encoding="utf-8")


if __name__ == "__main__":
    main()
