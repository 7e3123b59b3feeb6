#!/usr/bin/env python3
"""Blackwell twins: every pair of scored NeMo / Megatron-Bridge rows (src/gpuplan/catalog/reference/
published_throughput.yaml) with the same release, model, precision and GPU count on two of B200 / GB200 /
B300 / GB300: the measured tokens/s/GPU ratio, the ratio the step model predicts (each row at its own layout,
as jobs/validation/published_throughput times it) and each side's step split. The split is the share of the
predicted step that scales with each rate, d ln(step) / d ln(rate) from a 2% change of one rate at a time:

  gemm   every matmul's rate (core.time.step.gemm_efficiency)
  attn   the fused attention kernel's rate (StepSettings.attention_efficiency)
  hbm    HBM bandwidth (element-wise kernels, optimizer, memory floors)
  comm   NVLink and NIC bandwidth (the communication left exposed)
  host   the MoE dispatcher's exposed host time (StepBreakdown.moe_host), as a share of the step

so a term whose rate ratio between the two parts is wrong by k moves the predicted ratio by about
k ** (share on the faster side). Nothing here changes the model. ~5 s.

    python scripts/blackwell_twins.py            # summary by part pair and class, then the same-layout pairs
    python scripts/blackwell_twins.py --all      # every pair
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections import defaultdict
from dataclasses import replace

PARTS = ("b200", "gb200", "b300", "gb300")
STEP = 0.02  # the relative rate change the split is read from


def layout(run) -> tuple:
    lay = run["layout"]
    return (lay["tp"], lay["pp"], lay.get("vpp") or 1, lay.get("cp") or 1, lay.get("ep") or 1,
            lay["micro_batch"], lay["global_batch"])


def twin_groups():
    """{(release, model, precision, GPUs): {part: (row, case)}} with rows on at least two of PARTS."""
    from gpuplan.jobs.validation import published_throughput as P

    cases = {c.id: c for c in P.published_throughput_cases()[0]}
    groups = defaultdict(dict)
    for run in P.published_throughput_rows():
        if run["id"] in cases and run["gpu"] in PARTS:
            release = ".".join(map(str, P.release(run["family"])))
            groups[(release, run["model"]["catalog"], run["precision"], run["gpus"])][run["gpu"]] = (run, cases[run["id"]])
    return {k: v for k, v in sorted(groups.items()) if len(v) > 1}


def step_split(run) -> dict[str, float]:
    """The row's predicted step split (module docstring): shares of the step by rate."""
    from gpuplan.jobs.validation import published_throughput as P
    import gpuplan.core.time.step as S

    load, cluster, gemm = P.load_accelerator, P.cluster_for, S.gemm_efficiency
    base = P.predicted_step(run)

    def step(term: str) -> float:
        k = 1 + STEP
        over = {}
        if term == "hbm":
            P.load_accelerator = lambda name: replace(load(name), memory_bandwidth=load(name).memory_bandwidth * k)
        elif term == "comm":
            P.cluster_for = lambda g: replace(cluster(g), scale_up_bandwidth=cluster(g).scale_up_bandwidth * k,
                                              scale_out_bandwidth=cluster(g).scale_out_bandwidth * k)
        elif term == "gemm":
            S.gemm_efficiency = lambda *a, **kw: gemm(*a, **kw) * k
        else:
            over["attention_efficiency"] = P.attention_efficiency(load(run["gpu"]), hopper_tuned=True) * k
        try:
            return P.predicted_step(run, **over).total
        finally:
            P.load_accelerator, P.cluster_for, S.gemm_efficiency = load, cluster, gemm

    shares = {t: (base.total / step(t) - 1) / STEP for t in ("gemm", "attn", "hbm", "comm")}
    shares["host"] = float(base.moe_host) / base.total
    return shares


def twin_pairs():
    """One dict per pair (first part, second part in PARTS order): measured and predicted second / first."""
    out = []
    for key, parts in twin_groups().items():
        for a, b in itertools.combinations(sorted(parts, key=PARTS.index), 2):
            (ra, ca), (rb, cb) = parts[a], parts[b]
            out.append(dict(key=key, a=a, b=b, same=layout(ra) == layout(rb), measured=cb.measured / ca.measured,
                            predicted=cb.predicted / ca.predicted, rows=(ra, rb)))
    return out


def moe(key) -> bool:
    return any(m in key[1] for m in ("deepseek", "qwen3", "gpt-oss", "mixtral"))


def main() -> None:
    pairs = twin_pairs()
    groups = defaultdict(list)
    for p in pairs:
        cls = {"bf16": "BF16", "nvfp4": "NVFP4"}.get(p["key"][2], "FP8")
        groups[(p["a"], p["b"], "MoE" if moe(p["key"]) else "dense", cls)].append(p)
    print("| parts (second / first) | class | pairs (same layout) | measured median | predicted median | "
          "measured / predicted: median, same-layout median |")
    print("|---|---|---|---|---|---|")
    for (a, b, kind, cls), ps in sorted(groups.items()):
        same = [p["measured"] / p["predicted"] for p in ps if p["same"]]
        same_median = f"{statistics.median(same):.3f}" if same else "–"
        print(f"| {b.upper()} / {a.upper()} | {kind} {cls} | {len(ps)} ({len(same)}) | "
              f"{statistics.median(p['measured'] for p in ps):.3f} | {statistics.median(p['predicted'] for p in ps):.3f} | "
              f"{statistics.median(p['measured'] / p['predicted'] for p in ps):.3f}, {same_median} |")
    every = "--all" in sys.argv
    print("\n| release / model / precision / GPUs | parts | layout | measured | predicted | m / p | "
          "first: gemm / attn / hbm / comm / host % | second |")
    print("|---|---|---|---|---|---|---|---|")
    for p in pairs:
        if not (every or p["same"]):
            continue
        sa, sb = (step_split(r) for r in p["rows"])
        fmt = lambda s: " / ".join(f"{100 * s[t]:.0f}" for t in ("gemm", "attn", "hbm", "comm", "host"))  # noqa: E731
        lay = "same" if p["same"] else " vs ".join("tp{} pp{} vp{} cp{} ep{} mb{} gb{}".format(*layout(r))
                                                   for r in p["rows"])
        print(f"| {' / '.join(map(str, p['key']))} | {p['b']} / {p['a']} | {lay} | {p['measured']:.3f} | "
              f"{p['predicted']:.3f} | {p['measured'] / p['predicted']:.3f} | {fmt(sa)} | {fmt(sb)} |")


if __name__ == "__main__":
    main()
