"""Report lines for calibrations: calibrated vs default values, per-measurement fit, extrapolation."""

from __future__ import annotations

from dataclasses import replace

from gpuplan.calibrate import predict as P
from gpuplan.calibrate.apply import (
    apply_to_cluster,
    apply_to_step_settings,
    gemm_floor_reached,
)
from gpuplan.calibrate.measurement import Measurement
from gpuplan.calibrate.model import Calibration, Factor
from gpuplan.calibrate.reproduce import REPRODUCED
from gpuplan.core.time import step as S
from gpuplan.core.comm.topology import (
    DEFAULT_SCALE_OUT_EFFICIENCY,
    DEFAULT_SCALE_UP_EFFICIENCY,
)
from gpuplan.core.units import format_bytes
from gpuplan.errors import InputError
from gpuplan.report.model import Assumption, Line, Report, Section, Table

_LABELS = {
    "compute_time": "compute time (GEMMs, elementwise, optimizer): measured / gpuplan",
    "attention_time": "attention kernel time: measured / gpuplan",
    "comm_time": "exposed communication time: measured / gpuplan",
    "activation_memory": "activation memory: measured / gpuplan",
    "memory_overhead": "fixed memory overhead per GPU (measured - gpuplan)",
}
_EAGER_LABELS = {
    "compute_time": "matmul time: measured / gpuplan",
    "attention_time": "attention kernel time: measured / gpuplan",
    "memory_time": "memory-bound kernel time (norms, RoPE, casts, loss, optimizer): measured / gpuplan",
    "host_time": "host issue time beyond the GPU's: measured / gpuplan",
    "comm_time": "exposed communication time: measured / gpuplan",
    "activation_memory": "activation memory: measured / gpuplan",
    "memory_overhead": "fixed memory overhead per GPU (measured - gpuplan)",
}


def is_eager(cal: Calibration) -> bool:
    """A calibration of op-class factors (an eager stack measured on a GPU: calibrate/classes.py)."""
    return cal.reference.framework == "hf" and cal.reference.gpus != ("cpu",) and any(
        m.step_measured_s is not None for m in cal.measurements) and cal.memory_time.note != "not fitted"


def _uncertainty(f: Factor) -> str:
    if f.status == "not identified":
        return f"default ({f.note})" if f.note else "default"
    if f.status == "tied":
        return "tied to compute time"
    n = f"{f.n_measurements} measurement{'s' if f.n_measurements != 1 else ''}"
    if f.stderr is None:
        return f"{n}, uncertainty unknown"
    if f.stderr <= 1e-9 * max(abs(f.value), 1.0):
        return f"{n}, residuals 0"
    spread = format_bytes(f.stderr) if f.unit == "bytes" else f"{f.stderr:.3g}"
    return f"+-{spread} (1 s.e.), {n}"


def _factor_line(name: str, f: Factor, labels: dict = _LABELS) -> Line:
    shown = (("+" if f.value >= 0 else "-") + format_bytes(abs(f.value))) if f.unit == "bytes" else f"{f.value:.3f}x"
    return Line(f"cal_{name}", labels[name], f.value, "bytes" if f.unit == "bytes" else "x",
                f"{shown} ({_uncertainty(f)})", f"default {f.default:g}; {f.status}", f.low, f.high)


def calibrated_vs_default_lines(cal: Calibration, warning: str = "") -> tuple[Line, ...]:
    """Every factor, and what it does to the step model's knobs, calibrated vs default; ``warning``
    (calibrate.compatibility) first when the plan is not where the calibration was measured."""
    head = (Line("calibration_warning", "calibration measured elsewhere", warning),) if warning else ()
    if is_eager(cal):
        env = cal.reference.environment
        where = ", ".join(f"{k} {v}" for k, v in env.items() if k in ("device_name", "torch", "transformers", "peft"))
        return head + tuple(_factor_line(n, cal.factor(n), _EAGER_LABELS) for n in _EAGER_LABELS) + (
            Line("cal_reference", "measured on", ", ".join(cal.reference.gpus),
                 text=f"{', '.join(cal.reference.gpus)} under --framework {cal.reference.framework}"
                      + (f" ({where})" if where else "") + f"; models {', '.join(cal.reference.models)}"),)
    lines = list(head) + [_factor_line(name, cal.factor(name)) for name in _LABELS]
    ref = cal.reference
    gpu = ref.gpus[0] if ref.gpus else ""
    d, f = ref.gemm_dim, cal.compute_time.value
    e_default = S.gemm_efficiency(gpu, d, S.StepSettings().gemm_d_half)
    floor = " (floored: faster than MAMF allows)" if gemm_floor_reached(cal) else ""
    e_cal = S.gemm_efficiency(gpu, d, apply_to_step_settings(cal, S.StepSettings(), gpu).gemm_d_half)
    lines.append(Line("cal_gemm_efficiency", f"achievable GEMM efficiency at d={d:g} on {gpu}", e_cal, "fraction",
                      f"{e_default:.1%} default -> {e_cal:.1%} calibrated{floor}",
                      "MAMF x d / (d + d_half); d_half' = f x (d + d_half) - d"))
    e_attn = ref.attention_efficiency / cal.attention_time.value
    lines.append(Line("cal_attention_efficiency", f"attention efficiency on {gpu}", e_attn, "fraction",
                      f"{ref.attention_efficiency:.1%} default -> {e_attn:.1%} calibrated",
                      "executed attention FLOP/s / peak = default / attention factor"))
    k = cal.comm_time.value
    lines.append(Line("cal_link_efficiency", "interconnect efficiency (scale-up / scale-out)",
                      DEFAULT_SCALE_UP_EFFICIENCY / k, "fraction",
                      f"{DEFAULT_SCALE_UP_EFFICIENCY:.0%} / {DEFAULT_SCALE_OUT_EFFICIENCY:.0%} default -> "
                      f"{DEFAULT_SCALE_UP_EFFICIENCY / k:.0%} / {DEFAULT_SCALE_OUT_EFFICIENCY / k:.0%} calibrated",
                      "default / communication factor"))
    lines.append(Line("cal_reference", "measured on", ", ".join(ref.gpus),
                      text=f"{', '.join(ref.gpus)}; models {', '.join(ref.models)}"
                           + (f"; fitted at dtype {ref.dtype}" if ref.dtype else "")))  # Reference.dtype (s25)
    return tuple(lines)


def measurement_table(cal: Calibration) -> Table:
    def trio(a, b, c, fmt):
        return "" if a is None and b is None else " / ".join("-" if x is None else fmt(x) for x in (a, b, c))

    rows = tuple((m.source, f"{m.world_size} x {m.gpu}",
                  trio(m.step_measured_s, m.step_default_s, m.step_calibrated_s, lambda x: f"{x:.4g}"),
                  trio(m.memory_measured_bytes, m.memory_default_bytes, m.memory_calibrated_bytes, format_bytes),
                  m.note) for m in cal.measurements)
    return Table("measured / gpuplan default / calibrated", ("file", "devices", "step seconds", "peak memory", "note"),
                 rows)


def extrapolation_lines(cal: Calibration, m: Measurement, target_gpus: int) -> tuple[Line, ...]:
    """The measured configuration weak-scaled to ``target_gpus`` (same micro-batch and sequences
    per GPU, data parallelism grown): default vs calibrated step time, throughput and MFU."""
    case = P.case_of(m)
    if case.gpu is None or case.gpu.id == P.CPU_ID:
        raise InputError("target_gpus", target_gpus, "a measurement on a catalog GPU to extrapolate from "
                         "(CPU trials describe the CPU, not a cluster)")
    lay = case.layout
    per_dp = lay.tp * lay.pp * lay.cp
    if target_gpus % per_dp:
        raise InputError("target_gpus", target_gpus, f"a multiple of tp x pp x cp = {per_dp}")
    scale = (target_gpus // per_dp) / lay.dp
    target = replace(case, layout=replace(lay, dp=target_gpus // per_dp, global_batch=round(lay.batch * scale)))
    try:  # the measured experts on the target's ranks: `--ep 4` measured on 16 GPUs was extrapolated to 7 (w29)
        from gpuplan.core.parallel import check_expert_layout

        check_expert_layout(target.spec, target.layout)
    except InputError as exc:
        raise InputError("target_gpus", target_gpus, f"the measured layout does not lay out on it: {exc.field} "
                         f"{exc.value}: {exc.expected}") from None
    lines = []
    node = case.gpu.devices_per_node or 8
    for label, c, gpus in (("measured size", case, m.world_size), ("target", target, target_gpus)):
        cluster = P.cluster_of(c, gpus)
        default = P.step_parts(c, c.step, cluster).total
        calibrated = P.step_parts(c, apply_to_step_settings(cal, c.step, case.gpu.id),
                                  apply_to_cluster(cal, cluster)).total
        tokens = c.layout.batch * c.memory.seq_len
        flops = S.model_flops_per_token(c.spec, c.memory.seq_len) * tokens
        peak = case.gpu.peak(c.step.dtype)
        nodes = f"{gpus:,} GPUs ({gpus / node:g} nodes of {node})"
        measured = f"; measured {m.step_time_s:.4g} s" if label == "measured size" and m.step_time_s else ""
        lines += [
            Line(f"x_{label[:6]}_step", f"step time at {label}: {nodes}", calibrated, "s",
                 f"{default:.4g} s default -> {calibrated:.4g} s calibrated{measured}",
                 f"{c.layout.batch} sequences x {c.memory.seq_len} tokens per step"),
            Line(f"x_{label[:6]}_mfu", f"MFU at {label}", flops / (calibrated * gpus * peak), "fraction",
                 f"{flops / (default * gpus * peak):.1%} default -> "
                 f"{flops / (calibrated * gpus * peak):.1%} calibrated"),
            Line(f"x_{label[:6]}_tokens", f"throughput at {label}", tokens / calibrated, "tokens/s",
                 f"{tokens / default:,.0f} default -> {tokens / calibrated:,.0f} calibrated tokens/s"),
        ]
    return tuple(lines)


def calibration_report(cal: Calibration, written_to: str | None = None,
                       extrapolation: tuple[Line, ...] = ()) -> Report:
    sections = [Section("Calibration factors (calibrated vs default)", calibrated_vs_default_lines(cal))]
    if extrapolation:
        sections.append(Section("Extrapolation with the calibrated step model", extrapolation))
    inputs = (Line("files", "measurements", len(cal.measurements), text=", ".join(m.source for m in cal.measurements)),
              Line("written_to", "calibration file", written_to or "", text=written_to or "not written (use --out)"))
    time_model = ("y = f_G G + f_A A + f_M M + f_H H + X", "gpuplan.core.time op classes of the measured run, "
                  "fitted only where identified (calibrate/classes.py)") if is_eager(cal) else (
        "y = f C + g A + k X", "gpuplan.core.time.step predictions for the measured model, layout and accelerator")
    assumptions = (
        Assumption("time_model", "time factors", time_model[0], time_model[1], ""),
        Assumption("memory_model", "memory factors", "y = max(B + (a-1) act, O) + c",
                   "gpuplan.core.memory.training peak for the measured layout", ""),
        Assumption("skip", "log warm-up", "first logged step skipped", "compilation / warm-up", ""),
    )
    missed = [m for m in cal.measurements if m.step_measured_s and m.step_calibrated_s is not None
              and abs(m.step_calibrated_s / m.step_measured_s - 1) > REPRODUCED]
    exact = ("factors are exact at the measured configuration" if not missed else
             "factors do not reproduce every measured step (" + ", ".join(
                 f"{m.source}: {m.step_measured_s:.4g} s measured, {m.step_calibrated_s:.4g} s calibrated"
                 for m in missed) + ")")
    notes = list(cal.notes) + [
        "use it with: gpuplan train|plan|memory ... --calibration FILE",
        f"{exact}; elsewhere the step and memory models carry them "
        "(an extrapolation): measure near the target layout where you can"]
    return Report("calibrate", "Calibration from measurements", inputs, assumptions, tuple(sections), tuple(notes),
                  (measurement_table(cal),))
