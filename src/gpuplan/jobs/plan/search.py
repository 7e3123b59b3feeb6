"""The layout search of ``gpuplan plan`` (also behind ``train --mfu predicted``): PlanInputs,
every valid layout evaluated on the GPUs given, the ones that fit, ranked."""

from __future__ import annotations

import time
import numpy as np

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.core import memory as M
from gpuplan.core.topology import cluster_for
from gpuplan.core.units import SECONDS_PER_DAY, format_bytes
from gpuplan.errors import InputError
from gpuplan.jobs.plan.schema import RANK_BY, PlanInputs
from gpuplan.planner.search import MAX_CANDIDATES, LayoutTable, SearchSpace, candidate_count, evaluate_layouts



def _price(inputs: PlanInputs, gpu_id: str) -> tuple[float | None, str]:
    """On-demand USD per GPU-hour as the budget prices it (--price, --provider, else the median
    over providers in the price catalog)."""
    from gpuplan.jobs.budget.model import resolve_prices

    prices = resolve_prices(gpu_id, inputs.budget_settings())
    return prices.on_demand, prices.on_demand_source


def search(inputs: PlanInputs, progress=None):
    """(spec, gpu, table of fitting layouts with days/gpu-hours/cost, searched count, seconds, price)."""
    if inputs.rank_by not in RANK_BY:
        raise InputError("rank_by", inputs.rank_by, f"must be one of {', '.join(RANK_BY)}")
    spec = inputs.spec()
    gpu = resolve_gpu(inputs.gpu)
    gpu.peak(inputs.dtype)  # InputError when the part lacks the dtype
    cluster = cluster_for(gpu, inputs.gpus_per_node, inputs.nic_gbit_per_gpu)
    step_settings, overheads = inputs.step_settings(), inputs.overheads()
    memory_scale = 1.0
    if inputs.calibration is not None:
        from gpuplan.calibrate.apply import (
            apply_to_cluster,
            apply_to_overheads,
            apply_to_step_settings,
        )

        cal = inputs.calibration
        step_settings = apply_to_step_settings(cal, step_settings, gpu.id)
        cluster = apply_to_cluster(cal, cluster)
        overheads = apply_to_overheads(cal, overheads)
        memory_scale = cal.activation_memory.value
    # sequences per step: the power of two nearest the requested tokens, so that it splits
    # evenly over power-of-two data-parallel degrees and micro-batches
    global_batch = 2 ** max(0, round(np.log2(max(inputs.batch_tokens / inputs.seq_len, 1))))
    counts = inputs.gpu_counts
    space = SearchSpace(gpu_counts=counts, global_batch=global_batch, seq_len=inputs.seq_len)
    memory = M.MemorySettings(seq_len=inputs.seq_len, recipe=inputs.recipe_name, optimizer=inputs.optimizer,
                              implementation=inputs.implementation,
                              activation_scale=memory_scale)
    candidates = candidate_count(spec, space)
    if candidates > MAX_CANDIDATES:
        raise InputError("gpus", f"{len(counts):,} GPU counts", f"the search would enumerate {candidates:,} layouts, "
                         f"over the limit of {MAX_CANDIDATES:,}; give fewer GPU counts")
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
                                                             inputs.step_settings(), inputs.overheads()))]
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
