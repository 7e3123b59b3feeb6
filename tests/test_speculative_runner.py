"""Speculative decoding as vLLM 0.8.x's V1 runner launches it (core/serving/spec_runner.py): the
counts read from the code, the seconds at the package's per-launch cost, and what they add to a
verify step, checked against numbers worked by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import serving_cases_by_id

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.serving import kv_cache as K
from gpuplan.core.serving import roofline as R
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving import spec_runner as SR
from gpuplan.core.serving import weights as W
from gpuplan.core.serving.releases import parse_release
from gpuplan.core.serving.speculative import speculation

LAUNCH_S = 41.957e-6  # first_token_path.EAGER_HOST_PER_LAUNCH_S: (82.64 - 23.10 + 6.5) ms / (61 x 25.80) launches


def test_counts_are_those_read_from_each_release():
    """vLLM 0.8.4 (the code the PR 16035 rows ran): 24 launches in the runner beyond the plain step
    + 11 in the proposer's preamble + 7 around the first draft layer + 3 set-up / stacking ops at
    k > 1 = 45; each later draft step 7 position / slot ops + 4 head ops + LM head + argmax = 13.
    0.8.5's loop adds the max-model-length guard (4 ops) and drops the probability stack: 45 / 17.
    No counts for 0.9 (graphed drafter, code not read), other engines, EAGLE-3 before 0.8.5 or draft models."""
    ops = SR.runner_ops(parse_release("vllm==0.8.3"), "eagle")
    assert (ops.per_verify, ops.per_later_draft, ops.single_draft_fewer, ops.syncs) == (45, 13, 3, 4)
    assert SR.runner_ops(parse_release("vllm==0.8.4"), "eagle") is ops
    later = SR.runner_ops(parse_release("vllm==0.8.5"), "eagle")
    assert (later.per_verify, later.per_later_draft) == (45, 17)
    for label, method in (("vllm==0.9.0", "eagle"), ("vllm==0.29", "eagle"), ("sglang==0.4.9", "eagle"),
                          ("vllm==0.8.4", "eagle3"), ("vllm==0.8.4", "draft"), ("vllm==0.8.4", "ngram")):
        assert SR.runner_ops(parse_release(label), method) is None, (label, method)
    assert SR.runner_ops(None, "eagle") is None


def test_host_seconds_worked_by_hand():
    """At 41.957 us a launch (the package's Python launch time, first_token_path): once a verify step
    45 - 5 (queued behind the forward) - 11 (the draft segment) = 29 launches -> 1.2168 ms, at any k, on
    0.8.4 and 0.8.5; nothing where no counts were read. The draft segment at k = 2 on 0.8.4: 11 + 2 x 9 +
    13 = 42 launches -> 1.7622 ms when the GPU work is less; k = 1: 11 - 3 + 9 = 17 -> 0.7133 ms; k = 4 on
    0.8.5: 11 + 36 + 3 x 17 = 98 -> 4.1118 ms; a GPU time above the issue time is returned as it is."""
    from gpuplan.core.serving.first_token_path import EAGER_HOST_PER_LAUNCH_S

    assert EAGER_HOST_PER_LAUNCH_S == pytest.approx(LAUNCH_S, rel=1e-4)
    r084, r085 = parse_release("vllm==0.8.4"), parse_release("vllm==0.8.5")
    o084, o085 = SR.runner_ops(r084, "eagle"), SR.runner_ops(r085, "eagle")
    assert SR.EAGLE1_LAYER_LAUNCHES == 9
    assert (o084.behind_forward, o084.draft_segment) == (o085.behind_forward, o085.draft_segment) == (5, 11)
    assert SR.serial_host_seconds(o084, LAUNCH_S) == pytest.approx(1.21675e-3, rel=1e-4)
    assert SR.serial_host_seconds(o085, LAUNCH_S) == SR.serial_host_seconds(o084, LAUNCH_S)
    assert SR.serial_host_seconds(None, LAUNCH_S) == 0.0
    assert SR.draft_segment_seconds(o084, 2, LAUNCH_S, 1e-3) == pytest.approx(1.76219e-3, rel=1e-4)
    assert SR.draft_segment_seconds(o084, 1, LAUNCH_S, 0.0) == pytest.approx(0.71327e-3, rel=1e-4)
    assert SR.draft_segment_seconds(o085, 4, LAUNCH_S, 0.0) == pytest.approx(4.11179e-3, rel=1e-4)
    assert SR.draft_segment_seconds(o084, 2, LAUNCH_S, 5e-3) == 5e-3  # GPU-bound: the GPU time


def test_fusion_weights_by_head():
    """Llama-3-8B (h = 4096): EAGLE-1's fc is 2h x h = 33,554,432 parameters a draft step (k = 2:
    67,108,864), MTP's eh_proj the same; EAGLE-3's 3h x h = 50,331,648 once (first step only); a
    draft model or n-gram none."""
    spec = load_model("llama-3-8b")
    assert SR.fusion_weights(spec, "eagle", 2) == 67_108_864
    assert SR.fusion_weights(spec, "mtp", 1) == 33_554_432
    assert SR.fusion_weights(spec, "eagle3", 4) == 50_331_648
    assert SR.fusion_weights(spec, "draft", 3) == 0.0
    assert SR.fusion_weights(spec, "ngram", 3) == 0.0


def _steps(label: str, k: int):
    """(plain, speculative) decode steps of Llama-3-8B at batch 1, 512 cached tokens, bf16, on an
    H100 SXM, EAGLE with k proposed tokens at acceptance 0.57."""
    spec, gpu = load_model("llama-3-8b"), load_accelerator("h100-sxm")
    release = parse_release(label)
    plain = SU.ServingSetup(W.FORMATS["bf16"], 2, runtime=SU.Runtime(engine=release.engine, version=release.version))
    setup = replace(plain, speculation=speculation("eagle", k, 0.57, spec))
    kv = K.kv_layout(spec, 2, 1, 1, 16).bytes_per_sequence(512)
    common = dict(tp=1, pp=1, batch=1, context=512, **R.gpu_keywords(gpu, plain))
    groups = W.param_groups(spec)
    return R.decode_step(spec, groups, plain, kv, **common), R.decode_step(spec, groups, setup, kv, **common)


def test_verify_step_pays_the_runner_launches():
    """vLLM 0.8.4, k = 2: the verify step's host time is the plain step's (0.6 ms scheduling; its 32
    graph layers x 50 us are GPU time, the small-kernel floor) + the runner's 29 serial launches at
    41.957 us = 1.2168 ms, the verify forward of 3 tokens replaying the same graphs."""
    base, fast = _steps("vllm==0.8.4", 2)
    assert base.host_s == pytest.approx(0.6e-3, rel=1e-9)
    assert base.kernel_floor_s == fast.kernel_floor_s == pytest.approx(32 * 50e-6, rel=1e-9)
    assert fast.host_s - base.host_s == pytest.approx(29 * LAUNCH_S, rel=1e-4)


def test_draft_steps_are_their_issue_time_when_the_host_is_slower():
    """k = 2 on 0.8.4 vs 0.9.0 (drafter on graphs from 0.9.0, no runner counts there): 0.9.0's two draft
    steps are GPU time, each one layer (218,103,808 parameters) + the LM head (128,256 x 4096) in bf16,
    1,486.9 MB at 0.85 x 3.35 TB/s = 522.2 us, + the layer's 50 us (+ ~2 us of KV and elementwise), and
    the fc's 2 x 2 x 4096^2 x 2 B = 134,217,728 B = 47.1 us; 0.8.4 issues the same drafts eagerly as 42
    launches, 1.7622 ms, which the GPU work (~1.1 ms without graphs) does not reach."""
    _, eager = _steps("vllm==0.8.4", 2)
    _, graphed = _steps("vllm==0.9.0", 2)
    fc_s = 134_217_728 / (0.85 * 3.35e12)
    assert fc_s == pytest.approx(47.135e-6, rel=1e-4)
    assert graphed.draft_s == pytest.approx(2 * (522.2e-6 + 50e-6) + fc_s, rel=0.005)
    assert eager.draft_s == pytest.approx(42 * LAUNCH_S, rel=1e-4)
    assert 2 * 524e-6 + fc_s < eager.draft_s


def test_pr16035_rows_worked_by_hand():
    """The two held-out rows (vllm PR 16035, Llama-3-8B + EAGLE at batch 1) against a 7.508 ms plain step:
    k = 2: verify 7.508 + 1.217 (29 serial launches) + 0.032 (3 tokens' growth) = 8.758 ms, drafts 1.762 ms
    (42 launches) -> 10.520 ms, 1.89 x 7.508 / 10.520 = 1.349x (measured 1.364x); k = 4: 7.508 + 1.217 +
    0.065 = 8.790 ms, drafts 86 x 41.957 us = 3.608 ms -> 12.398 ms, 2.08 x 7.508 / 12.398 = 1.260x
    (measured 1.288x). At 8 us a launch (before 2026-12-06) the same counts gave 1.533x / 1.453x."""
    from gpuplan.jobs.validation.inference import KIND_SPECULATIVE

    rows = serving_cases_by_id()
    k2, k4 = rows["vllm16035-llama3-8b-eagle-k2"], rows["vllm16035-llama3-8b-eagle-k4"]
    assert k2[1] == k4[1] == KIND_SPECULATIVE
    assert k2[3] == pytest.approx(1.89 * 7.508e-3 / (7.508e-3 + 29 * LAUNCH_S + 0.0323e-3 + 42 * LAUNCH_S), rel=2e-3)
    assert k4[3] == pytest.approx(2.08 * 7.508e-3 / (7.508e-3 + 29 * LAUNCH_S + 0.0646e-3 + 86 * LAUNCH_S), rel=2e-3)
    assert k2[2] == pytest.approx(1.364, abs=1e-3) and k4[2] == pytest.approx(1.288, abs=1e-3)
