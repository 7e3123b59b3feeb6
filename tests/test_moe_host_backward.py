"""core.time.moe_host's plain-schedule backward: a MoE layer's backward host count (the forward's Python x
the measured layer's backward / forward ratio + TE GroupedLinear's backward launches per expert) against the
layer's GPU backward, the refit of MOE_LAYER_HOST_SECONDS it came with, and the rows it moves (held out,
nothing fitted on them)."""

from __future__ import annotations

import pytest
from helpers import published_rows_by_id

from gpuplan.core.time import moe_host as M
from gpuplan.core.time import moe_layer as ML
from gpuplan.core.time import step as S
from gpuplan.core.time.moe_layer import backward_launches_per_local_expert
from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

US = 1e-6
ROWS = published_rows_by_id()


def _error(row_id: str, **overrides) -> float:
    run = ROWS[row_id]
    return predict_tokens_per_gpu_s(run, **overrides) / run["measured"]["tokens_per_s_per_gpu"] - 1


@pytest.mark.parametrize("recipe, launches", [(None, 4), ("mxfp8", 6), ("tensorwise", 12), ("nvfp4", 4)])
def test_backward_launches_per_local_expert(recipe, launches):
    # fc1 and fc2: dgrad + wgrad GEMMs (4) + 2 output-gradient quantisations (tex.split_quantize of grad_output,
    # grouped_linear.py@v2.12): BF16 none, MXFP8 one cast kernel, current scaling zero-amax + amax + scale + cast
    assert backward_launches_per_local_expert(recipe) == launches


def test_backward_to_forward_ratio_by_hand():
    # core.time.host's measured layer carried to the GPU host (r 1.506, k 3.25 us, c 0.5 us):
    # forward 1.506 x (704 - 210 x 0.5) + 210 x 3.25 = 902.1 + 682.5 = 1,584.6 us;
    # backward 1.506 x (756 - 467 x 0.5) + 467 x 3.25 = 786.9 + 1,517.8 = 2,304.6 us: 1.4544
    assert M.backward_to_forward_host() == pytest.approx(2304.6 / 1584.6, rel=1e-3)


def test_skill_layout_backward_by_hand():
    # HybridEP, 8 local experts, BF16, graphed router: forward host 2,938 + 12 ops x 7.547 + 16 launches x 3.25
    # = 3,080.6 us; backward (3,080.6 - 52.0) x 1.4544 + 32 launches x 3.25 = 4,404.8 + 104.0 = 4,508.8 us
    assert M.layer_host_seconds("flex", 8, None) == pytest.approx(3080.6 * US, abs=0.2 * US)
    assert M.backward_host_seconds("flex", 8, None) == pytest.approx(4508.8 * US, abs=0.5 * US)
    # against the layer's GPU backward with its two HybridEP all-to-alls (the step model: 4,456.6 us) 52.2 us wait
    assert M.backward_exposed_seconds("flex", 8, None, 4456.6 * US) == pytest.approx(52.2 * US, abs=0.5 * US)
    assert M.backward_exposed_seconds("flex", 8, None, 5000 * US) == 0.0  # a backward the GPU covers


def test_refit_constant_reproduces_the_profiled_idle():
    # skills/nemo-mbridge-perf-moe-comm-overlap/SKILL.md@067f987, overlap off: step 24.7138 s, GPU-active
    # 22.821 s: 1.893 s idle, now shared by the forward's wait and the counted backward's (module docstring)
    run = ROWS["mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"]
    tokens = run["layout"]["global_batch"] * run["model"]["seq_len"] / run["gpus"]
    with_host = tokens / predict_tokens_per_gpu_s(run, ep_a2a_overlap=False)
    static = tokens / predict_tokens_per_gpu_s(run, ep_a2a_overlap=False, moe_launch="static")
    assert with_host - static == pytest.approx(24.7138 - 22.821, rel=0.005)
    assert M.MOE_LAYER_HOST_SECONDS == pytest.approx(2938 * US)


def _recording(patch, name):
    """Wrap moe_host's ``name`` so each value it returns is recorded (the list comes back): a test can then
    tell a term that was computed and found 0 from one that was never asked."""
    seen, real = [], getattr(M, name)
    patch.setattr(M, name, lambda *args, **kwargs: seen.append(real(*args, **kwargs)) or seen[-1])
    return seen


def test_combined_schedule_takes_no_backward_term():
    # under the EP overlap the paired forward's sync bounds the backward instead (not modelled: docs/step.md)
    row = "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"
    assert ROWS[row]["moe_comm"]["a2a_overlap"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(M, "backward_exposed_seconds", lambda *args, **kwargs: 0.0)
        without = _error(row)
    assert _error(row) == pytest.approx(without, rel=1e-12)
    with pytest.MonkeyPatch.context() as patch:  # not asked at all under the combined schedule
        seen = _recording(patch, "backward_exposed_seconds")
        _error(row)
    assert seen == []


@pytest.mark.parametrize("row", ["mbridge-25.11-qwen3-30b-a3b-b200-8g-mxfp8", "mbridge-26.02-qwen3-30b-a3b-b200-8g-mxfp8"])
def test_micro_batch_one_b200_rows_are_host_bound_in_the_backward(row):
    # Qwen3-30B-A3B on 8 B200, alltoall, micro-batch 1, no overlap, eager (held out): 16 local experts, MXFP8,
    # router graphs moe_router + moe_preprocess, the profile's (read at the rows' tags in wave 5: presets
    # QWEN3_30B_A3B_B200_FP8_CS_BASE_CONFIG@v0.2.2 / _PRETRAIN_CONFIG_B200_FP8_CS_V1@v0.3.0). Forward host 2,938 + 16 ops x 7.547 + 64 launches x 3.25 =
    # 3,266.8 us; backward (3,266.8 - 208.0) x 1.4544 + 96 launches x 3.25 = 4,448.6 + 312.0 = 4,760.6 us, 2.5x the
    # layer's GPU backward (~1.9 ms): +36.8% / +42.6% too fast without the term, within 6% with it (measured at
    # the commit that added it: -0.4% / -4.4%)
    assert ROWS[row]["moe_comm"]["cuda_graph"] == "te:moe_router,moe_preprocess"
    assert M.backward_host_seconds("alltoall", 16, "mxfp8") == pytest.approx(4760.6 * US, abs=0.5 * US)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(M, "backward_exposed_seconds", lambda *args, **kwargs: 0.0)
        without = _error(row)
    assert without > 0.30
    assert abs(_error(row)) < 0.06


def test_gpt_oss_h100_backward_is_gpu_bound():
    # GPT-OSS 120B on 64 H100 (pp 4, ep 8, micro-batch 1): the layer's GPU backward (~6.9 ms) covers its host
    # (~5.6 ms), so its error moves only by the refit forward constant (+0.4 points)
    row = "mbridge-26.04.01-gpt-oss-120b-h100-sxm-64g-bf16"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(M, "backward_exposed_seconds", lambda *args, **kwargs: 0.0)
        without = _error(row)
    assert _error(row) == pytest.approx(without, rel=1e-12)
    with pytest.MonkeyPatch.context() as patch:  # asked, and GPU-bound: 0 (not merely never asked)
        seen = _recording(patch, "backward_exposed_seconds")
        _error(row)
    assert seen and max(seen) == 0.0


def test_activation_sync_by_hand():
    # GPT-OSS's clamped quick-GEGLU (weighted_bias_quick_geglu_impl, fused_bias_geglu.py L434 core_v0.15-0.18)
    # builds torch.tensor(linear_offset, device=cuda): a synchronising host-to-device copy. alltoall, 16 local
    # experts, BF16, eager fc2 bias, no router graphs: the layer's host 2,938 + (6 + 10 + 32) ops x 7.547 + 32
    # launches x 3.25 + 43 router ops x 7.547 = 3,728.8 us, of which 135.0 us come before the activation
    # ((6 + 5) ops x 7.547 + fc1's 16 launches x 3.25). GPU: 1,074 + 2,073 + 2 x 259 = 3,665 us, of which the
    # dispatch all-to-all and fc1 (2/3 of 1,500 us of routed GEMMs) 1,259 us come first. Exposed after the
    # activation: 3,728.8 - 135.0 - (3,665 - 1,259) = 1,187.8 us, where the one-sync model had 63.8 us: +1,124.0 us
    from dataclasses import replace

    from gpuplan.core.comm.moe_overlap import MoeLayerPhases
    from gpuplan.core.time.step import StepSettings

    assert M.EXPERT_OPS_BEFORE_ACTIVATION == 5 and M.FC1_SHARE_OF_EXPERT_GEMMS == pytest.approx(2 / 3)
    settings = replace(StepSettings(), ep_dispatcher="alltoall", moe_router_graphs=False, moe_launch="eager")
    assert M.layer_host_seconds("alltoall", 16, None, True, False) == pytest.approx(3728.8 * US, abs=0.5 * US)
    phases = MoeLayerPhases(1074 * US, 0.0, 2073 * US, 0.0)
    extra = M.activation_sync_extra_seconds(settings, 16, None, phases, 259 * US, True, 1500 * US)
    assert extra == pytest.approx(1124.0 * US, abs=0.5 * US)
    # under the combined schedule the paired backward covers it instead: not charged
    assert M.activation_sync_extra_seconds(replace(settings, ep_a2a_overlap=1.0), 16, None, phases, 259 * US, True,
                                           1500 * US) == 0.0
    # a layer whose GPU work after the activation outlasts the host: nothing more
    long = MoeLayerPhases(4000 * US, 0.0, 4000 * US, 0.0)
    assert M.activation_sync_extra_seconds(settings, 16, None, long, 259 * US, True, 1500 * US) == 0.0
    # both stretches host-bound (one all-to-all call 10 us, 60 us of routed GEMMs): GPU first 10 + 2/3 x 60 = 50 us
    # against the host's 135.0; GPU 1,074 + 2,073 + 2 x 10 = 3,167 us. Exposed: (135.0 - 50) + (3,593.8 - 3,117) =
    # 85.0 + 476.8 = 561.8 us, exactly the one-sync model's 3,728.8 - 3,167: the sync adds nothing (the first stretch
    # taken as GPU-bound gave -85.0 us, a sync that made the layer faster; review wave 5)
    assert M.activation_sync_extra_seconds(settings, 16, None, phases, 10 * US, True, 60 * US) == pytest.approx(
        0.0, abs=1e-12)
    # the first stretch host-bound, the rest GPU-bound (one call 10 us, 60 us of routed GEMMs, the layer's GPU
    # 1,464 + 2,516 + 2 x 10 = 4,000 us): GPU first 50 us against the host's 135.0, rest 3,950 us against the host's
    # 3,593.8; the one-sync model exposes nothing (3,728.8 < 4,000): +85.0 us, all of it the first stretch's
    slow_rest = MoeLayerPhases(1464 * US, 0.0, 2516 * US, 0.0)
    assert M.activation_sync_extra_seconds(settings, 16, None, slow_rest, 10 * US, True, 60 * US) == pytest.approx(
        85.0 * US, abs=0.5 * US)


@pytest.mark.parametrize("row, before", [("mbridge-26.04.01-gpt-oss-120b-h100-sxm-64g-bf16", 0.239),
                                         ("mbridge-26.02-gpt-oss-120b-h100-sxm-64g-bf16", 0.204)])
def test_gpt_oss_h100_rows_pay_the_activation_sync(row, before):
    # held out, nothing fitted: +24.6% / +21.1% with one sync per layer (+23.9% / +20.4% since the pp 4 fill
    # carries its all-to-alls, core.comm.moe_overlap.fill_drain_all_to_all), +15.8% / +12.5% with both (the step
    # +1.15 ms a MoE layer-micro-batch, 80 x 9 of them on the last stage); the micro-batch-4 25.11 row keeps its
    # GPU-bound forward
    with pytest.MonkeyPatch.context() as patch:  # and without the fallbacks' host ops (fallback_python_ops), added since
        patch.setattr(M, "activation_sync_extra_seconds", lambda *args, **kwargs: 0.0)
        patch.setattr(M, "fallback_python_ops", lambda *args: (0, 0))
        patch.setattr(ML, "eager_fallback_fixed_seconds", lambda *args, **kwargs: 0.0)  # and their kernels' GPU floor
        patch.setattr(S, "eager_rope_fixed_seconds", lambda *args: 0.0)  # (the RoPE's: core.time.step's)
        assert _error(row) == pytest.approx(before, abs=0.005)
    assert 0.10 < _error(row) < 0.17  # +13.8 / +10.6% (+14.0 / +10.8% at 3c1bc24: the eager kernels inside the host max)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(M, "activation_sync_extra_seconds", lambda *args, **kwargs: 0.0)
        unsynced = _error("mbridge-25.11-gpt-oss-120b-h100-sxm-64g-bf16")
    assert _error("mbridge-25.11-gpt-oss-120b-h100-sxm-64g-bf16") == pytest.approx(unsynced, rel=1e-12)
    with pytest.MonkeyPatch.context() as patch:  # asked, and its forward GPU-bound: 0
        seen = _recording(patch, "activation_sync_extra_seconds")
        _error("mbridge-25.11-gpt-oss-120b-h100-sxm-64g-bf16")
    assert seen and max(seen) == 0.0
