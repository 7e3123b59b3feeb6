"""The line `plan --shard-group auto` adds to its recommendation: which shard group the ranking chose (or plain
sharding) and what the best layout of the other kind predicts, with the percent (planner.shard_group_search)."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.plan import layout_text, row_layout
from gpuplan.report.model import Line


def shard_group_line(table, order: np.ndarray, layout_of=()) -> tuple[Line, ...]:
    """One Line (key shard_group_auto, value: the group chosen, 0 for plain sharding) where ``table`` (the ranked
    rows: days column) carries the auto search's ``shard_group`` column, ``order`` its ranking (best first); () otherwise. The percent: the other kind's best days over the answer's
    less 1 (the failure-free wall-clock of the same tokens: days = tokens / tokens per second)."""
    if "shard_group" not in table.columns or not len(order):
        return ()
    best = int(order[0])
    groups = table["shard_group"][order]
    chosen = int(groups[0])
    other = order[groups == 0] if chosen else order[groups > 0]
    if chosen:
        data = int(table["dp"][best] * table["cp"][best])
        head = f"{chosen:,} (HSDP, {data // chosen:,} replicas of dp x cp {data:,})"
        kind = "best plain sharding"
    else:
        head = ("none (plain sharding: every data-parallel rank shards)" if table["zero"][best] >= 1 else
                "none (the answer runs ZeRO 0: nothing sharded)")
        kind = "best HSDP"
    if not len(other):
        why = "no layout here runs one" if not chosen else "no plain layout is left"
        return _line(chosen, f"{head}; {why} (groups of whole nodes dividing dp x cp, at a ZeRO stage the "
                     "framework runs them with)")
    i = int(other[0])
    days, mine = float(table["days"][i]), float(table["days"][best])
    return _line(chosen, f"{head}; {kind}: {int(table['gpus'][i]):,} GPUs "
                 f"{layout_text(*row_layout(table, i, *layout_of))}, {table['step_seconds'][i]:.3g} s a step, "
                 f"{days:.2f} days ({days / mine - 1:+.1%})")


def _line(chosen: int, text: str) -> tuple[Line, ...]:
    return (Line("shard_group_auto", "shard group chosen (--shard-group auto)", chosen, text=text),)
