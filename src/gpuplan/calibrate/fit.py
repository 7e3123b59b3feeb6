"""Fit correction factors to measurements (weighted least squares on relative errors).

Time, for each measurement i with gpuplan's predicted parts C_i (compute), A_i (attention),
X_i (exposed communication) and the measured seconds per step y_i:

    y_i = f * C_i + g * A_i + k * X_i                         (f, g, k > 0)

Memory, with the predicted allocated bytes at the start of backward B_i (of which act_i are
activations) and in the optimizer step O_i, and the measured peak y_i:

    y_i = max(B_i + (a - 1) * act_i, O_i) + c                 (a > 0; c bytes, any sign)

Rows are divided by y_i, so the fit minimises relative errors. A factor the measurements do
not identify (a column that is zero or nearly proportional to another, or more factors than
measurements) is dropped: attention is tied to compute (g = f), communication and the memory
factors keep their defaults. With as many measurements as fitted factors the fit is exact and
the uncertainty unknown; with more, stderr = sqrt(diag(s^2 (D^T D)^-1)) and the range is
value +- 2 stderr.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gpuplan.calibrate import predict as P
from gpuplan.calibrate.classes import ClassRow, fit_classes, predicted_with
from gpuplan.calibrate.measurement import Measurement
from gpuplan.calibrate.reproduce import reproducing
from gpuplan.calibrate.model import (
    FACTOR_NAMES,
    MAX_OVERHEAD_BYTES,
    MAX_RATIO,
    TIME_FACTORS,
    Calibration,
    Factor,
    MeasurementFit,
    Reference,
    default_factor,
    ratio_range,
)
from gpuplan.core.time import step as S
from gpuplan.errors import InputError

MAX_CONDITION = 30.0
"""Largest condition number of the column-normalised design matrix accepted as 'identified'
(above it two factors trade off against each other and their values are noise)."""


@dataclass(frozen=True)
class _Row:
    m: Measurement
    case: P.Case
    step: P.StepParts | None
    memory: P.MemoryParts | None
    note: str = ""
    eager: P.EagerParts | None = None
    """The eager step by op class (--framework hf on a GPU: core.time); step is None then."""

    def class_row(self) -> ClassRow:
        e = self.eager
        parts = {"compute_time": e.gemm, "attention_time": e.attention, "memory_time": e.memory,
                 "host_time": e.host, "comm": e.comm}
        return ClassRow(self.m.source, self.m.step_time_s, parts)


@dataclass(frozen=True)
class _Solution:
    values: dict[str, float]
    stderr: dict[str, float | None]
    n: int


def _solve(columns: dict[str, list[float]], target: list[float], scale: list[float]) -> _Solution | None:
    """Least squares of target ~ sum(value * column), rows divided by ``scale``. None when the
    columns are not identifiable (fewer rows than columns, or ill-conditioned)."""
    import numpy as np

    names = list(columns)
    w = 1.0 / np.asarray(scale, dtype=float)
    design = np.asarray([columns[n] for n in names], dtype=float).T * w[:, None]
    rhs = np.asarray(target, dtype=float) * w
    n, p = design.shape
    norms = np.linalg.norm(design, axis=0)
    if n < p or not np.all(norms > 0) or np.linalg.cond(design / norms) > MAX_CONDITION:
        return None
    beta, *_ = np.linalg.lstsq(design, rhs, rcond=None)
    stderr: dict[str, float | None] = dict.fromkeys(names)
    if n > p:
        resid = design @ beta - rhs
        cov = float(resid @ resid) / (n - p) * np.linalg.inv(design.T @ design)
        stderr = {name: float(np.sqrt(max(cov[j, j], 0.0))) for j, name in enumerate(names)}
    return _Solution({name: float(b) for name, b in zip(names, beta)}, stderr, n)


def _factor(name: str, solution: _Solution, key: str, sources: tuple[str, ...], note: str = "") -> Factor:
    value, err = solution.values[key], solution.stderr[key]
    base = default_factor(name)
    status = "fitted" if err is not None else "single"
    low = high = None
    if err is not None:
        low, high = value - 2 * err, value + 2 * err
        bound = MAX_RATIO if base.unit == "x" else MAX_OVERHEAD_BYTES  # the band model._check_band reads back
        low, high = max(low, 0.0 if base.unit == "x" else -bound), min(high, bound)
    if err is None:
        note = (note + "; " if note else "") + (
            f"{solution.n} measurement(s) for as many factors: exact fit, uncertainty unknown")
    return Factor(value, base.default, base.unit, status, err, low, high, solution.n, sources, note)


# ---------------------------------------------------------------------------------------------
# time

def _fit_time(rows: list[_Row]) -> dict[str, Factor]:
    used = [r for r in rows if r.step is not None]
    if not used:
        return {k: default_factor(k, "no measurement with a step time on a predictable device")
                for k in ("compute_time", "attention_time", "comm_time")}
    y = [r.m.step_time_s for r in used]
    C = [r.step.compute for r in used]
    A = [r.step.attention for r in used]
    X = [r.step.comm for r in used]
    sources = tuple(r.m.source for r in used)
    has_comm = any(x > 0 for x in X)
    attempts = ((True, has_comm), (False, has_comm), (True, False), (False, False))
    for separate, comm in dict.fromkeys(attempts):
        cols = {"compute": C if separate else [c + a for c, a in zip(C, A)]}
        if separate:
            cols["attention"] = A
        if comm:
            cols["comm"] = X
        target = y if comm else [yi - xi for yi, xi in zip(y, X)]
        sol = _solve(cols, target, y)
        if sol is None or any(v <= 0 for v in sol.values.values()):
            continue
        compute = _factor("compute_time", sol, "compute", sources)
        attention = _factor("attention_time", sol, "attention", sources) if separate else replace(
            compute, status="tied", note="not separately identifiable (the measurements' attention shares "
                                         f"are {_shares(C, A)}); tied to compute_time")
        comm_factor = _factor("comm_time", sol, "comm", sources) if comm else default_factor(
            "comm_time", "no measurement with predicted exposed communication" if not has_comm
            else "not identifiable from these measurements; kept at 1")
        return {"compute_time": compute, "attention_time": attention, "comm_time": comm_factor}
    return {k: default_factor(k, "the measurements give no positive fit") for k in
            ("compute_time", "attention_time", "comm_time")}


def _shares(C: list[float], A: list[float]) -> str:
    shares = sorted(a / (c + a) for c, a in zip(C, A) if c + a > 0)
    if not shares:
        return "unknown"
    return f"{shares[0]:.1%}" if shares[0] == shares[-1] else f"{shares[0]:.1%}-{shares[-1]:.1%}"


# ---------------------------------------------------------------------------------------------
# memory

def _hidden(r: _Row) -> bool:
    """A first iteration's peak (calibrate.predict.memory_parts) that gpuplan puts at the optimizer step: the moments
    made there outweigh the activations iteration 1 held without them, so the peak shows no activations."""
    return r.memory.moments is not None and not r.memory.at_backward()


def _hidden_note(r: _Row, fitted: bool) -> str:
    verdict = "its peak not used for memory" if fitted else "memory not calibrated"
    return (f"{r.m.source}: {verdict}: its memory line is after 1 iteration, whose forward and backward ran "
            f"before the optimizer's first step made its moments ({r.memory.moments / 2**30:.2f} GiB a GPU), and gpuplan "
            f"puts that iteration's peak at the step ({r.memory.optimizer_step / 2**30:.2f} GiB, measured "
            f"{r.m.peak_memory_bytes / 2**30:.2f}; its backward {r.memory.backward_start / 2**30:.2f}): no activations "
            "show (Megatron-LM prints the line at the first logged iteration, --log-interval; since 9927a85e also after "
            "iteration 2, which would show them)")


HIDDEN = "not identified: a first iteration's peak, at the optimizer step (notes)"


def _fit_memory(rows: list[_Row]) -> dict[str, Factor]:
    peaked = [r for r in rows if r.memory is not None]
    hidden = [r for r in peaked if _hidden(r)]
    used = [r for r in peaked if r.m.peak_memory_bytes >= r.memory.states and r not in hidden]
    if hidden and not used and all(r.m.peak_memory_bytes >= r.memory.states for r in peaked):
        return {k: default_factor(k, HIDDEN) for k in ("activation_memory", "memory_overhead")}
    if peaked and not used:  # a peak below the model states the flags imply was measured on another layout: the bound
        worst = min(peaked, key=lambda r: r.m.peak_memory_bytes / r.memory.states)  # jobs.calibrated_plan holds too
        reason = (f"the measured peak ({worst.m.peak_memory_bytes / 2**30:.2f} GiB, {worst.m.source}) is below the "
                  f"{worst.memory.states / 2**30:.2f} GiB of model states the flags put on a GPU as gpuplan "
                  "counts them: the run's layout or sharding is not the one described (tensor / pipeline / expert "
                  "parallelism, ZeRO stage, recipe): memory not calibrated")
        return {k: default_factor(k, reason) for k in ("activation_memory", "memory_overhead")}
    if not used:
        return {k: default_factor(k, "no measurement with a memory peak")
                for k in ("activation_memory", "memory_overhead")}
    y = [r.m.peak_memory_bytes for r in used]
    sources = tuple(r.m.source for r in used)
    a, c, result = 1.0, 0.0, None
    for _ in range(5):  # the phase of each peak depends on a: refit until it stops moving
        phases = [r.memory.at_backward(a) for r in used]
        act = [r.memory.activations if b else 0.0 for r, b in zip(used, phases)]
        fixed = [r.memory.backward_start - r.memory.activations if b else r.memory.optimizer_step
                 for r, b in zip(used, phases)]
        for names in (("a", "c"), ("a",), ("c",)):
            cols = {"a": act, "c": [1.0] * len(used)}
            known = act if "a" not in names else [0.0] * len(used)  # a = 1 when not fitted
            target = [yi - fi - ki for yi, fi, ki in zip(y, fixed, known)]
            sol = _solve({k: cols[k] for k in names}, target, y)
            if sol is not None and sol.values.get("a", 1.0) > 0:
                break
        else:
            sol = None
        if sol is None:
            break
        a, c, result = sol.values.get("a", 1.0), sol.values.get("c", 0.0), sol
        if [r.memory.at_backward(a) for r in used] == phases:
            break
    if result is None:
        return {k: default_factor(k, "the measurements give no positive fit")
                for k in ("activation_memory", "memory_overhead")}
    kinds = sorted({r.m.memory_kind or "?" for r in used})
    note = f"memory kind: {', '.join(kinds)}" + ("; 'reserved' includes the allocator's cache"
                                                 if "reserved" in kinds else "")
    dropped = [r.m.source for r in peaked if r not in used and r not in hidden]
    if dropped:
        note += f"; not used: {', '.join(dropped)} (a peak below the model states its flags put on a GPU)"
    if hidden:
        note += f"; not used: {', '.join(r.m.source for r in hidden)} (a first iteration's peak at the optimizer step)"
    activation = _factor("activation_memory", result, "a", sources, note) if "a" in result.values else \
        default_factor("activation_memory", "no measured peak at the start of backward, or no spread in "
                       "activation size with a fixed overhead to separate")
    overhead = _factor("memory_overhead", result, "c", sources, note) if "c" in result.values else \
        default_factor("memory_overhead", "one measured peak (or activations of one size): attributed to the "
                       "activation factor, fixed overhead kept at 0")
    return {"activation_memory": activation, "memory_overhead": overhead}


# ---------------------------------------------------------------------------------------------

def _row(m: Measurement) -> _Row:
    case = P.case_of(m)
    step = memory = None
    note, first = "", m.memory_after_iteration == 1  # a Megatron line after iteration 1: that iteration's peak
    if m.step_time_s:
        if case.gpu is None:
            note = "step time not used: no catalog accelerator (and no CPU microbenchmarks) to predict it"
        elif m.device == "cpu" and m.world_size > 1:
            note = "step time not used: CPU multi-process runs communicate through gloo, which gpuplan does not model"
        elif case.step.eager_ops is not None:
            return _Row(m, case, None, P.memory_parts(case, first) if m.peak_memory_bytes else None, note,
                        P.eager_parts(case, world_size=m.world_size))
        else:
            step = P.step_parts(case, world_size=m.world_size)
    if m.peak_memory_bytes:
        memory = P.memory_parts(case, first)
    return _Row(m, case, step, memory, note)


def _reference(rows: list[_Row]) -> Reference:
    timed = [r for r in rows if r.step is not None or r.eager is not None] or rows
    gpus = tuple(dict.fromkeys((r.case.gpu.id if r.case.gpu else r.m.device) for r in timed))
    first = next((r.case.gpu for r in timed if r.case.gpu), gpus[0])
    e_attn = S.attention_efficiency(first)
    return Reference(gpus=gpus, models=tuple(dict.fromkeys(r.m.model for r in rows)),
                     gemm_dim=statistics.median(P.gemm_dimension(r.case) for r in timed), attention_efficiency=e_attn,
                     framework=timed[0].m.framework, environment=dict(timed[0].m.environment),
                     dtype=", ".join(dict.fromkeys(r.m.dtype for r in timed)), layout=_unstated(timed),
                     options=_options(timed))


def _unstated(timed: list[_Row]) -> dict:
    """calibrate.model.Reference.layout: the first fused log's context parallelism, virtual pipeline stages and TP
    overlap, given to calibrate or train's defaults (review R2 S1-3: train leaving --vpp to its search, vpp 16, answered
    0.905 s for a 1.0 s log); {} for trials (their own eager step)."""
    r = next((r for r in timed if r.step is not None), None)
    return {} if r is None else {"cp": r.case.layout.cp, "vpp": r.case.layout.vpp, "tp_overlap": r.case.step.tp_overlap}


def _options(timed: list[_Row]) -> dict:
    """calibrate.model.Reference.options: the step options train parsed for the first fused log (calibrate.train_step:
    given or train's defaults), so a plan with other flags is told; {} for trials (their own eager step)."""
    from gpuplan.calibrate.step_options import option_values
    from gpuplan.calibrate.train_step import train_inputs

    r = next((r for r in timed if r.step is not None and r.m.kind != "trial"), None)
    return {} if r is None else option_values(train_inputs(r.m))


PLAUSIBLE_RATIO = (0.5, 2.0)
"""A fitted ratio outside this range, or a fixed overhead above a quarter of the measured peak,
is reported as a likely mismatch between the measured run and its description."""


def _plausibility(cal: Calibration) -> list[str]:
    notes = []
    for name in ("compute_time", "attention_time", "comm_time", "activation_memory"):
        f = cal.factor(name)
        if f.applied and not PLAUSIBLE_RATIO[0] <= f.value <= PLAUSIBLE_RATIO[1]:
            notes.append(f"{name} = {f.value:.3g}: a large correction; check that the flags describe the run")
    peaks = [m.memory_measured_bytes for m in cal.measurements if m.memory_measured_bytes]
    if cal.memory_overhead.applied and peaks and abs(cal.memory_overhead.value) > 0.25 * statistics.median(peaks):
        notes.append(f"memory_overhead = {cal.memory_overhead.value / 2**30:+.3g} GiB, over a quarter of the measured "
                     "peak: the layout probably differs from the flags (ZeRO stage / distributed optimizer, expert "
                     "parallelism, recipe, sequence length); check before using it")
    return notes


def _memory_in_range(cal: Calibration) -> tuple[Calibration, str]:
    """A fitted activation factor outside the range a calibration holds (calibrate.model.FACTOR_RANGE) drops the memory
    fit, with a note, where time factors were fitted: a peak the memory model misreads (a layout or recipe the flags
    get wrong, a peak taken where the model does not look) says nothing against the step time. Where nothing else was
    fitted, _within_bounds refuses it as before. A calibration FILE holding such a value is refused on load."""
    f = cal.activation_memory
    low, high, _ = ratio_range("activation_memory", cal.reference.gpus)
    if not f.applied or low <= f.value <= high or not any(cal.factor(n).applied for n in TIME_FACTORS):
        return cal, ""
    why = (f"memory not calibrated: {', '.join(f.sources)} fit activation_memory {f.value:.3g}, outside the {low:g}-"
           f"{high:g} a calibration holds (calibrate/model.FACTOR_RANGE): the flags probably do not describe the run's "
           "memory (--tp, --ep, --zero, --seq-len, --recompute, the recipe); the time factors stand")
    return replace(cal, activation_memory=default_factor("activation_memory", why),
                   memory_overhead=default_factor("memory_overhead", why)), why


def _within_bounds(cal: Calibration) -> None:
    """A ratio the loader would refuse (calibrate.model.ratio_range) is refused here, before anything is written:
    `calibrate --out` wrote a file its own loader refused (the fused stacks' fit has no cap of its own)."""
    for name in (n for n in FACTOR_NAMES if default_factor(n).unit == "x"):  # the ratios; memory_overhead is bytes
        f = cal.factor(name)
        low, high, _ = ratio_range(name, cal.reference.gpus)
        if f.applied and not low <= f.value <= high:
            raise InputError(name, f"{f.value:.3g}", f"is what {', '.join(f.sources) or 'the measurements'} fit "
                             f"(measured / predicted), outside the {low:g}-{high:g} a calibration holds "
                             "(calibrate/model.FACTOR_RANGE): the flags probably do not describe the run (model, "
                             "--gpus, --tp, --pp, --zero, --seq-len, --global-batch, the recipe); nothing written")


def fit_calibration(measurements: Sequence[Measurement]) -> Calibration:
    """Factors fitted to ``measurements`` (see the module docstring), with each measurement's
    default and calibrated prediction for the report."""
    from gpuplan.calibrate.apply import calibrated_step_seconds

    if not measurements:
        raise InputError("measurements", 0, "at least one measurement")
    rows = [_row(m) for m in measurements]
    eager = [r for r in rows if r.eager is not None]
    time = _fit_time(rows)
    if eager:  # op-class factors (calibrate/classes.py); the fused stacks' rows keep _fit_time's
        classes = fit_classes([r.class_row() for r in eager])
        time = {**time, **classes} if any(r.step is not None for r in rows) else {
            **classes, "comm_time": default_factor("comm_time", "one GPU per measurement: no communication to fit")}
    cal, unreached = reproducing(Calibration(**time, **_fit_memory(rows), reference=_reference(rows)), rows)
    cal, dropped = _memory_in_range(cal)
    _within_bounds(cal)
    hidden = [r for r in rows if r.memory is not None and _hidden(r)]
    fits = []
    for r in rows:
        m = r.m
        memory = None if dropped or r in hidden else r.memory
        used = tuple(k for k, part in (("time", r.step), ("memory", memory)) if part is not None)
        fit = MeasurementFit(source=m.source, kind=m.kind, model=m.model,
                             gpu=r.case.gpu.id if r.case.gpu else m.device, world_size=m.world_size,
                             memory_kind=m.memory_kind, used_for=used, note=r.note)
        if r.step is not None:
            fit = replace(fit, step_measured_s=m.step_time_s, step_default_s=r.step.total,
                          step_calibrated_s=calibrated_step_seconds(cal, r.case, m.world_size))
        elif r.eager is not None:
            parts = r.class_row().parts
            factors = {n: cal.factor(n) for n in ("compute_time", "attention_time", "memory_time", "host_time")}
            fit = replace(fit, step_measured_s=m.step_time_s, step_default_s=r.eager.total,
                          step_calibrated_s=predicted_with(parts, factors), used_for=fit.used_for + ("time",))
        if r.memory is not None:
            fit = replace(fit, memory_measured_bytes=m.peak_memory_bytes, memory_default_bytes=r.memory.peak(),
                          memory_calibrated_bytes=r.memory.peak(cal.activation_memory.value, cal.memory_overhead.value))
        fits.append(fit)
    cal = replace(cal, measurements=tuple(fits))
    notes = [m.unchecked for m in measurements if m.unchecked] + _plausibility(cal) + [
        _hidden_note(r, cal.activation_memory.applied or cal.memory_overhead.applied) for r in hidden]
    notes += [dropped] if dropped else []
    notes += [unreached] if unreached else []
    if cal.reference.gpus == ("cpu",):
        notes.append("measured on the CPU stand-in: the time factors describe this CPU, not a GPU; "
                     "apply them to GPU plans only as a rough guide")
    return replace(cal, notes=tuple(notes))
