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

LAUNCH_S = 80e-6 / 10  # Efficiency.layer_launch_s over the 10 launches of vLLM's eager Llama layer


def test_counts_are_those_read_from_each_release():
    """vLLM 0.8.4 (the code the PR 16035 rows ran): 24 launches in the runner beyond the plain step
    + 11 in the proposer's preamble + 7 around the first draft layer + 3 set-up / stacking ops at
    k > 1 = 45; each later draft step 7 position / slot ops + 4 head ops + LM head + argmax = 13.
    0.8.5's loop adds the max-model-length guard (4 ops) and drops the probability stack: 45 / 17.
    No counts for 0.9 (graphed drafter, code not read), other engines, EAGLE-3 or draft models."""
    ops = SR.runner_ops(parse_release("vllm==0.8.3"), "eagle")
    assert (ops.per_verify, ops.per_later_draft, ops.single_draft_fewer, ops.syncs) == (45, 13, 3, 4)
    assert SR.runner_ops(parse_release("vllm==0.8.4"), "eagle") is ops
    later = SR.runner_ops(parse_release("vllm==0.8.5"), "eagle")
    assert (later.per_verify, later.per_later_draft) == (45, 17)
    for label, method in (("vllm==0.9.0", "eagle"), ("vllm==0.29", "eagle"), ("sglang==0.4.9", "eagle"),
                          ("vllm==0.8.5", "eagle3"), ("vllm==0.8.4", "draft"), ("vllm==0.8.4", "ngram")):
        assert SR.runner_ops(parse_release(label), method) is None, (label, method)
    assert SR.runner_ops(None, "eagle") is None


def test_host_seconds_worked_by_hand():
    """At 8 us a launch: k = 2 on 0.8.4 -> 45 x 8 = 360 us once + 1 x 13 x 8 = 104 us over the
    drafts; k = 1 -> (45 - 3) x 8 = 336 us and no later draft; k = 4 on 0.8.5 -> 360 us +
    3 x 17 x 8 = 408 us; nothing where no counts were read."""
    r084, r085 = parse_release("vllm==0.8.4"), parse_release("vllm==0.8.5")
    assert SR.runner_host_seconds(r084, "eagle", 2, 80e-6) == pytest.approx((360e-6, 104e-6), rel=1e-12)
    assert SR.runner_host_seconds(r084, "eagle", 1, 80e-6) == pytest.approx((336e-6, 0.0), abs=1e-15)
    assert SR.runner_host_seconds(r085, "eagle", 4, 80e-6) == pytest.approx((360e-6, 408e-6), rel=1e-12)
    assert SR.runner_host_seconds(parse_release("vllm==0.9.0"), "eagle", 4, 80e-6) == (0.0, 0.0)
    # the per-launch cost follows Efficiency.layer_launch_s: twice the layer time, twice the seconds
    assert SR.runner_host_seconds(r084, "eagle", 2, 160e-6) == pytest.approx((720e-6, 208e-6), rel=1e-12)


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
    graph layers x 50 us are GPU time, the small-kernel floor) + the runner's 360 us, the verify
    forward of 3 tokens replaying the same graphs."""
    base, fast = _steps("vllm==0.8.4", 2)
    assert base.host_s == pytest.approx(0.6e-3, rel=1e-9)
    assert base.kernel_floor_s == fast.kernel_floor_s == pytest.approx(32 * 50e-6, rel=1e-9)
    assert fast.host_s - base.host_s == pytest.approx(360e-6, rel=1e-9)


def test_draft_steps_pay_the_fc_and_the_loop_launches():
    """k = 2 on 0.8.4 vs 0.9.0 (same 0.6 ms scheduling, drafter on graphs from 0.9.0, no runner counts
    there): 2 x (80 - 50) us of the layer's launch time + 104 us of the loop's launches; the fc's
    2 x 2 x 4096^2 x 2 B = 134,217,728 B at 0.85 x 3.35 TB/s = 47.1 us is in both."""
    _, eager = _steps("vllm==0.8.4", 2)
    _, graphed = _steps("vllm==0.9.0", 2)
    assert eager.draft_s - graphed.draft_s == pytest.approx(2 * 30e-6 + 104e-6, rel=1e-9)
    fc_s = 134_217_728 / (0.85 * 3.35e12)
    assert fc_s == pytest.approx(47.135e-6, rel=1e-4)
    # a graphed draft step: one layer (218,103,808 parameters) + the LM head (128,256 x 4096) in bf16,
    # 1,486.9 MB at 0.85 x 3.35 TB/s = 522.2 us, + the layer's 50 us (+ ~2 us of KV and elementwise);
    # two of them + the fc
    assert graphed.draft_s == pytest.approx(2 * (522.2e-6 + 50e-6) + fc_s, rel=0.005)


def test_pr16035_rows_worked_by_hand():
    """The two held-out rows (vllm PR 16035, Llama-3-8B + EAGLE at batch 1): before these terms the
    engine step (verify + k drafts) was 8.75 ms at k = 2 and 9.99 ms at k = 4 against a 7.513 ms
    plain step. Now + 360 us + (k - 1) x 104 us + k x 23.6 us (the fc's 67 MB): 9.261 / 10.756 ms, so 1.89 x 7.513 /
    9.261 = 1.533x and 2.08 x 7.513 / 10.756 = 1.453x (measured 1.364x / 1.288x)."""
    from gpuplan.jobs.validation.inference import KIND_SPECULATIVE

    rows = serving_cases_by_id()
    k2, k4 = rows["vllm16035-llama3-8b-eagle-k2"], rows["vllm16035-llama3-8b-eagle-k4"]
    assert k2[1] == k4[1] == KIND_SPECULATIVE
    assert k2[3] == pytest.approx(1.89 * 7.513 / (8.750 + 0.360 + 0.104 + 2 * 0.02357), rel=2e-3)
    assert k4[3] == pytest.approx(2.08 * 7.513 / (9.990 + 0.360 + 3 * 0.104 + 4 * 0.02357), rel=2e-3)
    assert k2[2] == pytest.approx(1.364, abs=1e-3) and k4[2] == pytest.approx(1.288, abs=1e-3)
