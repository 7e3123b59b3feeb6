"""The API's own bounds on one plan request, on top of the schema's: one request must stay cheap
to answer. Checked on the parsed inputs (so "1e3" and 1000 are the same ``top``) before any
search runs, and each refusal is a 422 naming the field and the limit.

Work and memory of a plan grow with the layouts its search considers (about 0.6 KB and 10 µs
per layout pruned; the exhaustive search times every recompute mode of each, about twice that).
"""

from __future__ import annotations

from gpuplan.errors import InputError

MAX_API_TOP = 100
"""Layouts listed in one answer."""
MAX_API_GPU_COUNTS = 256
MAX_API_LAYOUTS = 600_000
"""Layouts (before the recompute axis) one pruned search may consider: the largest default
search in the catalog (qwen3-30b-a3b on 8-16,384 GPUs) is about 480,000: ~2 s, ~400 MB."""
MAX_API_EXHAUSTIVE_LAYOUTS = 100_000
"""Layouts one exhaustive search may consider (~1 s, ~150 MB): a few GPU counts of the largest
models; the pruned search finds the same best layout for more."""
FREED_DEGREES = ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute")
"""What a plan with the layout given searches freely as well (jobs/plan/estimate.py: the
planner's best on the same GPU counts, to compare with)."""


def check_plan(inputs) -> None:
    """Raise InputError when a plan request (PlanInputs) is over the API's bounds."""
    if inputs.top > MAX_API_TOP:
        raise InputError("top", inputs.top, f"must be at most {MAX_API_TOP} over the API")
    counts = inputs.gpu_counts
    if len(counts) > MAX_API_GPU_COUNTS:
        raise InputError("gpus", inputs.gpus, f"at most {MAX_API_GPU_COUNTS} GPU counts over the API "
                         f"(this asks for {len(counts):,})")
    cap = MAX_API_EXHAUSTIVE_LAYOUTS if inputs.exhaustive else MAX_API_LAYOUTS
    if search_exceeds(inputs.replace(**dict.fromkeys(FREED_DEGREES)) if inputs.layout_given else inputs, cap):
        if inputs.exhaustive:
            raise InputError("exhaustive", True, f"over the API an exhaustive search may consider at most {cap:,} "
                             f"layouts, and these {len(counts):,} GPU count(s) give more; leave exhaustive off "
                             "(the pruned search finds the same best layout) or give fewer GPU counts")
        raise InputError("gpus", inputs.gpus, f"over the API a search may consider at most {cap:,} layouts, and "
                         f"these {len(counts):,} GPU count(s) give more; give fewer or smaller GPU counts, a "
                         "global batch, or fix some degrees (tp, pp, micro_batch)")


def search_exceeds(inputs, cap: int) -> bool:
    """Whether the layout search of ``inputs`` would consider more than ``cap`` layouts (counted
    by the planner's own enumeration, which stops at the cap)."""
    from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
    from gpuplan.planner.plan import counts_with_alternatives
    from gpuplan.planner.space import enumerate_layouts

    ev = evaluator_for(inputs)
    searched, _ = counts_with_alternatives(inputs.gpu_counts, ev.cluster.gpus_per_node)
    try:
        enumerate_layouts(ev.spec, searched, inputs.seq_len, inputs.target_batch(inputs.seq_len), max_tp(ev),
                          space_limits(inputs), max_rows=cap)
    except InputError:  # its only refusal: more rows than max_rows
        return True
    return False
