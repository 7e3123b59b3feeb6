"""Calibration (gpuplan.calibrate): factors defined against gpuplan's own predictions, fitted
by least squares with their uncertainty, saved and loaded, applied to StepSettings / Cluster /
memory, and the end-to-end loop trial -> calibrate -> estimate on real CPU trials.

Synthetic measurements are built from gpuplan's own predicted parts with known factors, so the
fit must recover those factors (to float round-off); real CPU trials check that calibration
moves the estimate toward the measurement, in-sample (time, memory) and held out (memory).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import MIXTRAL_LOG

from gpuplan.calibrate import (
    LogContext,
    Measurement,
    apply_to_cluster,
    apply_to_memory,
    apply_to_overheads,
    apply_to_step_settings,
    calibrated_vs_default_lines,
    fit_calibration,
    load_calibration,
    load_measurement,
    save_calibration,
)
from gpuplan.calibrate import predict as P
from gpuplan.core.memory import training as M
from gpuplan.core.time import step as S
from gpuplan.errors import InputError

HAVE_BACKEND = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_backend = pytest.mark.skipif(not HAVE_BACKEND, reason="needs the profile extra (torch, transformers)")
LOGS = Path(__file__).parent / "fixtures" / "logs"
GiB = 2**30
TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 512, "num_hidden_layers": 2, "max_position_embeddings": 1024,
        "tie_word_embeddings": False}


def _m(seq_len: int, world: int = 1, zero: int = 0, micro_batch: int = 1, **kw) -> Measurement:
    """A measurement of Llama-3.2-1B on H100s (GEMM dimension min(2048, tokens) = 2048 throughout)."""
    return Measurement(source=f"s{seq_len}-w{world}-mb{micro_batch}", kind="table", model="llama-3.2-1b",
                       seq_len=seq_len, world_size=world, gpu="h100-sxm", zero=zero, micro_batch=micro_batch, **kw)


def _with_time(m: Measurement, f: float, g: float, k: float = 1.0, noise: float = 0.0) -> Measurement:
    parts = P.step_parts(P.case_of(m), world_size=m.world_size)
    return replace(m, step_time_s=(f * parts.compute + g * parts.attention + k * parts.comm) * (1 + noise))


def _with_memory(m: Measurement, a: float, c: float) -> Measurement:
    return replace(m, peak_memory_bytes=P.memory_parts(P.case_of(m)).peak(a, c), memory_kind="allocated")


# ---------------------------------------------------------------------------------------------
# fitting

def test_one_measurement_gives_the_ratio_with_unknown_uncertainty():
    m = _with_time(_m(4096), f=1.3, g=1.3)
    cal = fit_calibration([m])
    parts = P.step_parts(P.case_of(m))
    # f = measured / predicted = 1.3 (C + A) / (C + A)
    assert cal.compute_time.value == pytest.approx(m.step_time_s / parts.total)
    assert cal.compute_time.value == pytest.approx(1.3)
    assert cal.compute_time.status == "single" and cal.compute_time.stderr is None
    assert "uncertainty unknown" in cal.compute_time.note
    assert cal.attention_time.status == "tied" and cal.attention_time.value == cal.compute_time.value
    assert cal.comm_time.status == "not identified" and cal.comm_time.value == 1.0
    line = {ln.key: ln for ln in calibrated_vs_default_lines(cal)}["cal_compute_time"]
    assert "1 measurement, uncertainty unknown" in line.text


def test_attention_separated_when_the_attention_share_varies():
    # attention is 9.6 % of the predicted step at s = 2048 and 36.5 % at s = 8192
    ms = [_with_time(_m(s), f=1.2, g=1.5) for s in (2048, 4096, 8192)]
    cal = fit_calibration(ms)
    assert cal.compute_time.value == pytest.approx(1.2, rel=1e-9)
    assert cal.attention_time.value == pytest.approx(1.5, rel=1e-9)
    assert cal.compute_time.status == "fitted" and cal.compute_time.stderr == pytest.approx(0, abs=1e-9)
    for fit in cal.measurements:  # at the calibrated GEMM dimension the applied settings are exact
        assert fit.step_calibrated_s == pytest.approx(fit.step_measured_s, rel=1e-9)


def test_noisy_measurements_give_a_standard_error():
    noise = (0.03, -0.02, 0.01, -0.025, 0.02)
    ms = [_with_time(_m(s), f=1.2, g=1.5, noise=e) for s, e in zip((2048, 3072, 4096, 6144, 8192), noise)]
    cal = fit_calibration(ms)
    f = cal.compute_time
    assert f.status == "fitted" and f.n_measurements == 5 and f.stderr > 0
    # by hand (calibrate/fit.py: rows divided by the measured step y_i, so the target is 1 and the design row is
    # (compute_i, attention_i) / y_i = ((1 - s_i) / 1.2, s_i / 1.5) / (1 + e_i), s_i the attention's share of the
    # step at f 1.2, g 1.5: 0.1177, 0.1844, 0.2438, 0.3420, 0.4186 at s 2,048 ... 8,192 (the comment above);
    # least squares in closed form with the 2 x 2 normal equations, stderr^2 = RSS / (5 - 2) x (D^T D)^-1_00)
    shares = []
    for m in ms:
        parts = P.step_parts(P.case_of(m), world_size=1)
        shares.append(1.5 * parts.attention / (1.2 * parts.compute + 1.5 * parts.attention))
    assert shares == pytest.approx([0.1177, 0.1844, 0.2438, 0.3420, 0.4186], abs=1e-4)
    rows = [((1 - sh) / 1.2 / (1 + e), sh / 1.5 / (1 + e)) for sh, e in zip(shares, noise)]
    s00, s01, s11 = (sum(r[i] * r[j] for r in rows) for i, j in ((0, 0), (0, 1), (1, 1)))
    t0, t1 = sum(r[0] for r in rows), sum(r[1] for r in rows)
    det = s00 * s11 - s01 * s01
    beta = ((s11 * t0 - s01 * t1) / det, (s00 * t1 - s01 * t0) / det)
    rss = sum((beta[0] * r[0] + beta[1] * r[1] - 1) ** 2 for r in rows)
    assert beta == pytest.approx((1.2121, 1.4690), abs=1e-4)
    assert (f.value, cal.attention_time.value) == pytest.approx(beta, rel=1e-9)
    assert (rss / 3 * s11 / det) ** 0.5 == pytest.approx(0.03980, abs=1e-5)  # 3.3% of f
    assert f.stderr == pytest.approx((rss / 3 * s11 / det) ** 0.5, rel=1e-9)
    assert cal.attention_time.stderr == pytest.approx((rss / 3 * s00 / det) ** 0.5, rel=1e-9)
    assert f.low == pytest.approx(f.value - 2 * f.stderr) and f.high == pytest.approx(f.value + 2 * f.stderr)
    assert abs(f.value - 1.2) < 0.1 and abs(cal.attention_time.value - 1.5) < 0.3


def test_communication_factor_needs_runs_that_communicate():
    ms = [_with_time(_m(2048), 1.2, 1.5, 2.0), _with_time(_m(8192), 1.2, 1.5, 2.0),
          _with_time(_m(2048, world=64, zero=3), 1.2, 1.5, 2.0), _with_time(_m(4096, world=16), 1.2, 1.5, 2.0)]
    cal = fit_calibration(ms)
    assert cal.comm_time.value == pytest.approx(2.0, rel=1e-9)
    assert cal.compute_time.value == pytest.approx(1.2, rel=1e-9)
    # applied through the Cluster: scale-up and scale-out efficiencies divided by 2
    cluster = apply_to_cluster(cal, P.cluster_of(P.case_of(ms[2]), 64))
    # H100: the catalog's measured NVLink ring efficiency 0.82 and the 0.90 NIC efficiency, halved
    assert (cluster.scale_up_efficiency, cluster.scale_out_efficiency) == pytest.approx((0.41, 0.45))


def test_memory_factors_from_two_activation_sizes():
    a, c = 1.1, 1.0 * GiB
    ms = [_with_memory(_m(4096, micro_batch=b), a, c) for b in (1, 2)]
    cal = fit_calibration(ms)
    assert cal.activation_memory.value == pytest.approx(a, rel=1e-9)
    assert cal.memory_overhead.value == pytest.approx(c, rel=1e-6)
    assert cal.compute_time.status == "not identified"  # no step times given


def test_one_memory_peak_goes_to_the_activation_factor():
    m = _with_memory(_m(4096), 1.25, 0.0)
    cal = fit_calibration([m])
    assert cal.activation_memory.value == pytest.approx(1.25) and cal.activation_memory.stderr is None
    assert cal.memory_overhead.status == "not identified" and cal.memory_overhead.value == 0.0


def test_a_peak_below_the_model_states_is_not_fitted():
    """A measured peak below the model states its flags put on a GPU (weights, gradients, master weights, optimizer
    states: MemoryParts.states, the bound jobs/calibrated_plan refuses a calibrated answer past) was measured on
    another layout: that peak is left out of the memory fit (named in the factor's note), and with no other peak
    memory stays uncalibrated."""
    from gpuplan.core.memory import training as M

    a, c = 1.1, 1.0 * GiB
    good = [_with_memory(_m(4096, micro_batch=b), a, c) for b in (1, 2)]
    case = P.case_of(_m(2048))
    peak = M.peak_memory(case.spec, case.layout, case.memory)
    states = P.memory_parts(case).states
    assert states == peak.weights + peak.grads + peak.master + peak.optimizer < peak.allocated
    bad = replace(_m(2048), source="other-layout", peak_memory_bytes=0.9 * states, memory_kind="allocated")
    cal = fit_calibration(good + [bad])
    assert cal.activation_memory.value == pytest.approx(a, rel=1e-9)  # the two good peaks alone, exactly
    assert cal.memory_overhead.value == pytest.approx(c, rel=1e-6)
    assert "not used: other-layout" in cal.memory_overhead.note
    alone = fit_calibration([bad])
    assert (alone.activation_memory.value, alone.memory_overhead.value) == (1.0, 0.0)
    assert "memory not calibrated" in alone.memory_overhead.note


# ---------------------------------------------------------------------------------------------
# applying

def test_apply_to_step_settings_by_hand():
    cal = fit_calibration([_with_time(_m(s), f=1.2, g=1.5) for s in (2048, 4096, 8192)])
    settings = apply_to_step_settings(cal, S.StepSettings(), "h100-sxm")
    assert cal.reference.gemm_dim == 2048
    assert settings.gemm_d_half == pytest.approx(1.2 * (2048 + 512) - 2048)  # 1024
    assert settings.hbm_efficiency == pytest.approx(0.75 / 1.2)
    assert settings.attention_efficiency == pytest.approx(0.20 / 1.5)  # Hopper default 0.20
    # GEMM efficiency at d = 2048: MAMF 0.803 x 2048 / (2048 + 1024) = default 0.803 x 2048/2560 / 1.2
    assert S.gemm_efficiency("h100-sxm", 2048, settings.gemm_d_half) == pytest.approx(
        S.gemm_efficiency("h100-sxm", 2048, 512) / 1.2)


def test_apply_to_memory_and_overheads():
    m = _m(4096, micro_batch=2)
    cal = fit_calibration([_with_memory(_m(4096, micro_batch=b), 1.1, GiB) for b in (1, 2)])
    case = P.case_of(m)
    got = apply_to_memory(cal, case.spec, case.layout, case.memory)
    default = M.peak_memory(case.spec, case.layout, case.memory)
    assert got.default_bytes == default.allocated
    parts = P.memory_parts(case)
    assert got.calibrated_bytes == pytest.approx(max(parts.backward_start + 0.1 * parts.activations,
                                                     parts.optimizer_step) + GiB)
    gpu = apply_to_overheads(cal, M.Overheads())  # one device-neutral field, counted beside the CUDA context
    assert (gpu.cuda_context, gpu.measured) == (0.5 * GiB, pytest.approx(GiB))


def test_a_memory_overhead_applies_on_a_tpu_too(tmp_path):
    """memory_overhead is what a trial measured above the predicted allocated peak, not scaling with activations
    (calibrate.fit._fit_memory: allocator rounding, workspaces, what the model leaves out; torch's allocated peak
    holds no CUDA context), yet apply_to_overheads added it to cuda_context, which a TPU's fixed bytes never count:
    `memory --gpu tpu-v5p --calibration` dropped it (w17 D item 11). It is counted there now (Overheads.measured)
    and the lines say it was measured; a CUDA part keeps it in its CUDA context, as before."""
    from gpuplan import MemoryInputs, estimate_memory
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.core.parallel import ParallelLayout

    cal = fit_calibration([_with_memory(_m(4096, micro_batch=b), 1.0, GiB) for b in (1, 2)])
    assert cal.memory_overhead.value == pytest.approx(GiB, rel=1e-6)
    tpu = apply_to_overheads(cal, M.Overheads().on_device(resolve_gpu("tpu-v5p")))
    assert tpu.fixed_bytes(ParallelLayout(dp=8)) == pytest.approx(GiB, rel=1e-6) and tpu.reserve == 0.0
    gpu = apply_to_overheads(cal, M.Overheads())
    assert gpu.fixed_bytes(ParallelLayout(dp=1)) == pytest.approx(0.5 * GiB + GiB, rel=1e-6)  # dp 1: no NCCL group
    path = save_calibration(cal, tmp_path / "cal.json")
    ask = {"model": "llama-3.1-8b", "gpu": "tpu-v5p", "gpus": 8}
    plain = estimate_memory(MemoryInputs(**ask)).to_dict()["results"]
    report = estimate_memory(MemoryInputs(**ask, calibration=str(path)))
    calibrated = report.to_dict()["results"]
    # activation factor 1: the same tensors; total = allocated (no caching allocator on a TPU) + the 1 GiB measured
    assert calibrated["peak_allocated"] == pytest.approx(plain["peak_allocated"], rel=1e-6)
    assert calibrated["overheads"] == pytest.approx(GiB, rel=1e-6) and plain["overheads"] == 0
    assert calibrated["peak_total"] == pytest.approx(plain["peak_total"] + GiB, rel=1e-6)
    assert report.line("overheads").label == "measured above the tensors (calibration)"
    assert report.line("peak_total").label == (  # S1 (w17 review): the bytes are torch's, not XLA's
        "device memory needed (tensors + calibrated overhead; XLA runtime not modelled)")


def test_calibrated_mfu_is_the_inverse_of_the_step_time_ratio():
    from gpuplan.adapters.resolve import resolve_gpu
    from gpuplan.calibrate import calibrated_mfu

    cal = fit_calibration([_with_time(_m(s), f=1.25, g=1.25) for s in (4096,)])
    case = P.case_of(_m(4096))
    default, calibrated = calibrated_mfu(cal, case.spec, resolve_gpu("h100"), case.layout, case.step)
    # one GPU, no communication: the step takes 1.25x as long, so MFU is 1/1.25 of the default
    assert calibrated == pytest.approx(default / 1.25, rel=1e-9)
    assert 0.2 < default < 0.8
    # by hand: Llama 3.2 1B (16 layers, h 2,048, 32 heads / 8 KV heads of 64, MLP 8,192, vocab 128,256, tied)
    # forward per token 2 x 16 x 60,817,408 layer weights + 16 x 4 x 4,096 x 2,048 attention (no causal halving)
    # + 2 x 128,256 x 2,048 LM head = 3,008,364,544; x 3 = 9,025,093,632 FLOPs a token x 4,096 tokens over the
    # predicted step (its compute and attention parts, 0.075402 + 0.019452 s) x 989.4 TFLOP/s BF16 = 0.3939
    parts = P.step_parts(case, case.step)
    assert parts.comm == 0.0
    flops = 3 * (2 * 16 * (2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 8192) + 16 * 4 * 4096 * 2048 + 2 * 128_256 * 2048)
    assert flops == 9_025_093_632
    assert default == pytest.approx(flops * 4096 / ((parts.compute + parts.attention) * 989.4e12), rel=1e-9)
    assert default == pytest.approx(0.3939, abs=1e-4)


def test_save_and_load_round_trip(tmp_path):
    cal = fit_calibration([_with_memory(_with_time(_m(s), 1.2, 1.5), 1.1, 0.0) for s in (2048, 4096, 8192)])
    path = save_calibration(cal, tmp_path / "cal.json")
    assert load_calibration(path) == cal
    data = json.loads(path.read_text())
    assert data["kind"] == "gpuplan.calibration" and data["schema_version"] == 2  # 2: memory_time, host_time, environment
    assert set(data["compute_time"]) >= {"value", "stderr", "low", "high", "n_measurements", "sources"}


@pytest.mark.parametrize("text, fragment", [
    ('{"kind": "gpuplan.trial", "schema_version": 1}', "is not a gpuplan calibration file"),
    ('{"kind": "gpuplan.calibration", "schema_version": 7}', "schema_version 7"),
    ('{"kind": "gpuplan.calibration", "schema_version": 1}', "incomplete or malformed"),
    ("not json", "is not valid JSON"),
])
def test_bad_calibration_files(tmp_path, text, fragment):
    path = tmp_path / "c.json"
    path.write_text(text)
    with pytest.raises(InputError, match=fragment):
        load_calibration(path)


# ---------------------------------------------------------------------------------------------
# logs as measurements

def test_megatron_log_calibrates_against_the_prediction():
    # seq_len 2048 is what the log implies: 239.8 TFLOP/s x 5.4449 s x 16 / 128 = 1.632e14 FLOPs per
    # sequence = gpuplan's model FLOPs for Mixtral 8x7B at s = 2048 (tests/fixtures/logs/README.md);
    # tp 2 / ep 8 / dp 8 / ZeRO-1 (distributed optimizer) are the run's own layout, its argument dump in issue #756
    # (tests/fixtures/logs/README.md; the MoE host term at it: tests/test_mixtral_log_layout_s25.py)
    ctx = LogContext(model="mixtral-8x7b", gpu="h100", gpus=16, tp=2, ep=8, zero=1, seq_len=2048)
    m = load_measurement(LOGS / "megatron_mixtral.log", ctx)
    measured = MIXTRAL_LOG.measured_s
    assert (m.step_time_s, m.global_batch, m.memory_kind) == (pytest.approx(measured), 128, "allocated")
    cal = fit_calibration([m])
    parts = P.step_parts(P.case_of(m), world_size=16)
    # one measurement: compute and attention tied (parts.attention 0: tied into compute); the linear fit,
    # f = (measured - exposed comm) / (C + A) = (5.489 - 0.524) / 3.940 = 1.260, is where calibrate.reproduce starts
    # its search over 0.1-10. C: 128 x 1.632e14 FLOPs / 16 GPUs = 1.306e15 a GPU at gpuplan's predicted GEMM and
    # attention rates, 3.940 s
    assert parts.compute + parts.attention == pytest.approx(3.940, abs=1e-3)
    assert parts.comm == pytest.approx(0.524, abs=1e-3)
    assert (measured - parts.comm) / (parts.compute + parts.attention) == pytest.approx(1.260, abs=1e-3)
    # the log is timed as train times these flags (calibrate.train_step): under --framework megatron, the default,
    # the 4.465 s step holds 1.485 s of the MoE dispatcher's exposed host time (core.time.moe_host: 2.901 ms a layer
    # and micro-batch x 32 layers x 16 micro-batches of one sequence; tests/test_mixtral_log_layout_s25.py), which no
    # fused factor scales, so the factor that reaches the log, 2.037, is above the linear 1.260: a longer GPU stretch
    # hides more of that host term (at tp 4 / ep 4, not the run, the step was 9.047 s and no factor reached it)
    assert m.framework == "megatron" and cal.measurements[0].step_default_s == pytest.approx(
        MIXTRAL_LOG.megatron_step_s, abs=1e-3)
    assert cal.compute_time.value == pytest.approx(MIXTRAL_LOG.compute_factor, abs=1e-3)
    assert cal.measurements[0].step_calibrated_s == pytest.approx(measured, rel=1e-6)
    assert not any("host time" in n for n in cal.notes)
    # the generic model (the step calibrate timed logs with before session 25): no host term, 3.047 s = C + comm
    # with overlaps; calibration moves the estimate to the measurement (factor 1.98), calibrate.reproduce makes it exact
    megatron, megatron_fit = m, cal.measurements[0]
    m = load_measurement(LOGS / "megatron_mixtral.log", replace(ctx, framework="generic"))
    cal = fit_calibration([m])
    fit = cal.measurements[0]
    assert fit.step_default_s == pytest.approx(MIXTRAL_LOG.generic_step_s, abs=1e-3)
    assert abs(fit.step_calibrated_s - measured) < 1e-6 * measured < abs(fit.step_default_s - measured)
    # memory is predicted with train's memory builder for the same flags (session 26: jobs.memory.settings), so under
    # --framework generic the gradient buffer is generic's bf16 (2 B, its recipe 'mixed'), 2 B x 3,622,047,744
    # parameters a GPU = 6.75 GiB below Megatron-Core's fp32 one: 46.12 GiB of model states, 52.86 - 6.75
    grads = 2 * (2_818_572_288 + 803_475_456)
    assert P.memory_parts(P.case_of(m)).states == pytest.approx(52.862 * 2**30 - grads, rel=2e-4)
    m, fit = megatron, megatron_fit  # the run's own framework
    # its 52.98 GiB allocated peak: the line is after 1 iteration, before Adam's moments existed (8 B x (2,818,572,288
    # expert parameters a GPU + 803,475,456 dense / dp 8) = 21.75 GiB here; tests/test_expert_tp.py counts the states):
    # gpuplan predicts that iteration's peak, max(60.94 - 21.75 = 39.19 GiB backward, 52.86 GiB step) = the step's
    # 52.86 GiB, the model states (-0.23%), where activations do not show: memory is left uncalibrated
    # (tests/test_megatron_first_iteration_memory_s25.py). 60.94 GiB: train's builder, whose loss is the framework's
    # (Megatron's vocab-parallel cross-entropy for Mixtral, SetupFields.loss_for), 0.24 GiB below the generic loss of
    # the log format's defaults calibrate read before session 26 (61.19 GiB)
    moments = 8 * (2_818_572_288 + 803_475_456 / 8)
    mp = P.memory_parts(P.case_of(m))
    assert mp.optimizer_step == mp.states and mp.backward_start - moments < mp.states
    assert m.peak_memory_bytes == pytest.approx(54250.98583984375 * 2**20) and m.memory_after_iteration == 1
    assert fit.memory_default_bytes == pytest.approx(mp.states) and mp.states == pytest.approx(52.86 * 2**30, rel=2e-4)
    assert abs(fit.memory_default_bytes / m.peak_memory_bytes - 1) < 0.005
    assert "memory" not in fit.used_for and fit.memory_calibrated_bytes == fit.memory_default_bytes
    assert not cal.activation_memory.applied and not cal.memory_overhead.applied
    assert moments / 2**30 == pytest.approx(21.75, abs=0.005)
    assert (mp.backward_start - moments) / 2**30 == pytest.approx(39.19, abs=0.005)


def test_torchtitan_step_time_from_tokens_per_second(tmp_path):
    # the run is torchtitan's llama3 debugmodel (its 0.52 TFLOP/s / 7,282 tps = 7.1e7 FLOPs per token; llama-3.2-1b
    # is refused: tests/test_calibrate_model_mismatch.py)
    from helpers import debugmodel_config

    ctx = LogContext(model=debugmodel_config(tmp_path), gpu="h100", gpus=8, global_batch=8, seq_len=2048, zero=3)
    m = load_measurement(LOGS / "torchtitan_rank0.log", ctx)
    # 8 sequences x 2048 tokens / (7,317.5 tokens/s/device x 8 devices)
    assert m.step_time_s == pytest.approx(8 * 2048 / (7317.5 * 8))
    assert m.memory_kind == "reserved" and m.recipe == "fsdp2"
    # --framework not given: a torchtitan log is timed with train's torchtitan step (calibrate.measurement.LOG_FRAMEWORKS),
    # not train's default megatron one, and the experts' TP rule is torchtitan's
    assert m.framework == "torchtitan"
    assert load_measurement(LOGS / "torchtitan_rank0.log", replace(ctx, framework="megatron")).framework == "megatron"


@pytest.mark.parametrize("ctx, fragment", [
    (LogContext(gpu="h100", gpus=8, seq_len=2048), "--model: got no value; needed for"),
    (LogContext(model="llama-3.2-1b", gpus=8, seq_len=2048), "--gpu: got no value"),
    (LogContext(model="llama-3.2-1b", gpu="h100", seq_len=2048), "--gpus: got no value"),
])
def test_logs_need_the_run_description(ctx, fragment):
    with pytest.raises(InputError, match=fragment):
        load_measurement(LOGS / "megatron_mixtral.log", ctx)


# ---------------------------------------------------------------------------------------------
# the loop on real CPU trials

@pytest.fixture(scope="module")
def cpu_trials(tmp_path_factory):
    if not HAVE_BACKEND:
        pytest.skip("needs the profile extra (torch, transformers)")
    from gpuplan.profile.trial import run_trial
    from gpuplan.profile.trial_plan import TrialSettings

    folder = tmp_path_factory.mktemp("loop")
    (folder / "config.json").write_text(json.dumps(TINY))
    paths = {}
    for name, kw in (("mb2", dict(micro_batch=2)), ("mb4", dict(micro_batch=4)),
                     ("s256", dict(micro_batch=2, seq_len=256))):
        settings = TrialSettings(model=str(folder / "config.json"), **{"seq_len": 128, "steps": 5, "warmup": 2, **kw})
        paths[name] = folder / f"{name}.json"
        run_trial(settings, paths[name])
    return paths


def test_calibration_moves_the_estimate_toward_the_measurement(cpu_trials):
    cal = fit_calibration([load_measurement(cpu_trials[k]) for k in ("mb2", "mb4")])
    assert cal.reference.gpus == ("cpu",) and any("CPU stand-in" in n for n in cal.notes)

    def sq(key):
        return sum(((getattr(f, key) - f.step_measured_s) / f.step_measured_s) ** 2 for f in cal.measurements)

    # time: the least-squares fit cannot do worse than the defaults it contains (f = g = 1)
    assert sq("step_calibrated_s") <= sq("step_default_s")
    # memory: two activation sizes give a and c; the calibrated peaks equal the measured ones
    for f in cal.measurements:
        assert abs(f.memory_calibrated_bytes - f.memory_measured_bytes) <= 1e-6 * f.memory_measured_bytes
        assert abs(f.memory_default_bytes - f.memory_measured_bytes) < 0.01 * f.memory_measured_bytes


def test_calibrated_memory_is_closer_on_a_held_out_run(cpu_trials):
    cal = fit_calibration([load_measurement(cpu_trials[k]) for k in ("mb2", "mb4")])
    held = load_measurement(cpu_trials["s256"])
    case = P.case_of(held)
    got = apply_to_memory(cal, case.spec, case.layout, case.memory)
    measured = held.peak_memory_bytes
    # measured here: default -0.26 %, calibrated within 0.05 %
    assert abs(got.calibrated_bytes - measured) < abs(got.default_bytes - measured)


def test_cli_calibrate_writes_the_file_and_reports(cpu_trials, tmp_path, run_cmd):
    out = tmp_path / "calibration.json"
    code, stdout, err = run_cmd("calibrate", str(cpu_trials["mb2"]), str(cpu_trials["mb4"]), "--out", str(out),
                                "--json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["kind"] == "calibrate" and report["inputs"]["written_to"] == str(out)
    cal = load_calibration(out)
    assert report["results"]["cal_compute_time"] == cal.compute_time.value
    assert report["results"]["cal_activation_memory"] == cal.activation_memory.value
    assert len(report["tables"]["measured / gpuplan default / calibrated"]) == 2


def test_cli_extrapolates_a_gpu_measurement(tmp_path, run_cmd):
    code, stdout, err = run_cmd("calibrate", str(LOGS / "megatron_mixtral.log"), "--model", "mixtral-8x7b",
                                "--gpu", "h100", "--gpus", "16", "--tp", "2", "--ep", "8", "--zero", "1",
                                "--seq-len", "2048", "--target-gpus", "1024", "--framework", "generic", "--json")
    assert code == 0, err
    results = json.loads(stdout)["results"]
    # weak scaling: 128 sequences on 16 GPUs -> 8,192 on 1,024; tokens/s = tokens per step / step time
    assert results["x_target_tokens"] == pytest.approx(8192 * 2048 / results["x_target_step"])
    # at the run's own layout (tp 2, ep 8, dp 8) the calibrated step at the measured scale is the log's 5.489 s
    # (calibrate.reproduce); its MFU the logged 239.8 TFLOP/s at 5.4449 s, rescaled to 5.48935 s, over the H100's
    # 989.4 dense BF16 TFLOP/s
    assert results["x_measur_step"] == pytest.approx(5.48935, rel=1e-6)
    assert results["x_measur_mfu"] == pytest.approx(239.8e12 * 5.4449 / 5.48935 / 989.4e12, rel=1e-3)


@pytest.mark.parametrize("args, fragment", [
    ((), "files: got 'none'"),
    ((str(LOGS / "not_a_log.txt"),), "not_a_log.txt'; is not a format gpuplan recognises"),
    ((str(LOGS / "megatron_mixtral.log"),), "--model: got no value; needed for"),
    ((str(LOGS / "megatron_mixtral.log"), "--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "sixteen"),
     "gpus: got 'sixteen'"),
    ((str(LOGS / "table.csv"), "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tp", "4",
      "--seq-len", "4096", "--global-batch", "32", "--target-gpus", "1002"),
     "target_gpus: got 1002; a multiple of tp x pp x cp = 4"),
])
def test_cli_bad_input_one_line_exit_2(run_cmd, tmp_path, args, fragment):
    out = tmp_path / "c.json"
    code, stdout, err = run_cmd("calibrate", *args, "--out", str(out))
    assert code == 2 and fragment in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


@pytest.fixture
def run_cmd(run_cli):
    """The real gpuplan.cli.main (profile and calibrate are registered on demand)."""
    return run_cli
