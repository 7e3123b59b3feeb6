"""The published layouts and the error growth behind the planner's layout uncertainty
(planner.uncertainty): every scored row of published_throughput.yaml and throughput_runs.yaml as a
point in layout space, its precision class's root-mean-square error at those points and the class's
variogram slope. Packaged as catalog/reference/layout_uncertainty.json; regenerate with
``python -m gpuplan.jobs.validation.uncertainty`` (a test keeps the file equal to the code's figures).
The RMS of a class is taken over its held-out rows; the variogram over every pair of its scored rows
(the llm-foundry rows, on which three step constants were fitted, included: the slope measures how
the error varies between layouts, not its size).
"""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import combinations

import numpy as np

from gpuplan.adapters.files import write_atomic
from gpuplan.planner.uncertainty import CLASSES, COORDINATES, LAYOUT_FAMILY, VARIOGRAM_RANGE, fit_growth, \
    kind_code, layout_features, layout_points


def group_key(model: str, gpu: str, gpus: int, precision: str, framework: str) -> str:
    """The planner check's group of a published row (jobs/validation/planner_choice.py)."""
    return f"{model}|{gpu}|{gpus}|{precision}|{framework}"


def scored_rows() -> list[tuple[str, str, np.ndarray, float, bool, int]]:
    """(class, group, layout point, error, held out, kind) of every scored published throughput row."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.model.spec import count_parameters
    from gpuplan.jobs.validation.published_throughput import PRECISION, published_expert_tp, \
        published_throughput_cases, published_throughput_rows
    from gpuplan.jobs.validation.throughput import run_spec, throughput_cases, throughput_reference

    rows = {r["id"]: r for r in published_throughput_rows()} | {r["id"]: r for r in throughput_reference()["runs"]}
    cases = [(c.id, c.error, True) for c in published_throughput_cases()[0]]
    cases += [(c.id, c.error, not (c.family == "llm-foundry" and "fp8" not in c.id) and "zero3-174b" not in c.id)
              for c in throughput_cases()]
    out = []
    for case_id, error, held in cases:
        run = rows[case_id]
        spec, lay = run_spec(run["model"]), run["layout"]
        dtype = PRECISION.get(run.get("precision", "bf16"), "bf16")
        cls = "moe" if spec.moe is not None else ("bf16" if dtype == "bf16" else "fp8")
        columns = {k: [lay.get(k) or 1] for k in ("tp", "pp", "vpp", "cp", "ep", "dp", "micro_batch")}
        columns["zero"] = [lay.get("zero") or 0]
        point = layout_points(columns, float(count_parameters(spec).active))[0]
        gpu = load_accelerator(run["gpu"])
        kind = int(kind_code(layout_features(columns, gpu.scale_up_ranks, spec.moe is not None,
                                             published_expert_tp(lay)))[0])  # the recipes' etp 1
        framework = "torchtitan" if run["family"].startswith("torchtitan") else "megatron"
        model = run["model"].get("catalog") or run["model"]["name"]
        out.append((cls, group_key(model, run["gpu"], run["gpus"], dtype, framework), point, error, held, kind))
    return out


def class_figures(rows) -> dict[str, tuple[float, float, float]]:
    """class -> (RMS error of its held-out rows, variogram nugget, growth per unit of distance). The
    variogram is the layout family's (LAYOUT_FAMILY: dense BF16 and FP8 runs schedule their
    parallelisms alike), its pairs within one precision class, one GPU type and one kind (rows on two
    GPUs, or one BF16 and one FP8, differ by their kernels' error, not by their layouts; distance is
    only measured within a kind)."""
    by_class = defaultdict(list)
    for cls, group, point, error, held, kind in rows:
        by_class[cls].append((point, error, held, (group.split("|")[1], kind)))
    pairs = defaultdict(list)
    for cls, members in by_class.items():
        pairs[LAYOUT_FAMILY[cls]] += [(float(np.linalg.norm(a[0] - b[0])), (a[1] - b[1]) ** 2 / 2)
                                      for a, b in combinations(members, 2) if a[3] == b[3]]
    growth = {family: fit_growth(*(np.array(x) for x in zip(*found))) for family, found in pairs.items() if found}
    out = {}
    for cls, members in by_class.items():
        held = [e for _, e, h, _ in members if h] or [e for _, e, _, _ in members]
        nugget, slope = growth.get(LAYOUT_FAMILY[cls], (0.0, 0.0))
        out[cls] = (math.sqrt(sum(e * e for e in held) / len(held)), nugget, slope)
    return out


def _points(rows) -> list[str]:
    """One JSON object per distinct (group, kind, point): a layout republished release after release is
    one point, its error ("e") the RMS of its rows' errors (planner.uncertainty KnownLayouts.kind_rms)
    and its signed error ("b") their mean (> 0: the model predicted it faster than it ran;
    KnownLayouts.kind_bias)."""
    import json

    errors: dict[tuple, list[float]] = defaultdict(list)
    for _, group, point, error, _, kind in rows:
        errors[(group, kind, tuple(round(float(v), 3) for v in point))].append(error)
    return [json.dumps({"group": group, "kind": kind, "x": list(x), "e": round(math.sqrt(sum(e * e for e in es) / len(es)), 2),
                        "b": round(sum(es) / len(es), 3)})
            for (group, kind, x), es in errors.items()]


def uncertainty_json() -> str:
    """The packaged file's text: JSON, one published layout per line (the planner reads it on every
    search; Python's C JSON parser takes ~1 ms where tomllib took ~60 ms for the same 290 points)."""
    import json

    rows = scored_rows()
    figures = class_figures(rows)
    widest = max(rms for rms, _, _ in figures.values())
    about = ["Generated by `python -m gpuplan.jobs.validation.uncertainty`; do not edit by hand.",
             "Per precision class: the step model's RMS error at the held-out published layouts, the variogram "
             f"of its error over pairs of scored layouts closer than {VARIOGRAM_RANGE:g} units (nugget, growth per "
             "unit), and every scored published layout of its layout family (dense or MoE) as a point with "
             "its kind (planner/uncertainty.py FEATURES as bits) and the step model's error there: RMS (e) and "
             "signed mean (b, > 0: predicted faster than it ran)."]
    # jobs.plan.search._uncertainty_class reads one class by finding '\n  "widest": ' and '\n  "<class>": '
    # as written here (any other layout: it parses the whole file)
    lines = ["{", f'  "about": {json.dumps(about)},', f'  "coordinates": {json.dumps(list(COORDINATES))},',
             f'  "widest": {round(widest, 4)}']
    for cls in CLASSES:
        if cls not in figures:
            continue
        rms, nugget, growth = figures[cls]
        points = _points([r for r in rows if LAYOUT_FAMILY[r[0]] == LAYOUT_FAMILY[cls]])
        lines[-1] += ","
        lines += [f'  "{cls}": {{"rms": {round(rms, 4)}, "nugget": {round(nugget, 4)}, "growth": {round(growth, 4)}, '
                  '"points": [', ",\n".join("    " + p for p in points), "  ]}"]
    return "\n".join(lines + ["}"]) + "\n"


def main() -> None:
    from importlib import resources

    path = resources.files("gpuplan.catalog") / "reference" / "layout_uncertainty.json"
    write_atomic(str(path), uncertainty_json())
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
