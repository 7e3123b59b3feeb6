"""``gpuplan plan``: search every valid layout for a model, token budget and GPU type, drop the
ones that do not fit in memory with the safety margin, rank the rest, and explain the winner."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpuplan.core import memory as M
from gpuplan.core.step import StepSettings
from gpuplan.core.topology import cluster_for
from gpuplan.core.units import SECONDS_PER_DAY, format_bytes, format_count
from gpuplan.errors import InputError
from gpuplan.planner.search import RECOMPUTE_MODES, LayoutTable, SearchSpace, evaluate_layouts, pareto_front
from gpuplan.report.model import Assumption, Line, Report, Section, Table
from gpuplan.resolve import resolve_gpu, resolve_model

RANK_BY = ("time", "cost", "gpus")


@dataclass(frozen=True)
class PlanInputs:
    tokens: float
    model: str | None = None
    params: float | str | None = None
    gpu: str = "h100"
    gpu_counts: tuple[int, ...] = ()
    """GPU counts to consider; empty = powers of two from 8 to 16,384 (with a deadline: the
    smallest that meets it)."""
    days: float | None = None
    global_batch_tokens: float = 4e6
    seq_len: int = 4096
    recipe: str = "megatron"
    implementation: str = "megatron"
    dtype: str = "bf16"
    rank_by: str = "time"
    top: int = 10
    price_per_gpu_hour: float | None = None
    gpus_per_node: int | None = None
    nic_gbit_per_gpu: float | None = None
    step: StepSettings = field(default_factory=StepSettings)
    overheads: M.Overheads = field(default_factory=M.Overheads)
    calibration: object = None
    """A gpuplan.calibrate Calibration: its factors replace the step model's and memory defaults."""


def _default_counts() -> tuple[int, ...]:
    return tuple(2**k for k in range(3, 15))


def _price(inputs: PlanInputs, gpu_id: str) -> tuple[float | None, str]:
    if inputs.price_per_gpu_hour is not None:
        return inputs.price_per_gpu_hour, "--price-per-gpu-hour"
    try:
        from gpuplan.pricing import lookup_price
    except ImportError:
        return None, "no price catalog"
    found = lookup_price(gpu_id)
    return (found[0], found[1]) if found else (None, f"no price for {gpu_id}")


def search(inputs: PlanInputs, progress=None):
    """(spec, gpu, table of fitting layouts with days/gpu-hours/cost, searched count, seconds, price)."""
    if inputs.rank_by not in RANK_BY:
        raise InputError("rank_by", inputs.rank_by, f"must be one of {', '.join(RANK_BY)}")
    spec = resolve_model(inputs.model, inputs.params)
    gpu = resolve_gpu(inputs.gpu)
    gpu.peak(inputs.dtype)  # InputError when the part lacks the dtype
    cluster = cluster_for(gpu, inputs.gpus_per_node, inputs.nic_gbit_per_gpu)
    step_settings, overheads = inputs.step, inputs.overheads
    memory_scale = 1.0
    if inputs.calibration is not None:
        from gpuplan.calibrate.apply import apply_to_cluster, apply_to_overheads, apply_to_step_settings

        cal = inputs.calibration
        step_settings = apply_to_step_settings(cal, step_settings, gpu.id)
        cluster = apply_to_cluster(cal, cluster)
        overheads = apply_to_overheads(cal, overheads)
        memory_scale = cal.activation_memory.value
    # sequences per step: the power of two nearest the requested tokens, so that it splits
    # evenly over power-of-two data-parallel degrees and micro-batches
    global_batch = 2 ** max(0, round(np.log2(max(inputs.global_batch_tokens / inputs.seq_len, 1))))
    counts = inputs.gpu_counts or _default_counts()
    space = SearchSpace(gpu_counts=counts, global_batch=global_batch, seq_len=inputs.seq_len)
    memory = M.MemorySettings(seq_len=inputs.seq_len, recipe=inputs.recipe, implementation=inputs.implementation,
                              activation_scale=memory_scale)
    start = time.perf_counter()
    table = evaluate_layouts(spec, cluster, space, memory, step_settings, overheads, progress)
    seconds = time.perf_counter() - start
    if not len(table):
        near = _usable_counts_near(spec, cluster, space, memory, inputs, counts)
        raise InputError("gpus", ",".join(map(str, counts)), "no layout can use these GPU counts for this model "
                         f"and a global batch of {global_batch} sequences; closest usable: {near}")
    searched = len(table)
    full = table
    fitting = table.take(table["fits"])
    if not len(fitting):
        best = int(np.argmin(table["total_bytes"]))
        raise InputError("memory", f"{table['total_bytes'][best] / 2**30:.1f} GiB at best",
                         f"no layout fits {gpu.name} ({format_bytes(gpu.memory_bytes)}) with the "
                         f"{overheads.margin:.0%} margin; try more GPUs, a bigger GPU or a shorter sequence")
    price, price_source = _price(inputs, gpu.id)
    steps = inputs.tokens / (global_batch * inputs.seq_len)
    wall = fitting["step_seconds"] * steps
    fitting.columns["days"] = wall / SECONDS_PER_DAY
    fitting.columns["gpu_hours"] = wall * fitting["gpus"] / 3600
    fitting.columns["cost"] = fitting["gpu_hours"] * (price if price is not None else np.nan)
    if inputs.days is not None:
        meets = fitting["days"] <= inputs.days
        if not meets.any():
            quickest = int(np.argmin(fitting["days"]))
            raise InputError("days", inputs.days, f"no searched GPU count meets it: the fastest layout needs "
                             f"{fitting['days'][quickest]:.1f} days on {int(fitting['gpus'][quickest]):,} GPUs")
        fitting = fitting.take(meets)
    return spec, gpu, fitting, searched, seconds, (price, price_source), global_batch, full


def _usable_counts_near(spec, cluster, space, memory, inputs, counts) -> str:
    """The nearest GPU counts (multiples of 8 within +-25%) that admit at least one layout."""
    from dataclasses import replace

    target = counts[0]
    candidates = sorted({max(8, 8 * round(target * f / 8)) for f in (0.75, 0.8, 0.875, 0.9, 1.0, 1.125, 1.25)}
                        | {2 ** round(np.log2(target))}, key=lambda c: abs(c - target))
    usable = [c for c in candidates if len(evaluate_layouts(spec, cluster, replace(space, gpu_counts=(c,)), memory,
                                                             inputs.step, inputs.overheads))]
    return ", ".join(f"{c:,}" for c in usable[:3]) or "none nearby"


def best_layout(table: LayoutTable, rank_by: str = "time") -> int:
    """Index of the layout ranked first."""
    return int(_order(table, rank_by)[0])


def _order(table: LayoutTable, rank_by: str) -> np.ndarray:
    if rank_by == "gpus":
        return np.lexsort((table["days"], table["gpus"]))
    if rank_by == "cost" and not np.isnan(table["cost"]).all():
        return np.argsort(table["cost"], kind="stable")
    return np.lexsort((table["gpus"], table["days"]))


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
    ) + _explain(table, best, gpu, inputs.overheads, full))
    tables = (Table(f"top {len(top)} layouts (ranked by {inputs.rank_by})", COLUMNS, _rows(table, top)),
              Table("Pareto front (GPUs vs days" + (" vs cost)" if price is not None else ")"), COLUMNS,
                    _rows(table, front[:20])))
    assumptions = (
        Assumption("recipe", "precision recipe", inputs.recipe, M.RECIPES[inputs.recipe].source, "--recipe"),
        Assumption("implementation", "activation implementation", inputs.implementation, "docs/memory.md",
                   "--implementation"),
        Assumption("global_batch", "global batch", f"{global_batch} x {inputs.seq_len} tokens",
                   "gpuplan default ~4M tokens (Llama 2/3 pre-training used 4M-16M)", "--global-batch-tokens"),
        Assumption("efficiency", "GEMM / attention efficiency",
                   "calibrated" if inputs.calibration is not None else "MAMF x d/(d+512); attention per GPU type",
                   "measurements (see the Calibration section)" if inputs.calibration is not None else
                   "stas00/ml-engineering MAMF table; fitted on llm-foundry benchmarks (docs/step.md)",
                   "--calibration", inputs.calibration is not None),
        Assumption("overlap", "DP/FSDP overlap", f"{inputs.step.dp_overlap:.0%}", "bucketed all-reduce / prefetch",
                   ""),
        Assumption("margin", "memory safety margin", f"{inputs.overheads.margin:.0%}", "the article", "--margin"),
        Assumption("price", "price per GPU-hour", "n/a" if price is None else f"${price:.2f}", price_source,
                   "--price-per-gpu-hour"),
    )
    report_inputs = (Line("model", "model", spec.name), Line("tokens", "tokens", inputs.tokens, "tokens",
                                                             format_count(inputs.tokens)),
                     Line("gpu", "accelerator", gpu.id, text=gpu.name),
                     Line("gpu_counts", "GPU counts", ",".join(map(str, inputs.gpu_counts or _default_counts()))),
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
                  tables + budget.tables)


def _budget_for(spec, gpu, t: LayoutTable, i: int, inputs: PlanInputs, global_batch: int):
    """Data loading, checkpoints, failures, cost and contingency for the recommended layout."""
    from gpuplan.budget import BudgetSettings, compute_budget

    settings = BudgetSettings(price=inputs.price_per_gpu_hour) if inputs.price_per_gpu_hour else None
    return compute_budget(spec, gpu, gpus=float(t["gpus"][i]), wall_seconds=float(t["days"][i]) * SECONDS_PER_DAY,
                          gpu_hours=float(t["gpu_hours"][i]), tokens=inputs.tokens,
                          global_batch_tokens=float(global_batch * inputs.seq_len),
                          step_seconds=float(t["step_seconds"][i]), recipe=inputs.recipe, zero=int(t["zero"][i]),
                          model_parallel=int(t["tp"][i] * t["pp"][i]), settings=settings)
