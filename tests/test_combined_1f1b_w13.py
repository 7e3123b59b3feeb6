"""The five worst held-out step rows, all on Megatron's combined 1F1B schedule (--overlap-moe-expert-parallel-comm)
with an interleaved pipeline, against what NVIDIA has published about them since (issue 37, wave 13 U2; docs/step.md,
'What became of Megatron-Bridge#1998'). A negative result: no row is flagged, no model term changes.

What NVIDIA publishes, read for this file:
- Megatron-Bridge#1998 ('[Regression] Low QWEN3 30B B200 and H100 performance with dropless', 2026-01-20) is open,
  with its description only; no known-issues entry (docs/releases/known-issues.md@v0.3.0 / v0.3.1 / v0.4.0 / v0.5.1)
  and no performance-page footnote names a Qwen3 figure, and NVIDIA QA classed the 64-B200 row's slowdown
  'RECIPE/CONFIG ... not code bug' (#1705, fixed by PR #1760's preset): nothing NVIDIA wrote marks these releases as
  regressed the way the 26.06.01 GPT-OSS rows' page does (known_regression), so they stay scored.
- Megatron-Bridge a4233d7bb (PR #2961, 2026-03-31, in v0.5.0), docs/training/communication-overlap.md L71-73, L127-128,
  L141: 'On Qwen3-30B-A3B with EP=4 and alltoall on 2 H100 nodes, EP overlap is numerically safe at GBS=8 but provides
  no speedup, and it is about 13% slower at GBS=64' (822 ms baseline vs 827 ms overlap; 4889 ms vs 5538 ms), and
  'Small-EP alltoall MoE runs can get slower because scheduling overhead is larger than the communication being
  hidden'. No layout beyond EP, dispatcher, nodes and batch is given, so it is not a row.

What the step model does with the schedule on these rows (hand-checked by its terms in docs/step.md): it hides most
of the forward's host window (core.time.moe_host) and of the expert all-to-all behind the paired micro-batch, a step
1.33-1.36x shorter than with the overlap off, where NVIDIA measured the overlap costing time at EP <= 8 with alltoall
(PR #1760 BF16 17.2 / 16.0 s = 1.075; PR #2961 5,538 / 4,889 ms = 1.133).
"""

from __future__ import annotations

from copy import deepcopy

import pytest

from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

ROWS = ("mbridge-26.02.01-qwen3-235b-a22b-b300-256g-mxfp8", "mbridge-26.02-qwen3-235b-a22b-b300-256g-mxfp8",
        "mbridge-26.02-qwen3-30b-a3b-h100-sxm-16g-fp8cs", "mbridge-25.11-qwen3-30b-a3b-h100-sxm-16g-fp8cs",
        "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8")
"""The five rows over issue 37's 25% bar (+104.8 / +101.2 / +93.9 / +78.3 / +60.4% at this wave's start)."""
NVIDIA_LARGEST_OVERLAP_COST = 5538 / 4889
"""1.133: the step with over without the EP overlap NVIDIA measured on small-EP alltoall Qwen3-30B-A3B (PR #2961,
communication-overlap.md@a4233d7bb L128), the largest overlap cost NVIDIA has published (PR #1760's BF16: 1.075)."""
ISSUE_37_MAX = 0.25


@pytest.fixture(scope="module")
def on_off(published_rows):
    """Per row: (measured, predicted with the overlap, predicted with it off) tokens/s/GPU."""
    out = {}
    for rid in ROWS:
        row = published_rows[rid]
        off = deepcopy(row)
        off["moe_comm"]["a2a_overlap"] = False
        measured = row["measured"]["tokens_per_s_per_gpu"]
        out[rid] = (measured, predict_tokens_per_gpu_s(row), predict_tokens_per_gpu_s(off))
    return out


def test_the_five_rows_run_the_combined_schedule_interleaved(published_rows):
    for rid in ROWS:
        row = published_rows[rid]
        assert row["moe_comm"]["a2a_overlap"] is True and row["layout"]["pp"] > 1 and row["layout"]["vpp"] > 1
        assert row["layout"]["ep"] == 8 and "known_regression" not in row


@pytest.mark.parametrize("rid, ratio", tuple(zip(ROWS, (1.359, 1.359, 1.356, 1.342, 1.331))))
def test_model_credits_the_schedule_where_nvidia_measured_a_cost(on_off, rid, ratio):
    _, on, off = on_off[rid]
    # a saving (step on / off < 1 in time, tokens/s on / off > 1), where NVIDIA's published on / off steps at EP <= 8
    # with alltoall are all costs: 17.2 / 16.0 s (PR #1760 BF16), 827 / 822 and 5,538 / 4,889 ms (PR #2961)
    assert on / off == pytest.approx(ratio, abs=0.02)


def test_even_nvidias_largest_overlap_cost_leaves_three_rows_over_the_bar(on_off):
    """Read the schedule at the worst NVIDIA measured (overlap-off step x 1.133): +33.0 / +30.7 / +26.3 / +17.3 /
    +6.4%, three rows still over 25%: the documented mechanism is at most part of the gap."""
    errors = [off / NVIDIA_LARGEST_OVERLAP_COST / measured - 1.0 for measured, _, off in on_off.values()]
    assert errors == pytest.approx([0.330, 0.307, 0.263, 0.173, 0.064], abs=0.02)
    assert sum(e > ISSUE_37_MAX for e in errors) == 3


# --- Every public on / off pair of the combined schedule, held out (wave 13 V3; docs/step.md, 'The combined-1F1B
# credit against every published on / off pair'). Step seconds with the overlap over without it (< 1: it saves time).
# PR #2961's two pairs (Qwen3-30B-A3B, EP 4, alltoall, 2 H100 nodes, GBS 8: 827 / 822 ms = 1.006; GBS 64: 5,538 /
# 4,889 ms = 1.133; communication-overlap.md@a4233d7bb L127-128) give no TP / PP / micro-batch / sequence, so the
# model is not run on them. Nothing below is fitted to these pairs.
PAIRS = {
    # name: (NVIDIA's on / off ratio, the step model's, scripts/combined_host_check.py's counted serialisation)
    "PR #1760 64 B200 Qwen3-235B BF16 VP 4": (17.2 / 16.0, 0.832, 1.102),
    "PR #1760 64 B200 Qwen3-235B MXFP8 on VP 4 / off VP 1": (20.1 / 16.9, 0.715, 1.041),
    "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP": (20.992 / 24.7138, 0.773, 1.117),
    "smoke 16 H100 Qwen3-30B BF16 EP 16 alltoall": (31.31 / 41.25, 0.642, 0.838),
}
"""PR #1760 (a6e92de5f): the B200 row's layout (pp 8 ep 8 mb 1 GBS 1,024 alltoall) at BF16 VP 4 both sides, and at
MXFP8 with VP 4 on / VP 1 off (the pair confounds VP with the overlap); the EP-overlap skill (SKILL.md@067f987:
20.992 / 24.7138 s); the alltoall smoke run (750d0d322, PR #3862: 31.31 / 41.25 s; graphs off, permute fusion off)."""


def _pair_runs(published_rows):
    b200, skill = published_rows["mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"], \
        published_rows["mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"]

    def edit(row, overlap, precision=None, vpp=None, moe_comm=None):
        run = deepcopy(row)
        run["precision"] = precision or run["precision"]
        run["layout"]["vpp"] = vpp or run["layout"]["vpp"]
        run["moe_comm"] = dict(moe_comm or run["moe_comm"], a2a_overlap=overlap)
        return run

    smoke = {"dispatcher": "alltoall", "backend": None, "cuda_graph": "none"}
    return dict(zip(PAIRS, (
        (edit(b200, True, "bf16", 4), edit(b200, False, "bf16", 4)),
        (edit(b200, True, "mxfp8", 4), edit(b200, False, "mxfp8", 1)),
        (edit(skill, True), edit(skill, False)),
        (edit(skill, True, moe_comm=smoke), edit(skill, False, moe_comm=smoke)))))


def _step_s(run):
    tokens = run["layout"]["global_batch"] * run["model"]["seq_len"]
    return tokens / run["gpus"] / predict_tokens_per_gpu_s(deepcopy(run))


@pytest.fixture(scope="module")
def pair_ratios(published_rows, load_script):
    """Per pair: (the model's on / off step ratio, the counted serialisation's)."""
    check = load_script("combined_host_check")
    out = {}
    for name, (on, off) in _pair_runs(published_rows).items():
        model = _step_s(on) / _step_s(off)
        with check.combined_host_term(1.0, True):
            counted = _step_s(on) / _step_s(off)
        out[name] = (model, counted)
    return out


@pytest.mark.parametrize("name", tuple(PAIRS))
def test_model_credits_the_schedule_more_than_nvidia_measured_on_every_pair(pair_ratios, name):
    measured, model, _ = PAIRS[name]
    assert pair_ratios[name][0] == pytest.approx(model, abs=0.02)
    assert pair_ratios[name][0] < measured - 0.05  # -22.6 / -39.9 / -9.0 / -15.4% of the measured ratio


@pytest.mark.parametrize("name", tuple(PAIRS))
def test_counted_serialisation_on_every_pair(pair_ratios, name):
    _, _, counted = PAIRS[name]
    assert pair_ratios[name][1] == pytest.approx(counted, abs=0.02)


def test_counted_serialisation_flips_the_hybridep_skill_pair(pair_ratios):
    """Why the code-read serialisation is not adopted: it gives PR #1760's BF16 pair its sign (1.102, NVIDIA 1.075) and
    halves the smoke pair's miss (0.838 vs 0.759, was 0.642), but turns the skill's measured 1.18x saving into a 1.12x
    cost, where its overlap-on Nsight has no host gap. Mean |ratio error| over the four pairs: model 21.7%, counted
    14.2% (+2.5 / -12.4 / +31.6 / +10.4%)."""
    skill, smoke = "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP", "smoke 16 H100 Qwen3-30B BF16 EP 16 alltoall"
    assert PAIRS[skill][0] < 1.0 < pair_ratios[skill][1]
    assert abs(pair_ratios[smoke][1] / PAIRS[smoke][0] - 1) < abs(pair_ratios[smoke][0] / PAIRS[smoke][0] - 1)
    model_err = [abs(r[0] / PAIRS[n][0] - 1) for n, r in pair_ratios.items()]
    counted_err = [abs(r[1] / PAIRS[n][0] - 1) for n, r in pair_ratios.items()]
    assert sum(model_err) / 4 == pytest.approx(0.217, abs=0.015)
    assert sum(counted_err) / 4 == pytest.approx(0.142, abs=0.015)


# --- Why the counted host pair is 8.55 ms on the profiled skill run (wave 13 X1; docs/step.md, 'What the skill
# profile's own figures allow the host'). A negative result: no code fact found brings the count to the profile, so
# the package is unchanged; these pin the count, the profile's host budget and what a profile-sized count would do.
SKILL_LOCAL_EXPERTS = 128 // 16
"""Qwen3-30B-A3B's 128 experts over EP 16 (the skill row)."""


def _count(check):
    """(forward, backward, schedule nodes) host seconds of one skill layer pair as scripts/combined_host_check.py
    counts them (HybridEP = 'flex', BF16, router and preprocess graphed)."""
    return (check.forward_host_seconds("flex", SKILL_LOCAL_EXPERTS, None),
            check.backward_host_seconds("flex", SKILL_LOCAL_EXPERTS, None),
            check.SCHEDULE_NODE_HOST_OPS * check.forward_op_seconds())


def test_counted_host_pair_on_the_profiled_run(load_script):
    """2.938 (MOE_LAYER_HOST_SECONDS) + 0.143 after the sync = 3.081 ms; (3.081 - 0.052 launches) x 1.454 + 0.104 =
    4.509 ms; 127 node ops x 7.55 us = 0.958 ms: 8.548 ms a pair."""
    fwd, bwd, nodes = _count(load_script("combined_host_check"))
    assert (fwd, bwd, nodes) == pytest.approx((3.081e-3, 4.509e-3, 0.958e-3), abs=5e-6)
    assert fwd + bwd + nodes == pytest.approx(8.548e-3, abs=1e-5)


def test_the_skill_profiles_host_budget(load_script):
    """Per layer-micro-batch (64 x 48 = 3,072 a step): metadata-preprocess NVTX 3.109 / 0.670 s -> 1.012 / 0.218 ms
    (off / on), so the off run waits >= 0.794 ms; dispatch-with-permute less it 0.372 / 0.357 ms (the same host work
    both ways); GPU idle off (24.7138 - 22.821) / 3,072 = 0.616 ms; host work off = 2.514 + 4.457 + 0.616 - (1.012 ..
    0.794) = 6.575 .. 6.793 ms; on, GPU never idle: host <= 20.992 s / 3,072 = 6.833 ms a pair."""
    b = load_script("combined_host_check").profile_host_budget()
    ms = {k: round(v * 1e3, 3) for k, v in b.items()}
    assert ms == pytest.approx({"wait_off": 0.794, "idle_off": 0.616, "after_metadata_off": 0.372,
                                "after_metadata_on": 0.357, "host_off_low": 6.575, "host_off_high": 6.793,
                                "host_on_max": 6.833}, abs=0.002)


def test_the_count_exceeds_the_profiled_host_with_the_overlap_on_and_off(load_script):
    """Off: the count's forward + backward 7.590 ms against <= 6.793 (0.80 ms over: the fit's split of the 0.616 ms idle
    into host excess, 0.566 + 0.052, leaves the host no wait, where the profile has >= 0.794 ms); on: 8.548 against
    <= 6.833 (1.71 ms over). The backward the off run allows: <= 6.793 - 3.081 = 3.712 ms, 0.823 of its count; the
    backward + nodes the on run allows: <= 3.752 ms, 0.686 of theirs."""
    check = load_script("combined_host_check")
    fwd, bwd, nodes = _count(check)
    b = check.profile_host_budget()
    assert fwd + bwd - b["host_off_high"] == pytest.approx(0.797e-3, abs=1e-5)
    assert fwd + bwd + nodes - b["host_on_max"] == pytest.approx(1.714e-3, abs=1e-5)
    assert (b["host_off_high"] - fwd) / bwd == pytest.approx(0.823, abs=0.002)
    assert (b["host_on_max"] - fwd) / (bwd + nodes) == pytest.approx(0.686, abs=0.002)


BOUND_RATIOS = {
    # NVIDIA's on / off step ratio, scripts/combined_host_check.py's at the on run's bound (--scale 0.686)
    "PR #1760 64 B200 Qwen3-235B BF16 VP 4": 0.918,
    "PR #1760 64 B200 Qwen3-235B MXFP8 on VP 4 / off VP 1": 0.881,
    "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP": 0.908,
    "smoke 16 H100 Qwen3-30B BF16 EP 16 alltoall": 0.688,
}
"""The four pairs with the counted backward + nodes at the skill profile's bound: ratio errors -14.6 / -25.9 / +6.9 /
-9.4% (mean 14.2%; the model's 21.7%, as counted 14.2%). Not adopted: 0.686 is set by one run's step (a new fitted
scale), and it leaves PR #1760's pairs saving where NVIDIA measured a cost."""


@pytest.fixture(scope="module")
def bound_ratios(published_rows, load_script):
    check = load_script("combined_host_check")
    fwd, bwd, nodes = _count(check)
    scale = (check.profile_host_budget()["host_on_max"] - fwd) / (bwd + nodes)
    out = {}
    with check.combined_host_term(scale, True):
        for name, (on, off) in _pair_runs(published_rows).items():
            out[name] = _step_s(on) / _step_s(off)
    return out


@pytest.mark.parametrize("name", tuple(BOUND_RATIOS))
def test_the_count_at_the_profiles_bound_on_every_pair(bound_ratios, name):
    assert bound_ratios[name] == pytest.approx(BOUND_RATIOS[name], abs=0.01)


def test_at_the_profiles_bound_the_skill_keeps_its_saving_and_pr_1760_keeps_the_wrong_sign(bound_ratios):
    skill = "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP"
    assert bound_ratios[skill] < 1.0 and PAIRS[skill][0] < 1.0
    assert all(bound_ratios[n] < 1.0 < PAIRS[n][0] for n in tuple(PAIRS)[:2])


# --- MOE_LAYER_HOST_SECONDS re-read from its own profile (wave 14 A1; docs/step.md, 'The host constant re-read from
# its own profile'). A negative result: the package keeps 2.938 ms and the plain term; these pin the re-read
# arithmetic (scripts/combined_host_check.py refit_host_seconds) and what it and the counted serialisation do.
def test_the_host_constant_re_read_from_the_profiles_host_work(load_script):
    """Solve (C + 0.143) + (C + 0.143 - 0.052) x 1.454 + 0.104 = host work (HybridEP, 8 local experts, BF16: 12 ops x
    7.547 us + 16 launches x 3.25 us after the sync; 16 / 32 forward / backward launches): the profile's 6.793 ms
    (the wall less the >= 0.794 ms wait) gives C = (6.793 - 0.104 + 0.052 x 1.454) / 2.454 - 0.143 = 2.614 ms, its
    6.575 ms (less the whole 1.012 ms metadata range) 2.525 ms, where the idle-read fit has 2.938 ms."""
    check = load_script("combined_host_check")
    b = check.profile_host_budget()
    high, low = check.refit_host_seconds(b["host_off_high"]), check.refit_host_seconds(b["host_off_low"])
    assert (high, low) == pytest.approx((2.614e-3, 2.525e-3), abs=2e-6)
    with check.host_constant(high):
        fwd, bwd, nodes = _count(check)
    assert fwd + bwd == pytest.approx(b["host_off_high"], rel=1e-9)  # the re-read count is the profile's host work
    assert (fwd, bwd, nodes) == pytest.approx((2.756e-3, 4.037e-3, 0.958e-3), abs=5e-6)
    assert _count(check)[0] == pytest.approx(3.081e-3, abs=5e-6)  # host_constant restores the fitted constant


def test_the_re_read_constant_leaves_the_off_run_too_little_idle(load_script):
    """With C = 2.614 ms the plain term's GPU idle on the profiled (overlap off) run is forward 2.756 - 2.514 = 0.242 ms
    a layer + backward max(0, 4.037 - 4.457) = 0, where the profile shows 0.616 ms idle AND >= 0.794 ms of host wait:
    the per-layer max(host, GPU) of forward and backward cannot give both at one C with the 1.454 backward ratio (the
    split that does, forward 3.130 / backward 3.663 ms, needs a backward ratio of 1.156). The counted pair then is
    2.756 + 4.037 + 0.958 = 7.751 ms against the on run's <= 6.833 ms wall."""
    check = load_script("combined_host_check")
    b = check.profile_host_budget()
    gpu_forward, gpu_backward = check.SKILL_MODEL_GPU_LAYER
    with check.host_constant(check.refit_host_seconds(b["host_off_high"])):
        fwd, bwd, nodes = _count(check)
    assert max(fwd - gpu_forward, 0) + max(bwd - gpu_backward, 0) == pytest.approx(0.242e-3, abs=2e-6)
    assert fwd + bwd + nodes - b["host_on_max"] == pytest.approx(0.918e-3, abs=5e-6)
    split_forward, split_backward = gpu_forward + b["idle_off"], gpu_backward - b["wait_off"]
    launches = (16 * 3.25e-6, 32 * 3.25e-6)
    assert (split_backward - launches[1]) / (split_forward - launches[0]) == pytest.approx(1.156, abs=0.002)


REFIT_STEPS = {
    # at C = 2.614 ms: ((on, off) step seconds with the plain term, on with the counted serialisation; off the same)
    "PR #1760 64 B200 Qwen3-235B BF16 VP 4": ((12.41, 14.41), 15.26),
    "PR #1760 64 B200 Qwen3-235B MXFP8 on VP 4 / off VP 1": ((12.15, 16.18), 17.02),
    "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP": ((19.20, 23.67), 25.30),
    "smoke 16 H100 Qwen3-30B BF16 EP 16 alltoall": ((24.34, 37.90), 29.34),
}
"""On / off ratios counted 1.059 / 1.052 / 1.069 / 0.774 (NVIDIA 1.075 / 1.189 / 0.849 / 0.759: -1.5 / -11.5 / +25.9 /
+2.0%, mean 10.2%; with 2.938 ms 14.2%); with the plain term 0.861 / 0.751 / 0.811 / 0.642. The re-read constant alone
takes the skill's overlap-off run from 24.83 to 23.67 s (measured 24.71)."""


@pytest.fixture(scope="module")
def refit_steps(published_rows, load_script):
    """Per pair at the re-read constant: ((on, off) step seconds with the plain term, on with the counted term)."""
    check = load_script("combined_host_check")
    out = {}
    with check.host_constant(check.refit_host_seconds(check.profile_host_budget()["host_off_high"])):
        for name, (on, off) in _pair_runs(published_rows).items():
            plain = (_step_s(on), _step_s(off))
            with check.combined_host_term(1.0, True):
                out[name] = (plain, _step_s(on))
    return out


@pytest.mark.parametrize("name", tuple(REFIT_STEPS))
def test_the_pairs_at_the_re_read_constant(refit_steps, name):
    (on, off), counted = refit_steps[name]
    assert (on, off, counted) == pytest.approx((*REFIT_STEPS[name][0], REFIT_STEPS[name][1]), abs=0.02)


def test_at_the_re_read_constant_the_count_still_turns_the_skills_saving_into_a_cost(refit_steps):
    """Why the re-read constant with the counted serialisation is not adopted (the brief's rule: the skill's overlap-on
    run must keep a saving): on / off 25.30 / 23.67 s = 1.069 (NVIDIA 0.849). The counted pair, 7.751 ms, is above the
    model's GPU pair on that run (5.736 ms: 5.426 of compute + 0.310 of its 1.545 ms of all-to-all, 80% hidden where the
    profile has 36.55% 'communication hidden by compute'), so 2.015 ms a pair shows; it is above the profile's on-run
    wall too (<= 6.833 ms). The pairs' mean ratio error falls 14.2 -> 10.2%."""
    skill = "skill 16 H100 Qwen3-30B BF16 EP 16 HybridEP"
    (_, off), counted = refit_steps[skill]
    assert counted / off == pytest.approx(1.069, abs=0.005) and counted / off > 1.0 > PAIRS[skill][0]
    errors = [abs(counted / off / PAIRS[n][0] - 1) for n, ((_, off), counted) in refit_steps.items()]
    assert sum(errors) / 4 == pytest.approx(0.102, abs=0.005)
