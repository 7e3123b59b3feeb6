"""The expert-parallel all-to-all under Megatron-Core's combined 1F1B schedule
(``--overlap-moe-expert-parallel-comm``): how much of it stays on the critical path.

Megatron-Core runs the forward of one micro-batch beside the backward of the previous one, layer
by layer, on two CUDA streams (megatron/core/models/common/model_chunk_schedule_plan.py,
TransformerLayerSchedulePlan.run; pipeline_parallel/combined_1f1b.py for pp = 1):

    comm stream:    combine bwd       | dispatch fwd -> dispatch bwd        | combine fwd
    compute stream: pre-dispatch fwd  | MLP bwd -> MLP wgrad -> MLP fwd     | pre-dispatch bwd

("pre-dispatch" is attention, its norms, the router and, from Megatron-Core 0.16, the shared experts;
"MLP" the routed experts; the same order at core_v0.14.0-core_v0.19.0). The attention node runs the
pre-MLP norm, the router and the permute at every one of those tags (fine_grained_callables.py@core_v0.14.0
L345-366 submodule_post_attn_forward: router_and_preprocess); the shared experts moved into it at core 0.16
(@core_v0.16.0 L477-481, moe_shared_expert_overlap off as every Bridge overlap recipe sets it; their weight
gradients with the attention's delayed ones, L363-379), from the MLP node where core_v0.14.0 / core_v0.15.0 ran
them (experts_compute, @core_v0.14.0 L398-400; @core_v0.15.0 L398). pre_dispatch_mlp_weights says which weights
core.time.step moves out of the MLP phases.
Each phase lasts as long as the longer of its two streams. The dispatcher kernels run on SMs the
GEMMs then lack (DeepEP / HybridEP reserve a fixed number; NCCL's all-to-all its channels), so the
compute beside a running all-to-all advances at (1 - sm_share) of its speed: a phase with
``comm`` seconds of all-to-all and ``compute`` seconds of work takes max(comm, compute +
sm_share x comm). Micro-batches the schedule cannot pair (the pipeline's warm-up forwards and
cool-down backwards) pay their all-to-alls in full.

Checked against the code's own order (tests/test_moe_overlap_replay.py): each micro-batch's nodes
chain through one CUDA event (pipeline_parallel/utils.py@core_v0.15.0 L84-90, L137) and, with the
delay_wgrad_compute every Bridge overlap recipe sets, the weight gradients run outside it; a replay
of that order never exposes more than these three phases do, and exposes exactly as much where
every phase is communication-bound (Qwen3-235B on 256 H100: 2.89 ms a layer pair). The schedule is
not what leaves the cross-node Hopper rows too fast (docs/step.md, "EP across nodes on Hopper").

Values may be numbers or numpy arrays (the planner evaluates layouts in bulk). Units: seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.bulk import maximum, minimum
from gpuplan.core.time.pipeline_schedule import pipeline_bubble_fraction

# SMs the MoE dispatcher kernels hold while they run beside compute (the phases below): DeepEP's
# default 20 (Megatron-Core transformer_config.py moe_deepep_num_sms, "historical default 20") of
# an H100's 132 is 0.15; the Megatron-Bridge perf recipes give HybridEP 32 (perf_recipes/*/common.py
# moe_hybridep_num_sms = 32) of a B200's 148, 0.22; NCCL's alltoall (the 'alltoall' dispatcher) runs
# one CTA per p2p channel, pow2Up(min(nChannels, 64)) of them (nccl src/graph/paths.cc@v2.27.7-1
# L836-867): 32 on an 18-NVLink GPU (24 coll channels), 0.24 / 0.22. One share for all three: 0.2
# (tests/test_a2a_overlap_credit.py; the published pairs against it: docs/step.md, "The combined-1F1B
# credit against the published pairs").
EP_COMM_SM_SHARE = 0.2

ALL_TO_ALLS_PER_LAYER = 4
"""Dispatch and combine, forward and backward: one MoE layer's all-to-alls per micro-batch (the
four the paired schedule below places, and what core.comm.step_comm counts)."""


def pre_dispatch_mlp_weights(spec, shared_experts: bool) -> float:
    """Matmul weights per token of the mean layer's MLP that the combined-1F1B attention node runs before the
    dispatch (the module docstring): the router's h x experts, and the shared experts' where ``shared_experts``
    (Megatron-Core 0.16 on; StepSettings.shared_experts_before_dispatch). 0 for a dense model."""
    from gpuplan.core.model.spec import mlp_params

    moe = spec.moe
    if moe is None or not spec.num_moe_layers:
        return 0.0
    shared = mlp_params(moe.shared_intermediate_size, spec.hidden_size, gated=True) if shared_experts else 0
    return spec.num_moe_layers * (spec.hidden_size * moe.num_experts + shared) / spec.num_layers


@dataclass(frozen=True)
class MoeLayerPhases:
    """Seconds of one MoE layer for one micro-batch on one GPU, split at the all-to-alls."""

    pre_dispatch_forward: object
    pre_dispatch_backward: object
    mlp_forward: object
    mlp_backward: object
    """Input and weight gradients of the routed experts (and the shared experts before core 0.16)."""
    attention_weight_grad: object = 0.0
    """Inside pre_dispatch_backward: the attention projections' (and core 0.16's shared experts') weight gradients, which the combined
    schedule's delay_wgrad_compute runs last (core.time.pipeline_schedule.exposed_p2p_seconds)."""


def paired_phase_seconds(comm, compute, sm_share):
    """One phase of the schedule: ``comm`` seconds of all-to-all beside ``compute`` seconds of
    work that runs at (1 - sm_share) speed while the all-to-all holds its SMs."""
    return maximum(comm, compute + sm_share * comm)


def paired_layer_exposed(call_seconds, phases: MoeLayerPhases, sm_share):
    """All-to-all seconds one forward + backward layer pair adds over its compute: combine bwd
    beside pre-dispatch fwd, dispatch fwd + bwd beside MLP bwd + fwd, combine fwd beside
    pre-dispatch bwd (each all-to-all takes ``call_seconds``)."""
    mlp = phases.mlp_backward + phases.mlp_forward
    return (paired_phase_seconds(call_seconds, phases.pre_dispatch_forward, sm_share) - phases.pre_dispatch_forward
            + paired_phase_seconds(2 * call_seconds, mlp, sm_share) - mlp
            + paired_phase_seconds(call_seconds, phases.pre_dispatch_backward, sm_share)
            - phases.pre_dispatch_backward)


def unpaired_micro_batches(pp, vpp, micro_batches):
    """Micro-batches (in whole-stage units) whose forward and backward run alone on the first
    pipeline stage: pp = 1 runs the first forward and the last backward alone (one micro-batch's
    worth, combined_1f1b_schedule_for_no_pipelining); with a pipeline, the warm-up forwards and
    cool-down backwards. Megatron-Core schedules.py: warm-up = pp - 1 non-interleaved, else
    2 (pp - 1) + (vpp - 1) x pp virtual micro-batches (microbatch_group_size_per_vp_stage = pp),
    +1 when the all-to-all overlap is on; a virtual micro-batch covers 1/vpp of the stage. Megatron
    runs this schedule with pp > 1 only interleaved (planner.framework_rules.combined_1f1b_runs):
    the non-interleaved branch serves pp = 1 (warm-up 0 + 1)."""
    interleaved = vpp > 1
    warmup = (pp - 1) + interleaved * ((pp - 1) + (vpp - 1) * pp) + 1
    return minimum(warmup / vpp, micro_batches)


def exposed_all_to_all(call_seconds, moe_layers, micro_batches, pp, vpp, phases: MoeLayerPhases, sm_share):
    """EP all-to-all seconds per step left on the critical path of the first stage (``moe_layers``
    MoE layers on it, ALL_TO_ALLS_PER_LAYER calls of ``call_seconds`` each per micro-batch)."""
    alone = unpaired_micro_batches(pp, vpp, micro_batches)
    paired = micro_batches - alone
    return moe_layers * (paired * paired_layer_exposed(call_seconds, phases, sm_share)
                         + alone * ALL_TO_ALLS_PER_LAYER * call_seconds)


def paired_send_slack(phases: MoeLayerPhases, call_seconds):
    """GPU seconds a combined-1F1B step still runs after the later of its two outputs leaves for the
    neighbouring stages (core.time.pipeline_schedule.exposed_p2p_seconds). The backward's gradient is
    sent before the first layer's delayed attention weight gradients (model_chunk_schedule_plan.py@
    core_v0.15.0 L481-490, delay_wgrad_compute); the forward's output once its last combine is done,
    which runs beside the paired backward's attention (the last phase above), so it leaves
    max(0, pre-dispatch backward - one all-to-all) before the end. The step waits on the later."""
    return minimum(phases.attention_weight_grad, maximum(phases.pre_dispatch_backward - call_seconds, 0.0))


def fill_drain_all_to_all(ep_exposed, ep_total, combined_1f1b, pp, vpp, micro_batches):
    """EP all-to-all seconds the pipeline's fill and drain add to its bubble: the bubble idles a stage for
    pipeline_bubble_fraction(pp, vpp, micro_batches) micro-batches of another stage's work (core.time.
    pipeline_schedule; core.time.step charges it at the compute alone), and that work is whole
    micro-batches, each MoE layer's dispatch and combine inside them: the warm-up runs pp - rank - 1 full
    forward_steps and the cool-down their backward_steps (schedules.py@core_v0.14.0 L2079-2083, L2131-2132,
    L2257-2259, forward_backward_pipelining_without_interleaving; the interleaved schedule's warm-up and
    cool-down likewise, L1369, L1771), and the NCCL ``alltoall`` dispatcher's all_to_all runs in the layer's
    order (token_dispatcher.py@core_v0.14.0 L625-631, L769). Per micro-batch that is the stage's exposed
    all-to-all (``ep_exposed`` / ``micro_batches``: the step's own, no combined schedule) or, under the
    combined 1F1B schedule (``combined_1f1b``), all of it (``ep_total``): the fill's forwards and the
    drain's backwards are the unpaired micro-batches exposed_all_to_all charges in full. Seconds per step."""
    return pipeline_bubble_fraction(pp, vpp, micro_batches) * (ep_total if combined_1f1b else ep_exposed) / micro_batches
