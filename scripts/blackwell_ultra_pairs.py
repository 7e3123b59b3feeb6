#!/usr/bin/env python3
"""Blackwell Ultra (GB300, B300) against Blackwell (GB200) on the published NeMo / Megatron-Bridge
rows (catalog/reference/published_throughput.yaml): the same release, model, GPU count and precision
on both parts, measured tokens/s/GPU ratio against the ratio the step model predicts at each row's
own layout. Then, one at a time, what each hardware hypothesis does to the GB300 families of
docs/accuracy.md (mean |error| / bias), the GB300 rows only changed:

  fp8-peak x1.2     the FP8 dense peak 20% higher (no source gives it: 5 PF per GPU, 360 PF per NVL72)
  tensor x1.15      every tensor rate (BF16, FP8, FP4) 15% higher, HBM unchanged (a sustained-clock story)
  attention x2      the fused attention kernel twice as fast (the SFU exponentials doubled, forward and
                    backward: an upper bound, since the backward is shared-memory bound per FA4)
  hbm x1.3          HBM bandwidth 30% higher (no source: 8 TB/s on both)

Nothing here changes the model; it prints evidence. ~30 s.

    python scripts/blackwell_ultra_pairs.py
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import replace

ROW = re.compile(r"(?:mbridge|nemo)-?([\d.]+)-(.+)-(b300|gb200|gb300)-(\d+g)-?(.*)")


def pairs(cases, rows):
    """(release/model/gpus/precision, {part: (measured, predicted, layout)}) with a GB300 and a GB200 row."""
    groups = defaultdict(dict)
    for c in cases:
        m = ROW.match(c.id)
        if m:
            lay = rows[c.id]["layout"]
            shape = f"tp{lay['tp']} pp{lay['pp']} cp{lay.get('cp') or 1} ep{lay.get('ep') or 1} mb{lay['micro_batch']}"
            groups["/".join(m.group(1, 2, 4, 5))][m.group(3)] = (c.measured, c.predicted, shape)
    return {k: v for k, v in sorted(groups.items()) if "gb300" in v and "gb200" in v}


def gb300_families(cases):
    out = defaultdict(list)
    for c in cases:
        if "gb300" in c.family:
            out[("MoE" if c.moe else "dense", c.precision)].append(c.predicted / c.measured - 1)
    return {k: (statistics.mean(map(abs, e)), statistics.mean(e), len(e)) for k, e in sorted(out.items())}


def main() -> None:
    from gpuplan.jobs.validation import published_throughput as P

    rows = {r["id"]: r for r in P.published_throughput_rows()}
    cases, _ = P.published_throughput_cases()
    print("| release/model/GPUs/precision | GB300 / GB200 measured | predicted | layouts |")
    print("|---|---|---|---|")
    for key, v in pairs(cases, rows).items():
        a, b = v["gb300"], v["gb200"]
        lay = "same" if a[2] == b[2] else f"{a[2]} vs {b[2]}"
        extra = f" (B300 / GB200 {v['b300'][0] / b[0]:.2f} vs {v['b300'][1] / b[1]:.2f})" if "b300" in v else ""
        print(f"| {key} | {a[0] / b[0]:.3f} | {a[1] / b[1]:.3f} | {lay}{extra} |")

    load, attn = P.load_accelerator, P.attention_efficiency

    def scaled(peaks=(), k=1.0, hbm=1.0):
        def patched(name):
            g = load(name)
            if g.id != "gb300":
                return g
            return replace(g, peak_flops=tuple((d, v * k if d in peaks else v) for d, v in g.peak_flops),
                           memory_bandwidth=g.memory_bandwidth * hbm)
        return patched

    hypotheses = {"as is": (load, attn), "fp8-peak x1.2": (scaled(("fp8",), 1.2), attn),
                  "tensor x1.15": (scaled(("bf16", "fp16", "fp8", "fp4"), 1.15), attn),
                  "attention x2": (load, lambda g, hopper_tuned=False: attn(g, hopper_tuned) * (2 if g.id == "gb300" else 1)),
                  "hbm x1.3": (scaled(hbm=1.3), attn)}
    fams = gb300_families(cases)
    print("\n| hypothesis | " + " | ".join(f"GB300 {m} {p} (n)" for m, p in fams) + " |")
    print("|---|" + "---|" * len(fams))
    for name, (loader, attention) in hypotheses.items():
        P.load_accelerator, P.attention_efficiency = loader, attention
        fams = gb300_families(P.published_throughput_cases()[0])
        print(f"| {name} | " + " | ".join(f"{m * 100:.1f}% / {b * 100:+.1f}% ({n})" for m, b, n in fams.values()) + " |")
    P.load_accelerator, P.attention_efficiency = load, attn


if __name__ == "__main__":
    main()
