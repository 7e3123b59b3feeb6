"""What a serving report says beyond the asked setup: when it does not hold the load, what would
(more GPUs of the type, or fewer / shorter sequences on it), and the catalog configurations that
do, smallest and cheapest first."""

from __future__ import annotations

from gpuplan.core.serving import roofline as R
from gpuplan.core.serving.tp_span import host_gpus
from gpuplan.core.units import format_usd, plural
from gpuplan.errors import InputError
from gpuplan.jobs.inference.resolve import Plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import Serving, evaluate, search_tps, tp_reach
from gpuplan.jobs.inference.sizing_text import launch_line
from gpuplan.report.model import Line, Section, Table

GB = 1e9


def instead_section(plan: Plan, serving: Serving, inputs: InferenceInputs) -> Section:
    """What would serve the load when this setup does not: more GPUs of the same type (the
    smallest tp of search_tps: within a node, or a GB200 / GB300 NVL72 domain), or fewer sequences / a shorter
    context on this one."""
    gpu, batch = plan.gpu, inputs.batch
    lines = []
    tps = search_tps(gpu)
    for tp in tps:
        if tp <= serving.tp:
            continue
        try:
            bigger = evaluate(plan, gpu, tp, serving.pp, batch)
        except InputError:  # tp does not divide the heads
            continue
        if bigger.max_sequences >= batch:
            lines.append(Line("instead_gpus", "would fit on", tp * serving.pp, "GPUs",
                              f"tp {tp} x pp {serving.pp} = {tp * serving.pp} x {gpu.name} (holds "
                              f"{plural(bigger.max_sequences, 'sequence')})", "the smallest tensor-parallel degree in "
                              f"{{{', '.join(map(str, tps))}}} (one {_reach_words(gpu)}) that holds the load"))
            lines.extend(launch_line("instead_multi_node", plan.setup.runtime.release, gpu, tp, serving.pp))
            break
    else:
        lines.append(Line("instead_gpus", "would fit on", None, "GPUs",
                          f"no tp <= {max(tps)} x {gpu.name} holds it: a bigger GPU, pipeline "
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


UNPRICED_LAST = "GPU types with no catalog price after the priced, cost n/a"
"""How search_table orders and marks a GPU type the price catalog does not know (shown, not dropped)."""


def search_table(plan: Plan, rows: list, inputs: InferenceInputs) -> Table:
    """search_configurations' rows, the priced first (fewest GPUs, then least memory, as searched), then the GPU
    types the price catalog does not know, in the same order with 'n/a' for their prices: left out, the GPU asked
    (a GB200, say) would vanish from the table that answers it; mixed in, an 'n/a' row reads as the cheapest."""
    out = []
    for gpu, s, price, _ in sorted(rows, key=lambda r: r[2] is None):  # stable: the search's order within each
        rate = inputs.batch / s.tpot[0].total
        cost = f"{R.cost_per_million_tokens(price, s.gpus, rate):,.3f}" if price is not None else "n/a"
        out.append((gpu.id, f"{gpu.memory_bytes / GB:,.0f} GB", s.tp, s.max_sequences,
                    f"{s.tpot[0].total * 1e3:,.1f}", f"{rate:,.0f}", "n/a" if price is None else f"{price:,.2f}", cost))
    return Table(f"catalog configurations that hold {inputs.batch} x {plan.context:,} tokens (smallest TP per GPU; "
                 f"{UNPRICED_LAST})",
                 ("gpu", "memory", "tp", "max sequences", "TPOT ms", "tokens/s", "USD/GPU-h", "USD per 1M tokens"),
                 tuple(out))


def _reach_words(gpu) -> str:
    """Where search_tps(gpu) stops, in words: 'node of 8' or 'NVLink domain of 72 (compute trays of 4)'."""
    reach = tp_reach(gpu)
    return (f"NVLink domain of {reach} (compute trays of {host_gpus(gpu)})" if reach > host_gpus(gpu) else
            f"node of {reach}")


def search_section(rows: list, inputs: InferenceInputs) -> Section:
    """The smallest configuration of search_configurations' rows and the cheapest priced one, and a line on the
    multi-node launch where the smallest spans compute trays (sizing_text.multi_node_launch)."""
    if not rows:
        return Section("Smallest and cheapest configuration", (
            Line("smallest_config", "smallest configuration", None, text="none within one node (TP <= 8) or one "
                 "NVLink domain (TP <= 16 on GB200 / GB300 NVL72)"),))
    gpu, s, _, _ = rows[0]
    lines = [Line("smallest_config", "smallest configuration", f"{s.tp} x {gpu.id}",
                  text=f"{s.tp} x {gpu.name} (fewest GPUs, then least memory)")]
    lines.extend(launch_line("smallest_multi_node", inputs.release, gpu, s.tp, s.pp))
    priced = [(price * s.gpus, gpu, s) for gpu, s, price, _ in rows if price is not None]
    if priced:
        hourly, gpu, s = min(priced, key=lambda r: r[0])
        lines.append(Line("cheapest_config", "cheapest configuration", f"{s.tp} x {gpu.id}",
                          text=f"{s.tp} x {gpu.name} at {format_usd(hourly, 2)}/hour"))
    else:
        lines.append(Line("cheapest_config", "cheapest configuration", None,
                          text="not available: no prices known (price catalog not installed)"))
    return Section("Smallest and cheapest configuration", tuple(lines))
