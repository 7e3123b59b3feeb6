#!/usr/bin/env python3
"""Blackwell row pairs on the published NeMo / Megatron-Bridge rows (catalog/reference/published_throughput.yaml):
every scored row grouped with the rows of the same release, model, precision and GPU count on another of
B200 / GB200 / B300 / GB300 (twin_rows), the measured tokens/s/GPU ratio against the ratio the step model
predicts at each row's own layout. Nothing here changes the model; it prints evidence.

Default (~30 s): the GB300 / GB200 pairs, then, one at a time, what each hardware hypothesis does to the GB300
families of docs/accuracy.md (mean |error| / bias), the GB300 rows only changed:

  fp8-peak x1.2     the FP8 dense peak 20% higher (no source gives it: 5 PF per GPU, 360 PF per NVL72)
  tensor x1.15      every tensor rate (BF16, FP8, FP4) 15% higher, HBM unchanged (a sustained-clock story)
  attention x2      the fused attention kernel twice as fast (the SFU exponentials doubled, forward and
                    backward: an upper bound, since the backward is shared-memory bound per FA4)
  hbm x1.3          HBM bandwidth 30% higher (no source: 8 TB/s on both)

--twins (~5 s; docs/step.md "Blackwell twins"): every pair on two of the four parts, a summary by part pair and
class, then the same-layout pairs (--all: every pair) with each side's step split, the share of the predicted
step that scales with each rate, d ln(step) / d ln(rate) from a 2% change of one rate at a time:

  gemm   every matmul's rate (every tensor peak x k, the attention kernel held at its own time)
  attn   the fused attention kernel's rate (StepSettings.attention_efficiency)
  hbm    HBM bandwidth (element-wise kernels, optimizer, memory floors)
  comm   NVLink and NIC bandwidth (the communication left exposed)
  host   the MoE dispatcher's exposed host time (StepBreakdown.moe_host), as a share of the step

so a term whose rate ratio between the two parts is wrong by k moves the predicted ratio by about
k ** (share on the faster side). Rates are changed on a copy of the part passed to predicted_step (its gpu
argument), never by rebinding a module's names.

    python scripts/blackwell_ultra_pairs.py
    python scripts/blackwell_ultra_pairs.py --twins [--all]
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections import defaultdict
from dataclasses import replace

PARTS = ("b200", "gb200", "b300", "gb300")
STEP = 0.02  # the relative rate change the split is read from
OPTIONS = ("--twins", "--all")


def layout(run) -> tuple:
    lay = run["layout"]
    return (lay["tp"], lay["pp"], lay.get("vpp") or 1, lay.get("cp") or 1, lay.get("ep") or 1,
            lay["micro_batch"], lay["global_batch"])


def layouts_text(same: bool, rows) -> str:
    """'same', or each of ``rows``' layouts (tp pp vp cp ep micro / global batch) joined by ' vs '."""
    return "same" if same else " vs ".join("tp{} pp{} vp{} cp{} ep{} mb{} gb{}".format(*layout(r)) for r in rows)


def twin_rows():
    """{(release, model, precision, GPUs): {part: row}}: the scored rows (published_throughput.why_not empty, as
    published_throughput_cases takes them) with rows on at least two of PARTS."""
    from gpuplan.jobs.validation import published_throughput as P

    groups = defaultdict(dict)
    for run in P.published_throughput_rows():
        if run["gpu"] in PARTS and not P.why_not(run):
            release = ".".join(map(str, P.release(run["family"])))
            groups[(release, run["model"]["catalog"], run["precision"], run["gpus"])][run["gpu"]] = run
    return {k: v for k, v in sorted(groups.items()) if len(v) > 1}


def row_pairs():
    """(key, first part, second part in PARTS order, first row, second row, same layout) for every twin pair."""
    return [(key, a, b, parts[a], parts[b], layout(parts[a]) == layout(parts[b]))
            for key, parts in twin_rows().items()
            for a, b in itertools.combinations(sorted(parts, key=PARTS.index), 2)]


def twin_pairs():
    """One dict per pair: measured and predicted tokens/s/GPU, second / first (each row at its own layout)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    predicted = {}
    def rate(run) -> tuple[float, float]:  # noqa: E306
        if run["id"] not in predicted:
            predicted[run["id"]] = predict_tokens_per_gpu_s(run)
        return float(run["measured"]["tokens_per_s_per_gpu"]), predicted[run["id"]]

    out = []
    for key, a, b, ra, rb, same in row_pairs():
        (ma, pa), (mb, pb) = rate(ra), rate(rb)
        out.append(dict(key=key, a=a, b=b, same=same, measured=mb / ma, predicted=pb / pa, rows=(ra, rb)))
    return out


def scaled_part(gpu, peaks=(), k: float = 1.0, hbm: float = 1.0, links: float = 1.0):
    """A copy of the Accelerator ``gpu`` with the dense peaks named in ``peaks`` x k, HBM bandwidth x hbm and
    NVLink / NIC bandwidth x links (the NIC at topology's 400 Gb/s default where the catalog gives none)."""
    from gpuplan.core.comm.topology import DEFAULT_NIC_GBIT_PER_GPU

    links_changed = {} if links == 1 else dict(
        scale_up_bandwidth=(gpu.scale_up_bandwidth or 64e9) * links,  # topology.cluster_for's default
        scale_out_bandwidth=(gpu.scale_out_bandwidth or DEFAULT_NIC_GBIT_PER_GPU * 1e9 / 8) * links)
    return replace(gpu, peak_flops=tuple((d, v * k if d in peaks else v) for d, v in gpu.peak_flops),
                   memory_bandwidth=gpu.memory_bandwidth * hbm, **links_changed)


def step_split(run) -> dict[str, float]:
    """The row's predicted step split (module docstring): shares of the step by rate."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.validation import published_throughput as P

    gpu = load_accelerator(run["gpu"])
    attention = P.attention_efficiency(gpu, hopper_tuned=True)  # NeMo / Bridge rows: predicted_step's own
    k = 1 + STEP
    every_peak = tuple(d for d, _ in gpu.peak_flops)
    changed = {"gemm": dict(gpu=scaled_part(gpu, every_peak, k), attention_efficiency=attention / k),
               "attn": dict(attention_efficiency=attention * k),
               "hbm": dict(gpu=scaled_part(gpu, hbm=k)),
               "comm": dict(gpu=scaled_part(gpu, links=k))}
    base = P.predicted_step(run)
    shares = {t: (base.total / P.predicted_step(run, **over).total - 1) / STEP for t, over in changed.items()}
    shares["host"] = float(base.moe_host) / base.total
    return shares


def moe(key) -> bool:
    return any(m in key[1] for m in ("deepseek", "qwen3", "gpt-oss", "mixtral"))


def gb300_families(cases, rows, **hypothesis):
    """{(MoE / dense, precision): (mean |error|, bias, rows)} of the GB300 rows, each row's prediction scaled by
    base step / step under ``hypothesis`` (predicted_step's gpu / attention_efficiency arguments, a function of
    the row's Accelerator)."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.validation import published_throughput as P

    out = defaultdict(list)
    for c in cases:
        if "gb300" in c.family:
            run, gpu = rows[c.id], load_accelerator(rows[c.id]["gpu"])
            over = {name: make(gpu) for name, make in hypothesis.items()}
            ratio = P.predicted_step(run).total / P.predicted_step(run, **over).total if over else 1.0
            out[("MoE" if c.moe else "dense", c.precision)].append(c.predicted * ratio / c.measured - 1)
    return {k: (statistics.mean(map(abs, e)), statistics.mean(e), len(e)) for k, e in sorted(out.items())}


def gb300_tables() -> None:
    from gpuplan.jobs.validation import published_throughput as P

    rows = {r["id"]: r for r in P.published_throughput_rows()}
    cases, _ = P.published_throughput_cases()
    print("| release/model/precision/GPUs | GB300 / GB200 measured | predicted | layouts |")
    print("|---|---|---|---|")
    pairs = twin_pairs()
    for p in pairs:
        if (p["a"], p["b"]) != ("gb200", "gb300"):
            continue
        lay = layouts_text(p["same"], p["rows"][::-1])  # GB300's first, as the column's ratio
        b300 = next((q for q in pairs if q["key"] == p["key"] and (q["a"], q["b"]) == ("gb200", "b300")), None)
        extra = f" (B300 / GB200 {b300['measured']:.2f} vs {b300['predicted']:.2f})" if b300 else ""
        print(f"| {'/'.join(map(str, p['key']))} | {p['measured']:.3f} | {p['predicted']:.3f} | {lay}{extra} |")

    tensor = ("bf16", "fp16", "fp8", "fp4")
    hypotheses = {"as is": {},
                  "fp8-peak x1.2": dict(gpu=lambda g: scaled_part(g, ("fp8",), 1.2)),
                  "tensor x1.15": dict(gpu=lambda g: scaled_part(g, tensor, 1.15)),
                  "attention x2": dict(attention_efficiency=lambda g: 2 * P.attention_efficiency(g, hopper_tuned=True)),
                  "hbm x1.3": dict(gpu=lambda g: scaled_part(g, hbm=1.3))}
    fams = gb300_families(cases, rows)
    print("\n| hypothesis | " + " | ".join(f"GB300 {m} {p} (n)" for m, p in fams) + " |")
    print("|---|" + "---|" * len(fams))
    for name, hypothesis in hypotheses.items():
        fams = gb300_families(cases, rows, **hypothesis)
        cells = (f"{m * 100:.1f}% / {b * 100:+.1f}% ({n})" for m, b, n in fams.values())
        print(f"| {name} | " + " | ".join(cells) + " |")


def twin_tables(every: bool) -> None:
    pairs = twin_pairs()
    groups = defaultdict(list)
    for p in pairs:
        cls = {"bf16": "BF16", "nvfp4": "NVFP4"}.get(p["key"][2], "FP8")
        groups[(p["a"], p["b"], "MoE" if moe(p["key"]) else "dense", cls)].append(p)
    print(f"{len(twin_rows())} groups, {len(pairs)} pairs, {sum(p['same'] for p in pairs)} at one layout\n")
    print("| parts (second / first) | class | pairs (same layout) | measured median | predicted median | "
          "measured / predicted: median, same-layout median |")
    print("|---|---|---|---|---|---|")
    for (a, b, kind, cls), ps in sorted(groups.items()):
        same = [p["measured"] / p["predicted"] for p in ps if p["same"]]
        same_median = f"{statistics.median(same):.3f}" if same else "–"
        print(f"| {b.upper()} / {a.upper()} | {kind} {cls} | {len(ps)} ({len(same)}) | "
              f"{statistics.median(p['measured'] for p in ps):.3f} | "
              f"{statistics.median(p['predicted'] for p in ps):.3f} | "
              f"{statistics.median(p['measured'] / p['predicted'] for p in ps):.3f}, {same_median} |")
    print("\n| release / model / precision / GPUs | parts | layout | measured | predicted | m / p | "
          "first: gemm / attn / hbm / comm / host % | second |")
    print("|---|---|---|---|---|---|---|---|")
    for p in pairs:
        if not (every or p["same"]):
            continue
        sa, sb = (step_split(r) for r in p["rows"])
        fmt = lambda s: " / ".join(f"{100 * s[t]:.0f}" for t in ("gemm", "attn", "hbm", "comm", "host"))  # noqa: E731
        lay = layouts_text(p["same"], p["rows"])
        print(f"| {' / '.join(map(str, p['key']))} | {p['b']} / {p['a']} | {lay} | {p['measured']:.3f} | "
              f"{p['predicted']:.3f} | {p['measured'] / p['predicted']:.3f} | {fmt(sa)} | {fmt(sb)} |")


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a not in OPTIONS]
    if unknown:
        print(f"blackwell_ultra_pairs.py: unknown argument {unknown[0]!r}; valid: {', '.join(OPTIONS)} "
              "(--all only with --twins)", file=sys.stderr)
        return 2
    if "--twins" in argv:
        twin_tables("--all" in argv)
    elif "--all" in argv:
        print("blackwell_ultra_pairs.py: --all lists every twin pair and needs --twins", file=sys.stderr)
        return 2
    else:
        gb300_tables()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
