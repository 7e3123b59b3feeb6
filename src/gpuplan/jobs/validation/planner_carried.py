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

Where no measured run (the group's own or a carried one) has the planner's tensor / pipeline / context degrees
(``CarriedCheck.layout_measured`` False: FSDP x TP 2 on 70B and 405B, and on 8B at 64 GPUs, wave 13), the check
only repeats the step model's own ratio between the planner's layout and the carried run's: it says nothing of
whether the model is optimistic on the planner's layout there (review_w13_r2 M3). validate's line says how many.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import InputError
from gpuplan.schema.vocabulary import RECOMPUTE

KIND_CARRIED = ("planner: its own choice vs the best published or carried run (torchtitan; carried by the model's own "
                "ratio; {unmeasured} of {groups} groups rest on a layout no run measured)")
"""validate's line (jobs/validation/estimate.planner_cases): one case per torchtitan group, measured = the
reference (CarriedCheck.reference), predicted = the planner's figure."""

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
    degrees: tuple[int, int, int]
    """The run's (tp, pp, cp)."""


@dataclass(frozen=True)
class CarriedCheck:
    """A torchtitan planner group against the best of its own published runs and the carried ones."""

    group: str
    own_best: float
    planned: float
    carried: tuple[CarriedRun, ...]
    id: str
    """The group's best published row."""
    planned_layout: str
    """The planner's layout (planner.plan.Plan.text)."""
    layout_measured: bool
    """Whether a measured run, the group's own or a carried one, has the planner's (tp, pp, cp); False: the
    planner's figure against the reference is the step model's own ratio between two layouts, nothing more."""

    @property
    def reference(self) -> float:
        """The fastest of the group's own best and every carried run (tokens/s/GPU)."""
        return max([self.own_best] + [c.carried for c in self.carried])

    @property
    def error(self) -> float:
        return self.planned / self.reference - 1


def carried_row(run: dict, gpu: str, gpus: int, local_batch: int, micro_batch: int, recompute: str) -> tuple[dict, dict]:
    """(the source row, the carried row) of ``run`` at ``local_batch`` sequences a data-parallel rank
    (``micro_batch`` a forward) and ``recompute``, on ``gpus`` of ``gpu`` at its own tp, pp, cp;
    dp = gpus / (tp pp cp). InputError (a ValueError) naming the field where a count is not a positive whole
    number, tp pp cp does not divide ``gpus``, ``micro_batch`` does not divide ``local_batch`` or ``recompute``
    is not a mode."""
    lay = run["layout"]
    for field, value in (("gpus", gpus), ("local_batch", local_batch), ("micro_batch", micro_batch)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(field, value, "expected a whole number >= 1")
    if recompute not in RECOMPUTE:
        raise InputError("recompute", recompute, f"expected one of {', '.join(RECOMPUTE)}")
    model_parallel = lay["tp"] * lay["pp"] * (lay.get("cp") or 1)
    if gpus % model_parallel:
        raise InputError("gpus", gpus, f"expected a multiple of the run's tp x pp x cp = {model_parallel}")
    if local_batch % micro_batch:
        raise InputError("micro_batch", micro_batch, f"expected a divisor of local_batch {local_batch}")
    source = dict(run, layout=dict(lay, micro_batch=micro_batch, global_batch=lay["dp"] * local_batch,
                                   recompute=recompute))
    dp = gpus // model_parallel
    return source, dict(source, gpu=gpu, gpus=gpus, layout=dict(source["layout"], dp=dp, global_batch=dp * local_batch))


def carry(run: dict, gpu: str, gpus: int, local_batch: int, micro_batch: int, recompute: str) -> tuple[float, dict]:
    """(carried tokens/s/GPU, the carried row) of carried_row's: the run's measured tokens/s/GPU x the step model at
    the carried row / the step model at the source row."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    source, target = carried_row(run, gpu, gpus, local_batch, micro_batch, recompute)
    ratio = float(predict_tokens_per_gpu_s(target) / predict_tokens_per_gpu_s(source))
    return float(run["measured"]["tokens_per_s_per_gpu"]) * ratio, target


def fits(run: dict) -> bool:
    """Whether the fit rule (`plan`'s: reserved + runtime + the framework's published gap within the budget) holds
    ``run``'s layout on its GPU: published_fits.row_plan's Plan.headroom_bytes >= 0."""
    from gpuplan.jobs.validation.published_fits import row_plan

    return row_plan(run).headroom_bytes >= 0


def carried_runs(key: tuple, seq_len: int, rows: list[dict] | None = None) -> tuple[CarriedRun, ...]:
    """Every other torchtitan run of ``key``'s model and precision at ``seq_len`` (another GPU type or count)
    carried to ``key``'s GPU and count, where its layout divides that count and fits there (``rows``: the
    published_throughput rows, read again if None)."""
    from gpuplan.jobs.validation.planner_choice import PRECISION
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows, why_not

    model, gpu, gpus, precision, _ = key
    out = []
    for run in published_throughput_rows() if rows is None else rows:
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
        fitting = [option for option in options if fits(carried_row(run, gpu, gpus, *option)[1])]
        if fitting:
            figure, row = min((carry(run, gpu, gpus, *option) for option in fitting), key=lambda c: c[0])
            t = row["layout"]
            out.append(CarriedRun(run["id"], float(run["measured"]["tokens_per_s_per_gpu"]), figure,
                                  f"dp{t['dp']} tp{t['tp']} pp{t['pp']} local batch {t['global_batch'] // t['dp']}, "
                                  f"{t['recompute']} recompute", _degrees(t)))
    return tuple(out)


def _degrees(layout) -> tuple[int, int, int]:
    """(tp, pp, cp) of a row's layout (a dict) or a planner.plan Layout."""
    get = layout.get if isinstance(layout, dict) else lambda k: getattr(layout, k, None)
    return int(get("tp") or 1), int(get("pp") or 1), int(get("cp") or 1)


def carried_check(key: tuple, runs: list[dict], rows: list[dict] | None = None) -> CarriedCheck:
    """The CarriedCheck of planner_choice group ``key`` (its published ``runs``), the planner as the check plans
    (``rows``: as carried_runs)."""
    from gpuplan.jobs.validation.planner_choice import planner_plan

    best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
    plan = planner_plan(best, "torchtitan")
    carried = carried_runs(key, best["model"]["seq_len"], rows)
    measured = {_degrees(r["layout"]) for r in runs} | {c.degrees for c in carried}
    return CarriedCheck(f"{key[0]} {key[2]} {key[1]} {key[3]}", float(best["measured"]["tokens_per_s_per_gpu"]),
                        plan.tokens_per_second / plan.gpus_asked, carried, best["id"], plan.text(),
                        _degrees(plan.layout) in measured)


def carried_checks() -> list[CarriedCheck]:
    """One CarriedCheck per torchtitan group of planner_choice (its scored groups)."""
    from gpuplan.jobs.validation.planner_choice import _groups
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    rows = published_throughput_rows()
    return [carried_check(key, runs, rows) for key, runs in sorted(_groups().items()) if key[4] == "torchtitan"]


def carried_table() -> list[str]:
    """Markdown rows: each group's own best, the fastest carried run, the reference, the planner against both, and
    whether a measured run has the planner's tp / pp / cp (no: the last column is the model's own layout ratio)."""
    rows = ["| group | own best | fastest carried run (its layout there) | carried | planner | vs own best "
            "| vs the reference | planner's tp / pp / cp measured |", "|---|---|---|---|---|---|---|---|"]
    checks = carried_checks()
    for c in checks:
        top = max(c.carried, key=lambda r: r.carried, default=None)
        shown = f"{top.id} ({top.layout}; measured {top.measured:,.0f})" if top else "none fits"
        rows.append(f"| {c.group} | {c.own_best:,.0f} | {shown} | {top.carried if top else float('nan'):,.0f} "
                    f"| {c.planned:,.0f} | {c.planned / c.own_best - 1:+.1%} | {c.error:+.1%} "
                    f"| {'yes' if c.layout_measured else 'no: ' + c.planned_layout} |")
    errors = [c.error for c in checks]
    rows.append(f"| all {len(checks)}: mean abs / bias | | | | | | {sum(map(abs, errors)) / len(errors):.1%} / "
                f"{sum(errors) / len(errors):+.1%} | {sum(not c.layout_measured for c in checks)} no |")
    return rows


def carried_kind(checks: list[CarriedCheck]) -> str:
    """KIND_CARRIED with its counts filled in from ``checks``."""
    return KIND_CARRIED.format(unmeasured=sum(not c.layout_measured for c in checks), groups=len(checks))


UNMEASURED_NOTE = "no measured run has the planner's tp / pp / cp: the step model's own ratio between two layouts"


def carried_cases() -> list[tuple[str, str, float, float, str, str]]:
    """validate's KIND_CARRIED cases (jobs/validation/estimate.Case fields: id, kind, measured, predicted, basis,
    note): one per CarriedCheck, the reference against the planner's figure (tokens/s/GPU); UNMEASURED_NOTE where
    the planner's layout rests on no measured run."""
    checks = carried_checks()
    kind = carried_kind(checks)
    return [(c.id, kind, c.reference, c.planned, f"tokens/s/GPU, {c.planned_layout}",
             "" if c.layout_measured else UNMEASURED_NOTE) for c in checks]


if __name__ == "__main__":
    print("\n".join(carried_table()))
