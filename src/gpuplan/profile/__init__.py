"""Measured (not modelled) training memory of Hugging Face models, on a CPU, without weights.

``import gpuplan.profile`` does not import torch; torch and transformers (the ``profile``
extra) are imported when :func:`measure_training_memory` runs. See docs/measure.md.
"""

from gpuplan.profile.extrapolate import extrapolate_to_depth
from gpuplan.profile.measure import (
    CATEGORIES,
    PHASES,
    MemoryMeasurement,
    measure_training_memory,
)

__all__ = [
    "CATEGORIES",
    "PHASES",
    "MemoryMeasurement",
    "extrapolate_to_depth",
    "measure_training_memory",
]
