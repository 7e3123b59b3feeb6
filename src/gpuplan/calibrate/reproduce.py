"""The one-log fit that reproduces its run: the tied compute factor whose calibrated step is the measured one.

calibrate.fit's linear fit (y = f (C + A) + X) holds the exposed communication X at its default, but the step model
hides communication and host time behind compute, so the calibrated step is not linear in f and has a floor (the
host time and the communication no compute stretch hides); this
module searches f over the range a calibration holds (calibrate.model.ratio_range) and says where no f reaches the
measurement. Units: seconds per optimizer step; factors are ratios (measured / predicted).
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.calibrate import predict as P
from gpuplan.calibrate.model import Calibration, ratio_range

GRID_PER_DECADE = 48
"""Scan points per decade of factor (neighbours 4.9% apart): a crossing between two of them is bracketed; two
crossings closer than that are missed (the steps measured so far turn over across 20% or more of factor)."""

REPRODUCED = 0.01
"""The relative gap between the calibrated and the measured step below which a one-log fit reproduces its run."""


def reproducing(cal: Calibration, rows: list) -> tuple[Calibration, str]:
    """One timed run fitted exactly (compute and attention tied, communication kept at 1), and a note where it cannot
    be. _fit_time's linear fit holds the exposed communication at its default, but the step model hides
    communication and host time behind compute (ZeRO-3's gathers, the data-parallel reduction: core.comm.dp_overlap;
    Megatron's MoE dispatcher: core.time.moe_host), so the calibrated step is not linear in the factor and stops
    falling below some factor (qwen3-30b-a3b, EP 8 on 16 H100 under megatron: 0.510 s at 0.1, 0.535 s at 1). Until
    session 26 it was not even monotone (0.610 / 0.586 / 0.557 / 0.610 s at 0.9 / 1 / 1.2 / 1.4: the step credited a
    longer compute against the host and the collectives both; core.time.step now hides the data-parallel traffic
    behind the host-stretched compute), and the scan below still finds every crossing were one to come back.
    The tied factor is searched over the whole range a calibration holds (model.ratio_range): a scan on a geometric
    grid brackets each crossing of the measured step, bisection refines it, and the root nearest 1 (in ratio) is
    taken; without a crossing, of the factors whose step comes within REPRODUCED of the measurement (times the step)
    of the nearest any factor reaches, the one nearest 1 is taken (a factor at the range's end that buys 0.4% of a
    step the model cannot reach would distort every other layout), and where that step is more than REPRODUCED off
    the measured one the note says so. A linear fit beyond the range with no factor in it reaching the measurement is
    left for calibrate.fit._within_bounds to refuse (a 12x slower log: the flags do not describe the run) (session 25 review R2 S1-2: the linear fit, 0.794, moved that 0.50 s log's
    step from 0.586 to 0.643 s, away from it)."""
    import math

    from gpuplan.calibrate.apply import apply_to_cluster, apply_to_step_settings

    timed = [r for r in rows if r.step is not None]  # calibrate.fit._Row: the measurement, its case and parts
    f = cal.compute_time
    if len(timed) != 1 or f.status != "single" or cal.attention_time.status != "tied" or cal.comm_time.applied:
        return cal, ""
    r, y = timed[0], timed[0].m.step_time_s
    cluster = P.cluster_of(r.case, r.m.world_size)

    def at(value: float) -> Calibration:
        return replace(cal, compute_time=replace(cal.compute_time, value=value),
                       attention_time=replace(cal.attention_time, value=value))

    def gap(value: float) -> float:  # calibrated minus measured seconds
        c = at(value)
        return P.step_parts(r.case, apply_to_step_settings(c, r.case.step, r.case.gpu.id),
                            apply_to_cluster(c, cluster)).total - y

    low, high, _ = ratio_range("compute_time", cal.reference.gpus)
    decades = math.log10(high / low)
    steps = round(GRID_PER_DECADE * decades)
    grid = sorted({low * (high / low) ** (i / steps) for i in range(steps + 1)} | {1.0}
                  | ({f.value} if low <= f.value <= high else set()))
    gaps = [gap(v) for v in grid]
    roots = []
    for (a, ga), (b, gb) in zip(zip(grid, gaps), zip(grid[1:], gaps[1:])):
        if ga == 0 or ga * gb < 0:
            for _ in range(60):  # bisection on the bracket
                mid = math.sqrt(a * b)
                gm = gap(mid)
                if ga == 0 or b / a - 1 < 1e-12:
                    break
                a, ga, b, gb = (a, ga, mid, gm) if ga * gm <= 0 else (mid, gm, b, gb)
            best = a if abs(ga) <= abs(gb) else b
            if abs(gap(best)) <= 1e-6 * y:  # a jump (a floored term) brackets no root
                roots.append(best)
    if roots:
        value = min(roots, key=lambda v: abs(math.log(v)))
        return at(value), ""
    if not low <= f.value <= high:  # no factor in range reaches it and the linear fit is beyond the range: the fit
        return cal, ""             # refuses it (calibrate.fit._within_bounds: the flags do not describe the run)
    nearest = min(abs(g) for g in gaps)  # the best any factor does: of those within REPRODUCED of it, the one nearest 1
    value = min((v for v, g in zip(grid, gaps) if abs(g) <= nearest + REPRODUCED * y), key=lambda v: abs(math.log(v)))
    step = gap(value) + y
    if abs(step - y) <= REPRODUCED * y:
        return at(value), ""
    note = (f"{r.m.source}: no compute factor within {low:g}-{high:g} brings the calibrated step to the measured "
            f"{y:.4g} s: the file holds {value:.3g} (of the factors within 1% of the nearest any reaches, the one nearest 1), "
            f"whose step is {step:.4g} s ({step / y - 1:+.1%}; uncalibrated {r.step.total:.4g} s): the remaining gap is step time the model does not scale with compute, host time "
            "(the MoE dispatcher, launches) and communication no compute stretch hides: check the flags against the "
            "run (--framework, --tp, --ep, "
            "--micro-batch); train with this file will not reproduce the log")
    return at(value), note
