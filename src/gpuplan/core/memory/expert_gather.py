"""The routed tokens an expert-TP group gathers: what a MoE layer saves beyond its 1/tp share when etp > 1.

Megatron-Core's token dispatchers take the expert tensor-parallel group as their ``tp_group`` (pg_collection.expt_tp,
megatron/core/transformer/moe/token_dispatcher.py@d98e8a6 L85-90) and, after the expert-parallel all-to-all,
all-gather the permuted tokens and their probabilities over it when it has more than one rank (L741-750): every
etp rank runs all of its local experts' tokens at width expert_intermediate / etp. Per GPU, with sequence parallelism
(each rank dispatches its s / tp tokens) the routed copies an expert rank holds are etp x s x top-k / tp: the
width-h tensors saved per routed copy (the grouped fc1's input, and the weighted expert output where it is kept:
core.memory.activations.moe_bytes) are etp times what the layer's "/ tp" counts, the expert-width ones are not
(their width is split by etp). So each MoE layer keeps (etp - 1) / tp x capacity x top-k x those bytes more per
token. 0 where etp = 1 (Megatron-Bridge's recipes, torchtitan, DeepSpeed-MoE: core.expert_layout) and without
tensor parallelism. Units: bytes per token of the micro-batch.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.memory import activations as A
from gpuplan.core.model.spec import ModelSpec


def gathered_routed_bytes_per_token(spec: ModelSpec, layout, kw: dict, capacity_factor: float = 1.0):
    """Extra bytes one MoE layer saves per token on one GPU because its expert-TP group gathers the routed tokens
    (``layout``: core.parallel.ParallelLayout; ``kw``: core.memory.training's activation options)."""
    if spec.moe is None or kw.get("lora") is not None or layout.experts_replicated_over_tp:
        return 0.0
    per_copy = A.routed_row_bytes(spec, kw["impl"], kw["compute_bytes"], kw["linear_input_bytes"],
                                  kw["keeps_expert_output"])  # moe_bytes' own width-h tensors of a routed row
    tp = np.asarray(layout.tp, dtype=float)
    return (np.asarray(layout.expert_tp, dtype=float) - 1) / tp * capacity_factor * spec.moe.experts_per_token \
        * per_copy
