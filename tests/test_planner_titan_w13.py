"""The torchtitan planner check against measured torchtitan runs carried to each group's GPU type and count by the
step model's own ratio (jobs/validation/planner_carried.py; docs/step.md, Planner, 'Carried torchtitan runs', wave 13).
"""

import pytest

from gpuplan.jobs.validation.planner_carried import carried_check, carry, carried_runs, fits
from gpuplan.jobs.validation.planner_choice import _groups
from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s, published_throughput_rows

GT = "h100-sxm-96gb-500w"


@pytest.fixture(scope="module")
def rows():
    return {r["id"]: r for r in published_throughput_rows()}


@pytest.fixture(scope="module")
def groups():
    return _groups()


def test_carry_to_its_own_gpu_and_count_is_the_measurement(rows):
    # torchtitan's Dec-2024 8B FSDP 8 compile row (local batch 2, op SAC) carried to its own 8 Grand Teton H100s:
    # the ratio is 1, so the figure is its published 6,667 tokens/s/GPU
    figure, target = carry(rows["torchtitan-2412-llama-3.1-8b-8g-fsdp-compile"], GT, 8, 2, 2, "selective")
    assert figure == pytest.approx(6667, rel=1e-9)
    assert (target["layout"]["dp"], target["layout"]["global_batch"]) == (8, 16)


def test_carry_is_the_models_ratio_between_the_parts(rows):
    # IBM's 70B FSDP 512 on 700 W H100 SXM (960 tokens/s/GPU) to 256 Grand Teton H100 at local batch 1, full AC:
    # the rows built by hand; the ratio lies between the parts' HBM ratio 2.4 / 3.35 = 0.716 and their BF16 peak
    # ratio 912.5 / 989.4 = 0.922 (catalog/hardware), nearer the peak (a 70B step is GEMM-bound)
    run = rows["torchtitan-ibm-2411-llama-3.1-70b-512g-fsdp"]
    lay = dict(run["layout"], micro_batch=1, recompute="full")
    source = dict(run, layout=dict(lay, global_batch=512))
    target = dict(run, gpu=GT, gpus=256, layout=dict(lay, dp=256, global_batch=256))
    ratio = predict_tokens_per_gpu_s(target) / predict_tokens_per_gpu_s(source)
    figure, _ = carry(run, GT, 256, 1, 1, "full")
    assert figure == pytest.approx(960 * ratio, rel=1e-9)
    assert 2.4 / 3.35 < ratio < 912.5 / 989.4 + 0.005
    assert ratio > 0.85


def test_degrees_only_row_keeps_only_settings_that_fit(rows):
    # IBM's 405B FSDP 128 x TP 4 Float8 carried to 512 Grand Teton H100: op-level SAC at local batch 1 is over the
    # fit budget there (carried 210), full AC fits (198); the kept figure is a fitting one, the least of them
    run = rows["torchtitan-ibm-2411-llama-3.1-405b-512g-fsdp-tp4-float8"]
    selective, selective_row = carry(run, GT, 512, 1, 1, "selective")
    full, full_row = carry(run, GT, 512, 1, 1, "full")
    assert not fits(selective_row) and fits(full_row)
    assert selective > full * 1.03
    key = ("llama-3.1-405b", GT, 512, "fp8", "torchtitan")
    kept = {c.id: c for c in carried_runs(key, 8192)}["torchtitan-ibm-2411-llama-3.1-405b-512g-fsdp-tp4-float8"]
    assert kept.carried == pytest.approx(full, rel=0.02)
    assert kept.carried < selective


@pytest.mark.parametrize("key, own_error, low, high", [
    # (group, the planner vs the group's own best as validate scores it, bounds on the planner vs the reference)
    (("llama-3.1-405b", GT, 512, "fp8", "torchtitan"), 0.626, -0.08, 0.08),  # vs IBM FSDP x TP 4 carried: +5.2%
    (("llama-3.1-70b", GT, 256, "bf16", "torchtitan"), 0.354, -0.08, 0.08),  # vs IBM FSDP 512 carried: +1.6%
    (("llama-3.1-70b", GT, 256, "fp8", "torchtitan"), 0.161, -0.20, -0.08),  # pessimistic there: -15.1%
    (("llama-3.1-8b", GT, 64, "bf16", "torchtitan"), 0.498, -0.08, 0.10),  # vs torchtitan's own FSDP 8: +7.8%
    (("llama-3.1-405b", GT, 128, "bf16", "torchtitan"), 0.254, -0.08, 0.08),  # IBM's own TP 4 layout: -2.3%
])
def test_demonstration_groups_against_the_carried_reference(groups, key, own_error, low, high):
    check = carried_check(key, groups[key])
    assert check.planned / check.own_best - 1 == pytest.approx(own_error, abs=0.02)
    assert low < check.error < high
