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
  the permutation and the experts.
* With ``moe_expert_rank_capacity_factor`` / drop-and-pad the sizes are static (no sync): the
  Megatron-Bridge presets with full-iteration CUDA graphs (perf_recipes/qwen/common.py@v0.6.0
  ``_enable_hybridep_full_iteration_mxfp8``) and the 25.09 perf script's token-drop runs
  (``apply_moe_token_drop(capacity_factor=1.0, pad_to_capacity=True)``; moe_launch 'static').

Each sync empties the host's lead: from one MoE layer's sync to the next layer's, the GPU runs only
what the host has issued since, so that stretch (the experts, the combine, the next layer's
attention, router and dispatcher preprocessing) takes the longer of its host and GPU times. Per MoE
layer and micro-batch:

    exposed = max(0, host_layer - gpu_layer_forward)
    host_layer = MOE_LAYER_HOST_SECONDS + host_after_sync (+ ungraphed_router_seconds)

(the last where the recipe has no TE CUDA graphs of the router and the dispatcher's preprocessing,
StepSettings.moe_router_graphs False: the ops those graphs replay in MOE_LAYER_HOST_SECONDS' profile)

gpu_layer_forward = the layer's forward (attention and router, MLP: MoeLayerPhases) + its two
forward all-to-alls where they run on the critical path (not under the combined 1F1B schedule,
where the paired micro-batch's MLP backward runs on the other stream instead and is counted as
cover), plus the fixed GPU time of the eager fallbacks' kernels, which the phases' per-token terms leave out (the fc2
bias's per expert, the clamp's and the bias add's: core.time.moe_layer.eager_fallback_layer_seconds; the backward
likewise; the RoPE's are in the phases, core.time.step charging them as element-wise work): the host issues them, so a
host-bound layer hides them up to its excess, and core.time.step's expert-kernel term, charged after this one, adds only
what the host did not cover. host_after_sync counts what grows with the layout: (dispatcher ops + expert-module ops) x
the carried cost of a forward ATen op (core.time.host: r x (CPU seconds per op - c) + k) + the
per-expert launches x k (TE GroupedLinear's ``split_quantize`` and ``general_grouped_gemm`` loop
over the experts in C++: per local expert 2 launches in BF16, 4 in MXFP8 and 10 in FP8 current
scaling, whose quantiser launches four kernels per expert slice, core.time.moe_layer). MOE_LAYER_HOST_SECONDS, the rest of the layer's host time, is the one
fitted constant (a published Nsight profile, below); 'static' and 'graph' layers have no sync.

The backward needs no host value (the split sizes are kept), so nothing in it waits for the GPU, but
running ahead needs a lead, and a micro-batch's backward starts with almost none: in the plain (not
combined) 1F1B schedule the forward ends at its last MoE layer's sync plus the few ops after it, and
a pipeline stage without the LM head starts its backward only when the next stage's gradient arrives.
From there the host issues every layer's backward (autograd's C++ engine, TE's and Megatron's Python
autograd functions, the per-expert launches) while the GPU runs it, so a MoE layer's backward takes
the longer of the two (backward_exposed_seconds), the GPU's with its two backward all-to-alls on the
critical path:

    exposed_backward = max(0, host_backward - gpu_layer_backward)
    host_backward = (host_layer - forward launches) x backward_to_forward_host() + backward launches

host_backward is counted, not fitted: the forward's Python carried by the ratio of core.time.host's
measured decoder layer (backward 756 us / 467 ops over forward 704 us / 210 ops, both carried to the
GPU host: 1.454; TE's fused grouped MLP measures 1.74 per expert, 33 / 19 us on Grace,
TransformerEngine#2897) plus the backward's per-expert launches (core.time.moe_layer: BF16 4, MXFP8 6,
current scaling 12) x k. Not counted: the LM head's GPU time, which gives the last stage a lead of
that much per micro-batch (so the term is an upper bound there by up to the head's forward +
backward), the recompute's GPU time and host ops, Megatron DDP's per-parameter gradient hooks. Under
the combined 1F1B schedule the paired forward's sync bounds the backward's run-ahead instead
(scripts/combined_host_check.py, not adopted: docs/step.md). Units: seconds, counts.
"""

from __future__ import annotations

from functools import cache

from gpuplan.core.bulk import maximum
from gpuplan.core.comm.moe_overlap import ALL_TO_ALLS_PER_LAYER
from gpuplan.core.time.eager_fallbacks import CLAMPED_GLU, EXPERT_BIAS, YARN_ROPE, eager_rope_bytes_per_token
from gpuplan.core.time.host import HOST_SECONDS_PER_OP, cpu_seconds_per_op, reference_scale
from gpuplan.core.time.low_precision import low_precision_recipe
from gpuplan.core.time.moe_layer import backward_launches_per_local_expert, forward_launches_per_local_expert, \
    eager_fallback_layer_seconds

MOE_LAUNCH_MODES = ("none", "eager", "static", "graph")
"""How the framework issues a MoE layer: 'eager' (Megatron-Core from Python; this module's term),
'static' (eager, but drop-and-pad to capacity makes the split sizes static: the alltoall
dispatcher's preprocess builds ``num_tokens_per_local_expert`` on the host from the capacity and
moves no count, token_dispatcher.py@core_v0.14.0 ``if self.drop_and_pad``; no sync, no host term),
'graph' (a full-iteration CUDA graph replays the step: no host term), 'none' (not modelled)."""

MOE_LAYER_HOST_SECONDS = 2.938e-3
"""Host seconds to issue one MoE layer's forward from sync to sync beyond host_after_sync_seconds'
count (attention's TE modules, the router, the dispatcher's preprocessing and buffer sizing, the
combine, TE GroupedLinear's per-GEMM torch.split / torch.empty and quantizer set-up:
TransformerEngine#1499, #2897; and any rank skew at the EP-wide sync: the profile does not split
them), on an H100 DGX host. Fitted on one published profile, not on a
throughput row: Megatron-Bridge skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md@067f987
(Qwen3-30B-A3B, 16 H100, BF16, HybridEP, EP 16, MBS 1, GBS 1024, EP overlap off, moe_router and
moe_preprocess graphed): step 24.7138 s, Nsight 'GPU-active interval union' 22.821 s, so the GPU
idles 1.893 s a step, 0.616 ms per MoE layer (64 micro-batches x 48 layers). The step model's GPU
forward of that layer is 2.514 ms (attention 0.865, MLP 0.877, two HybridEP all-to-alls of 0.386),
its backward with its two all-to-alls 4.457 ms, and the count after the sync 0.143 ms. The idle is
shared between the forward's exposure, C + 0.143 - 2.514, and the counted backward's (module
docstring), (C + 0.143 - 0.052) x 1.454 + 0.104 - 4.457 (8 local experts, BF16: 2 / 4 launches of
3.25 us each): C = 2.938 ms splits it 0.566 + 0.052 ms (2.99 ms before the backward was counted;
the same model's GPU step, 22.86 s, is within 0.2% of the profile's GPU-active time). Held out: every throughput
row but mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep, the profiled run's recipe and layout (its
host term is 0 with its overlap on); the FP8-CS 16-H100 EP16 rows are that layout in FP8 (docs/step.md).
Read from the profile's host work instead of its idle (the off run's wall a layer less the >= 0.794 ms wait its
metadata-preprocess NVTX range shows: forward + backward <= 6.793 ms), C would be 2.614 ms; not adopted (it leaves
that run 0.242 ms of idle, and with the combined schedule counted the skill's overlap saving turns into a cost:
docs/step.md, 'The host constant re-read from its own profile')."""


DISPATCHER_HOST_OPS = {
    # token_dispatch L607-633: all_to_all (torch.empty + all_to_all_single) for the tokens and for
    # the probabilities (2 + 2); dispatch_postprocess L692: sort_chunks_by_idxs with
    # moe_permute_fusion (TE moe_sort_chunks_by_index_with_probs, 2)
    "alltoall": 6,
    # DeepEP get_permuted_hidden_states_by_experts L1100-1126: the fused permute after the
    # .item() sync (2); HybridEP: the permutation is inside the dispatch kernel (fewer: 2 kept)
    "flex": 2,
}
"""ATen ops / autograd functions a dispatcher dispatches from Python after its last host sync before
the experts (one micro-batch; token_dispatcher.py@core_v0.15.0)."""

EXPERT_MODULE_PYTHON_OPS = 10
"""TEGroupedMLP.forward (experts.py@core_v0.15.0): tokens_per_expert.tolist(), Fp8Padding of the
tokens and of the probabilities, unsqueeze, linear_fc1 (GroupedLinear entry), the fused weighted
SwiGLU, linear_fc2 (entry), Fp8Unpadding, _apply_bias, the output view: one op each. BF16 runs
skip the two paddings and the unpadding, counted the same (3 ops, 23 us: within the term's
uncertainty)."""



ROUTER_PYTHON_OPS = 39
"""Forward ops the host dispatches for one MoE layer's pre-MLP norm and TopKRouter.forward (one micro-batch)
when no CUDA graph replays them, read at Megatron-Core d7288711 (Megatron-Bridge v0.4.0's pin, in core_v0.17.0;
the same calls at v0.3.0's b0cc270 and v0.5.0's d0b3b77) for the published rows' router: softmax after top-k,
'aux_loss' load balancing, moe_router_fusion False (Megatron-Bridge recipes/qwen/qwen3_moe.py@v0.4.0 L76),
force-balanced random logits (scripts/performance/utils/overrides.py@v0.4.0 L286-291). Counted as one op each,
views included, as DISPATCHER_HOST_OPS are: the pre-MLP norm (TE RMSNorm, 1); gating
(RouterGatingLinearFunction.apply, inp.view, te_general_gemm, output.view: moe_utils.py L1293-1335, 4);
apply_random_logits (RandomSTE.apply, the RNG tracker fork's get / set state, clone, normal_: L1194-1215, 5);
logits.view (router.py L602, 1); unfused top-k with softmax (topk, softmax, type_as; zeros_like + scatter for
the probabilities, zeros_like + int + scatter + bool for the map: moe_utils.py L787-821, 9); the aux loss's
scores (softmax, topk, zeros_like, int, scatter, bool: L856-866, 6); _apply_aux_loss (routing_map.sum and the
TP-CP reduce, L227-246; probs.sum, mul, sum, scale, L142-145; / coeff; the tracker's detach, select, add_ and
setitem, L943-975; MoEAuxLossAutoScaler.apply: 12); the torch.compile'd _apply_expert_bias call (1). DeepSeek-V3's
sigmoid, group-limited, sequence-aux-loss router issues more and GPT-OSS's (no aux loss) fewer; the model spec
does not name the router's score function, so one count serves (docs/step.md)."""

PREPROCESS_PYTHON_OPS = {
    # MoEAlltoAllTokenDispatcher.dispatch_preprocess + preprocess (token_dispatcher.py@d7288711 L471-575,
    # L594-649; EP > 1, permute fusion): hidden view 1; the counts' sum + long 2, input_splits reshape + sum 2,
    # the EP all-gather of the counts (autograd function, empty, all_gather_into_tensor) 3, reshape + transpose
    # 2, slice + contiguous 2, three sums and an index 4, view 1; the fused permute 1. The device-to-host
    # copies run with or without the graph (the graph moves them to 'before_ep_alltoall'), not counted
    "alltoall": 18,
    # MoEFlexTokenDispatcher.dispatch_preprocess (L1418-1442): hidden view 1; _initialize_metadata (L1390-1414):
    # reshape, expand, reshape, contiguous for the map and for the probabilities 8; HybridEP's setup_metadata
    # (L1007-1010) two reshapes 2: 11 views (the method is torch.compile'd, jit_fuser; its guard cost is not
    # measured here, so it is counted op by op)
    "flex": 11,
}
"""Forward ops of a dispatcher's preprocessing that a 'moe_preprocess' CUDA graph replays (one micro-batch)."""

GRAPH_REPLAY_OPS = {"alltoall": 14, "flex": 8}
"""Host ops of replaying the router + preprocessing graph in their place (transformer_engine/pytorch/graph.py@v2.9
Graphed.forward L641-660): the autograd function 1, the copy of the layer's input into the static buffer 1,
fwd_graph.replay() 1 and one detach per output: hidden states, probabilities and residual 3, plus the
dispatcher's graphed attributes (cudagraph_attrs, token_dispatcher.py@d7288711 L451-466: 8 for alltoall;
L1377: 2 for flex), which transformer_layer.py L1122-1131 sets back on the dispatcher."""


def ungraphed_router_seconds(dispatcher: str, graphed: bool) -> float:
    """Host seconds one MoE layer-micro-batch adds before its dispatcher's sync when the router and the
    dispatcher's preprocessing are issued from Python instead of replayed as CUDA graphs (``graphed``: they
    are, as in MOE_LAYER_HOST_SECONDS' profile: 0): the ops those graphs remove, less the replay's own."""
    if graphed:
        return 0.0
    ops = ROUTER_PYTHON_OPS + PREPROCESS_PYTHON_OPS[dispatcher] - GRAPH_REPLAY_OPS[dispatcher]
    return ops * forward_op_seconds()


EAGER_BIAS_PYTHON_OPS_PER_EXPERT = 2
"""Experts with biases under Megatron-Core's eager fc2 bias (core.time.eager_fallbacks 'expert-bias'):
``_apply_bias`` dispatches ``b * p`` and ``t + .`` from Python once per local expert
(experts.py@core_v0.15.0 L823-840), after the experts' GEMMs, still inside the segment."""


EAGER_ROPE_PYTHON_OPS_PER_TENSOR = 15 - 1
"""Forward ops Megatron-Core's unfused RoPE (core.time.eager_fallbacks 'yarn-rope') dispatches for one of q / k beyond the
fused path's one ``fused_apply_rotary_pos_emb`` call: ``_apply_rotary_pos_emb_bshd`` (rope_utils.py@2edffad L92-126,
the same at core_v0.16.0-0.19.0) slices t twice (L113), builds cos_ and sin_ with cos / sin, ``* mscale`` and ``.to``
each (L122-123: 6), ``t * cos_``, ``_rotate_half``'s chunk, neg and cat (L83-84: 3), ``* sin_``, the sum and the closing
cat (L125-126): 15. SelfAttention calls it for the query and the key (attention.py@2edffad L1106-1125): 2 a layer.
MOE_LAYER_HOST_SECONDS' profiled layer (Qwen3-30B-A3B, mscale 1) took the fused call."""
EAGER_CLAMP_PYTHON_OPS = 5
"""Forward ops the clamped quick-GEGLU (core.time.eager_fallbacks 'clamped-glu') dispatches beyond the unclamped
weighted activation: ``input.chunk``, the two ``clamp`` calls, ``torch.cat`` and the offset's ``torch.tensor``
(fused_bias_geglu.py@2edffad L428-439; the tensor's host sync is activation_sync_extra_seconds'). All five run
before that sync."""


def fallback_python_ops(spec, fallbacks: tuple[str, ...]) -> tuple[int, int]:
    """(ops before the activation's sync, all ops) that a MoE layer's forward adds to MOE_LAYER_HOST_SECONDS' count
    for the eager fallbacks the run takes (core.time.eager_fallbacks; the fc2 bias is host_after_sync_seconds'):
    the unfused RoPE of q and k where the model has a YaRN attention factor, the activation's clamp where it has one."""
    rope = 2 * EAGER_ROPE_PYTHON_OPS_PER_TENSOR * (YARN_ROPE in fallbacks and eager_rope_bytes_per_token(spec) > 0)
    clamp = EAGER_CLAMP_PYTHON_OPS * (CLAMPED_GLU in fallbacks and spec.moe is not None
                                      and spec.moe.activation_clamp is not None)
    return clamp, rope + clamp


def forward_op_seconds() -> float:
    """One Python-dispatched forward op on the GPU machine's host (core.time.host carry-over)."""
    scale = reference_scale()
    return scale.seconds(cpu_seconds_per_op("forward", False), 1)


def host_after_sync_seconds(dispatcher: str, local_experts, recipe: str | None, eager_bias: bool = False) -> float:
    """Host seconds to issue a MoE layer's forward from its dispatcher's sync to the experts' end
    (``recipe``: the linears' low-precision recipe, None for BF16; ``eager_bias``: the experts' fc2
    bias is added expert by expert from Python). The per-expert launches are TE GroupedLinear's
    (core.time.moe_layer.forward_launches_per_local_expert: each quantisation's kernels and each GEMM,
    launched from C++ at core.time.host's launch cost k)."""
    ops = DISPATCHER_HOST_OPS[dispatcher] + EXPERT_MODULE_PYTHON_OPS \
        + eager_bias * EAGER_BIAS_PYTHON_OPS_PER_EXPERT * local_experts
    launches = forward_launches_per_local_expert(recipe) * local_experts
    return ops * forward_op_seconds() + launches * reference_scale().launch


def exposed_host_seconds(dispatcher: str, local_experts, recipe: str | None, layer_forward, paired_mlp_backward=0.0,
                         eager_bias: bool = False, router_graphs: bool = True, fallback_ops: int = 0):
    """Seconds one MoE layer's forward waits on the host per micro-batch: max(0, the host's sync-to-sync
    time (MOE_LAYER_HOST_SECONDS + host_after_sync_seconds + ungraphed_router_seconds) - ``layer_forward``,
    the GPU's forward of the layer with its critical-path all-to-alls, - ``paired_mlp_backward``, the
    combined 1F1B schedule's other micro-batch; ``fallback_ops``: fallback_python_ops' all-ops count)."""
    host = layer_host_seconds(dispatcher, local_experts, recipe, eager_bias, router_graphs, fallback_ops)
    return maximum(host - layer_forward - paired_mlp_backward, 0.0)


def layer_host_seconds(dispatcher: str, local_experts, recipe: str | None, eager_bias: bool = False,
                       router_graphs: bool = True, fallback_ops: int = 0):
    """The host's sync-to-sync seconds of one MoE layer's forward: MOE_LAYER_HOST_SECONDS +
    host_after_sync_seconds + ungraphed_router_seconds + the eager fallbacks' ``fallback_ops`` (fallback_python_ops)
    (also scripts/combined_host_check.py's forward)."""
    return MOE_LAYER_HOST_SECONDS + host_after_sync_seconds(dispatcher, local_experts, recipe, eager_bias) \
        + ungraphed_router_seconds(dispatcher, router_graphs) + fallback_ops * forward_op_seconds()


MEASURED_LAYER_OPS = {"forward": 210, "backward": 467}
"""ATen ops of core.time.host's measured decoder layer (HOST_SECONDS_PER_OP: 704 us / 210, 756 us / 467)."""


@cache
def backward_to_forward_host() -> float:
    """The measured layer's backward host seconds over its forward's, both carried to the GPU host
    (r x (t - n x c) + n x k, core.time.host: r 1.506, k 3.25 us): 2.305 ms / 1.585 ms = 1.454."""
    scale = reference_scale()
    phase = {p: scale.seconds(HOST_SECONDS_PER_OP[p] * n, n) for p, n in MEASURED_LAYER_OPS.items()}
    return phase["backward"] / phase["forward"]


def backward_host_seconds(dispatcher: str, local_experts, recipe: str | None, eager_bias: bool = False,
                          router_graphs: bool = True, fallback_ops: int = 0):
    """Host seconds to issue one MoE layer's backward (module docstring): the forward's Python (layer_host_seconds
    less its per-expert launches) x backward_to_forward_host() + the backward's per-expert launches x k."""
    launch = reference_scale().launch
    forward_python = layer_host_seconds(dispatcher, local_experts, recipe, eager_bias, router_graphs, fallback_ops) \
        - forward_launches_per_local_expert(recipe) * local_experts * launch
    return forward_python * backward_to_forward_host() + backward_launches_per_local_expert(recipe) * local_experts * launch


def backward_exposed_seconds(dispatcher: str, local_experts, recipe: str | None, layer_backward,
                             eager_bias: bool = False, router_graphs: bool = True, fallback_ops: int = 0):
    """Seconds one MoE layer's backward waits on the host per micro-batch under the plain schedule:
    max(0, backward_host_seconds - ``layer_backward``, the GPU's backward of the layer with its all-to-alls)."""
    host = backward_host_seconds(dispatcher, local_experts, recipe, eager_bias, router_graphs, fallback_ops)
    return maximum(host - layer_backward, 0.0)


FORWARD_ALL_TO_ALLS = ALL_TO_ALLS_PER_LAYER // 2
"""Dispatch and combine: the all-to-alls of one MoE layer's forward (the forward half of core.comm.moe_overlap's
ALL_TO_ALLS_PER_LAYER)."""
BACKWARD_ALL_TO_ALLS = ALL_TO_ALLS_PER_LAYER - FORWARD_ALL_TO_ALLS
"""The dispatch's and the combine's gradients: the all-to-alls of one MoE layer's backward."""


def stage_exposed_host_seconds(spec, settings, phases, ep, layers, costs, routed_forward=0.0):
    """Per micro-batch: the exposed host seconds of the MoE layers among a stage's ``layers``
    (0 unless ``settings.moe_launch`` is 'eager' and the model has MoE layers). ``costs``: the
    step's collectives (core.comm.step_comm), for one EP all-to-all call's seconds; ``routed_forward``: one
    layer's routed expert GEMMs in the forward (core.time.step.routed_seconds_per_token x tokens), for the
    activation's sync (activation_sync_extra_seconds)."""
    if settings.moe_launch != "eager" or spec.moe is None or not spec.num_moe_layers:
        return 0.0
    one_call, local_experts, recipe, eager_bias = stage_host_inputs(spec, settings, ep, costs)
    combined = bool(settings.ep_a2a_overlap)  # the all-to-alls run beside the paired micro-batch instead
    # the eager fallbacks' kernels' fixed GPU time, which the phases do not hold: the host issues them, so a host-bound
    # layer takes max(host, GPU + them) (core.time.moe_layer.eager_fallback_layer_seconds; review w12 M1)
    fixed_forward, fixed_backward = eager_fallback_layer_seconds(spec, settings, ep)
    layer_forward = phases.pre_dispatch_forward + phases.mlp_forward + (not combined) * FORWARD_ALL_TO_ALLS * one_call \
        + fixed_forward
    paired = phases.mlp_backward if combined else 0.0
    before_sync, fallback_ops = fallback_python_ops(spec, settings.eager_fallbacks)
    per_layer = exposed_host_seconds(settings.ep_dispatcher, local_experts, recipe, layer_forward, paired, eager_bias,
                                     settings.moe_router_graphs, fallback_ops)
    if not combined:  # the plain schedule (the combined one pairs each layer with the other micro-batch's)
        if CLAMPED_GLU in settings.eager_fallbacks and spec.moe.activation_clamp is not None:
            # the clamped quick-GEGLU path syncs the host a second time, at the activation (below)
            per_layer = per_layer + activation_sync_extra_seconds(settings, local_experts, recipe, phases, one_call,
                                                                  eager_bias, routed_forward, (before_sync, fallback_ops),
                                                                  fixed_forward)
        # its backward: no sync, but no lead to run ahead with (module docstring)
        layer_backward = phases.pre_dispatch_backward + phases.mlp_backward + BACKWARD_ALL_TO_ALLS * one_call \
            + fixed_backward
        per_layer = per_layer + backward_exposed_seconds(settings.ep_dispatcher, local_experts, recipe, layer_backward,
                                                         eager_bias, settings.moe_router_graphs, fallback_ops)
    return per_layer * spec.num_moe_layers * layers / spec.num_layers


EXPERT_OPS_BEFORE_ACTIVATION = 5
"""Of EXPERT_MODULE_PYTHON_OPS, those TEGroupedMLP.forward dispatches before the activation: tokens_per_expert.tolist(),
the two Fp8Paddings, unsqueeze, linear_fc1 (experts.py@core_v0.16.0)."""
FC1_SHARE_OF_EXPERT_GEMMS = 2.0 / 3.0
"""fc1's share of a gated expert MLP's GEMM time: 2 x I x h of its 3 x I x h weights (the gate and up halves)."""


def activation_sync_extra_seconds(settings, local_experts, recipe, phases, one_call, eager_bias, routed_forward,
                                  fallback_ops: tuple[int, int] = (0, 0), fixed_forward: float = 0.0):
    """Host seconds a MoE layer's forward waits beyond exposed_host_seconds' when its activation syncs the host.

    Megatron-Core's clamped quick-GEGLU (TEGroupedMLP.bias_act_func -> weighted_bias_quick_geglu_impl,
    fused_bias_geglu.py L410-441 at core_v0.15.0 through core_v0.18.0: GPT-OSS, bias_activation_fusion True in
    Megatron-Bridge's provider / bridge v0.2.2-v0.6.0) builds its offset on every call with
    ``torch.tensor(linear_offset, dtype=input.dtype, device=input.device)``: a pageable host-to-device copy,
    which PyTorch issues non_blocking=False (torch/csrc/utils/tensor_new.cpp internal_new_from_data), i.e.
    ``memcpy_and_sync`` = cudaMemcpyAsync + cudaStreamSynchronize (aten/src/ATen/native/cuda/Copy.cu,
    c10/cuda/CUDAFunctions.h); PyTorch's sync debug mode flags it (pytorch/pytorch#120996), and #190217
    (2026-07, open) times the call waiting for the queued work. The host waits there for the GPU to finish the layer's dispatch and fc1, so the
    forward's sync-to-sync stretch is two: (dispatch all-to-all + fc1, issued by the dispatcher's ops, the
    experts' ops before the activation and fc1's launches) and the rest, each taking max(host, GPU) (the first is
    GPU-bound on every published layout, by a margin that closes near 512 tokens a micro-batch on GPT-OSS-120B):

        extra = max(0, host_first - gpu_first) + max(0, host_rest - gpu_rest) - max(0, host_layer - gpu_layer),
        gpu_rest = gpu_layer - (one all-to-all + FC1_SHARE_OF_EXPERT_GEMMS x ``routed_forward``)

    (``routed_forward``: the layer's routed expert GEMMs in the forward, core.time.step.routed_seconds_per_token;
    MOE_LAYER_HOST_SECONDS is taken wholly after the activation: its parts are the attention, router,
    preprocessing and combine, fc1's GroupedLinear set-up being the exception). The same call in the backward,
    under 'moe_act' recompute, syncs once per layer there: the per-layer max of backward_exposed_seconds.
    ``fallback_ops``: fallback_python_ops' (before the sync, all) counts, in host_first and in the layer's host;
    ``fixed_forward``: the eager fallbacks' kernels' fixed GPU seconds (moe_layer.eager_fallback_layer_seconds'
    forward), in gpu_layer, after the activation's sync (fc2's bias, the clamp, the next layer's RoPE)."""
    combined = bool(settings.ep_a2a_overlap)
    if combined:
        return 0.0
    launch, op = reference_scale().launch, forward_op_seconds()
    dispatcher = settings.ep_dispatcher
    host = layer_host_seconds(dispatcher, local_experts, recipe, eager_bias, settings.moe_router_graphs, fallback_ops[1])
    host_first = (DISPATCHER_HOST_OPS[dispatcher] + EXPERT_OPS_BEFORE_ACTIVATION + fallback_ops[0]) * op \
        + forward_launches_per_local_expert(recipe) / 2 * local_experts * launch  # fc1's half of the launches
    gpu = phases.pre_dispatch_forward + phases.mlp_forward + FORWARD_ALL_TO_ALLS * one_call + fixed_forward
    gpu_first = one_call + FC1_SHARE_OF_EXPERT_GEMMS * routed_forward
    return (maximum(host_first - gpu_first, 0.0) + maximum(host - host_first - (gpu - gpu_first), 0.0)
            - maximum(host - gpu, 0.0))


def stage_host_inputs(spec, settings, ep, costs):
    """(one EP all-to-all call's seconds, local experts, the linears' low-precision recipe, whether the experts'
    bias is added eagerly) of a stage's MoE layers: what stage_exposed_host_seconds (and
    scripts/combined_host_check.py's paired term) price the host with."""
    ep_cost = [c for c in costs if c.parallelism == "EP"]
    one_call = ep_cost[0].total / maximum(ep_cost[0].calls, 1.0) if ep_cost else 0.0
    eager_bias = spec.moe.expert_bias and EXPERT_BIAS in settings.eager_fallbacks
    return one_call, spec.moe.num_experts / ep, low_precision_recipe(settings.dtype, settings.fp8_recipe), eager_bias
