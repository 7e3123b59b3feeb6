"""`plan`'s rows with --batch-ramp: each candidate layout's ramp factor (planner.batch_ramp.with_ramp_factors)
multiplies its days, GPU-hours and cost, and planner.plan.slow_end_seconds_per_token ranks by it; the rows
`plan --gpus` and `train --mfu predicted` rank first by time are timed, and with a deadline the first rows of
the deadline rule's order (fewest GPUs, then cheapest) as well."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.batch_ramp import with_ramp_factors


def with_ramp_days(inputs, ev, fitting, deadline: float | None = None):
    """``fitting`` (rows with days, gpu_hours, cost) with ``ramp_factor`` and those three x it; unchanged without
    a ramp. ``deadline`` (days): the rows meeting it at steady state, fewest GPUs then cheapest, are timed too."""
    phases = inputs.ramp_phases() if hasattr(inputs, "ramp_phases") else []
    if not phases or not len(fitting):
        return fitting
    also = None
    if deadline is not None:
        meets = np.flatnonzero(fitting["days"] <= deadline * (1 + 1e-12))
        cheapest = fitting["cost"] if not np.isnan(fitting["cost"]).all() else fitting["gpu_hours"]
        also = meets[np.lexsort((cheapest[meets], fitting["gpus"][meets]))]
    fitting = with_ramp_factors(ev, fitting, float(inputs.tokens), phases, also=also)
    for name in ("days", "gpu_hours", "cost"):
        fitting.columns[name] = fitting[name] * fitting["ramp_factor"]
    return fitting

