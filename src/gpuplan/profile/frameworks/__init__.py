"""Training memory measured with the frameworks' own code (torchtitan, Megatron-Core, PEFT) on a
CPU, under fake tensors and a fake process group: rank 0's allocated bytes at two reduced depths,
extrapolated linearly to the full depth.

``import gpuplan.profile.frameworks`` imports no framework (nor torch); each is imported when its
measurement runs. Install them with ``pip install -e '.[frameworks]'``.
"""

from __future__ import annotations

from gpuplan.profile.frameworks.common import (
    FRAMEWORKS,
    DepthPoint,
    FrameworkMeasurement,
    FrameworkRun,
    run_id,
)


def measure_framework(run: FrameworkRun) -> FrameworkMeasurement:
    """Measure ``run`` with the framework it names (``run.framework``).

    Raises ``InputError("framework", name, ...)`` when that framework is not installed."""
    if run.framework == "torchtitan":
        from gpuplan.profile.frameworks.torchtitan import measure_torchtitan

        return measure_torchtitan(run)
    if run.framework == "megatron":
        from gpuplan.profile.frameworks.megatron import measure_megatron

        return measure_megatron(run)
    from gpuplan.profile.frameworks.peft_lora import measure_peft_lora

    return measure_peft_lora(run)  # FrameworkRun.__post_init__ admits only FRAMEWORKS


__all__ = ["FRAMEWORKS", "DepthPoint", "FrameworkMeasurement", "FrameworkRun", "measure_framework", "run_id"]
