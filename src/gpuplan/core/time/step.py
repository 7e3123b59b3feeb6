"""Step time: compute (per-op efficiency) + exposed communication + pipeline bubble + optimizer
step, and the MFU/HFU it implies.

Compute per micro-batch on one GPU:
  matmuls    FLOPs / (peak x e_gemm), e_gemm = MAMF x d / (d + d_half)  with d the smallest GEMM
             dimension per GPU (hidden/tp or tokens); MAMF = the measured "maximum achievable
             matmul FLOPS" fraction of peak (stas00/ml-engineering, compute/accelerator README:
             A100 SXM 86.9%, H100 SXM 80.3%, B200 77.6%, MI300X 51.4%, ...), d_half calibrated (docs/step.md)
  attention  executed (causal) score/context FLOPs / (peak x e_attn); backward = 2.5 x forward
             (FlashAttention recomputes the scores; Dao 2023, FlashAttention-2 Sec. 3.1)
  elementwise  norms, activations, RoPE, residuals: memory-bound; bytes ~ 3 x the activation bytes
             a layer saves (written in forward, read and written in backward) / HBM bandwidth
Backward matmuls = 2 x forward. Full recompute re-runs each layer's forward; selective re-runs
attention. Pipeline: t = t_microbatch x (m + bubble), core.time.pipeline_schedule. Layout degrees may
be scalars or numpy arrays (the planner evaluates in bulk). Units: seconds, FLOPs, bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gpuplan.core.memory import activations as A
from gpuplan.core.model import flops as F
from gpuplan.core.time.eager_path import eager_microbatch_seconds, eager_optimizer_seconds
from gpuplan.core.time.step_settings import StepSettings  # noqa: F401  (re-exported: its old home)
from gpuplan.core.time.attention_core import attention_forward_share, layer_attention_seconds
from gpuplan.core.bulk import minimum
from gpuplan.core.time.eager_fallbacks import CLAMPED_GLU, eager_fallback_bytes_per_token, eager_rope_fixed_seconds
from gpuplan.core.model.spec import ModelSpec, expert_matrix_params
from gpuplan.core.time.stages import last_stage_paces, paced_stage_layers, rank_layers
from gpuplan.core.comm.moe_overlap import MoeLayerPhases, fill_drain_all_to_all, pre_dispatch_mlp_weights
from gpuplan.core.time.moe_host import stage_exposed_host_seconds
from gpuplan.core.time.moe_layer import stage_expert_kernel_seconds
from gpuplan.core.time.pipeline_schedule import pipeline_bubble_fraction
from gpuplan.core.time.trained_params import trained_params_per_gpu
from gpuplan.core.time.optimizer import accumulation_pass_seconds
from gpuplan.core.comm.dp_costs import optimizer_shards
from gpuplan.core.time import activation_offload as AO, context_parallel as CPK, llmc_ops as LO
from gpuplan.core.time import megatron_grad_passes as MG, megatron_ops as MO, megatron_ops_step as MS
from gpuplan.core.time import sequence_parallel as SP, titan_float8 as TF, titan_ops as TT
from gpuplan.core.memory.recompute import ForwardRates, recompute_seconds_per_token
from gpuplan.core.comm.embedding_tp import output_gemm_pass_seconds
from gpuplan.core.comm.step_comm import (  # noqa: F401
    by_parallelism, data_parallel_costs, params_per_gpu, step_communication, with_data_parallel)
from gpuplan.core.time.efficiency import (  # noqa: F401  (re-exported: the kernel tables' old home)
    ATTENTION_EFFICIENCY, DEFAULT_MAMF_FRACTION, HOPPER_TUNED_ATTENTION_SPEEDUP, MAMF_FRACTION, _lookup,
    attention_efficiency, gemm_efficiency)
from gpuplan.core.comm.topology import Cluster
from gpuplan.core.time.low_precision import (  # noqa: F401  (re-exported: their old home)
    BLOCK_SCALED, BLOCK_SCALED_GEMM_TIME_FACTOR, FP8_CAST_BYTES_PER_ELEMENT, FP8_WEIGHT_CAST_BYTES, LOW_PRECISION,
    MXFP8_CAST_BYTES_PER_ELEMENT, low_precision_recipe, precision_class)


@dataclass(frozen=True)
class StepBreakdown:
    """Seconds per optimizer step on the critical path (worst GPU)."""

    compute: float
    bubble: float
    tp_comm: float
    pp_comm: float
    dp_comm: float
    cp_comm: float
    ep_comm: float
    optimizer: float
    comm_total: float
    """All communication time, hidden or not."""
    moe_host: object = 0.0
    """Inside compute: the MoE dispatcher sync's exposed host time (core.time.moe_host)."""
    moe_expert_kernels: object = 0.0
    """Inside compute: the per-expert kernels' fixed GPU time and the alltoall dispatcher's sorts (core.time.moe_layer)."""
    dp_traffic: object = 0.0
    """All data-parallel communication, hidden or not (planner.uncertainty.fsdp_traffic_uncertainty)."""
    collectives: tuple = ()
    """The core.comm.step_comm costs the communication fields sum (what `plan --explain` lists)."""

    @property
    def total(self) -> float:
        return (self.compute + self.bubble + self.tp_comm + self.pp_comm + self.dp_comm + self.cp_comm
                + self.ep_comm + self.optimizer)

    @property
    def exposed_comm(self) -> float:
        return self.tp_comm + self.pp_comm + self.dp_comm + self.cp_comm + self.ep_comm


def routed_expert_weights_per_token(spec: ModelSpec) -> float:
    """Matmul weights of the routed experts one token passes through, all layers (0 when dense)."""
    if spec.moe is None or not spec.num_moe_layers:
        return 0.0
    return spec.num_moe_layers * spec.moe.experts_per_token * expert_matrix_params(spec.moe, spec.hidden_size)


def layer_activation_bytes(spec: ModelSpec, seq_len, implementation: str) -> float:
    """Activation bytes per token of the mean layer (what its elementwise work reads and writes):
    a MoE layer's router, the top-k copies of each token and the experts' MLPs where the model has
    MoE layers (core.memory.activations.moe_bytes), the dense MLP's in the others. The clamp input the
    eager activation clamp keeps is left out: its traffic is core.time.eager_fallbacks'."""
    dense = A.layer_activations(spec, seq_len, impl=implementation).total
    if spec.moe is None or not spec.num_moe_layers:
        return dense
    moe = A.layer_activations(spec, seq_len, impl=implementation, moe_layer=True).total \
        - spec.moe.experts_per_token * A.clamped_glu_extra_bytes(spec, implementation, 2) \
        + spec.moe.experts_per_token * A.unsaved_expert_output_bytes(spec, implementation, 2)  # unpermute reads it
    return (spec.num_moe_layers * moe + (spec.num_layers - spec.num_moe_layers) * dense) / spec.num_layers


class MicroBatchTimes(NamedTuple):
    """Seconds of one micro-batch on one GPU of a stage."""

    total: object
    """Forward + backward (+ recompute) of the stage's layers (and the LM head when it is there)."""
    attention: object
    """The attention core's share, forward and backward (the CP ring hides behind it)."""
    backward_gemm: object
    """The backward matmuls (the window DP gradient reduction overlaps with)."""
    moe_phases: MoeLayerPhases
    """One layer's work split at the MoE all-to-alls (core.comm.moe_overlap)."""


def _linear_efficiencies(gpu, settings: StepSettings, h, tokens, tp):
    """(BF16, compute dtype) fraction of peak of the layer's linears (block-scaled FP8 slower by its factor)."""
    e_dense = gemm_efficiency(gpu, minimum(h / tp, tokens), settings.gemm_d_half)
    e_gemm = gemm_efficiency(gpu, minimum(h / tp, tokens), settings.gemm_d_half,
                             settings.dtype in LOW_PRECISION and settings.dtype)
    if low_precision_recipe(settings.dtype, settings.fp8_recipe) in BLOCK_SCALED:
        e_gemm = e_gemm / settings.block_scaled_gemm_time_factor
    return e_dense, e_gemm


def routed_seconds_per_token(spec: ModelSpec, gpu, settings: StepSettings, tokens, tp, ep=1, efficiencies=None):
    """Forward seconds per token of one layer's routed expert GEMMs (0 when dense): the expert width and the tokens
    each expert receives (ep x tokens x top-k / experts) bound the grouped GEMMs' shape (``efficiencies``: the
    caller's (dense, GEMM) pair from _linear_efficiencies at the same tokens, computed here when not given)."""
    routed = routed_expert_weights_per_token(spec)
    if spec.moe is None or not routed:
        return 0.0
    e_dense, e_gemm = efficiencies or _linear_efficiencies(gpu, settings, spec.hidden_size, tokens, tp)
    moe = spec.moe
    per_expert = tokens * ep * moe.experts_per_token / moe.num_experts
    e_expert = gemm_efficiency(gpu, minimum(minimum(spec.hidden_size / tp, moe.expert_intermediate_size), per_expert),
                               settings.gemm_d_half) * e_gemm / e_dense
    return 2.0 * routed / spec.num_layers / tp / (gpu.peak(settings.dtype) * e_expert)


def microbatch_compute_time(spec: ModelSpec, cluster: Cluster, settings: StepSettings, tp, cp, micro_batch,
                            layers, head: bool, ep=1, mtp: int = 0, vpp=1, embedding=0,
                            output_pass=None) -> MicroBatchTimes:
    """Forward + backward (+ recompute) seconds for one micro-batch on one GPU of a stage with
    ``layers`` layers (``head``: the LM head lives here; ``mtp``: MTP modules too, core.model.mtp; ``embedding``:
    1 where the word embedding does and Megatron DDP adds its dense gradient, core.time.megatron_grad_passes).
    ``output_pass``: seconds of one pass of the output layer's GEMM on this micro-batch's tokens
    (core.comm.embedding_tp.output_gemm_pass_seconds; step_time works it out once a step), computed here if None."""
    if settings.eager_ops is not None:
        return MicroBatchTimes(*eager_microbatch_seconds(spec, cluster, settings, micro_batch, layers, head),
                               MoeLayerPhases(0.0, 0.0, 0.0, 0.0))
    gpu = cluster.gpu
    peak = gpu.peak(settings.dtype)  # matmuls at the compute dtype's peak (FP8 linears); the LM head: embedding_tp
    fp8 = settings.dtype in LOW_PRECISION  # FP8 or NVFP4 linears: scaled GEMMs with operand casts
    tokens = micro_batch * settings.seq_len / cp
    h = spec.hidden_size
    weights = F.layer_matmul_weights_per_token(spec)
    routed = routed_expert_weights_per_token(spec)
    gemm_flops = 2.0 * (weights - routed) / spec.num_layers / tp
    e_dense, e_gemm = _linear_efficiencies(gpu, settings, h, tokens, tp)
    recipe = low_precision_recipe(settings.dtype, settings.fp8_recipe)
    t_routed = routed_seconds_per_token(spec, gpu, settings, tokens, tp, ep, (e_dense, e_gemm))
    t_gemm = gemm_flops / (peak * e_gemm) + t_routed
    hbm = gpu.memory_bandwidth * settings.hbm_efficiency
    t_attn, t_attn_bwd = layer_attention_seconds(spec, gpu, settings, tp)  # the core, forward and backward
    mega = MO.active(spec, settings)  # Megatron-Core + TE's kernels, FP8 casts included (core.time.megatron_ops)
    # seconds: the eager fallbacks' bytes, + the eager RoPE's kernels' fixed time
    eager = (eager_fallback_bytes_per_token(spec, settings.eager_fallbacks, settings.ep_dispatcher) / tp / hbm
             + eager_rope_fixed_seconds(spec, settings.eager_fallbacks) / tokens)
    if mega is not None:
        t_elem = MO.elementwise_seconds_per_token(spec, mega, MO.cast_recipe(settings.dtype, settings.fp8_recipe, mega),
                                                  MO.non_tn_fp8(gpu), tokens, gpu.memory_bandwidth, tp, cp) + eager
    elif settings.titan_ops is not None:  # torchtitan's own kernels, eager or compiled (core.time.titan_ops)
        t_elem = sum(TT.elementwise_seconds_per_token(spec, settings.titan_ops, tokens, gpu.memory_bandwidth, tp))
    else:  # the fitted factor on the saved activations; llm.c's own kernels instead where it runs (core.time.llmc_ops)
        act = 0.0 if LO.runs(settings) else layer_activation_bytes(spec, settings.seq_len, settings.implementation) / tp
        t_elem = (settings.elementwise_factor * act / hbm + eager + LO.elementwise_seconds_per_token(
            spec, settings, tokens, gpu.memory_bandwidth) + settings.te_cp_ring * CPK.ring_kernels(
            spec, cp, tokens, gpu.memory_bandwidth, tp))  # + TE's CP ring's kernels
    t_elem = t_elem + SP.replicated_seconds_per_token(spec, settings, tp, gpu.memory_bandwidth)  # 0 under SP
    if fp8 and mega is None:  # operand casts (forward third, backward two thirds, like the other elementwise work)
        widths = F.layer_gemm_widths_per_token(spec) / tp
        weights = F.layer_matmul_weights_per_token(spec) / spec.num_layers / tp
        if recipe == "mxfp8":
            cast = MXFP8_CAST_BYTES_PER_ELEMENT * (widths + weights / tokens)
        else:
            cast = FP8_CAST_BYTES_PER_ELEMENT * widths + FP8_WEIGHT_CAST_BYTES * weights / tokens
        t_elem = t_elem + cast / hbm
    fwd = tokens * (t_gemm + t_attn + t_elem / 3)
    weight_grads = 1.0 if settings.finetune == "full" else 0.0  # a frozen base computes input gradients only
    bwd = tokens * ((1 + weight_grads) * t_gemm + t_attn_bwd + 2 * t_elem / 3)
    # the same work split at a MoE layer's all-to-alls (core.comm.moe_overlap): attention projections,
    # the attention core and half the elementwise work before the dispatch, the rest in the MLP; under the
    # combined 1F1B schedule the router (and from core 0.16 the shared experts) too: pre_dispatch_mlp_weights
    early, router = ((pre_dispatch_mlp_weights(spec, settings.shared_experts_before_dispatch),
                      pre_dispatch_mlp_weights(spec, False)) if settings.ep_a2a_overlap else (0.0, 0.0))
    t_attn_gemm = 2.0 * (F.attention_matmul_weights(spec.attention, h) + early) / tp / (peak * e_gemm)
    t_delayed_wgrad = t_attn_gemm - 2.0 * router / tp / (peak * e_gemm)  # the router's wgrad is not delayed
    phases = MoeLayerPhases(
        pre_dispatch_forward=tokens * (t_attn_gemm + t_attn + t_elem / 6),
        pre_dispatch_backward=tokens * ((1 + weight_grads) * t_attn_gemm + t_attn_bwd + t_elem / 3),
        mlp_forward=tokens * (t_gemm - t_attn_gemm + t_elem / 6),
        mlp_backward=tokens * ((1 + weight_grads) * (t_gemm - t_attn_gemm) + t_elem / 3),
        attention_weight_grad=tokens * weight_grads * t_delayed_wgrad)
    rates = ForwardRates(1.0 / (peak * e_gemm), t_routed, t_attn, hbm, tp,
                         CLAMPED_GLU in settings.eager_fallbacks)
    extra = tokens * recompute_seconds_per_token(spec, settings, rates, forward=fwd / tokens, matmuls=t_gemm,
                                                 elementwise=t_elem, stage_layers=layers, vpp=vpp)
    per_layer = fwd + bwd + extra
    if output_pass is None:
        output_pass = output_gemm_pass_seconds(spec, gpu, settings, tp, tokens)
    head_time = (2 + weight_grads) * output_pass  # 2 V h / tp a token
    passes, bandwidth = (fwd, bwd + extra), gpu.memory_bandwidth  # torchtitan's, Megatron's, llm.c's losses and host
    titan = (TT.microbatch_extra_seconds(spec, settings, tokens, bandwidth, tp, passes, layers, head)
             + MS.microbatch_extra_seconds(spec, settings, bandwidth, tokens, tp, passes, layers, head + mtp)
             + LO.microbatch_extra_seconds(spec, settings, tokens, bandwidth, head, layers, passes))
    # an MTP module: one block (the mean layer's time), the 2h -> h projection at the linears'
    # speed, and the shared LM head once more (core.model.mtp)
    mtp_time = mtp * (per_layer + (2 + weight_grads) * tokens * 4.0 * h * h / tp / (peak * e_gemm) + head_time)
    titan = titan + embedding * MG.embedding_grad_seconds(spec, settings, tp, gpu.memory_bandwidth)
    return MicroBatchTimes(layers * per_layer + head * head_time + mtp_time + titan,
                           (layers + mtp) * tokens * (t_attn + t_attn_bwd),
                           (layers + mtp) * tokens * (1 + weight_grads) * t_gemm, phases)


def step_time(spec: ModelSpec, cluster: Cluster, settings: StepSettings, *, dp=1, tp=1, pp=1, vpp=1, cp=1,
              ep=1, zero=0, micro_batch=1, micro_batches=1, shard_group=None, stage_layers=None) -> StepBreakdown:
    """Seconds per optimizer step. Rank order tp (innermost), cp, dp, pp (Megatron's default
    'tp-cp-ep-dp-pp'): a group rides NVLink when it spans no more than a node. ``shard_group``
    (HSDP): ZeRO shards within groups of that many data-parallel ranks and all-reduces the
    shards across the groups (PyTorch HYBRID_SHARD). ``stage_layers``: (fullest, last) stage's layers where a
    recipe fixes the split (core.time.pipeline_schedule.layout_stage_layers), else core.time.stages.rank_layers'."""
    cluster = cluster.for_job(np.asarray(tp) * cp * dp * pp)  # its groups, as they fill the domains (Cluster.group)
    # uneven stages (core.memory.training.stage_layer_counts): the first ones take the remainder, the last
    # (with the LM head and any MTP modules, which shed layers to the others: core.model.mtp) never has
    # more; the slowest stage sets the pace. Collectives follow the first stage's layers (pp > 1:
    # never fewer than the MTP stage's layers + modules; pp 1: the modules join them, mtp_on_first)
    mtp = spec.mtp_layers
    mtp_on_first = mtp * (pp == 1)
    layers, last_layers = stage_layers or (rank_layers(spec, pp, 0), rank_layers(spec, pp, pp - 1))  # fullest, last
    below_zero3 = np.asarray(zero) < 3  # the embedding's gradient add: Megatron DDP's hook, not Megatron FSDP's
    mb_tokens = micro_batch * settings.seq_len / cp  # per micro-batch: the output GEMM's and core.time.moe_host's
    output_pass = output_gemm_pass_seconds(spec, cluster.gpu, settings, tp, mb_tokens)  # the head's time, its hiding
    t_first, t_attn_mb, t_bwd_gemm_mb, phases = microbatch_compute_time(spec, cluster, settings, tp, cp, micro_batch,
                                                                         layers, pp == 1, ep, mtp_on_first, vpp,
                                                                         embedding=below_zero3, output_pass=output_pass)
    t_last = microbatch_compute_time(spec, cluster, settings, tp, cp, micro_batch, last_layers, head=True,
                                     ep=ep, mtp=mtp, vpp=vpp, embedding=below_zero3 & (np.asarray(pp) == 1),
                                     output_pass=output_pass).total
    t_mb = t_first + (t_last - t_first) * last_stage_paces(t_first, t_last)  # the slower stage's micro-batch
    paced_layers = paced_stage_layers(layers, last_layers, t_first, t_last)  # t_mb's stage (its weight casts)
    compute = t_mb * micro_batches + TF.step_copy_seconds(  # torchtitan's FSDP2 copies, its float8 all-gather's change
        spec, cluster, settings, tp=tp, pp=pp, shard=shard_group or dp * cp, zero=zero, micro_batches=micro_batches,
        cp=cp, stage_layers=paced_layers)
    bubble = t_mb * pipeline_bubble_fraction(pp, vpp, micro_batches)
    trained = trained_params_per_gpu(spec, settings, tp, pp, ep)  # full: the local parameters; LoRA: the adapters
    costs = step_communication(spec, cluster, settings, dp=dp, tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, zero=zero,
                               micro_batch=micro_batch, micro_batches=micro_batches, shard_group=shard_group,
                               layers=layers + mtp_on_first, trained_params=trained, t_attn_mb=t_attn_mb,
                               t_bwd_gemm_mb=t_bwd_gemm_mb, compute=compute, moe_phases=phases,
                               attention_forward_share=attention_forward_share(spec, cluster.gpu, settings, tp),
                               output_pass=output_pass)
    routed_forward = (mb_tokens * routed_seconds_per_token(spec, cluster.gpu, settings, mb_tokens, tp, ep)
                      if settings.moe_launch == "eager" else 0.0)  # read only under eager launch (moe_host)
    t_host = stage_exposed_host_seconds(spec, settings, phases, ep, layers, costs, routed_forward=routed_forward)
    stretched = compute + micro_batches * t_host
    if np.any(np.asarray(t_host) > 0):
        # A host-bound MoE layer stretches the layer's wall time to the host's, and the data-parallel gathers and
        # reduce-scatters on NCCL's stream run through that stretch as through GPU work: their window is the stretched
        # compute (the exposure alone read the GPU's, so a longer GPU time was credited twice, once against the host
        # and once against the collectives: the step fell as compute grew, session 25 review R2 S1-2). t_host reads
        # only the EP all-to-all's call time, which no window changes; the data-parallel costs alone are timed again.
        costs = with_data_parallel(costs, data_parallel_costs(
            spec, cluster, settings, dp=dp, tp=tp, pp=pp, cp=cp, ep=ep, zero=zero, micro_batches=micro_batches,
            shard_group=shard_group, layers=layers + mtp_on_first, trained_params=trained,
            t_bwd_gemm_mb=t_bwd_gemm_mb, compute=stretched, moe_phases=phases, vpp=vpp))
    compute, bubble = stretched, bubble * (1 + t_host / t_mb)
    t_experts = stage_expert_kernel_seconds(spec, settings, ep, layers + mtp_on_first,  # core.time.moe_layer
                                            low_precision_recipe(settings.dtype, settings.fp8_recipe),
                                            mb_tokens / tp, cluster.gpu.memory_bandwidth)
    compute, bubble = compute + micro_batches * t_experts, bubble * (1 + t_experts / t_mb)
    hbm = cluster.gpu.memory_bandwidth * settings.hbm_efficiency
    t_acc = accumulation_pass_seconds(spec, settings, trained, hbm, tp, pp, ep, zero, mtp)  # DeepSpeed's BF16_Optimizer
    compute, bubble = compute + micro_batches * t_acc, bubble * (1 + t_acc / t_mb)
    compute = compute + micro_batches * AO.microbatch_exposed_seconds(  # CPU activation offloading: pp 1 only
        spec, settings, cluster.gpu.id, mb_tokens, tp, spec.num_layers, phases)
    exposed = {name: by_parallelism(costs, name) for name in ("TP", "PP", "DP", "CP", "EP")}
    comm_total = sum((c.total for c in costs), 0.0)
    bubble = bubble + fill_drain_all_to_all(exposed["EP"], by_parallelism(costs, "EP", "total"),  # + the fill and
                                            settings.ep_a2a_overlap, pp, vpp, micro_batches)  # drain's EP all-to-alls
    # HSDP: each GPU updates the states of its shard group only (memory's ParallelLayout.state_shards; R1 M1)
    shards = optimizer_shards(spec, settings, zero, data=shard_group or dp * cp, tp=tp, pp=pp, ep=ep)  # + expert dp
    optimizer = 2 * 16.0 * trained / shards / hbm  # read+write weights, grads, fp32 master, 2 Adam states (HBM-bound)
    if settings.eager_ops is not None:
        optimizer = eager_optimizer_seconds(spec, cluster, settings, trained / shards, pp)
    mega = MS.step_extra_seconds(spec, settings, cluster.gpu, tp=tp, stage_layers=paced_layers, local_params=trained,
                                 shards=shards)  # Megatron: FP8 weight casts once a step, its distributed optimizer
    if mega is not None:
        compute, optimizer = compute + mega[0], mega[1]
    compute = compute + MG.loss_scale_seconds(settings, trained, cluster.gpu.memory_bandwidth)  # per-token loss
    return StepBreakdown(compute, bubble, exposed["TP"], exposed["PP"], exposed["DP"], exposed["CP"], exposed["EP"],
                         optimizer, comm_total=comm_total, moe_host=micro_batches * t_host,
                         moe_expert_kernels=micro_batches * t_experts, dp_traffic=by_parallelism(costs, "DP", "total"),
                         collectives=costs)


def model_flops_per_token(spec: ModelSpec, seq_len, finetune: str = "full", lora_rank: int = 16) -> float:
    """gpuplan's MFU numerator: exact training FLOPs per token with the PaLM/Megatron 'full'
    attention convention (no causal halving), LM head included, embeddings a lookup; with a
    frozen base (LoRA/QLoRA) the FLOPs a frozen base needs."""
    return F.training_flops_per_token(spec, seq_len, "full", finetune=finetune, lora_rank=lora_rank).model
