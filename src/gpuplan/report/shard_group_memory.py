"""`gpuplan report` of a plan file with ``shard_group: auto``: `memory` checks one fixed layout and refuses auto
(schema.shard_group.check_shard_group), so the report's memory section checks the budget section's layout, the
group its search chose included (none: plain sharding), as the web page's memory panel does (web/static/app.js
withPlanLayout), and a note says so. The layout's degrees are the fields `gpuplan memory` takes to check it
(planner.plan.Plan.degrees, the budget's mem_layout value), so the section shows the peak the budget's layout
section quotes."""

from __future__ import annotations

from typing import Any

from gpuplan.schema import vocabulary as V

LAYOUT_FIELDS = ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "zero", "micro_batch", "recompute",
                 "global_batch", "shard_group")
"""The budget layout's fields memory takes (Plan.degrees less idle_gpus): app.js PLAN_LAYOUT_FIELDS and dp."""


def searches_groups(fields: dict[str, Any]) -> bool:
    """Whether a plan file's memory fields ask for the search (``shard_group: auto``, any case or spacing)."""
    return str(fields.get("shard_group", "")).strip().lower() == V.SHARD_GROUP_SEARCH


def with_budget_layout(fields: dict[str, Any], budget) -> tuple[dict[str, Any], str]:
    """``fields`` (memory's, shard_group auto) with the ``budget`` report's layout in place of the file's degrees,
    and the note the memory section adds."""
    line = budget.line("mem_layout")
    chosen = {k: v for k, v in line.value.items() if k in LAYOUT_FIELDS}
    out = {k: v for k, v in fields.items() if k not in LAYOUT_FIELDS and k != "global_batch_tokens"} | chosen
    group = chosen.get("shard_group")
    if not group:
        out.pop("shard_group", None)  # plain sharding: no group
    told = f"shard group {group:,}" if group else "plain sharding"
    return out, (f"shard_group auto: memory checks the budget's layout, {line.text} (its search chose {told}); "
                 "`gpuplan memory` takes one fixed layout")
