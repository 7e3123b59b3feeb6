"""What a serving report says beyond the asked setup: when it does not hold the load, what would
(more GPUs of the type, or fewer / shorter sequences on it), and the catalog configurations that
do, smallest and cheapest first."""

from __future__ import annotations

from gpuplan.core.serving import roofline as R
from gpuplan.core.units import format_usd, plural
from gpuplan.errors import InputError
from gpuplan.jobs.inference.resolve import Plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import SEARCH_TP, Serving, evaluate
from gpuplan.report.model import Line, Section, Table

GB = 1e9


def instead_section(plan: Plan, serving: Serving, inputs: InferenceInputs) -> Section:
    """What would serve the load when this setup does not: more GPUs of the same type (the
    smallest tp within a node), or fewer sequences / a shorter context on this one."""
    gpu, batch = plan.gpu, inputs.batch
    lines = []
    for tp in SEARCH_TP:
        if tp <= serving.tp or tp > (gpu.devices_per_node or 8):
            continue
        try:
            bigger = evaluate(plan, gpu, tp, serving.pp, batch)
        except InputError:  # tp does not divide the heads
            continue
        if bigger.max_sequences >= batch:
            lines.append(Line("instead_gpus", "would fit on", tp * serving.pp, "GPUs",
                              f"tp {tp} x pp {serving.pp} = {tp * serving.pp} x {gpu.name} (holds "
                              f"{plural(bigger.max_sequences, 'sequence')})", "the smallest tensor-parallel degree in "
                              f"{{{', '.join(map(str, SEARCH_TP))}}} within a node that holds the load"))
            break
    else:
        lines.append(Line("instead_gpus", "would fit on", None, "GPUs",
                          f"no tp <= {gpu.devices_per_node or 8} x {gpu.name} holds it: a bigger GPU, pipeline "
                          "stages (--pp) or a smaller format (--quantization)"))
    if serving.max_sequences >= 1:
        lines.append(Line("instead_batch", "fits here instead", serving.max_sequences, "sequences",
                          f"{plural(serving.max_sequences, 'sequence')} at {plan.context:,} tokens"))
    elif serving.max_context and serving.max_context != float("inf") and serving.max_context > 0:
        lines.append(Line("instead_context", "fits here instead", serving.max_context, "tokens",
                          f"{plural(batch, 'sequence')} of at most {serving.max_context:,.0f} tokens"))
    lines.append(Line("speed_not_shown", "speed and cost", None, "", "not shown: this setup does not hold "
                      f"{batch} x {plan.context:,} tokens", "a throughput or cost for a setup that cannot run "
                      "would mislead"))
    return Section("Does not fit: what would", tuple(lines))


def search_table(plan: Plan, rows: list, inputs: InferenceInputs) -> Table:
    out = []
    for gpu, s, price, _ in rows:
        rate = inputs.batch / s.tpot[0].total
        cost = f"{R.cost_per_million_tokens(price, s.gpus, rate):,.3f}" if price is not None else "n/a"
        out.append((gpu.id, f"{gpu.memory_bytes / GB:,.0f} GB", s.tp, s.max_sequences,
                    f"{s.tpot[0].total * 1e3:,.1f}", f"{rate:,.0f}", "n/a" if price is None else f"{price:,.2f}", cost))
    return Table(f"catalog configurations that hold {inputs.batch} x {plan.context:,} tokens (smallest TP per GPU)",
                 ("gpu", "memory", "tp", "max sequences", "TPOT ms", "tokens/s", "USD/GPU-h", "USD per 1M tokens"),
                 tuple(out))


def search_section(rows: list, inputs: InferenceInputs) -> Section:
    if not rows:
        return Section("Smallest and cheapest configuration", (
            Line("smallest_config", "smallest configuration", None, text="none within one node (TP <= 8)"),))
    gpu, s, _, _ = rows[0]
    lines = [Line("smallest_config", "smallest configuration", f"{s.tp} x {gpu.id}",
                  text=f"{s.tp} x {gpu.name} (fewest GPUs, then least memory)")]
    priced = [(price * s.gpus, gpu, s) for gpu, s, price, _ in rows if price is not None]
    if priced:
        hourly, gpu, s = min(priced, key=lambda r: r[0])
        lines.append(Line("cheapest_config", "cheapest configuration", f"{s.tp} x {gpu.id}",
                          text=f"{s.tp} x {gpu.name} at {format_usd(hourly, 2)}/hour"))
    else:
        lines.append(Line("cheapest_config", "cheapest configuration", None,
                          text="not available: no prices known (price catalog not installed)"))
    return Section("Smallest and cheapest configuration", tuple(lines))
