#!/usr/bin/env python3
"""The combined-1F1B host serialisation, sized on the published rows (issue 37 diagnostic, model unchanged).

Substitutes core.time.combined_host's per-layer-pair term (max(0, host forward + host backward + the
schedule nodes' Python - the pair's GPU time)) for core.time.moe_host's on every layout that runs the EP
all-to-all overlap (Megatron-Core's combined 1F1B schedule), and prints, for every published row with
``moe_comm.a2a_overlap`` and for NVIDIA's own on / off pairs (Megatron-Bridge PR #1760: Qwen3-235B on 64
B200; the EP-overlap skill: Qwen3-30B on 16 H100), the step model's prediction with the current term and
with the substitute. ``--scale S`` multiplies the substitute's backward + node host seconds by S (what the
skill pair's overlap-on profile allows, docs/step.md). Nothing is fitted into the model. ~10 s.

    python scripts/combined_host_check.py [--scale 1.0] [--no-node-overhead]
"""

from __future__ import annotations

import argparse
import contextlib
import copy

PR_1760_ROW = "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"
PR_1760_PAIRS = (("mxfp8", 4, True, 20.1), ("mxfp8", 1, False, 16.9), ("bf16", 4, True, 17.2), ("bf16", 4, False, 16.0))
"""(precision, vpp, overlap, NVIDIA's step seconds): PR #1760's four runs (tests/test_combined_1f1b_nvidia_pairs.py)."""
SKILL_ROW = "mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"
SKILL_STEPS = {True: 20.992, False: 24.7138}
"""skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md@067f987: overlap on (independent validation) / off."""


@contextlib.contextmanager
def combined_host_term(scale: float = 1.0, node_overhead: bool = True):
    """Within the block, the step model charges core.time.combined_host's term on combined-1F1B layouts."""
    import gpuplan.core.time.step as S
    import gpuplan.jobs.validation.published_throughput as P
    from gpuplan.core.time import combined_host as CH

    plain, step_time, layout = S.stage_exposed_host_seconds, S.step_time, {}

    def recording_step_time(*args, **kw):
        layout.update(pp=kw.get("pp", 1), vpp=kw.get("vpp", 1), m=kw.get("micro_batches", 1))
        return step_time(*args, **kw)

    def stage(spec, settings, phases, ep, layers, costs):
        if not settings.ep_a2a_overlap:
            return plain(spec, settings, phases, ep, layers, costs)
        return CH.stage_paired_host_seconds(spec, settings, phases, ep, layers, costs, layout["m"], layout["pp"],
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
    args = parser.parse_args(argv)
    node = not args.no_node_overhead
    print(f"{'case':44s} {'NVIDIA s':>9s} {'now s':>7s} {'subst. s':>8s}")
    for name, measured, now, new in pair_steps(args.scale, node):
        print(f"{name:44s} {measured:9.2f} {now:7.2f} {new:8.2f}")
    print(f"\n{'a2a_overlap row':62s} {'now':>8s} {'subst.':>8s}")
    errors = row_errors(args.scale, node)
    for rid, (now, new) in errors.items():
        print(f"{rid:62s} {now:+8.1%} {new:+8.1%}")
    mean = [sum(abs(e[i]) for e in errors.values()) / len(errors) for i in (0, 1)]
    print(f"{'mean |error| (' + str(len(errors)) + ' rows)':62s} {mean[0]:8.1%} {mean[1]:8.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
