"""Host time a Megatron-Core MoE layer exposes where its dispatcher makes the host wait for the GPU.

Megatron-Core issues a MoE layer eagerly from Python unless a full-iteration CUDA graph replays
the step. The host normally runs ahead of the GPU (core.time.host): while the GPU works through
attention, the host queues the next kernels, so host time costs nothing as long as the GPU has
work. A MoE layer breaks that once per forward: the expert GEMMs need each expert's token count
on the host (Transformer Engine's GroupedLinear takes ``m_splits`` as a Python list), so the host
waits until the GPU has computed the counts, with the GPU then drained to that point. Read at
core_v0.15.0 (NeMo 25.11; the line numbers below are that tag's):

* ``alltoall`` (MoEAlltoAllTokenDispatcher): the counts are copied to the host on a side stream
  at ``cuda_dtoh_point = "before_permutation_1"`` and the host synchronises at
  ``cuda_sync_point = "before_ep_alltoall"`` (token_dispatcher.py L415-549, L822-860: the
  all-to-all's split sizes must be Python lists). After the sync the host issues the token and
  probability all-to-alls, the local-expert sort and the experts; the GPU runs the token
  all-to-all meanwhile.
* ``flex`` (DeepEP; HybridEP from core 0.16): the dispatch kernel itself waits for the counts,
  then ``permute(num_out_tokens=self.tokens_per_expert.sum().item())`` (DeepEP, L1116-1120) or
  the experts' ``tokens_per_expert.tolist()`` (HybridEP without a static budget: experts.py
  TEGroupedMLP.forward; ``num_permuted_tokens = None`` "will cause a CPU sync",
  token_dispatcher.py at HEAD d98e8a6) syncs again after the transfer. After it the host issues
  the permutation and the experts with no all-to-all left to hide behind.
* With ``moe_expert_rank_capacity_factor`` / drop-and-pad the sizes are static (no sync), which
  the Megatron-Bridge recipes set only together with full-iteration CUDA graphs
  (perf_recipes/qwen/common.py@v0.6.0 ``_enable_hybridep_full_iteration_mxfp8``).

After the sync the GPU is idle until the host's launches reach it; it stays busy once they come
faster than it works. The ops issued after the sync are mostly tiny launches (one quantisation
and one cuBLAS GEMM per local expert and linear: TE GroupedLinear's ``split_quantize`` and
``general_grouped_gemm`` loop over the experts in C++), so with many local experts and few tokens
per expert (micro-batch 1) the host falls behind the GPU and the difference is exposed:

    exposed per MoE layer and micro-batch = max(0, host_after_sync - gpu_after_sync)

host_after_sync = (dispatcher ops + expert-module ops) x the carried cost of a forward ATen op
(core.time.host: r x (CPU seconds per op - c) + k) + launches x k (C++ loops pay the CUDA launch
only); gpu_after_sync = the layer's MLP forward (experts, shared experts; MoeLayerPhases) + the
all-to-all calls the GPU runs after the sync (+ the paired micro-batch's MLP backward under the
combined 1F1B schedule, which runs on the other stream meanwhile). Before the sync and in the
backward (the autograd engine needs no host value: the split sizes are kept) the host runs
ahead, so only this segment is charged. Nothing here is fitted: the counts are read from the
code (not measured by running it: Megatron-Core's MoE layer needs CUDA streams and Transformer
Engine), the per-op costs are core.time.host's measured ones. Units: seconds, counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.bulk import maximum
from gpuplan.core.time.eager_fallbacks import EXPERT_BIAS
from gpuplan.core.time.host import cpu_seconds_per_op, reference_scale

MOE_LAUNCH_MODES = ("none", "eager", "graph")
"""How the framework issues a MoE layer: 'eager' (Megatron-Core from Python; this module's term),
'graph' (a full-iteration CUDA graph replays the step: no host term), 'none' (not modelled)."""


@dataclass(frozen=True)
class DispatcherHostOps:
    """What a dispatcher issues after its last host sync before the experts (one micro-batch)."""

    python_ops: int
    """ATen ops / autograd functions dispatched from Python after the sync (token_dispatcher.py)."""
    all_to_alls: int
    """All-to-all calls the GPU runs after the sync (cover for the host's launches)."""


DISPATCHER_HOST_OPS = {
    # token_dispatch L607-633: all_to_all (torch.empty + all_to_all_single) for the tokens and for
    # the probabilities (2 + 2); dispatch_postprocess L692: sort_chunks_by_idxs with
    # moe_permute_fusion (TE moe_sort_chunks_by_index_with_probs, 2). The token all-to-all runs
    # on the GPU meanwhile (the probability one is 1/h of its bytes: not counted as cover).
    "alltoall": DispatcherHostOps(python_ops=6, all_to_alls=1),
    # DeepEP get_permuted_hidden_states_by_experts L1100-1126: the fused permute after the
    # .item() sync (2); HybridEP: the permutation is inside the dispatch kernel (fewer: 2 kept)
    "flex": DispatcherHostOps(python_ops=2, all_to_alls=0),
}

EXPERT_MODULE_PYTHON_OPS = 10
"""TEGroupedMLP.forward (experts.py@core_v0.15.0): tokens_per_expert.tolist(), Fp8Padding of the
tokens and of the probabilities, unsqueeze, linear_fc1 (GroupedLinear entry), the fused weighted
SwiGLU, linear_fc2 (entry), Fp8Unpadding, _apply_bias, the output view: one op each. BF16 runs
skip the two paddings and the unpadding, counted the same (3 ops, 23 us: within the term's
uncertainty)."""

LAUNCHES_PER_LOCAL_EXPERT = {"fp8": 4, "fp4": 4, "bf16": 2}
"""Forward kernels per local expert: fc1 and fc2 each launch one cuBLAS GEMM per expert
(general_grouped_gemm) and, in FP8 / NVFP4, one input quantisation per expert
(tex.split_quantize); transformer_engine/pytorch/module/grouped_linear.py."""


EAGER_BIAS_PYTHON_OPS_PER_EXPERT = 2
"""Experts with biases under Megatron-Core's eager fc2 bias (core.time.eager_fallbacks 'expert-bias'):
``_apply_bias`` dispatches ``b * p`` and ``t + .`` from Python once per local expert
(experts.py@core_v0.15.0 L823-840), after the experts' GEMMs, still inside the segment."""


def forward_op_seconds() -> float:
    """One Python-dispatched forward op on the GPU machine's host (core.time.host carry-over)."""
    scale = reference_scale()
    return scale.seconds(cpu_seconds_per_op("forward", False), 1)


def host_after_sync_seconds(dispatcher: str, local_experts, dtype: str, eager_bias: bool = False) -> float:
    """Host seconds to issue a MoE layer's forward from its dispatcher's sync to the experts' end
    (``eager_bias``: the experts' fc2 bias is added expert by expert from Python)."""
    ops = DISPATCHER_HOST_OPS[dispatcher].python_ops + EXPERT_MODULE_PYTHON_OPS \
        + eager_bias * EAGER_BIAS_PYTHON_OPS_PER_EXPERT * local_experts
    launches = LAUNCHES_PER_LOCAL_EXPERT.get(dtype, LAUNCHES_PER_LOCAL_EXPERT["bf16"]) * local_experts
    return ops * forward_op_seconds() + launches * reference_scale().launch


def exposed_host_seconds(dispatcher: str, local_experts, dtype: str, mlp_forward, all_to_all_seconds,
                         paired_mlp_backward=0.0, eager_bias: bool = False):
    """Seconds one MoE layer's forward waits on the host after the dispatcher's sync, per
    micro-batch: max(0, host after the sync - GPU work queued after it)."""
    gpu = mlp_forward + DISPATCHER_HOST_OPS[dispatcher].all_to_alls * all_to_all_seconds + paired_mlp_backward
    return maximum(host_after_sync_seconds(dispatcher, local_experts, dtype, eager_bias) - gpu, 0.0)


def stage_exposed_host_seconds(spec, settings, phases, ep, layers, costs):
    """Per micro-batch: the exposed host seconds of the MoE layers among a stage's ``layers``
    (0 unless ``settings.moe_launch`` is 'eager' and the model has MoE layers). ``costs``: the
    step's collectives (core.comm.step_comm), for one EP all-to-all call's seconds."""
    if settings.moe_launch != "eager" or spec.moe is None or not spec.num_moe_layers:
        return 0.0
    ep_cost = [c for c in costs if c.parallelism == "EP"]
    one_call = ep_cost[0].total / maximum(ep_cost[0].calls, 1.0) if ep_cost else 0.0
    local_experts = spec.moe.num_experts / ep
    dtype = settings.dtype if settings.dtype in LAUNCHES_PER_LOCAL_EXPERT else "bf16"
    paired = phases.mlp_backward if settings.ep_a2a_overlap else 0.0
    eager_bias = spec.moe.expert_bias and EXPERT_BIAS in settings.eager_fallbacks
    per_layer = exposed_host_seconds(settings.ep_dispatcher, local_experts, dtype, phases.mlp_forward, one_call,
                                     paired, eager_bias)
    return per_layer * spec.num_moe_layers * layers / spec.num_layers
