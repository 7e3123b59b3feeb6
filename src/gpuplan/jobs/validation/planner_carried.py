"""The torchtitan planner check against a reference the published demonstration layouts do not set: for each group of
planner_choice, every other torchtitan run of the same model, precision and sequence (scored, or stating its degrees
only) carried to the group's GPU type and count by the step model's own ratio at that run's layout, measured x
model(group's GPU, count) / model(the run's GPU, count), where the carried layout fits the group's GPU by the fit rule.

Why (issue 37, wave 13): seven of the thirteen groups' best published runs demonstrate async TP or a pipeline schedule
at the layout that feature needs (planner_choice.demonstrates_a_layout_feature); the planner's choices there are
layouts torchtitan ran elsewhere (FSDP x TP 2-4, FSDP-only), measured on other GPU counts or parts (IBM Cloud's 700 W
H100 SXM at 512 GPUs, Trainy's H200, torchtitan's own 8- and 128-GPU FSDP runs). The carry moves only what the step
model says differs between the two settings (peak, HBM and network of the parts, ring length of the counts), at the
measured run's own layout, release and settings: a model ratio, not a fitted factor. Its uncertainty is the model's
error on that ratio: the 500 W Grand Teton part's peak is the catalog's midpoint between H100 SXM and NVL (low
confidence, catalog/hardware/h100-sxm-96gb-500w.toml), the H200 carry runs through its HBM and peak.

Degrees-only rows (batch and activation checkpointing not published) are carried at local batch 1 and 2, full and
op-level recompute, where each fits the group's GPU; the least carried figure is kept (the reference the planner
looks best against is not chosen).
"""

from __future__ import annotations

from dataclasses import dataclass

UNPUBLISHED_LOCAL_BATCHES = (1, 2)
"""Local batches a degrees-only row is carried at (planner_choice.DEGREES_ONLY_NOTE: the blog explored batch and AC;
the IBM 405B / 70B layouts fit 1 and 2 on 80 GB by gpuplan's fit rule at full AC)."""
UNPUBLISHED_RECOMPUTE = ("full", "selective")


@dataclass(frozen=True)
class CarriedRun:
    """One measured torchtitan run carried to a planner group's GPU type and count."""

    id: str
    measured: float
    """Its own tokens/s/GPU."""
    carried: float
    """measured x the step model at the group's GPU and count / the step model at the run's own (tokens/s/GPU)."""
    layout: str
    """The carried layout (dp scaled to the group's count, the run's tp, pp, cp, local batch and recompute)."""


@dataclass(frozen=True)
class CarriedCheck:
    """A torchtitan planner group against the best of its own published runs and the carried ones."""

    group: str
    own_best: float
    planned: float
    carried: tuple[CarriedRun, ...]

    @property
    def reference(self) -> float:
        """The fastest of the group's own best and every carried run (tokens/s/GPU)."""
        return max([self.own_best] + [c.carried for c in self.carried])

    @property
    def error(self) -> float:
        return self.planned / self.reference - 1


def carry(run: dict, gpu: str, gpus: int, local_batch: int, micro_batch: int, recompute: str) -> tuple[float, dict]:
    """(carried tokens/s/GPU, the carried row) of ``run`` at ``local_batch`` sequences a data-parallel rank
    (``micro_batch`` a forward) and ``recompute``, on ``gpus`` of ``gpu`` at its own tp, pp, cp;
    dp = gpus / (tp pp cp)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    lay = run["layout"]
    source = dict(run, layout=dict(lay, micro_batch=micro_batch, global_batch=lay["dp"] * local_batch,
                                   recompute=recompute))
    dp = gpus // (lay["tp"] * lay["pp"] * (lay.get("cp") or 1))
    target = dict(source, gpu=gpu, gpus=gpus, layout=dict(source["layout"], dp=dp, global_batch=dp * local_batch))
    ratio = float(predict_tokens_per_gpu_s(target) / predict_tokens_per_gpu_s(source))
    return float(run["measured"]["tokens_per_s_per_gpu"]) * ratio, target


def fits(run: dict) -> bool:
    """Whether the fit rule (`plan`'s: reserved + runtime + the framework's published gap within the budget) holds
    ``run``'s layout on its GPU (published_fits.row_plan)."""
    from gpuplan.jobs.validation.published_fits import row_plan

    plan = row_plan(run)
    return plan.total_bytes + plan.fit_excess_bytes <= plan.budget_bytes


def carried_runs(key: tuple, seq_len: int) -> tuple[CarriedRun, ...]:
    """Every other torchtitan run of ``key``'s model and precision at ``seq_len`` (another GPU type or count)
    carried to ``key``'s GPU and count, where its layout divides that count and fits there."""
    from gpuplan.jobs.validation.planner_choice import PRECISION
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not

    model, gpu, gpus, precision, _ = key
    out = []
    for run in published_throughput_rows():
        lay, reason = run["layout"], why_not(run)
        if (not run["family"].startswith("torchtitan") or reason not in ("", "layout incomplete")
                or run["model"].get("catalog") != model or PRECISION[run["precision"]] != precision
                or run["model"]["seq_len"] != seq_len or (run["gpu"], run["gpus"]) == (gpu, gpus)
                or gpus % (lay["tp"] * lay["pp"] * (lay.get("cp") or 1))):
            continue
        if reason:  # degrees only: every unpublished setting that fits, the least carried kept
            options = [(mb, mb, rc) for mb in UNPUBLISHED_LOCAL_BATCHES for rc in UNPUBLISHED_RECOMPUTE]
        else:
            options = [(lay["global_batch"] // lay["dp"], lay["micro_batch"], lay["recompute"])]
        carried = [carry(run, gpu, gpus, *option) for option in options]
        carried = [(figure, row) for figure, row in carried if fits(row)]
        if carried:
            figure, row = min(carried, key=lambda c: c[0])
            t = row["layout"]
            out.append(CarriedRun(run["id"], float(run["measured"]["tokens_per_s_per_gpu"]), figure,
                                  f"dp{t['dp']} tp{t['tp']} pp{t['pp']} local batch {t['global_batch'] // t['dp']}, "
                                  f"{t['recompute']} recompute"))
    return tuple(out)


def carried_check(key: tuple, runs: list[dict]) -> CarriedCheck:
    """The CarriedCheck of planner_choice group ``key`` (its published ``runs``), the planner as the check plans."""
    from gpuplan.jobs.validation.planner_choice import planned_tokens_per_gpu_s

    best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
    planned, _ = planned_tokens_per_gpu_s(best, "torchtitan")
    return CarriedCheck(f"{key[0]} {key[2]} {key[1]} {key[3]}", float(best["measured"]["tokens_per_s_per_gpu"]),
                        planned, carried_runs(key, best["model"]["seq_len"]))


def carried_checks() -> list[CarriedCheck]:
    """One CarriedCheck per torchtitan group of planner_choice (its scored groups)."""
    from gpuplan.jobs.validation.planner_choice import _groups

    return [carried_check(key, runs) for key, runs in sorted(_groups().items()) if key[4] == "torchtitan"]


def carried_table() -> list[str]:
    """Markdown rows: each group's own best, the fastest carried run, the reference and the planner against both."""
    rows = ["| group | own best | fastest carried run (its layout there) | carried | planner | vs own best "
            "| vs the reference |", "|---|---|---|---|---|---|---|"]
    checks = carried_checks()
    for c in checks:
        top = max(c.carried, key=lambda r: r.carried, default=None)
        shown = f"{top.id} ({top.layout}; measured {top.measured:,.0f})" if top else "none fits"
        rows.append(f"| {c.group} | {c.own_best:,.0f} | {shown} | {top.carried if top else float('nan'):,.0f} "
                    f"| {c.planned:,.0f} | {c.planned / c.own_best - 1:+.1%} | {c.error:+.1%} |")
    errors = [c.error for c in checks]
    rows.append(f"| all {len(checks)}: mean abs / bias | | | | | | {sum(map(abs, errors)) / len(errors):.1%} / "
                f"{sum(errors) / len(errors):+.1%} |")
    return rows


if __name__ == "__main__":
    print("\n".join(carried_table()))
