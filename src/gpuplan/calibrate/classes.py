"""Per-op-class time factors for eager stacks (core.time), fitted only where the measurements
identify them.

For measurement i gpuplan predicts the critical path by class (calibrate.predict.EagerParts):
matmuls G_i, attention A_i, memory-bound kernels M_i, host time beyond the GPU's H_i and exposed
communication X_i. The fit is weighted least squares on relative errors,

    y_i = f_G G_i + f_A A_i + f_M M_i + f_H H_i + X_i,     rows divided by y_i,

over the classes the measurements identify:

1. a class whose share of every measured step is below MIN_SHARE is not identified (its factor
   stays 1: the model as derived);
2. with fewer measurements than classes left, or a design matrix whose column-normalised condition
   number exceeds MAX_CONDITION (two classes move together across the runs), the class with the
   smallest share is dropped, and so on; with one measurement every class shares one factor
   ('tied': a scale, not a split);
3. each factor is bounded: nothing runs faster than its roofline (matmuls at the dense peak, the
   attention kernel at the dense peak, memory-bound kernels at the full HBM bandwidth with no
   fixed cost: LOWER_BOUND, conservative), and no class is more than UPPER_BOUND times slower
   than predicted; a factor that hits a bound is fixed there and the others are refitted.

Uncertainty: with more measurements than fitted factors, stderr from the residuals (value +- 2
stderr); otherwise unknown. Units: ratios.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.calibrate.model import Factor, default_factor

CLASSES = ("compute_time", "attention_time", "memory_time", "host_time")
"""Factor names of the classes: matmuls, attention, memory-bound kernels, host."""
MIN_SHARE = 0.05
MAX_CONDITION = 30.0
LOWER_BOUND = {"compute_time": 0.5, "attention_time": 0.4, "memory_time": 0.5, "host_time": 0.25}
"""Measured / predicted below which a class would beat its roofline: the predicted matmul rate
is >= 0.5 of peak at the shapes trials run (MAMF 0.8 x d / (d + 512), d >= 512), the cuDNN
attention rate >= 0.4 of peak (core.time.attention at s >= 1,024), the memory-bound kernels
reach 0.89 of HBM bandwidth after ~8 us each (core.time.memory_kernels: >= 0.5 of their
predicted time even for the smallest); host time has no roofline: 0.25."""
UPPER_BOUND = 5.0


@dataclass(frozen=True)
class ClassRow:
    """One measurement: measured seconds and the predicted critical path by class."""

    source: str
    measured: float
    parts: dict
    """factor name -> predicted seconds (CLASSES), plus 'comm'."""


def fit_classes(rows: list[ClassRow]) -> dict[str, Factor]:
    """The four class factors (module docstring); unfitted ones at 1 with the reason."""
    if not rows:
        return {n: default_factor(n, "no measurement with a step time on a GPU under an eager stack") for n in CLASSES}
    sources = tuple(r.source for r in rows)
    shares = {n: max(r.parts[n] / r.measured for r in rows) for n in CLASSES}
    reasons = {n: f"its share of the measured steps is at most {shares[n]:.1%} (< {MIN_SHARE:.0%})"
               for n in CLASSES if shares[n] < MIN_SHARE}
    active = [n for n in CLASSES if n not in reasons]
    if len(rows) == 1:
        return _tied(rows[0], active, reasons, sources)
    while active:
        solution = _bounded_solve(rows, active)
        if solution is not None:
            return _factors(rows, solution, reasons, sources)
        weakest = min(active, key=lambda n: shares[n])
        reasons[weakest] = (f"not separable from {', '.join(a for a in active if a != weakest)} with "
                            f"{len(rows)} measurements (too few, or its share moves with theirs)")
        active.remove(weakest)
    return {n: default_factor(n, reasons.get(n, "not identified")) for n in CLASSES}


def _tied(row: ClassRow, active: list[str], reasons: dict, sources: tuple[str, ...]) -> dict[str, Factor]:
    """One measurement: one scale shared by the classes it shows (the split is not identified)."""
    predicted = sum(row.parts[n] for n in active)
    scale = (row.measured - row.parts.get("comm", 0.0) - sum(row.parts[n] for n in reasons)) / predicted
    scale = min(max(scale, max(LOWER_BOUND[n] for n in active)), UPPER_BOUND)
    note = "one measurement: a scale shared by the classes, their split not identified (profile --sweep separates them)"
    out = {n: Factor(scale, 1.0, "x", "tied", None, None, None, 1, sources, note) for n in active}
    out.update({n: default_factor(n, reasons[n]) for n in reasons})
    return out


def _bounded_solve(rows: list[ClassRow], active: list[str]):
    """Least squares of the free classes with bounds (active set: a factor past its bound is fixed
    there and the rest refitted). None when the free columns are not identifiable."""
    import numpy as np

    fixed: dict[str, float] = {}
    for _ in range(len(active) + 1):
        free = [n for n in active if n not in fixed]
        if not free:
            return {"values": fixed, "stderr": {}, "free": []}
        y = np.array([r.measured for r in rows])
        known = np.array([r.parts.get("comm", 0.0) + sum(r.parts[n] * v for n, v in fixed.items())
                          + sum(r.parts[n] for n in CLASSES if n not in active) for r in rows])
        design = np.array([[r.parts[n] for n in free] for r in rows]) / y[:, None]
        rhs = (y - known) / y
        norms = np.linalg.norm(design, axis=0)
        if len(rows) < len(free) or not np.all(norms > 0) or np.linalg.cond(design / norms) > MAX_CONDITION:
            return None
        beta, *_ = np.linalg.lstsq(design, rhs, rcond=None)
        out_of_bounds = {n: min(max(b, LOWER_BOUND[n]), UPPER_BOUND) for n, b in zip(free, beta)
                         if not LOWER_BOUND[n] <= b <= UPPER_BOUND}
        if not out_of_bounds:
            stderr = dict.fromkeys(free)
            if len(rows) > len(free):
                resid = design @ beta - rhs
                cov = float(resid @ resid) / (len(rows) - len(free)) * np.linalg.inv(design.T @ design)
                stderr = {n: float(np.sqrt(max(cov[j, j], 0.0))) for j, n in enumerate(free)}
            return {"values": {**fixed, **dict(zip(free, map(float, beta)))}, "stderr": stderr, "free": free}
        fixed.update(out_of_bounds)
    return None


def _factors(rows: list[ClassRow], solution: dict, reasons: dict, sources) -> dict[str, Factor]:
    out = {}
    for name in CLASSES:
        if name in reasons:
            out[name] = default_factor(name, reasons[name])
            continue
        value = solution["values"][name]
        err = solution["stderr"].get(name)
        if name not in solution["free"]:
            note = f"held at its bound {value:g} (the fit asked for a class {'faster than its roofline' if value < 1 else 'slower than 5x'})"
            out[name] = Factor(value, 1.0, "x", "fitted", None, None, None, len(rows), sources, note)
            continue
        low = max(value - 2 * err, 0.0) if err is not None else None
        high = value + 2 * err if err is not None else None
        status = "fitted" if err is not None else "single"
        note = "" if err is not None else f"{len(rows)} measurements for as many factors: exact, uncertainty unknown"
        out[name] = Factor(value, 1.0, "x", status, err, low, high, len(rows), sources, note)
    return out


def predicted_with(parts: dict, factors: dict[str, Factor]) -> float:
    """Seconds of a step whose class parts are scaled by ``factors``."""
    return parts.get("comm", 0.0) + sum(parts[n] * factors[n].value for n in CLASSES)
