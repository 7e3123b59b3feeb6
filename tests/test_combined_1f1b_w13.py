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
