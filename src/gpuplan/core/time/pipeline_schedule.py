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


def critical_path_transfers(pp, vpp, micro_batches):
    """Stage-to-stage transfers (one activation or gradient send/recv each) on the critical path of
    Megatron-Core's pipeline schedules, per step; 0 without a pipeline.

    Interleaved 1F1B (vpp > 1): 2 (pp x vpp - 1), the fill and the drain. With overlap_p2p_comm a
    virtual chunk's output is sent right after its forward or backward (pp_post_forward /
    pp_post_backward, pipeline_parallel/schedules.py@core_v0.15.0 L1583-1695) and the warm-up of
    2 (pp - rank - 1) + (vpp - 1) pp virtual micro-batches (L730-734) keeps the neighbour's next input
    ahead of it in the steady state; but the first micro-batch's forward crosses all pp x vpp - 1
    virtual-stage boundaries before the last stage can start its first backward (every boundary joins
    two devices: virtual stage v lives on rank v mod pp), and the last backward crosses them back.

    Plain 1F1B (vpp 1; Megatron sets a virtual size of 1 to None, training/arguments.py L555-556,
    L582-583, and runs forward_backward_pipelining_without_interleaving): m + 1 at pp 2; at pp >= 3
    2 (pp - 1) with one micro-batch, else 2 (m + pp) - 5. Its sends block: without interleaving
    Megatron turns overlap_p2p_comm off (training/arguments.py@core_v0.15.0 L612-614; Megatron-Bridge
    the same, training/comm_overlap.py@v0.2.2 L450-457), so batch_p2p_comm runs every exchange as one
    batch_isend_irecv (p2p_communication.py@core_v0.15.0 L353-355, L48) and _communicate waits on all
    of its requests, the send's too, then synchronises (L390-398; the same lines at core_v0.14.0 and
    core_v0.16.0). A send of an activation (MBs, beyond NCCL's staging buffers) completes only once
    the neighbour has posted the matching receive: every exchange is a rendezvous of two ranks, and a
    rank's next forward or backward starts after it. The steady state (schedules.py L2206 / L2236)
    has a middle rank exchange twice a micro-batch, send_forward_recv_backward with the next rank
    after its forward and send_backward_recv_forward with the previous one after its backward. The
    critical path: the first forward down (pp - 1 crossings), the last backward up (pp - 1), and
    between them a zigzag between two middle neighbours with an exchange before every forward and
    every backward, 2 a further micro-batch, one fewer where it leaves the fill: 2 (pp - 1) +
    2 (m - 1) - 1. At pp 2 each rank has one neighbour and one exchange a micro-batch (m - 1 in the
    steady state, the first forward's send, the last backward's). Read off an event simulation of
    that code's order with rendezvous exchanges (warm-up pp - rank - 1 forwards, L2069-2072; pp 2-16,
    m 1-64, equal stages, forward / backward 1:1-1:3: exact and independent of the transfer time up
    to half a forward; tests/test_pp_blocking_w13.py replays a grid of it); with sends that do not block the
    same order keeps 2 (pp - 1) + 2 floor((pp - 1)(m - 1) / pp) (this function's count before;
    tests/test_pipeline_schedule.py replays it, a lower bound of the blocking count). Equal stages: step_time
    prices every stage at the slowest one's micro-batch; where one stage is much slower its slack hides some
    transfers (the last stage pacing: 2 (pp - 1) + m - 1 in the simulation), which this count does not credit."""
    interleaved = 2 * (pp * vpp - 1)
    m = np.asarray(micro_batches)
    plain = np.where(np.asarray(pp) == 2, m + 1, np.where(m == 1, 2 * (np.asarray(pp) - 1), 2 * (m + pp) - 5))
    return np.where(np.asarray(vpp) > 1, interleaved, plain) * (np.asarray(pp) > 1)


def paired_step_transfers(pp, vpp, micro_batches):
    """Further transfers the combined 1F1B schedule (--overlap-moe-expert-parallel-comm,
    combined_1f1b.py combined_1f1b_schedule_for_interleaved_pipelining) puts on the critical path:
    max(0, m x vpp - pp x vpp + pp - 2) per step, each one step of the stage waiting on one
    transfer. One step runs a virtual chunk's forward and another's backward layer by layer
    (models/common/model_chunk_schedule_plan.py@core_v0.15.0 TransformerModelChunkSchedulePlan.run
    L386-508) and sends the chunk's outputs only after its last layer (post_forward, post_backward:
    L474-485); with microbatch_group_size_per_vp_stage = pp (schedules.py get_schedule_table) the
    neighbour's next step needs them at once. The count (fill and drain included it is
    m x vpp + pp x vpp + pp - 4) was read off an event simulation of schedules.py's order (warm-up
    2 (pp - rank - 1) + (vpp - 1) pp + 1, get_pp_rank_microbatches L730-734; steady forward_k =
    k + warm-up paired with backward k; cool-down) for pp 2-8, vpp 2-24, m a multiple of pp:
    independent of the forward, backward and paired-step durations (tests/test_pipeline_schedule.py
    replays it). Megatron runs the combined schedule with pp > 1 only interleaved
    (transformer_config.py@core_v0.15.0 L1446-1450) and an interleaved step only with m a multiple
    of pp (schedules.py L975-993); the search and the schema refuse the rest
    (planner.framework_rules.combined_1f1b_runs), and the count is clamped at 0 where the formula
    would go below it (m = 1 at vpp 1, m < pp interleaved)."""
    count = micro_batches * vpp - pp * vpp + pp - 2
    return np.maximum(count, 0) * (np.asarray(pp) > 1)


def exposed_p2p_seconds(pp, vpp, micro_batches, transfer, combined_1f1b=False, paired_slack=0.0):
    """Seconds per step the pipeline's send/recv keeps on the critical path: ``transfer`` seconds
    per activation transfer at each crossing critical_path_transfers counts, and where
    ``combined_1f1b`` (a flag, or one per layout) holds, under the combined 1F1B schedule
    max(0, transfer - ``paired_slack``) at each paired step. The slack is the GPU work a step still
    runs after its outputs leave: with delay_wgrad_compute (which Megatron-Bridge sets with the
    combined schedule: scripts/performance/utils/helpers.py@v0.2.2 L183-187
    set_moe_a2a_overlap_overrides) the first layer's attention weight gradients run after the
    backward's send, "for overlapping with the p2p comm" (model_chunk_schedule_plan.py L487-490);
    the forward's output leaves earlier still (its send waits only for the last combine, L474-479)."""
    exposed = critical_path_transfers(pp, vpp, micro_batches) * transfer
    combined = np.asarray(combined_1f1b, dtype=bool)
    if not combined.any():
        return exposed
    return exposed + combined * paired_step_transfers(pp, vpp, micro_batches) * maximum(transfer - paired_slack, 0.0)


LAYOUT_SYMBOLS = {"E": "embedding", "L": "loss", "t": "decoder", "m": "mtp"}
"""Megatron-Core's pipeline_model_parallel_layout characters (megatron/core/transformer/
pipeline_parallel_layer_layout.py parse_str_to_list, @core_v0.14.0 L254-292 and @b0cc2706dd L283-321:
'E' embedding, 'L' loss, 't' a transformer (decoder) layer, 'm' a multi-token-prediction layer; ',' is
cosmetic)."""


def layout_chunks(layout: str) -> list[str]:
    """The virtual-stage chunks of a Megatron-Core layout string, unrolled as parse_str_to_list does
    (@b0cc2706dd L288-301: ``(...)*n`` first, then ``x*n``; '|' separates chunks): "Et|(tt|)*2mL" ->
    ['Et', 'tt', 'tt', 'mL']. Raises ValueError naming a character outside LAYOUT_SYMBOLS."""
    import re

    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    chunks = text.split("|")
    bad = sorted({c for chunk in chunks for c in chunk} - set(LAYOUT_SYMBOLS))
    if bad:
        raise ValueError(f"pp_layout {layout!r}: unknown layer character(s) {bad}; valid: {sorted(LAYOUT_SYMBOLS)}")
    return chunks


def layout_stage_layers(layout: str, pp: int, vpp: int, num_layers: int) -> tuple[int, int]:
    """(max decoder layers over every rank but the last, decoder layers on the last rank) of a Megatron-Core
    layout string: chunk v runs on rank v mod pp (the 1-D list is read as layout[vpp_rank * pp + pp_rank],
    PipelineParallelLayerLayout.__init__, @b0cc2706dd L39-54), so a rank's layers are those of chunks r, r + pp,
    r + 2 pp, ... The first value counts 't's only: the embedding on rank 0 ('E') and the step's collectives,
    which follow the first stage's layers (core.time.step), leave the 'E' out (negligible beside a layer).

    Validation only: the published rows' ``pp_layout`` (jobs.validation.published_throughput) is its one caller;
    the CLI, plan file and web have no layout option, so a plan prices the model's own split
    (core.memory.model_states.stage_span) and the validated row a split no plan can request.

    Checked as Megatron-Core checks it (pipeline_parallel_layer_layout.py@core_v0.14.0): the chunks number
    pp x ``vpp`` (Megatron derives vpp from the count, L37-42); 'E' is the first layer and 'L' the last, once
    each (L90-102, the flattened layout in layer order: the first chunk starts with 'E', the last ends with
    'L'); the 't's number ``num_layers`` (L103); no 't' after an 'm' (L111-115). The step model prices the LM
    head and the MTP modules on the last rank (core.time.step), so every 'm' must sit there too. Raises ValueError naming pp_layout and what
    does not hold."""
    chunks = layout_chunks(layout)
    if pp < 1 or vpp < 1 or len(chunks) != pp * vpp:
        raise ValueError(f"pp_layout {layout!r}: {len(chunks)} chunks, the row runs pp x vpp = {pp} x {vpp} = {pp * vpp}"
                         " (Megatron-Core derives vpp from the chunk count)")
    flat = "".join(chunks)
    if not (flat.startswith("E") and flat.endswith("L") and flat.count("E") == flat.count("L") == 1):
        raise ValueError(f"pp_layout {layout!r}: 'E' must open the first chunk and 'L' close the last, once each")
    per_rank = [sum(chunk.count("t") for chunk in chunks[rank::pp]) for rank in range(pp)]
    if sum(per_rank) != num_layers:
        raise ValueError(f"pp_layout {layout!r}: {sum(per_rank)} decoder layers ('t'), the model has {num_layers}")
    after_mtp = flat[flat.index("m"):] if "m" in flat else ""
    if "t" in after_mtp or any("m" in chunk for rank in range(pp - 1) for chunk in chunks[rank::pp]):
        raise ValueError(f"pp_layout {layout!r}: the MTP layers ('m') must follow every decoder layer and sit on the "
                         "last rank, with the loss")
    return (max(per_rank[:-1]) if pp > 1 else per_rank[0]), per_rank[-1]
