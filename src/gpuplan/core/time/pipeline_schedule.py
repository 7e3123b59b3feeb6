"""Pipeline schedules: how long a pipeline-parallel step idles (the bubble).

Units: one micro-batch's forward + backward on one pipeline stage. Layout degrees may be scalars
or numpy arrays (the planner evaluates a whole search in one call)."""

from __future__ import annotations

from gpuplan.core.bulk import maximum


def pipeline_bubble_fraction(pp, vpp, micro_batches):
    """Pipeline idle time per step in units of one micro-batch's forward + backward on a stage.
    1F1B and interleaved 1F1B with m >= pp micro-batches: (pp - 1) / vpp (Narayanan et al. 2021,
    Sec. 2.2.2). With m < pp the interleaved chunks cannot be kept busy: no two micro-batches
    meet on a device, so the last backward ends after pp + (m - 1) / vpp micro-batch times,
    a bubble of (pp - m) + (m - 1) / vpp (= (pp - 1) / vpp + (pp - m)(1 - 1/vpp); with vpp 1
    it is the plain (pp - 1)). Megatron-Core refuses that case outright (schedules.py:
    microbatch_group_size_per_vp_stage must lie in [pp, m]); torch.distributed.pipelining's
    ScheduleInterleaved1F1B runs it with one round."""
    return (pp - 1) / vpp + maximum(pp - micro_batches, 0) * (1 - 1 / vpp)
