#!/usr/bin/env python3
"""The combined-1F1B host serialisation, sized on the published rows (issue 37 diagnostic, model unchanged).

Substitutes the per-layer-pair term defined below (max(0, host forward + host backward + the schedule nodes'
Python - the pair's GPU time); a rejected alternative, kept here and out of the package) for
core.time.moe_host's on every layout that runs the EP all-to-all overlap (Megatron-Core's combined 1F1B
schedule), and prints, for every published row with ``moe_comm.a2a_overlap`` and for NVIDIA's own on / off
pairs (Megatron-Bridge PR #1760: Qwen3-235B on 64 B200; the EP-overlap skill: Qwen3-30B on 16 H100), the step
model's prediction with the current term and with the substitute. ``--scale S`` multiplies the substitute's
backward + node host seconds by S (what the skill pair's overlap-on profile allows, docs/step.md). Nothing is
fitted into the model. ~10 s.

    python scripts/combined_host_check.py [--scale 1.0] [--no-node-overhead] [--refit high|low]

Host time of a MoE layer pair under Megatron-Core's combined 1F1B schedule (the EP all-to-all overlap,
``--overlap-moe-expert-parallel-comm``), read from the code and priced at core.time.host's and
core.time.moe_host's costs. A diagnostic (docs/step.md, "The combined schedule's host, counted"): the step
model keeps core.time.moe_host's term; this script sizes the alternative.

What the code does (Megatron-Core core_v0.15.0, NeMo 25.11's pin; the same order at core_v0.16.1 and
core_v0.17.0). TransformerLayerSchedulePlan.run (models/common/model_chunk_schedule_plan.py L198-236) issues,
from one Python thread, per layer pair: the backward micro-batch's combine backward; the forward's attention
and post-attention (norm, router, dispatcher preprocessing: fine_grained_callables.py L345-366); the
backward's MLP backward (dgrad only: with delay_wgrad_compute the weight GEMMs wait for ``backward_dw``);
the forward's dispatch; the backward's MLP ``backward_dw`` and dispatch backward; the forward's MLP and
combine; the backward's post-attention and attention backward and the attention ``backward_dw``. Every
backward is a blocking ``Variable._execution_engine.run_backward`` call (pipeline_parallel/utils.py
L153-162, L214-236), so its host work sits between the forward's nodes. The forward's dispatch runs
``_maybe_dtoh_and_synchronize('before_ep_alltoall')`` (token_dispatcher.py L620-625): ``d2h_event.synchronize()``
(L857-859) on the event the side stream recorded after waiting for the compute stream at
'before_permutation_1' (L589, L829-855), inside post-attention. The host therefore waits for the GPU up
to the forward's router once per layer pair, with only the backward's MLP dgrad (queued just before the
sync) left in the GPU's queue; from one sync to the next it issues one whole layer forward AND one whole
layer backward, and the GPU runs one whole pair. Per MoE layer pair:

    exposed = max(0, host_forward + host_backward + node_overhead - gpu_pair)

where the plain schedule has max(0, host_forward - gpu_forward) + max(0, host_backward - gpu_backward)
(core.time.moe_host: its backward runs ahead of the GPU only as far as a lead allows, none at its start). host_forward is core.time.moe_host's (MOE_LAYER_HOST_SECONDS, fitted on the
Megatron-Bridge skill profile, + the counted post-sync ops and per-expert launches + an ungraphed router).

host_backward has no profile; it is core.time.moe_host.backward_host_seconds, which the plain schedule's
backward term also uses. It is priced from core.time.host's one measured decoder layer: on the
measuring CPU its backward took 756 us for 467 ATen ops and its forward 704 us for 210 ops
(HOST_SECONDS_PER_OP), which carried to the GPU host (r, k: core.time.host.reference_scale) is
backward_to_forward_host() = 1.45 x the forward. That ratio scales the forward's Python (everything in
host_forward but its per-expert launches); the backward's per-expert launches are counted as the forward's
are (core.time.moe_layer: per expert 2 output-gradient quantisations and 4 GEMMs, dgrad + wgrad of fc1 and
fc2), at the launch cost k. node_overhead is the schedule's own Python per node (ScheduleNode._forward /
_backward, TransformerLayerNode.detach / backward_dw: SCHEDULE_NODE_HOST_OPS), at the forward op's cost.
Nothing is fitted. Units: seconds.

Result (this script, at e890e69: before the plain schedule's backward term and the refit of
MOE_LAYER_HOST_SECONDS to 2.938 ms that came with it): as counted (host pair 8.7-9.7 ms) it gives NVIDIA's PR #1760 pairs
their sign (BF16 overlap on / off 15.40 / 14.44 s, measured 17.2 / 16.0) but makes the EP-overlap skill's
overlap-on run 28.0 s (measured 20.99 s, its Nsight GPU-active 21.22 s: no host gap at all); the largest
backward the skill allows (x 0.585) leaves the 64-B200 row at +46%. Not adopted.
"""

from __future__ import annotations

import argparse
import contextlib
import copy

from gpuplan.core.bulk import maximum
from gpuplan.core.time.moe_host import (  # the counted backward is the package's (plain-schedule term)
    FORWARD_ALL_TO_ALLS,
    backward_host_seconds,
    backward_to_forward_host,
    exposed_host_seconds,
    forward_op_seconds,
    host_after_sync_seconds,
    layer_host_seconds,
    stage_host_inputs,
)
from gpuplan.core.comm.moe_overlap import EP_COMM_SM_SHARE, paired_layer_exposed, unpaired_micro_batches
from gpuplan.core.time.host import reference_scale
from gpuplan.core.time.moe_layer import backward_launches_per_local_expert, forward_launches_per_local_expert

forward_host_seconds = layer_host_seconds
"""core.time.moe_host's sync-to-sync host seconds of one MoE layer's forward (imported, not copied)."""

SCHEDULE_NODE_HOST_OPS = 127
"""Python-dispatched ops the combined schedule adds per layer pair for its five nodes (pipeline_parallel/
utils.py@core_v0.15.0 ScheduleNode, fine_grained_callables.py TransformerLayerNode). Forward, per node:
event.wait, nvtx push, the stream context (enter, exit), nvtx pop, event.record (6) + per input
make_viewless, detach, requires_grad (3) + per output make_viewless (1): attention 1 in 1 out (10),
post-attention 1 in 2 out + the residual's node.detach (3) (14), dispatch 2 in 1 out + the probabilities'
detach (3) (16), MLP 1 in 1 out (10), combine 1 in 1 out + make_viewless_tensor + record_stream (12);
free_input's record_stream + resize_ on dispatch's two inputs (4): 66. Backward, per node: event.wait,
nvtx push, stream context (2), the detached inputs' .grad (1), run_backward (1), _release_state (1),
nvtx pop, record_stream of the grad (1), event.record, get_grad (1), _release_state (1): 11, five nodes
55. backward_dw of attention and MLP: the nvtx range (2) and the module call (1): 6."""


def paired_host_exposed(dispatcher: str, local_experts, recipe: str | None, gpu_pair, eager_bias=False,
                        router_graphs=True, node_overhead=True, backward_scale=1.0):
    """Host seconds one MoE layer pair waits under the combined schedule: max(0, forward + backward host
    (+ the nodes' own Python) - ``gpu_pair``, the GPU seconds of the pair's forward and backward)."""
    host = forward_host_seconds(dispatcher, local_experts, recipe, eager_bias, router_graphs) \
        + backward_scale * (backward_host_seconds(dispatcher, local_experts, recipe, eager_bias, router_graphs)
                            + node_overhead * SCHEDULE_NODE_HOST_OPS * forward_op_seconds())
    return maximum(host - gpu_pair, 0.0)


def stage_paired_host_seconds(spec, settings, phases, ep, layers, costs, micro_batches, pp, vpp, node_overhead=True,
                              backward_scale=1.0):
    """Per micro-batch: the exposed host seconds of a stage's MoE layers under the combined schedule
    (core.time.moe_host.stage_exposed_host_seconds' arguments; ``micro_batches``, ``pp``, ``vpp`` for the
    micro-batches the schedule pairs, core.comm.moe_overlap.unpaired_micro_batches). Paired layers:
    paired_host_exposed with the pair's GPU time (both passes' phases + the all-to-all seconds
    core.comm.moe_overlap leaves exposed); unpaired ones: the plain forward's max(0, host - GPU forward with
    its two all-to-alls). ``backward_scale`` multiplies the backward's and the nodes' host seconds (1: as
    counted)."""
    if settings.moe_launch != "eager" or spec.moe is None or not spec.num_moe_layers:
        return 0.0
    one_call, local_experts, recipe, bias = stage_host_inputs(spec, settings, ep, costs)  # core.time.moe_host's
    graphs = settings.moe_router_graphs
    gpu_pair = phases.pre_dispatch_forward + phases.mlp_forward + phases.pre_dispatch_backward \
        + phases.mlp_backward + paired_layer_exposed(one_call, phases, EP_COMM_SM_SHARE)
    pair = paired_host_exposed(settings.ep_dispatcher, local_experts, recipe, gpu_pair, bias, graphs, node_overhead,
                               backward_scale)
    alone_forward = phases.pre_dispatch_forward + phases.mlp_forward + FORWARD_ALL_TO_ALLS * one_call
    alone = exposed_host_seconds(settings.ep_dispatcher, local_experts, recipe, alone_forward, 0.0, bias, graphs)
    unpaired = unpaired_micro_batches(pp, vpp, micro_batches)
    per_layer = ((micro_batches - unpaired) * pair + unpaired * alone) / micro_batches
    return per_layer * spec.num_moe_layers * layers / spec.num_layers

PR_1760_ROW = "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"
PR_1760_PAIRS = (("mxfp8", 4, True, 20.1), ("mxfp8", 1, False, 16.9), ("bf16", 4, True, 17.2), ("bf16", 4, False, 16.0))
"""(precision, vpp, overlap, NVIDIA's step seconds): PR #1760's four runs (tests/test_combined_1f1b_nvidia_pairs.py)."""
SKILL_ROW = "mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"
SKILL_STEPS = {True: 20.992, False: 24.7138}
"""skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md@067f987: overlap on (independent validation) / off."""


SKILL_PROFILE_SECONDS = {
    # skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md@067f987 'HybridEP production-shape validation' (rank-0
    # Nsight, one step of 64 micro-batches x 48 MoE layers): (overlap off, overlap on), seconds a step
    "step": (SKILL_STEPS[False], SKILL_STEPS[True]),  # the step table (on: the independent validation)
    "gpu_active": (22.821, 21.221),  # 'GPU-active interval union'
    "dispatch_with_permute": (4.253, 1.767),  # 'HybridEP dispatch-with-permute NVTX'
    "metadata_preprocess": (3.109, 0.670),  # 'HybridEP metadata-preprocess NVTX' (inside the one above)
}
"""The profiled skill run's own figures (host-side NVTX ranges: CPU time between push and pop)."""
SKILL_LAYER_MICRO_BATCHES = 64 * 48
SKILL_MODEL_GPU_LAYER = (2.514e-3, 4.457e-3)
"""The step model's GPU forward / backward of one skill MoE layer with its two all-to-alls each (core.time.moe_host
MOE_LAYER_HOST_SECONDS' docstring; its GPU step is within 0.2% of the profile's GPU-active time)."""


def profile_host_budget() -> dict[str, float]:
    """What the skill profile's own figures allow the host, per MoE layer (off) or layer pair (on), seconds.

    The metadata-preprocess range holds HybridEP's blocking count copy (fused_a2a.py@core_v0.16.0 L365-383,
    non_blocking False): its host work is the same code in both runs, so the on run's range (0.218 ms) bounds it
    and the off run waits at least the difference (``wait_off``, 0.794 ms). The rest of dispatch-with-permute
    (permute, dispatch launch) is 0.372 / 0.357 ms: host work, equal in both. With the overlap off the host thread
    is either working or waiting, and the GPU either busy or idle, over the same wall time, so the host's forward +
    backward work is the model's GPU layer + the profile's idle - the wait: 6.58-6.79 ms (``host_off_low`` /
    ``_high``, the wait read as the difference or as the whole range). With the overlap on the GPU is never idle
    and the host works at most the wall time a pair (``host_on_max``, 6.83 ms)."""
    n, f = SKILL_LAYER_MICRO_BATCHES, SKILL_PROFILE_SECONDS
    per = {k: (v[0] / n, v[1] / n) for k, v in f.items()}
    wait_low = per["metadata_preprocess"][0] - per["metadata_preprocess"][1]
    gpu, idle = sum(SKILL_MODEL_GPU_LAYER), per["step"][0] - per["gpu_active"][0]
    return {"wait_off": wait_low, "idle_off": idle,
            "after_metadata_off": per["dispatch_with_permute"][0] - per["metadata_preprocess"][0],
            "after_metadata_on": per["dispatch_with_permute"][1] - per["metadata_preprocess"][1],
            "host_off_low": gpu + idle - per["metadata_preprocess"][0], "host_off_high": gpu + idle - wait_low,
            "host_on_max": per["step"][1]}


SKILL_HOST_LAYER = ("flex", 128 // 16, None)
"""The profiled skill layer as core.time.moe_host prices it: HybridEP ('flex'), Qwen3-30B-A3B's 128 experts over EP 16,
BF16 (no low-precision recipe); router and preprocessing graphed."""


def refit_host_seconds(host_work: float) -> float:
    """MOE_LAYER_HOST_SECONDS re-read from the skill profile's host work (issue 37, wave 14 A1; not adopted,
    docs/step.md 'The host constant re-read from its own profile'): the C at which the plain schedule's counted host
    of one layer, forward (C + host_after_sync_seconds) + backward ((C + after - forward launches) x
    backward_to_forward_host() + backward launches), equals ``host_work`` (profile_host_budget's host_off_high
    6.793 ms / host_off_low 6.575 ms: the off run's wall per layer less the host's wait the metadata-preprocess NVTX
    shows) instead of reading the whole GPU idle as host excess. Solved for C: (host_work - L_b + L_f x r) / (1 + r)
    - after. Seconds."""
    dispatcher, experts, recipe = SKILL_HOST_LAYER
    launch, ratio = reference_scale().launch, backward_to_forward_host()
    forward_launches = forward_launches_per_local_expert(recipe) * experts * launch
    backward_launches = backward_launches_per_local_expert(recipe) * experts * launch
    after = host_after_sync_seconds(dispatcher, experts, recipe)
    return (host_work - backward_launches + forward_launches * ratio) / (1 + ratio) - after


@contextlib.contextmanager
def host_constant(seconds: float):
    """Within the block, core.time.moe_host.MOE_LAYER_HOST_SECONDS is ``seconds`` (layer_host_seconds reads the module
    global at each call; nothing in the step model caches it)."""
    import gpuplan.core.time.moe_host as M

    fitted, M.MOE_LAYER_HOST_SECONDS = M.MOE_LAYER_HOST_SECONDS, seconds
    try:
        yield
    finally:
        M.MOE_LAYER_HOST_SECONDS = fitted


@contextlib.contextmanager
def combined_host_term(scale: float = 1.0, node_overhead: bool = True):
    """Within the block, the step model charges stage_paired_host_seconds on combined-1F1B layouts."""
    import gpuplan.core.time.step as S
    import gpuplan.jobs.validation.published_throughput as P

    plain, step_time, layout = S.stage_exposed_host_seconds, S.step_time, {}

    def recording_step_time(*args, **kw):
        layout.update(pp=kw.get("pp", 1), vpp=kw.get("vpp", 1), m=kw.get("micro_batches", 1))
        return step_time(*args, **kw)

    def stage(spec, settings, phases, ep, layers, costs, **plain_inputs):
        if not settings.ep_a2a_overlap:
            return plain(spec, settings, phases, ep, layers, costs, **plain_inputs)
        return stage_paired_host_seconds(spec, settings, phases, ep, layers, costs, layout["m"], layout["pp"],
                                         layout["vpp"], node_overhead, scale)

    P.step_time, S.stage_exposed_host_seconds = recording_step_time, stage  # the validation's own call
    try:
        yield
    finally:
        P.step_time, S.stage_exposed_host_seconds = step_time, plain


def step_seconds(run) -> float:
    """The step model's seconds per step for a published row (its global batch x sequence / GPUs / tokens/s)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    tokens = run["layout"]["global_batch"] * run["model"]["seq_len"]
    return tokens / run["gpus"] / predict_tokens_per_gpu_s(copy.deepcopy(run))


def variant(run, precision=None, vpp=None, overlap=None):
    """A copy of ``run`` with another precision, virtual pipeline size or overlap setting."""
    run = copy.deepcopy(run)
    if precision is not None:
        run["precision"] = precision
    if vpp is not None:
        run["layout"]["vpp"] = vpp
    if overlap is not None:
        run["moe_comm"]["a2a_overlap"] = overlap
    return run


def row_errors(scale: float = 1.0, node_overhead: bool = True) -> dict[str, tuple[float, float]]:
    """{row id: (error now, error with the substitute)} for every published a2a_overlap row validate scores
    (predicted over measured tokens/s/GPU - 1)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s, published_throughput_rows

    rows = [r for r in published_throughput_rows()  # validate does not score a known-regression row
            if (r.get("moe_comm") or {}).get("a2a_overlap") and not r.get("known_regression")]
    now = {r["id"]: predict_tokens_per_gpu_s(copy.deepcopy(r)) / r["measured"]["tokens_per_s_per_gpu"] - 1 for r in rows}
    with combined_host_term(scale, node_overhead):
        new = {r["id"]: predict_tokens_per_gpu_s(copy.deepcopy(r)) / r["measured"]["tokens_per_s_per_gpu"] - 1
               for r in rows}
    return {k: (now[k], new[k]) for k in now}


def pair_steps(scale: float = 1.0, node_overhead: bool = True) -> list[tuple[str, float, float, float]]:
    """(case, NVIDIA's step s, the model's now, with the substitute) for PR #1760's runs and the skill pair."""
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    rows = {r["id"]: r for r in published_throughput_rows()}
    cases = [(f"PR #1760 {p} vpp {v} overlap {'on' if o else 'off'}", variant(rows[PR_1760_ROW], p, v, o), s)
             for p, v, o, s in PR_1760_PAIRS]
    cases += [(f"skill overlap {'on' if o else 'off'}", variant(rows[SKILL_ROW], overlap=o), s)
              for o, s in SKILL_STEPS.items()]
    now = [step_seconds(run) for _, run, _ in cases]
    with combined_host_term(scale, node_overhead):
        new = [step_seconds(run) for _, run, _ in cases]
    return [(name, measured, a, b) for (name, _, measured), a, b in zip(cases, now, new)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--no-node-overhead", action="store_true")
    parser.add_argument("--refit", choices=("high", "low"), help="both columns with MOE_LAYER_HOST_SECONDS re-read "
                        "from the profile's host work (refit_host_seconds of host_off_high / host_off_low)")
    args = parser.parse_args(argv)
    node = not args.no_node_overhead
    if args.refit:
        seconds = refit_host_seconds(profile_host_budget()[f"host_off_{args.refit}"])
        print(f"MOE_LAYER_HOST_SECONDS re-read from the profile ({args.refit}): {seconds * 1e3:.3f} ms")
        with host_constant(seconds):
            return _report(args.scale, node)
    return _report(args.scale, node)


def _report(scale: float, node: bool) -> int:
    """Print the pairs and the a2a_overlap rows, now and with the substitute."""
    print(f"{'case':44s} {'NVIDIA s':>9s} {'now s':>7s} {'subst. s':>8s}")
    for name, measured, now, new in pair_steps(scale, node):
        print(f"{name:44s} {measured:9.2f} {now:7.2f} {new:8.2f}")
    print(f"\n{'a2a_overlap row':62s} {'now':>8s} {'subst.':>8s}")
    errors = row_errors(scale, node)
    for rid, (now, new) in errors.items():
        print(f"{rid:62s} {now:+8.1%} {new:+8.1%}")
    mean = [sum(abs(e[i]) for e in errors.values()) / len(errors) for i in (0, 1)]
    print(f"{'mean |error| (' + str(len(errors)) + ' rows)':62s} {mean[0]:8.1%} {mean[1]:8.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
