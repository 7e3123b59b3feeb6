"""``gpuplan plan``: search every valid layout for a model, token budget and GPU type, drop the
ones that do not fit in memory with the safety margin, rank the rest, and explain the winner."""

from __future__ import annotations

import numpy as np

from gpuplan.core import memory as M
from gpuplan.core.units import SECONDS_PER_DAY, format_bytes, format_count
from gpuplan.jobs.plan.search import PlanInputs, _order, search
from gpuplan.planner.search import RECOMPUTE_MODES, LayoutTable, pareto_front
from gpuplan.report.model import Assumption, Line, Report, Section, Table


def _layout_text(t: LayoutTable, i: int) -> str:
    parts = [f"dp{int(t['dp'][i])}", f"tp{int(t['tp'][i])}", f"pp{int(t['pp'][i])}"]
    if t["vpp"][i] > 1:
        parts.append(f"vpp{int(t['vpp'][i])}")
    if t["cp"][i] > 1:
        parts.append(f"cp{int(t['cp'][i])}")
    if t["ep"][i] > 1:
        parts.append(f"ep{int(t['ep'][i])}")
    return " ".join(parts) + f" ZeRO-{int(t['zero'][i])} mb{int(t['micro_batch'][i])} " + \
        RECOMPUTE_MODES[int(t["recompute"][i])]


def _rows(t: LayoutTable, idx) -> tuple:
    return tuple((int(t["gpus"][i]), _layout_text(t, i), f"{t['step_seconds'][i]:.2f}", f"{t['mfu'][i]:.1%}",
                  f"{t['days'][i]:.1f}", f"{t['gpu_hours'][i]:,.0f}",
                  "" if np.isnan(t["cost"][i]) else f"${t['cost'][i]:,.0f}",
                  format_bytes(t["total_bytes"][i]),
                  f"{t['exposed_comm_seconds'][i] / t['step_seconds'][i]:.0%}",
                  f"{t['bubble_seconds'][i] / t['step_seconds'][i]:.0%}") for i in idx)


COLUMNS = ("GPUs", "layout", "step s", "MFU", "days", "GPU-hours", "cost", "peak/GPU", "exposed comm",
           "bubble")


def _needed_for_memory(full: LayoutTable, t: LayoutTable, i: int) -> bool:
    """Would the same layout without ZeRO-3 and without recompute still fit?"""
    same = np.ones(len(full), dtype=bool)
    for key in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "micro_batch"):
        same &= full[key] == t[key][i]
    plain = same & (full["zero"] < 3) & (full["recompute"] == 0)
    return not bool(full["fits"][plain].any())


def _explain(t: LayoutTable, i: int, gpu, overheads: M.Overheads, full: LayoutTable) -> tuple[Line, ...]:
    """The recommendation in the article's terms."""
    budget = gpu.memory_bytes * (1 - overheads.margin)
    headroom = budget - t["total_bytes"][i]
    step, compute = t["step_seconds"][i], t["compute_seconds"][i]
    comm, exposed = t["comm_seconds"][i], t["exposed_comm_seconds"][i]
    lines = [Line("why_headroom", "memory headroom after the margin", headroom, "bytes", format_bytes(headroom),
                  "the article: spend headroom on a bigger micro-batch" if headroom > 0.25 * budget else
                  "little headroom left")]
    mode = RECOMPUTE_MODES[int(t["recompute"][i])]
    if (mode != "none" or t["zero"][i] == 3) and _needed_for_memory(full, t, i):
        lines.append(Line("why_shortfall", "memory shortfall met with",
                          ("ZeRO-3 " if t["zero"][i] == 3 else "") + (f"{mode} recompute" if mode != "none" else ""),
                          text=("ZeRO-3 " if t["zero"][i] == 3 else "") + (f"{mode} recompute" if mode != "none" else ""),
                          formula="the article: ZeRO-3 or recomputation first; full recompute costs ~33% compute, "
                                  "ZeRO-3 ~1.5x the DP communication volume"))
    lines += [
        Line("comm_ratio_total", "communication / (compute + communication), total", comm / (compute + comm),
             "fraction", f"{comm / (compute + comm):.1%}", "the article's ratio, before overlap"),
        Line("comm_ratio_exposed", "communication on the critical path / step", exposed / step, "fraction",
             f"{exposed / step:.1%}", "after bucketing/prefetch overlap (DP 90%), TP/EP not overlapped"),
        Line("bubble_share", "pipeline bubble / step", t["bubble_seconds"][i] / step, "fraction",
             f"{t['bubble_seconds'][i] / step:.1%}", "(p-1)/(v·m) of the compute"),
    ]
    return tuple(lines)


def plan_report(inputs: PlanInputs, progress=None) -> Report:
    spec, gpu, table, searched, seconds, (price, price_source), global_batch, full = search(inputs, progress)
    order = _order(table, inputs.rank_by)
    top = order[: inputs.top]
    best = int(top[0])
    front = pareto_front(table, ("gpus", "days") + (("cost",) if price is not None else ()))
    best_line = (f"{int(table['gpus'][best]):,} GPUs, {_layout_text(table, best)}: "
                 f"{table['days'][best]:.1f} days, MFU {table['mfu'][best]:.1%}")
    summary = Section("Recommendation", (
        Line("best_layout", "best layout", _layout_text(table, best), text=best_line,
             formula=f"ranked by {inputs.rank_by}"),
        Line("best_gpus", "GPUs", int(table["gpus"][best])),
        Line("best_days", "wall-clock", float(table["days"][best]), "days", f"{table['days'][best]:.2f} days"),
        Line("best_mfu", "predicted MFU", float(table["mfu"][best]), "fraction", f"{table['mfu'][best]:.1%}",
             "gpuplan definition: exact model FLOPs, attention without causal halving, LM head"),
        Line("best_hfu", "predicted HFU", float(table["hfu"][best]), "fraction", f"{table['hfu'][best]:.1%}",
             "counts recomputed FLOPs"),
        Line("best_tokens_per_second", "throughput", float(table["tokens_per_second"][best]), "tokens/s",
             f"{table['tokens_per_second'][best]:,.0f} tokens/s"),
        Line("best_step_seconds", "step time", float(table["step_seconds"][best]), "s",
             f"{table['step_seconds'][best]:.3f} s", f"{global_batch} sequences x {inputs.seq_len} tokens"),
        Line("best_gpu_hours", "GPU-hours", float(table["gpu_hours"][best]), "GPU-hours",
             f"{table['gpu_hours'][best]:,.0f}"),
        Line("best_cost", "cost", None if price is None else float(table["cost"][best]), "USD",
             "n/a (no price)" if price is None else f"${table['cost'][best]:,.0f}", price_source),
        Line("best_peak_bytes", "peak memory per GPU", float(table["total_bytes"][best]), "bytes",
             format_bytes(table["total_bytes"][best]), "allocated + CUDA context + NCCL buffers"),
        Line("searched", "layouts searched", searched, "", f"{searched:,}",
             f"{len(table):,} fit; {searched / max(seconds, 1e-9):,.0f} layouts/s"),
    ) + _explain(table, best, gpu, inputs.overheads(), full))
    tables = (Table(f"top {len(top)} layouts (ranked by {inputs.rank_by})", COLUMNS, _rows(table, top)),
              Table("Pareto front (GPUs vs days" + (" vs cost)" if price is not None else ")"), COLUMNS,
                    _rows(table, front[:20])))
    assumptions = (
        Assumption("recipe", "precision recipe", inputs.recipe_name, M.RECIPES[inputs.recipe_name].source,
                   "--recipe", "recipe" in inputs.given),
        Assumption("implementation", "activation implementation", inputs.implementation, "docs/memory.md",
                   "--implementation"),
        Assumption("global_batch", "global batch", f"{global_batch} x {inputs.seq_len} tokens",
                   "gpuplan default ~4M tokens (Llama 2/3 pre-training used 4M-16M)", "--global-batch-tokens"),
        Assumption("efficiency", "GEMM / attention efficiency",
                   "calibrated" if inputs.calibration is not None else "MAMF x d/(d+512); attention per GPU type",
                   "measurements (see the Calibration section)" if inputs.calibration is not None else
                   "stas00/ml-engineering MAMF table; fitted on llm-foundry benchmarks (docs/step.md)",
                   "--calibration", inputs.calibration is not None),
        Assumption("overlap", "DP/FSDP overlap", f"{inputs.dp_overlap:.0%}", "bucketed all-reduce / prefetch",
                   "--dp-overlap", "dp_overlap" in inputs.given),
        Assumption("margin", "memory safety margin", f"{inputs.margin:.0%}", "the article", "--margin"),
        Assumption("price", "price per GPU-hour", "n/a" if price is None else f"${price:.2f}", price_source,
                   "--price"),
    )
    report_inputs = (Line("model", "model", spec.name), Line("tokens", "tokens", inputs.tokens, "tokens",
                                                             format_count(inputs.tokens)),
                     Line("gpu", "accelerator", gpu.id, text=gpu.name),
                     Line("gpu_counts", "GPU counts", ",".join(map(str, inputs.gpu_counts))),
                     Line("deadline", "deadline", inputs.days, "days", "none" if inputs.days is None else
                          f"{inputs.days:g} days"))
    budget = _budget_for(spec, gpu, table, best, inputs, global_batch)
    calibration = ()
    if inputs.calibration is not None:
        from gpuplan.calibrate.report import calibrated_vs_default_lines

        calibration = (Section("Calibration (measured factors replace the defaults)",
                               calibrated_vs_default_lines(inputs.calibration)),)
    return Report("plan", f"Layout plan: {spec.name}, {format_count(inputs.tokens)} tokens on {gpu.name}",
                  report_inputs, assumptions + budget.assumptions, (summary,) + calibration + budget.sections,
                  (f"search: {searched:,} layouts in {seconds * 1e3:.0f} ms",) + budget.notes,
                  tables + budget.tables, headline=PLAN_HEADLINE,
                  key_assumptions=("efficiency", "global_batch", "price"), summary_table=tables[0].title,
                  summary_columns=("GPUs", "layout", "step s", "MFU", "days", "cost", "peak/GPU"))


# The answer-first view of `gpuplan plan`: the winner, its time, MFU, money and memory, and why.
PLAN_HEADLINE = ("best_layout", "best_gpus", "best_days", "best_mfu", "best_step_seconds", "best_gpu_hours",
                 "best_cost", "best_peak_bytes", "why_shortfall", "comm_ratio_exposed", "bubble_share",
                 "budget_usd_on_demand", "searched")


def _budget_for(spec, gpu, t: LayoutTable, i: int, inputs: PlanInputs, global_batch: int):
    """Data loading, checkpoints, failures, cost and contingency for the recommended layout."""
    from gpuplan.jobs.budget.compute import compute_budget

    settings = inputs.budget_settings()
    return compute_budget(spec, gpu, gpus=float(t["gpus"][i]), wall_seconds=float(t["days"][i]) * SECONDS_PER_DAY,
                          gpu_hours=float(t["gpu_hours"][i]), tokens=inputs.tokens,
                          global_batch_tokens=float(global_batch * inputs.seq_len),
                          step_seconds=float(t["step_seconds"][i]), recipe=inputs.recipe_name, zero=int(t["zero"][i]),
                          model_parallel=int(t["tp"][i] * t["pp"][i]), settings=settings)
