#!/usr/bin/env python3
"""Dense NeMo / Megatron-Bridge FP8 rows: the error left by context parallelism, and one probe (issue 37 diagnostic).

1. Per part (Blackwell = B200 + GB200, Blackwell Ultra = GB300, Hopper = H100), the mean error of the cp 1 and cp 2
   rows and the share of the predicted step the model hides communication behind (hidden_comm_check's measure),
   then one least-squares fit over all those rows: error = a_part + b x hidden + c x [cp > 1]. Nothing is fitted
   into the model.
2. ``--chunks``: the TE userbuffers ring-exchange probe. The recipes' FP8 Llama configs ring-exchange the QKV, fc1,
   proj and fc2 forward GEMMs and the proj / fc2 data-gradient GEMMs (Megatron-Bridge
   src/megatron/bridge/training/comm_overlap.py@v0.1.0rc4 L187-198, userbuffers_fp8_b200_h16384_tp4_cp2: six
   RingExchangeOverlapCfg; the H100 tp8 cp2 config the same six, L161-172), which TE runs as tp GEMMs of one rank's
   sequence shard (tokens / tp rows) each (transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp@v2.7
   CommOverlapP2PBase::split_overlap_ag L824-988, the non-aggregated loop L928-965), chunk i on compute stream
   i mod 3 (_NUM_MAX_UB_STREAMS = 3, pytorch/module/base.py@v2.7 L61), each waiting only for its own chunk's
   receive, so consecutive chunks may run side by side. The probe prices those GEMMs' FLOP share (forward all
   four, backward the proj and fc2 dgrad: per model from its widths) at the step model's own GEMM efficiency curve
   with d = min(h / tp, tokens / tp) instead of min(h / tp, tokens) -- as if the chunks ran one at a time -- and
   prints every dense family. A probe: not in the model (docs/step.md, wave 8).

    python scripts/dense_cp_residual.py [--chunks]      (~20 s)
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

PART = {"b200": "Blackwell", "gb200": "Blackwell", "gb300": "Blackwell Ultra", "h100-sxm": "Hopper"}


def chunked_share(spec) -> float:
    """FLOP share of a dense layer's GEMMs the six ring-exchange overlaps chunk (module docstring): forward
    (QKV + proj + fc1 + fc2) + backward dgrad of proj and fc2, over forward + dgrad + wgrad (3x forward)."""
    a = spec.attention
    h = spec.hidden_size
    qkv = h * (a.num_heads * a.qk_head_dim + 2 * a.num_kv_heads * a.qk_head_dim)
    proj = a.num_heads * a.value_head_dim * h
    inter = spec.mlp.intermediate_size
    fc1, fc2 = h * inter * (2 if spec.mlp.gated else 1), inter * h
    total = qkv + proj + fc1 + fc2
    return (total + proj + fc2) / (3.0 * total)


def dense_fp8_rows():
    """[(row id, part, hidden share, cp > 1, error)] over the scored Megatron dense FP8 rows."""
    import sys

    sys.path.insert(0, "scripts")
    from hidden_comm_check import predicted_with_breakdown

    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not
    from gpuplan.jobs.validation.throughput import run_spec

    out = []
    for run in published_throughput_rows():
        if why_not(run) or run["family"].startswith("torchtitan") or run_spec(run["model"]).moe is not None:
            continue
        if run["precision"] in ("nvfp4", "bf16") or run["gpu"] not in PART:
            continue
        tokens, step = predicted_with_breakdown(run)
        out.append((run["id"], PART[run["gpu"]], (step.comm_total - step.exposed_comm) / step.total,
                    (run["layout"].get("cp") or 1) > 1, tokens / run["measured"]["tokens_per_s_per_gpu"] - 1))
    return out


def print_cp_residual() -> None:
    rows = dense_fp8_rows()
    parts = sorted({r[1] for r in rows})
    print(f"{'part':16} cp  rows  mean error  hidden share")
    for part in parts:
        for cp in (False, True):
            sel = [r for r in rows if r[1] == part and r[3] == cp]
            if sel:
                print(f"{part:16} {2 if cp else 1:2}  {len(sel):4}  {np.mean([r[4] for r in sel]) * 100:+9.1f}%  "
                      f"{np.mean([r[2] for r in sel]) * 100:11.1f}%")
    x = np.array([[float(r[1] == p) for p in parts] + [r[2], float(r[3])] for r in rows])
    y = np.array([r[4] for r in rows])
    for cols, label in ((slice(None), "with cp"), (slice(0, -1), "without cp")):
        coef = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
        names = parts + ["hidden", "cp2"]
        fit = "  ".join(f"{n} {c:+.3f}" for n, c in zip(names[cols], coef))
        print(f"fit {label:10} ({len(y)} rows): {fit}  mean|e| off the fit {np.abs(y - x[:, cols] @ coef).mean() * 100:.1f}%")


def print_chunk_probe() -> None:
    import gpuplan.core.time.step as step_module
    from gpuplan.jobs.validation.estimate import throughput_family
    from gpuplan.jobs.validation.published_throughput import (
        PRECISION,
        predict_tokens_per_gpu_s,
        published_throughput_rows,
        why_not,
    )
    from gpuplan.jobs.validation.throughput import run_spec

    original = step_module._linear_efficiencies
    for probe in (False, True):
        share = {"value": 0.0}

        def chunked(gpu, settings, h, tokens, tp, share=share):
            e_dense, e_gemm = original(gpu, settings, h, tokens, tp)
            if not (settings.tp_comm_overlap and np.all(np.asarray(tp) > 1)) or not share["value"]:
                return e_dense, e_gemm
            full, chunk = np.minimum(h / tp, tokens), np.minimum(h / tp, tokens / tp)
            ratio = (chunk / (chunk + settings.gemm_d_half)) / (full / (full + settings.gemm_d_half))
            slow = 1.0 / ((1.0 - share["value"]) + share["value"] / ratio)
            return e_dense * slow, e_gemm * slow

        step_module._linear_efficiencies = chunked
        try:
            families = defaultdict(list)
            for run in published_throughput_rows():
                if why_not(run):
                    continue
                spec = run_spec(run["model"])
                share["value"] = chunked_share(spec) if probe and spec.moe is None else 0.0
                error = predict_tokens_per_gpu_s(run) / run["measured"]["tokens_per_s_per_gpu"] - 1
                families[throughput_family(run["family"], spec.moe is not None, PRECISION[run["precision"]])].append(error)
        finally:
            step_module._linear_efficiencies = original
        print("\nring-exchange chunks priced" if probe else "\nthe model as it is")
        for name, errors in sorted(families.items()):
            if "dense" in name:
                e = np.array(errors)
                print(f"  {name:66} {len(e):3}  mean {np.abs(e).mean() * 100:5.1f}%  bias {e.mean() * 100:+5.1f}%")
        every = np.concatenate([np.array(v) for v in families.values()])
        print(f"  all {len(every)} scored rows: mean {np.abs(every).mean() * 100:.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", action="store_true", help="the ring-exchange chunk probe (module docstring)")
    args = parser.parse_args()
    print_cp_residual()
    if args.chunks:
        print_chunk_probe()


if __name__ == "__main__":
    main()
