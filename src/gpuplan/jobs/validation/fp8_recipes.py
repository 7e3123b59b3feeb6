"""MXFP8 against per-tensor FP8 at the same configuration: the fit of
``core.time.step.BLOCK_SCALED_GEMM_TIME_FACTOR`` and its held-out check.

NeMo / Megatron-Bridge performance summaries publish the same model, GPU type and GPU count
with both FP8 recipes ('FP8-CS' per-tensor current scaling, 'MXFP8'/'FP8-MX' block scaling;
catalog/reference/published_throughput.yaml). Comparing the two figures of one configuration
removes everything the recipes share (layout, communication, software release), so the
tokens/s ratio FP8-CS / MXFP8 isolates the recipe. The factor is fitted on the 25.09 dense pairs
whose layouts are identical (``in_fit_subset``); every other pair, dense or MoE, any release,
same layout or not, is held out. Each pair is scored as the error of the predicted ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gpuplan.jobs.validation.published_throughput import (
    predict_tokens_per_gpu_s,
    published_throughput_rows,
    why_not,
)
from gpuplan.jobs.validation.throughput import run_spec

FIT_RELEASE = "nemo-25.09-"


@dataclass(frozen=True)
class RecipePair:
    """One configuration published with both recipes; ratios are FP8-CS tokens/s / MXFP8 tokens/s."""

    mxfp8: dict[str, Any]
    tensorwise: dict[str, Any]

    @property
    def id(self) -> str:
        return self.mxfp8["id"]

    @property
    def same_layout(self) -> bool:
        return self.mxfp8["layout"] == self.tensorwise["layout"]

    @property
    def moe(self) -> bool:
        return run_spec(self.mxfp8["model"]).moe is not None

    @property
    def measured_ratio(self) -> float:
        return (float(self.tensorwise["measured"]["tokens_per_s_per_gpu"])
                / float(self.mxfp8["measured"]["tokens_per_s_per_gpu"]))

    @cached_property
    def predicted_tensorwise(self) -> float:
        return predict_tokens_per_gpu_s(self.tensorwise)

    def predicted_ratio(self, **step_overrides: Any) -> float:
        return self.predicted_tensorwise / predict_tokens_per_gpu_s(self.mxfp8, **step_overrides)

    @property
    def in_fit_subset(self) -> bool:
        return self.mxfp8["family"].startswith(FIT_RELEASE) and self.same_layout and not self.moe


def recipe_pairs() -> list[RecipePair]:
    """Every MXFP8 row whose FP8-CS twin (same id but the label) is published and predictable."""
    rows = {r["id"]: r for r in published_throughput_rows()}
    pairs = []
    for run_id, run in rows.items():
        twin = rows.get(run_id.removesuffix("-mxfp8") + "-fp8cs") if run_id.endswith("-mxfp8") else None
        if twin is not None and not why_not(run) and not why_not(twin):
            pairs.append(RecipePair(run, twin))
    return pairs


def fit_block_scaled_gemm_time_factor(pairs: list[RecipePair], low: float = 1.0, high: float = 1.5) -> float:
    """The GEMM-time factor at which the fit pairs' mean log ratio error is zero (bisection: the
    predicted ratio rises monotonically with the factor)."""

    def bias(factor: float) -> float:
        return sum(math.log(p.predicted_ratio(block_scaled_gemm_time_factor=factor) / p.measured_ratio)
                   for p in pairs) / len(pairs)

    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if bias(mid) < 0 else (low, mid)
    return (low + high) / 2
