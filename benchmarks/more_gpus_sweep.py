"""More GPUs asked must never answer slower: a sweep of `plan --gpus N` over families (model x GPU x sequence, or a
--global-batch) x asked counts through the Python API, then every pair M < N of one family whose larger ask ranks
slower, as `plan` ranks (the slow end with failures: planner.plan.ranked_seconds_per_token), by more than the 1%
plateau (PLATEAU_SHARE). Session 25 (docs/training.md 'What the answers guarantee'): 57 families x 28 counts, 21,546
pairs, 70 such pairs before 208a97ae, 23 after and 32 with the idle rule (4d1300a2: the 9 new inside the two
layouts' ± model combined, by design), ~6-10 minutes on the shared 2-core machine. Session 26 (each row now
records its answer's ± model, ``u``, and --report marks 'band' a pair the idle rule would hold were the smaller
answer weighed): the same 32 at 267d1641, 29 of them inside the band (20 of the 23 too: no ladder of smaller
counts moves them) and 3 not (3,000 asked against 2,304 = 9 x 256; docs/training.md).

    python benchmarks/more_gpus_sweep.py sweep.jsonl           # appends one JSON line an ask
    python benchmarks/more_gpus_sweep.py sweep.jsonl --report  # the pairs, worst first
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import time

COUNTS = [64, 96, 100, 128, 192, 200, 256, 384, 500, 512, 640, 768, 1000, 1024, 1113, 1536, 2000, 2048, 2304, 3000,
          3072, 4096, 5000, 6144, 8191, 8192, 12288, 16384]
FAMILIES = [{"model": model, "gpu": gpu, **({"seq_len": seq} if seq else {})}
            for model in ("deepseek-v2-lite", "llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b", "llama-3.1-70b",
                          "gemma-2-9b")
            for gpu in ("l40s", "h100", "a100-40gb") for seq in (None, 32768, 131072)]
FAMILIES += [{"model": "gemma-2-9b", "gpu": "a100-40gb", "global_batch": 1024},
             {"model": "llama-3.1-8b", "gpu": "h100", "global_batch": 1000},
             {"model": "deepseek-v2-lite", "gpu": "l40s", "seq_len": 131072, "global_batch": 16}]


def answer(family: dict, gpus: int) -> dict:
    """The count, days, days with failures and ranked days (ranked s a sequence x sequences) `plan` answers."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.plan.deadline import rank_by_of
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import best_index, search
    from gpuplan.planner.plan import ranked_seconds_per_token

    try:
        inputs = PlanInputs(**family, tokens="100B", gpus=gpus)
        found = search(inputs)
        i, table = best_index(found, rank_by_of(inputs)), found.table
        ranked = float(ranked_seconds_per_token(table)[i]) * inputs.tokens / inputs.seq_len / 86400
        return {"gpus": int(table["gpus"][i]), "days": float(table["days"][i]),
                "fail_days": float(table["days_with_failures"][i]), "ranked": ranked,
                **({"u": float(table["uncertainty"][i])} if "uncertainty" in table.columns else {})}
    except InputError as refused:
        return {"error": str(refused)[:100]}


def held(m: dict, n: dict, asked: int) -> bool:
    """Whether ask ``n`` (``asked`` GPUs, a common size answered whole) would hold ``m``'s answer behind its own were
    it weighed: the idle rule (planner.idle_rule), m's point x (1 + sqrt(u_m^2 + u_n^2)) not below n's point (point:
    ranked / (1 + u)). False for an irregular ask, one answered on fewer, or rows written without ``u``."""
    from gpuplan.planner.space import is_common_size

    if n["gpus"] != asked or not is_common_size(asked) or "u" not in m or "u" not in n:
        return False
    point_m, point_n = m["ranked"] / (1 + m["u"]), n["ranked"] / (1 + n["u"])
    return not point_m * (1 + math.hypot(m["u"], n["u"])) < point_n


def report(path: str, share: float) -> None:
    """Each pair whose larger ask ranks more than ``share`` slower, worst first, one line per larger ask; 'band'
    marks a pair the idle rule would keep were the smaller answer weighed (held): a common size answered whole."""
    families = collections.defaultdict(dict)
    for line in open(path, encoding="utf-8"):
        row = json.loads(line)
        families[json.dumps(row["fam"], sort_keys=True)][row["asked"]] = row
    pairs, slower = 0, []
    for family, by in families.items():
        asked = sorted(n for n in by if "ranked" in by[n])
        for j, n in enumerate(asked):
            for m in asked[:j]:
                pairs += 1
                if by[n]["ranked"] > by[m]["ranked"] * (1 + share):
                    slower.append((by[n]["ranked"] / by[m]["ranked"], family, m, by[m], n, by[n]))
    inside = sum(held(a, b, n) for _, _, _, a, n, b in slower)
    print(f"{len(families)} families, {pairs:,} pairs, {len(slower)} slower by more than {share:.0%}, {inside} of them "
          "inside the idle rule's band (a common size answered whole: 'band')")
    seen = set()
    for ratio, family, m, a, n, b in sorted(slower, key=lambda s: -s[0]):
        if (family, n) not in seen:
            seen.add((family, n))
            print(f"{ratio:.3f} {family} asked {m} -> {a['gpus']} {a['days']:.3f} d | asked {n} -> {b['gpus']} "
                  f"{b['days']:.3f} d" + (" band" if held(a, b, n) else ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    from gpuplan.planner.plan import PLATEAU_SHARE

    if args.report:
        report(args.out, PLATEAU_SHARE)
        return
    with open(args.out, "a", encoding="utf-8") as out:
        for family in FAMILIES:
            for gpus in COUNTS:
                start = time.perf_counter()
                row = {"fam": family, "asked": gpus, **answer(family, gpus)}
                out.write(json.dumps(row | {"s": round(time.perf_counter() - start, 2)}) + "\n")
                out.flush()


if __name__ == "__main__":
    main()
