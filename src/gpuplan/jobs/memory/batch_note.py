"""The global batch a `gpuplan memory` answer is for, stated in the answer: the micro-batches a step set the
pipeline's micro-batches in flight (core.memory.activations.pipeline_micro_batches_in_flight caps them at the step's)
and FSDP2's reshards, and memory's default -- one micro-batch a data-parallel rank -- is not train / budget / plan's
4M-token default (schema.training_fields.DEFAULT_BATCH_TOKENS). Session 25: train's allocated peak said "`gpuplan
memory` of this layout gives the same" where memory of that layout without --global-batch gave another peak
(llama-3.1-8b on 64 H100, dp32 pp2 vpp8 ZeRO-1 mb1: train 42.76 GiB at 1,024 sequences, memory 35.31 GiB at 32)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.core.units import format_bytes
from gpuplan.errors import InputError
from gpuplan.report.model import Line


def batch_line(inputs: Any, layout: Any) -> Line:
    """The answer's global batch (sequences), saying where it is memory's own default."""
    told = "" if inputs.global_batch is not None else (" (one micro-batch a rank, the default here; --global-batch "
                                                       "sets it: train / budget / plan default to 4M tokens)")
    return Line("global_batch", "global batch", layout.batch, "sequences", f"{layout.batch:,} sequences{told}")


def trains_default_batch(inputs: Any, layout: Any) -> int:
    """The global batch train / budget / plan take for ``layout`` when none is given: the 4M-token target, at least
    DEFAULT_BATCH_TOKENS_PER_GPU a GPU on large clusters (planner.space.batch_target), rounded to a multiple of
    dp x micro-batch (the planner rounds to dp and picks a micro-batch dividing the rank's share, planner.space)."""
    from gpuplan.planner.space import batch_for  # the planner's rounding itself, so N is train's

    target = max(inputs.target_batch(inputs.seq_len), inputs.batch_per_gpu(inputs.seq_len) * layout.world)
    return batch_for(layout.dp * layout.micro_batch, target)


def batch_note(inputs: Any, spec: Any, layout: Any, settings: Any, allocated: float) -> tuple[str, ...]:
    """Where no --global-batch was given and train's default batch gives another allocated peak: both, and the
    option that answers for train's (empty otherwise, or where that batch is no schedule the framework runs)."""
    from gpuplan.core.memory.training import peak_memory

    if inputs.global_batch is not None:
        return ()
    trains = trains_default_batch(inputs, layout)
    try:
        other = peak_memory(spec, replace(layout, global_batch=trains), settings).allocated
    except (InputError, ValueError, ZeroDivisionError):
        return ()
    if trains == layout.batch or other == allocated:
        return ()
    return (f"global batch: {layout.batch:,} sequences, one micro-batch a rank (memory's default): "
            f"{format_bytes(allocated)} allocated; at train / budget / plan's default, 4M tokens ({trains:,} sequences "
            f"on this layout), {format_bytes(other)}: give --global-batch {trains} for that peak",)
