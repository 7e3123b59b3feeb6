"""Pipeline schedules: how long a pipeline-parallel step idles (the bubble) and how many
stage-to-stage transfers sit on its critical path.

Units: one micro-batch's forward + backward on one pipeline stage (the bubble); transfers are a
count, each one activation (or its gradient) between neighbouring stages. Layout degrees may be
scalars or numpy arrays (the planner evaluates a whole search in one call)."""

from __future__ import annotations

import numpy as np

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


def fill_drain_transfers(pp, vpp):
    """Stage-to-stage transfers (one activation or gradient send/recv each) the fill and the drain
    of Megatron-Core's 1F1B / interleaved 1F1B wait on, per step: 2 (pp x vpp - 1); 0 without a
    pipeline. With overlap_p2p_comm a virtual chunk's output is sent right after its forward or
    backward (pp_post_forward / pp_post_backward, pipeline_parallel/schedules.py@core_v0.15.0
    L1583-1695), so in the steady state the neighbour's next input is already there; but the
    first micro-batch's forward crosses all pp x vpp - 1 virtual-stage boundaries before the last
    stage can start its first backward (every boundary joins two devices: virtual stage v lives on
    rank v mod pp), and the last backward crosses them back (2 (pp - 1) without interleaving)."""
    return 2 * (pp * vpp - 1) * (np.asarray(pp) > 1)


def paired_step_transfers(pp, vpp, micro_batches):
    """Further transfers the combined 1F1B schedule (--overlap-moe-expert-parallel-comm,
    combined_1f1b.py combined_1f1b_schedule_for_interleaved_pipelining) puts on the critical path:
    m x vpp - pp x vpp + pp - 2 per step (m >= pp), each one step of the stage waiting on one
    transfer. One step runs a virtual chunk's forward and another's backward layer by layer
    (models/common/model_chunk_schedule_plan.py@core_v0.15.0 TransformerModelChunkSchedulePlan.run
    L386-508) and sends the chunk's outputs only after its last layer (post_forward, post_backward:
    L474-485); with microbatch_group_size_per_vp_stage = pp (schedules.py get_schedule_table) the
    neighbour's next step needs them at once. The count (fill and drain included it is
    m x vpp + pp x vpp + pp - 4) was read off an event simulation of schedules.py's order (warm-up
    2 (pp - rank - 1) + (vpp - 1) pp + 1, get_pp_rank_microbatches L730-734; steady forward_k =
    k + warm-up paired with backward k; cool-down) for pp 2-8, vpp 1-24, m >= pp: independent of the
    forward, backward and paired-step durations (tests/test_pipeline_schedule.py replays it)."""
    return (micro_batches * vpp - pp * vpp + pp - 2) * (np.asarray(pp) > 1)


def exposed_p2p_seconds(pp, vpp, micro_batches, transfer, combined_1f1b=False, paired_slack=0.0):
    """Seconds per step the pipeline's send/recv keeps on the critical path: ``transfer`` seconds
    per activation transfer at each fill / drain crossing, and under the combined 1F1B schedule
    max(0, transfer - ``paired_slack``) at each paired step. The slack is the GPU work a step still
    runs after its outputs leave: with delay_wgrad_compute (which Megatron-Bridge sets with the
    combined schedule: scripts/performance/utils/helpers.py@v0.2.2 L183-187
    set_moe_a2a_overlap_overrides) the first layer's attention weight gradients run after the
    backward's send, "for overlapping with the p2p comm" (model_chunk_schedule_plan.py L487-490);
    the forward's output leaves earlier still (its send waits only for the last combine, L474-479)."""
    exposed = fill_drain_transfers(pp, vpp) * transfer
    if not combined_1f1b:
        return exposed
    return exposed + paired_step_transfers(pp, vpp, micro_batches) * maximum(transfer - paired_slack, 0.0)
