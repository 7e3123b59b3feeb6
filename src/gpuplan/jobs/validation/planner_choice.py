"""The planner's own choice against the best published run on the same hardware and model: for each
(model, GPU, GPU count, precision, framework) of catalog/reference/published_throughput.yaml, what
`gpuplan plan` recommends given the run's global batch and sequence (as a user would ask), its
predicted tokens/s/GPU, and the fastest published run of that group.

The error splits in two: error = (1 + model error on the published layout) x (1 + the planner's
predicted advantage of its own layout over it) - 1. The first is the step model's own error where it
is checked; the second is how much faster the planner believes its layout is — optimism there is
the model being wrong exactly on the layouts it prefers, or a layout the framework does not run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpuplan.jobs.validation.planner_releases import accumulates, release_of
from gpuplan.jobs.validation.published_throughput import (
    PRECISION,
    nemo2_layout,
    predict_tokens_per_gpu_s,
    published_layout,
    published_throughput_rows,
    why_not,
)

STEP_RECIPE_FIELDS = ("low_precision_weights", "grad_dtype")
"""The fields of published_fits.recipe_memory_fields that every layout the planner times takes from the row: its
FP8 weights (published_throughput.param_gather: every layout gathers what the published one does) and its gradient
width (recipe_memory.grad_dtype, read at its tag: buffer and DP wire). The rest (moments, loss, buffers) are the
published layout's memory check only."""


@dataclass(frozen=True)
class ChoiceCase:
    id: str
    """The best published row of the group."""
    framework: str
    measured: float
    """Its tokens/s/GPU."""
    at_published: float
    """The step model at the published layout."""
    planned: float
    """The step model at the planner's layout."""
    layout: str
    best_any_count: float = 0.0
    """The fastest published run of the same model, GPU type, precision, framework and sequence at any
    GPU count, tokens/s/GPU (the group's own best where no other count is published)."""
    demonstration: bool = False
    """The group's published layout is fixed by the feature its source table demonstrates
    (demonstrates_a_layout_feature), not chosen for throughput."""
    layout_stated: bool = True
    """False for degrees_only_groups (no batch or recompute published): at_published NaN."""

    @property
    def error(self) -> float:
        return self.planned / self.measured - 1

    @property
    def model_error(self) -> float:
        return self.at_published / self.measured - 1

    @property
    def advantage(self) -> float:
        return self.planned / self.at_published - 1

    @property
    def error_any_count(self) -> float:
        """Against the best published run of the same model and hardware at any GPU count."""
        return self.planned / self.best_any_count - 1


def _groups(reason: str = "") -> dict[tuple, list[dict]]:
    """(model, GPU, GPU count, precision, framework) -> the published rows of catalog models whose
    why_not is ``reason`` ('' = the scored rows)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for run in published_throughput_rows():
        if why_not(run) != reason or not run["model"].get("catalog"):
            continue
        framework = "torchtitan" if run["family"].startswith("torchtitan") else "megatron"
        groups[(run["model"]["catalog"], run["gpu"], run["gpus"], PRECISION[run["precision"]], framework)].append(run)
    return groups


def degrees_only_groups(scored: dict[tuple, list[dict]] | None = None) -> dict[tuple, list[dict]]:
    """The groups (as _groups) whose rows state the degrees but not the micro-batch, global batch or
    recompute (why_not 'layout incomplete'; tp, pp and dp stated), whose groups have no scored row
    (``scored``: _groups(), read again if None): the IBM Cloud 512-H100 rows of 2024-11 (family
    torchtitan-2024-11-ibm-h100). The step model cannot be timed at their layout; the planner's own
    choice can be set against their measured figure, planned at the planner's default global batch (the
    batch is not published), on a line of their own (jobs/validation/estimate.planner_cases), outside
    the torchtitan line at the run's batch. torchtitan only: that split is torchtitan's."""
    scored = _groups() if scored is None else scored
    return {key: runs for key, runs in _groups("layout incomplete").items() if key not in scored
            and key[4] == "torchtitan" and all(r["layout"].get(k) for r in runs for k in ("tp", "pp", "dp"))}


DEGREES_ONLY_LINE = ("groups whose best run states its degrees only: batch not published, the planner at its "
                     "default 512 sequences; IBM 512 H100")
"""degrees_only_groups' own planner line (estimate.planner_cases), outside the headline (at the run's batch, issue
37): the default 4M tokens (schema.training_fields.DEFAULT_BATCH_TOKENS) are 512 of their 8,192-token sequences."""
DEGREES_ONLY_NOTE = "batch and AC not published (the blog explored both); the planner at its default 4M tokens"


def planned_tokens_per_gpu_s(run: dict, framework: str, recompute: str | None = None) -> tuple[float, str]:
    """What `gpuplan plan` recommends for the run's model, GPUs, batch, sequence and precision, its
    ranking not knowing the published layouts of the run's own group (they are what it is scored on);
    ``recompute``: held to that mode (`plan --recompute`), else the planner's choice."""
    plan = planner_plan(run, framework, recompute)
    return plan.tokens_per_second / plan.gpus_asked, plan.text()


def release_runs(result, run: dict, framework: str):
    """``result`` (jobs.plan.search.PlanSearch) kept to the layouts the release behind ``run`` runs: without
    gradient accumulation, one micro-batch a step unless pipelined. The planner plans today's framework;
    the check compares its choice with what the row's release could run (docs/step.md, Planner)."""
    from dataclasses import replace

    import numpy as np

    if accumulates(run, framework):
        return result
    t = result.table
    keep = np.flatnonzero((t["micro_batches"] == 1) | (t["pp"] > 1))
    # none left (nothing fits in one micro-batch): the search's own answer, as `plan` gives it
    return replace(result, table=t.take(keep)) if len(keep) else result


def planner_plan(run: dict, framework: str, recompute: str | None = None, kind_correction_rows: int = 0):
    """The planner.plan.Plan behind planned_tokens_per_gpu_s (``kind_correction_rows``: ranked with
    each kind's signed error, planner.search.UncertaintyTable; 0 = as `plan` ranks), among the layouts
    the row's release runs (release_runs)."""
    from gpuplan.jobs.plan.estimate import chosen_plan
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import best_index, search
    from gpuplan.jobs.validation.published_fits import recipe_memory_fields
    from gpuplan.jobs.validation.uncertainty import group_key

    fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=run["gpus"],
                  seq_len=run["model"]["seq_len"], global_batch=run["layout"]["global_batch"],
                  dtype=PRECISION[run["precision"]], framework=framework)
    if run["precision"] == "mxfp8":
        fields["fp8_recipe"] = "mxfp8"
    if recompute is not None:
        fields["recompute"] = recompute
    if framework == "torchtitan":  # the row's own compile setting (its framework string), as `plan --compile`
        fields["compile"] = "torch.compile" in run["framework"]
    if framework == "megatron":  # what the row's step reads too, from the memory check's own source
        fields |= {k: v for k, v in recipe_memory_fields(run).items() if k in STEP_RECIPE_FIELDS}
    group = group_key(run["model"]["catalog"], run["gpu"], run["gpus"], PRECISION[run["precision"]], framework)
    result = release_runs(search(PlanInputs(**fields), leave_out=group, kind_correction_rows=kind_correction_rows),
                          run, framework)
    return chosen_plan(result, best_index(result, "time"))


def kind_bias(rows: list[tuple], run: dict, layout, framework: str) -> tuple[float, int]:
    """(mean signed step-model error, rows) at the scored published rows of other groups whose layout
    has the kind (planner.uncertainty FEATURES) of ``layout`` on ``run``'s GPU, in its layout family
    (dense or MoE; jobs/validation/uncertainty.scored_rows): is the model optimistic on the kind of
    layout the planner chose, measured where that kind ran? NaN and 0 where no other group ran it."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.validation.throughput import run_spec
    from gpuplan.jobs.validation.uncertainty import group_key
    from gpuplan.planner.uncertainty import kind_code, layout_features

    spec, gpu = run_spec(run["model"]), load_accelerator(run["gpu"])
    columns = {k: [getattr(layout, k)] for k in ("tp", "pp", "vpp", "cp", "ep", "dp", "zero")}
    kind = int(kind_code(layout_features(columns, gpu.scale_up_ranks, spec.moe is not None, layout.etp))[0])
    moe = spec.moe is not None
    own = group_key(run["model"]["catalog"], run["gpu"], run["gpus"], PRECISION[run["precision"]], framework)
    errors = [e for cls, group, _, e, _, k in rows if k == kind and group != own and (cls == "moe") == moe]
    return (sum(errors) / len(errors) if errors else float("nan")), len(errors)


def chosen_kind_bias(run: dict, framework: str, layout, min_rows: int) -> tuple[float, int]:
    """(signed mean error, published layouts) of the kind of ``layout`` on ``run``'s GPU as the
    planner's ranking sees it (planner.uncertainty KnownLayouts.kind_bias over the packaged points of
    the run's layout family), its own group left out: 0 where fewer than ``min_rows`` have the kind."""
    import numpy as np

    from gpuplan.catalog import load_accelerator
    from gpuplan.jobs.plan.search import uncertainty_table
    from gpuplan.jobs.validation.throughput import run_spec
    from gpuplan.jobs.validation.uncertainty import group_key
    from gpuplan.planner.uncertainty import layout_kinds

    spec, gpu, dtype = run_spec(run["model"]), load_accelerator(run["gpu"]), PRECISION[run["precision"]]
    known = uncertainty_table(spec, dtype, group_key(run["model"]["catalog"], run["gpu"], run["gpus"], dtype,
                                                     framework)).known
    columns = {k: np.array([getattr(layout, k)]) for k in ("tp", "pp", "vpp", "cp", "ep", "dp", "zero")}
    bias, rows = known.kind_bias(layout_kinds(columns, gpu.scale_up_ranks, spec.moe is not None, layout.etp), min_rows)
    return float(bias[0]), int(rows[0])


def kind_correction_cases(min_rows: int, rank: bool = True) -> list[ChoiceCase]:
    """planner_choice_cases with each layout's predicted time corrected by its kind's signed error
    where ``min_rows`` published layouts of the kind have one (the group's own left out): the
    planner's figure is its predicted tokens/s / (1 + the chosen kind's signed error), the published
    layout's figure the same with its own kind's; ``rank``: the ranking corrected too (else the
    planner's choice as now, only the figures corrected)."""
    cases, groups = [], _groups()
    for key, runs in sorted(groups.items()):
        framework = key[4]
        best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
        plan = planner_plan(best, framework, kind_correction_rows=min_rows if rank else 0)
        bias, _ = chosen_kind_bias(best, framework, plan.layout, min_rows)
        published, _ = chosen_kind_bias(best, framework, published_layout(nemo2_layout(best)), min_rows)
        cases.append(ChoiceCase(best["id"], framework, float(best["measured"]["tokens_per_s_per_gpu"]),
                                predict_tokens_per_gpu_s(best) / (1 + published),
                                plan.tokens_per_second / plan.gpus_asked / (1 + bias),
                                plan.text(), best_at_any_count(groups, key, best["model"]["seq_len"])))
    return cases


def correction_summary(cases: list[ChoiceCase]) -> dict[str, str]:
    """framework -> "group's best; at any count; advantage; model at the published layout", each
    'mean abs / bias' (percent)."""
    out = {}
    for framework in ("megatron", "torchtitan"):
        mine = [c for c in cases if c.framework == framework]

        def figures(errors):
            return f"{sum(abs(e) for e in errors) / len(errors):.1%} / {sum(errors) / len(errors):+.1%}"
        out[framework] = (f"{figures([c.error for c in mine])}; {figures([c.error_any_count for c in mine])}; "
                          f"{figures([c.advantage for c in mine])}; {figures([c.model_error for c in mine])}")
    return out


def best_at_any_count(groups: dict[tuple, list[dict]], key: tuple, seq_len: int) -> float:
    """tokens/s/GPU of the fastest published run of ``key``'s model, GPU type, precision and framework
    at ``seq_len``, over every GPU count (the acceptance's "best published run on the same hardware and
    model": per GPU, a run on fewer GPUs carries less communication, so it bounds what more GPUs reach)."""
    model, gpu, _, precision, framework = key
    return max(float(r["measured"]["tokens_per_s_per_gpu"]) for (m, g, _, p, f), runs in groups.items()
               if (m, g, p, f) == (model, gpu, precision, framework) for r in runs if r["model"]["seq_len"] == seq_len)


def demonstrates_a_layout_feature(groups: dict[tuple, list[dict]], key: tuple) -> bool:
    """Whether the source table of ``key``'s best run (its family, model and GPU count, any precision)
    compares a technique that runs only at the model-parallel degrees it publishes: async TP (tensor
    parallelism; its rows' framework says '+ AsyncTP') or pipeline schedules (rows at one pp > 1 that
    differ in virtual stages). Such a table fixes the layout to show the feature — torchtitan's
    benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md: "measure the performance improvements of async
    TP over the vanilla TP baseline"; llama3_h100_202412_torchtitan.md Table 5 (1F1B vs interleaved 1F1B
    at FSDP 8 x TP 8 x PP 8) — so its best row need not be the fastest layout on that hardware
    (docs/step.md, Planner). Torchtitan only: Megatron's recipes are tuned layouts (False)."""
    model, gpu, gpus, _, framework = key
    if framework != "torchtitan":
        return False
    best = max(groups[key], key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
    table = [r for (m, g, n, _, f), runs in groups.items() if (m, g, n, f) == (model, gpu, gpus, framework)
             for r in runs if r["family"] == best["family"]]
    async_tp = any("AsyncTP" in r["framework"] for r in table)
    piped = [r for r in table if r["layout"]["pp"] > 1 and r["model"]["seq_len"] == best["model"]["seq_len"]]
    return async_tp or len({r["layout"].get("vpp") or 1 for r in piped}) > 1


def planner_choice_cases() -> list[ChoiceCase]:
    """One case per group: the scored groups (_groups), then the degrees-only ones (degrees_only_groups,
    layout_stated False, at_published NaN); "at any GPU count" looks over both."""
    cases, groups = [], _groups()
    partial = degrees_only_groups(groups)
    every = {**groups, **partial}
    for key, runs in sorted(groups.items()) + sorted(partial.items()):
        framework, stated = key[4], key in groups
        best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
        planned, text = planned_tokens_per_gpu_s(best, framework)
        cases.append(ChoiceCase(best["id"], framework, float(best["measured"]["tokens_per_s_per_gpu"]),
                                predict_tokens_per_gpu_s(best) if stated else float("nan"), planned, text,
                                best_at_any_count(every, key, best["model"]["seq_len"]),
                                stated and demonstrates_a_layout_feature(groups, key), stated))
    return cases


def choice_table(framework: str = "torchtitan") -> list[str]:
    """Markdown rows, one per group of ``framework``: the best published layout, its measured figure,
    the step model's error there, the planner's choice and its predicted figure, and the planner held
    to the published run's recompute mode (docs/step.md, Planner); the degrees-only groups
    (degrees_only_groups) last, 'n/a' where their layout is not published."""
    from gpuplan.jobs.validation.uncertainty import scored_rows

    rows = ["| group | best published layout | measured | model there | planner's choice | predicted "
            "| with the published recompute | vs the best at any GPU count | model on the chosen kind elsewhere |",
            "|---|---|---|---|---|---|---|---|---|"]
    scored, groups = scored_rows(), _groups()
    partial = degrees_only_groups(groups)
    every = {**groups, **partial}
    for key, runs in sorted(groups.items()) + sorted(partial.items()):
        if key[4] == framework:
            rows.append(_choice_row(key, max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"]), every,
                                    scored, key in groups))
    return rows


def _choice_row(key: tuple, best: dict, every: dict[tuple, list[dict]], scored: list[tuple], stated: bool) -> str:
    """choice_table's row of group ``key`` (its best published run ``best``; ``stated``: its batch and
    recompute are published, else the step model is not timed at its layout)."""
    (model, gpu, gpus, precision, fw), lay = key, best["layout"]
    measured = float(best["measured"]["tokens_per_s_per_gpu"])
    plan = planner_plan(best, fw)
    planned, text = plan.tokens_per_second / plan.gpus_asked, plan.text()
    anywhere = best_at_any_count(every, key, best["model"]["seq_len"])
    bias, n = kind_bias(scored, best, plan.layout, fw)
    if stated:
        figure, held_text = planned_tokens_per_gpu_s(best, fw, lay["recompute"])
        published = published_text(best)
        there = f"{predict_tokens_per_gpu_s(best) / measured - 1:+.1%}"
        held = f"{figure / measured - 1:+.1%} ({held_text.split(',')[0]})"
    else:
        zero = nemo2_layout(best).get("zero") or 0
        published = (f"dp{lay['dp']} tp{lay['tp']} pp{lay['pp']} ZeRO-{zero}, batch and recompute "
                     f"not published (planned at the default batch, {plan.global_batch} sequences)")
        there = held = "n/a"
    return (f"| {model} {gpus} {gpu} {precision} | {published} | {measured:,.0f} | {there} | {text} | {planned:,.0f} "
            f"({planned / measured - 1:+.1%}) | {held} | {planned / anywhere - 1:+.1%} ({anywhere:,.0f}) "
            f"| {bias:+.1%} ({n} rows) |")


def published_text(run: dict) -> str:
    """planner.plan.layout_text of ``run``'s published layout as its step runs it (nemo2_layout: NeMo 2 rows'
    recipe ZeRO-1 where the page leaves it unprinted)."""
    from gpuplan.planner.plan import layout_text

    return layout_text(published_layout(nemo2_layout(run)), run["layout"]["recompute"])


def advantage_split(run: dict, layout, recompute: str) -> tuple[float, float]:
    """The planner's predicted advantage of ``layout`` (with ``recompute``) over ``run``'s published
    layout, split in two factors whose product is it, both timed as the published row is
    (predict_tokens_per_gpu_s: the run's own settings, async TP included): (recompute, layout) = (the
    published layout in the planner's recompute mode / as published, the planner's layout / the published
    layout in that mode). Which term makes the choice look faster (docs/step.md, Planner, 'Where the
    torchtitan advantage comes from')."""
    lay = run["layout"]
    published = predict_tokens_per_gpu_s(run)
    same_recompute = predict_tokens_per_gpu_s({**run, "layout": {**lay, "recompute": recompute}})
    degrees = {k: getattr(layout, k) for k in ("dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch")}
    planned = predict_tokens_per_gpu_s({**run, "layout": {**lay, **degrees, "recompute": recompute}})
    return same_recompute / published, planned / same_recompute


def advantage_table(framework: str = "torchtitan") -> list[str]:
    """Markdown rows, one per group of ``framework``: the planner's predicted advantage over the best
    published layout and its two factors (advantage_split)."""
    rows = ["| group | best published layout | planner's choice | advantage | from the recompute mode "
            "| from the degrees and micro-batch |", "|---|---|---|---|---|---|"]
    for key, runs in sorted(_groups().items()):
        if key[4] != framework:
            continue
        best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
        plan = planner_plan(best, framework)
        mode, layout = advantage_split(best, plan.layout, plan.recompute)
        published = published_text(best)
        rows.append(f"| {key[0]} {key[2]} {key[1]} {key[3]} | {published} | {plan.text()} | {mode * layout - 1:+.1%} "
                    f"| {mode - 1:+.1%} | {layout - 1:+.1%} |")
    return rows


TERMS = ("compute", "bubble", "tp_comm", "dp_comm", "cp_comm")
"""The step terms terms_table shows (core.time.step.StepBreakdown; communication as exposed)."""


def terms_table(framework: str = "torchtitan") -> list[str]:
    """Markdown rows, one per group of ``framework``: the step model's seconds by term at the best published
    layout and at the planner's layout timed as that row is (advantage_split's second layout), per sequence
    of the global batch, and the term whose change is largest: why the model prefers its choice."""
    from gpuplan.jobs.validation.published_throughput import predicted_step

    rows = ["| group | release | layout | GPU-seconds a sequence: " + " / ".join(TERMS) + " | total | largest change |",
            "|---|---|---|---|---|---|"]
    for key, runs in sorted(_groups().items()):
        if key[4] != framework:
            continue
        best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
        plan, lay = planner_plan(best, framework), best["layout"]
        degrees = {k: getattr(plan.layout, k) for k in ("dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch")}
        chosen = {**best, "layout": {**lay, **degrees, "recompute": plan.recompute}}
        parts = []
        for run, text in ((best, published_text(best)), (chosen, plan.text())):
            step, per = predicted_step(run), run["gpus"] / lay["global_batch"]  # GPU-seconds a sequence
            parts.append((text, [getattr(step, t) * per for t in TERMS], step.total * per))
        deltas = [abs(b - a) for a, b in zip(parts[0][1], parts[1][1])]
        change = TERMS[deltas.index(max(deltas))] if max(deltas) > 0 else "none: the published layout"
        for i, (text, terms, total) in enumerate(parts):
            head = f"{key[0]} {key[2]} {key[1]} {key[3]}" if i == 0 else ""
            rows.append(f"| {head} | {release_of(best) if i == 0 else ''} | {text} | "
                        + " / ".join(f"{x:.3f}" for x in terms) + f" | {total:.3f} | {change if i else ''} |")
    return rows


def kind_correction_table(min_rows: tuple[int, ...] = (3, 10)) -> list[str]:
    """Markdown rows: the planner check as `plan` ranks now, and with the kind correction (figure only;
    ranking and figure) at each of ``min_rows`` (docs/step.md, Planner: 'A correction by kind')."""
    timed = [c for c in planner_choice_cases() if c.layout_stated]  # the degrees-only groups have no model error
    counts = {fw: sum(c.framework == fw for c in timed) for fw in ("megatron", "torchtitan")}
    rows = [f"| variant | Megatron ({counts['megatron']}): group's best; any GPU count; advantage; model at the "
            f"published layout (mean abs / bias) | torchtitan ({counts['torchtitan']}): the same |", "|---|---|---|"]
    variants = [("as `plan` ranks (no correction)", timed)]
    for n in min_rows:
        variants += [(f"figure corrected, kinds with >= {n} layouts", kind_correction_cases(n, rank=False)),
                     (f"ranking and figure corrected, >= {n}", kind_correction_cases(n))]
    for name, cases in variants:
        summary = correction_summary(cases)
        rows.append(f"| {name} | {summary['megatron']} | {summary['torchtitan']} |")
    return rows


if __name__ == "__main__":
    import sys

    table = (kind_correction_table if "--kind-correction" in sys.argv else
             advantage_table if "--advantage" in sys.argv else terms_table if "--terms" in sys.argv else choice_table)
    print("\n".join(table()))
