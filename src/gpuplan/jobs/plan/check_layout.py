"""`plan` with degrees given: the user's layout against the planner's free search on the same GPU counts (its
'Your layout' section). The free search leaves every degree and the recompute mode to the planner but those an option
given needs as stated (held): --zero 1 under --grad-all-reduce (schema.layout_rules), --tp under --tp-comm-dtype fp32
(schema.tp_comm_dtype), --tp and --recompute under --partition-activations (schema.partition_activations); the rank
and the 'slower than the planner's best' lines say which were held and why, since they rank among those layouts
only."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.core.units import plural
from gpuplan.errors import InputError
from gpuplan.jobs.plan import search as plan_search  # called through the module: a patched search is seen
from gpuplan.jobs.plan.explain import comparison_lines, memory_lines, step_lines
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import PlanSearch, best_index, chosen_plan
from gpuplan.planner.plan import Plan
from gpuplan.report.model import Line, Section

FREE_DEGREES = ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute")
"""What the free search chooses where nothing holds it (PlanInputs fields)."""
COMPARISON_KEYS = ("check_rank", "check_loses_by")


def holding_options(inputs: PlanInputs) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(option given, the PlanInputs fields it holds) for each option that keeps degrees as given in the free search
    (module docstring); () where none."""
    return ((("--grad-all-reduce", ("zero",)),) * bool(inputs.grad_all_reduce)  # ZeRO-1's all-reduce then gather
            + (("--tp-comm-dtype fp32", ("tp",)),) * (inputs.tp_comm_dtype == "fp32")  # at a stated --tp 2+
            + (("--partition-activations", ("tp", "recompute")),) * bool(inputs.partition_activations))  # + full


def held_words(inputs: PlanInputs, options) -> tuple[str, str]:
    """(' at your --tp 2, --recompute full', 'held: --partition-activations needs them') for the comparison lines'
    label and source, from holding_options' ``options``; ('', '') where nothing is held."""
    if not options:
        return "", ""
    held = [name for name in FREE_DEGREES if any(name in fields for _, fields in options)]
    flags = ", ".join(f"--{name.replace('_', '-')} {getattr(inputs, name)}" for name in held)
    why = "; ".join(f"{option} needs {'it' if len(fields) == 1 else 'them'}" for option, fields in options)
    return f" at your {flags}", f"held: {why}"


def with_held(lines: tuple[Line, ...], label: str, why: str) -> tuple[Line, ...]:
    """``lines`` with the comparison lines' labels and sources saying what the free search held (held_words)."""
    if not label:
        return lines
    return tuple(replace(ln, label=ln.label + label, formula=f"{ln.formula} ({why})" if ln.formula else why)
                 if ln.key in COMPARISON_KEYS else ln for ln in lines)


def check_my_layout(inputs: PlanInputs, result: PlanSearch, mine: Plan) -> tuple[Section, ...]:
    """The user's layout against the planner's free choice on the same GPU counts."""
    options = holding_options(inputs)
    held = {name for _, fields in options for name in fields}
    try:
        free = plan_search.search(inputs.replace(**{k: None for k in FREE_DEGREES if k not in held}))
    except InputError as exc:  # the free search past the size limit: not the degrees given
        if exc.field != "gpus" or "the search would" not in exc.expected:
            raise
        size = exc.expected.split(";")[0].replace("the search would", "the planner's free search (to compare your "
                                                  "layout with) would")
        raise InputError("gpus", exc.value, f"{size}; give fewer GPU counts (--gpus) or a smaller global batch"
                         f"{' or leave --exhaustive off' if inputs.exhaustive else ''}") from None
    best = chosen_plan(free, best_index(free, "time"))
    gpu = result.evaluator.cluster.gpu
    compared = with_held(comparison_lines(mine, best, free.table), *held_words(inputs, options))
    return (Section(f"Your layout: {mine.text()} on {plural(mine.gpus, 'GPU')}",
                    step_lines(mine, "mine") + memory_lines(mine, "mine", inputs.profile.caching_allocator, gpu)
                    + compared),)
