"""The largest micro-batch that fits a memory budget: the start-of-backward growth per extra sequence,
then a guess from it checked against the peak (core.memory.training.peak_memory).

Units: bytes, sequences. All functions are pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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
    """``layout`` at ``micro_batch``; a global batch it does not divide is dropped (activation_bytes_per_sample's
    one-more-sequence probe only: largest_micro_batch searches the divisors when the batch is set)."""
    batch = layout.global_batch
    if batch is not None and batch % (micro_batch * layout.dp):
        batch = None
    return replace(layout, micro_batch=micro_batch, global_batch=batch)


def micro_batches_allowed(layout: ParallelLayout) -> tuple[int, ...] | None:
    """The micro-batches core.parallel.check_layout accepts beside ``layout.global_batch`` (sequences): the divisors
    of global_batch / dp, ascending (global_batch % (micro_batch x dp) == 0, Megatron's rule); None without one."""
    if layout.global_batch is None:
        return None
    per_rank = layout.global_batch // layout.dp
    low = [d for d in range(1, math.isqrt(per_rank) + 1) if per_rank % d == 0]
    return tuple(sorted(set(low) | {per_rank // d for d in low}))


def largest_fitting(candidates: Sequence[int], fits: Callable[[int], bool]) -> int:
    """The largest of ``candidates`` (ascending micro-batches) that ``fits``, bisected (0 if none): fitting must be
    monotone over them (see largest_micro_batch)."""
    low, high = -1, len(candidates) - 1  # index of the largest known to fit (-1: none yet); of the largest left
    while low < high:
        mid = (low + high + 1) // 2
        if fits(candidates[mid]):
            low = mid
        else:
            high = mid - 1
    return candidates[low] if low >= 0 else 0


def largest_allowed_fitting(allowed: Sequence[int], fits: Callable[[int], bool]) -> int:
    """largest_fitting over micro_batches_allowed (or those of them up to a bound): the largest alone, then the rest
    bisected. At global_batch / dp each rank runs one micro-batch per step and holds no accumulated gradients
    (core.memory.training.stage_memory_parts: grads_in_forward), so it can fit where smaller divisors do not (torchtitan
    llama-3-8b seq 1536, gb 24, pp 2 on a B200: divisors 1-8 and 24 fit, 12 does not); below it fitting is monotone."""
    if allowed and fits(allowed[-1]):
        return allowed[-1]
    return largest_fitting(allowed[:-1], fits)


def largest_micro_batch(spec: ModelSpec, layout: ParallelLayout, settings: MemorySettings, budget: float) -> int:
    """Largest micro-batch whose peak stays within ``budget`` bytes (0 if even 1 does not fit), among those the
    layout accepts: with a global batch, the divisors of global_batch / dp (micro_batches_allowed).

    Bisected, which needs fitting monotone in the micro-batch. With a global batch it is not over the integers: the
    pipeline holds min(pp, global_batch / (dp x mb)) micro-batches in flight (core.parallel.micro_batches_per_step,
    floored), so activations go like mb x that, up and down (review w14 R2 M2: torchtitan llama-3-8b seq 512, gb 60,
    pp 4 on an H100 fits mb 1-12, 16-17, 21-24 and not 13-15, 18-20). Over the divisors in-flight x mb is
    min(pp x mb, global_batch / dp), monotone, but for the largest (largest_allowed_fitting). Without a global batch (one micro-batch per step) the review found no
    non-monotone case in 267 layouts (six frameworks, three recompute modes, ZeRO-3, pp/vpp, both offloads)."""
    fits = (lambda mb: peak_memory(spec, replace(layout, micro_batch=mb), settings).allocated <= budget)
    allowed = micro_batches_allowed(layout)
    if allowed is not None:
        return largest_allowed_fitting(allowed, fits)
    base = peak_memory(spec, replace(layout, micro_batch=1), settings)
    if base.allocated > budget:
        return 0
    growth = activation_bytes_per_sample(spec, replace(layout, micro_batch=1), settings)
    if growth <= 0:
        return 1024
    guess = min(1 + int((budget - base.backward_start_total) // growth), 1024)
    # bisected below the guess: one step down at a time from the uncapped guess ran for minutes at --seq-len 2 (A8
    # w14: `memory tinyllama-1.1b --gpu a10 --gpus 164 --framework torchtitan --seq-len 2 --tp 2 --pp 2 --recompute full`)
    return largest_fitting(range(1, guess + 1), fits)
