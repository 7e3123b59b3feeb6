"""`gpuplan report`'s memory section beside its budget section: memory checks the layout the plan file states (its
degrees, else `gpuplan memory`'s defaults: dp = the GPUs, tp 1, pp 1), the budget runs the layout it evaluated (the
planner's, where the file states none). Where the two peaks differ, one report printed 'fits: yes' in its budget
section and 'fits: NO' in its memory section for one file (llama-3.1-8b, h100, 64 GPUs, 100B tokens: the budget's
dp32 tp1 pp2 vpp8 at 42.76 GiB allocated, memory's dp64 tp1 pp1 at 66.26 GiB, 5.42 MiB short; session 24, helper
MT2). The numbers stay `gpuplan memory`'s for the file; a note names both layouts."""

from __future__ import annotations

import math

from gpuplan.report.shard_group_memory import LAYOUT_FIELDS

STATED = tuple(name for name in LAYOUT_FIELDS if name not in ("gpus", "dp"))
"""The budget layout's fields (its mem_layout value) that fix `gpuplan memory`'s peak beside the GPU count (the fields
memory takes, shard_group_memory.LAYOUT_FIELDS, less the count and dp, which follows): the global batch sets the
pipeline's micro-batches in flight (memory's default is its own, docs/memory.md); etp and shard_group are in the value
only where the layout has them (planner.plan.Plan.degrees). A hand copy without those two told a MoE report with
`etp: 1` or one with `shard_group: 8` to state a layout without them (closing note s25)."""


def with_budget_contrast(memory, budget):
    """``memory`` with a note naming ``budget``'s layout and peak where the two allocated peaks differ (bytes)."""
    try:
        ours, theirs = memory.line("peak_allocated"), budget.line("mem_peak_allocated")
        layout, fits = budget.line("mem_layout"), budget.line("mem_fits")
        stated = memory.line("layout").value  # the inputs' layout line (Report.line reads the inputs too)
    except KeyError:
        return memory
    if not isinstance(ours.value, (int, float)) or not isinstance(theirs.value, (int, float)) or \
            math.isclose(ours.value, theirs.value, rel_tol=1e-9):
        return memory
    given = ", ".join(f"{k}: {layout.value[k]}" for k in STATED if isinstance(layout.value, dict) and k in layout.value)
    return memory.with_note(f"this section checks the layout the plan file states ({stated}): {ours.text} allocated; "
                            f"the budget section runs {layout.text}: {theirs.text} allocated, fits {fits.text}. "
                            f"To check that layout here, state it in the file ({given})")
