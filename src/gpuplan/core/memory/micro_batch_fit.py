"""The largest micro-batch that fits a memory budget: the start-of-backward growth per extra sequence,
then a guess from it checked against the peak (core.memory.training.peak_memory).

Units: bytes, sequences. All functions are pure.
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.core.memory.training import MemorySettings, peak_memory
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.parallel import ParallelLayout


def activation_bytes_per_sample(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings) -> float:
    """How much the start-of-backward total grows per extra sequence in the micro-batch."""
    one = peak_memory(spec, layout, settings)
    two = peak_memory(spec, _with_micro_batch(layout, layout.micro_batch + 1), settings)
    return max(0.0, two.backward_start_total - one.backward_start_total)


def _with_micro_batch(layout: ParallelLayout, micro_batch: int) -> ParallelLayout:
    batch = layout.global_batch
    if batch is not None and batch % (micro_batch * layout.dp):
        batch = None  # keep the largest-micro-batch search independent of the batch constraint
    return replace(layout, micro_batch=micro_batch, global_batch=batch)


def largest_micro_batch(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, budget: float) -> int:
    """Largest micro-batch whose peak stays within ``budget`` bytes (0 if even 1 does not fit)."""
    base = peak_memory(spec, _with_micro_batch(layout, 1), settings)
    if base.allocated > budget:
        return 0
    growth = activation_bytes_per_sample(spec, _with_micro_batch(layout, 1), settings)
    if growth <= 0:
        return 1024
    guess = min(1 + int((budget - base.backward_start_total) // growth), 1024)
    # bisected below the guess (fitting is monotone in the micro-batch, as jobs.memory.estimate.verdict bisects):
    # one step down at a time from the uncapped guess ran for minutes at --seq-len 2 (A8 w14: `memory tinyllama-1.1b
    # --gpu a10 --gpus 164 --framework torchtitan --seq-len 2 --tp 2 --pp 2 --recompute full`)
    low, high = 1, guess  # 1 fits: base
    while low < high:
        mid = (low + high + 1) // 2
        if peak_memory(spec, _with_micro_batch(layout, mid), settings).allocated <= budget:
            low = mid
        else:
            high = mid - 1
    return low
