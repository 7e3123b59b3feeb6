"""Does gpuplan's fit rule accept the layouts published runs trained with? Each scored row of
published_throughput.yaml is evaluated as `gpuplan plan` would evaluate it (its model, GPU, dtype and
FP8 recipe, framework, global batch, the recompute its recipe ran) and the reserved + runtime memory
compared with the fit budget (core.memory.device_memory: capacity x (1 - margin)). A run that trained is
a layout that fits on its GPU: every refusal is the memory model's miss (or an input it has no field
for: CPU activation offload, FP8 primary weights). Reported by family in docs/accuracy.md.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import median


@dataclass(frozen=True)
class FitCheck:
    id: str
    family: str
    over: float
    """gpuplan's reserved + runtime bytes (+ the fit rule's excess, planner.plan.Plan) / the fit budget - 1 (> 0: refused)."""


def fit_checks() -> list[FitCheck]:
    """The fit rule's verdict on every published layout with a catalog model."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.validation.published_throughput import PRECISION, published_layout, published_throughput_rows, \
        recipe_recompute, why_not
    from gpuplan.planner.plan import evaluate_layout

    out = []
    for run in published_throughput_rows():
        if why_not(run) or not run["model"].get("catalog"):
            continue
        lay, torchtitan = run["layout"], run["family"].startswith("torchtitan")
        fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=run["gpus"],
                      seq_len=run["model"]["seq_len"], global_batch=lay["global_batch"],
                      dtype=PRECISION[run["precision"]], framework="torchtitan" if torchtitan else "megatron")
        if run["precision"] == "mxfp8":
            fields["fp8_recipe"] = "mxfp8"
        plan = evaluate_layout(evaluator_for(PlanInputs(**fields)), published_layout(lay),
                               recipe_recompute(run)["recompute"],
                               lay["global_batch"], run["gpus"])
        family = run["family"].split("-")[0] + ("-" + run["gpu"] if not torchtitan else "")
        # the rule plan applies: reserved + runtime + what the framework's published memory gap keeps free
        out.append(FitCheck(run["id"], family, (plan.total_bytes + plan.fit_excess_bytes) / plan.budget_bytes - 1))
    return out


def fit_table_rows(checks: list[FitCheck]) -> tuple[tuple[str, ...], ...]:
    """(GPU family, layouts, refused, median excess of the refused) per GPU, and all together."""
    by: dict[str, list[FitCheck]] = defaultdict(list)
    for c in checks:
        by[c.family.split("-", 1)[-1]].append(c)
    by["all"] = list(checks)
    rows = []
    for name, members in sorted(by.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        refused = [c.over for c in members if c.over > 0]
        rows.append((name, str(len(members)), str(len(refused)), f"+{median(refused):.0%}" if refused else ""))
    return tuple(rows)
