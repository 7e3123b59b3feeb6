"""Why a search with a shard group (--shard-group, HSDP) found no layout where the same search without it has some:
the group divides none of their data-parallel ranks, lays no expert layout out within it, or leaves only ZeRO stages
the framework does not run it with. One line naming shard_group and what is valid (planner.search.rule_refusal)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpuplan.core.expert_layout import EXPERTS_REPLICATED_OVER_TP, expert_tp_for, resolved_expert_tp
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import EXPERTS_WITHIN_GROUP, MICS_NO_EXPERTS, experts_split_within
from gpuplan.errors import InputError
from gpuplan.planner.framework_rules import HSDP_ZERO_STAGES, stage_list
from gpuplan.planner.space import SpaceLimits, enumerate_layouts


def _experts_fit(free: dict, group: int, limits: SpaceLimits) -> np.ndarray:
    """Rows of ``free`` whose experts can be laid out within the group (core.parallel.experts_split_within)."""
    ep, tp = free["ep"], free["tp"]
    if limits.framework in EXPERTS_REPLICATED_OVER_TP:
        return ep == 1
    etp = resolved_expert_tp(expert_tp_for(limits.framework, limits.etp), tp, ep)
    return experts_split_within(group, tp, etp, ep)


def _shown(values) -> str:
    found = sorted({int(v) for v in values})
    return ", ".join(f"{v:,}" for v in found[:12]) + (", ..." if len(found) > 12 else "")


def shard_group_refusal(spec: ModelSpec, counts: tuple[int, ...], seq_len: int, target_batch: float, max_tp: int,
                        limits: SpaceLimits | None, max_rows: int) -> InputError | None:
    """InputError naming shard_group where it left no layout on ``counts`` that the search without it has (at most
    ``max_rows`` enumerated). None without a group or such layouts."""
    if limits is None or limits.shard_group is None:
        return None
    free = enumerate_layouts(spec, counts, seq_len, target_batch, max_tp, replace(limits, shard_group=None), max_rows)
    if not len(free["gpus"]):
        return None  # the layout itself is refused: the no-layout message says why
    group, framework = limits.shard_group, limits.framework
    data = free["dp"] * free["cp"]
    divided = data % group == 0
    if not divided.any():
        return InputError("shard_group", group, f"must divide the data-parallel ranks that shard (dp x cp = "
                          f"{_shown(data)} in the layouts searched): give a divisor of one of them, "
                          "or leave it out")
    fit = divided & _experts_fit(free, group, limits)
    if not fit.any():  # MoE: no layout it divides splits its experts (core.parallel.hsdp_expert_refusal)
        if framework in EXPERTS_REPLICATED_OVER_TP:
            return InputError("shard_group", group, MICS_NO_EXPERTS.format(ep=""))
        return InputError("shard_group", group, f"{EXPERTS_WITHIN_GROUP}: shard group x tp must be a "
                          "multiple of etp x ep (ep "f"{_shown(free['ep'][divided])} in the layouts it divides on these "
                          "GPUs): give a multiple of etp x ep / tp, a smaller --ep, or leave it out")
    stages = stage_list(HSDP_ZERO_STAGES.get(framework, HSDP_ZERO_STAGES["generic"]))
    return InputError("shard_group", group, f"--framework {framework} runs a shard group with ZeRO {stages} only, "
                      f"and the layouts it divides among those searched run ZeRO {_shown(free['zero'][fit])} (its pipeline "
                      "or other degrees): leave it out, or change the degrees you fixed")
