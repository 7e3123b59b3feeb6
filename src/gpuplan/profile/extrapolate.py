"""Extrapolate two reduced-depth memory measurements to the full depth (a + b·layers)."""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.profile.measure import _DEPTH_KEYS, CATEGORIES, PHASES, MemoryMeasurement, _positive_int


def extrapolate_to_depth(shallow: MemoryMeasurement, deeper: MemoryMeasurement,
                         target_layers: int) -> dict:
    """Linearly extrapolate two reduced-depth measurements to ``target_layers`` decoder layers.

    Every quantity is ``a + b * layers`` through the two points. The peak is extrapolated per
    phase (forward, backward, optimizer step) and the largest wins, so a peak that moves from
    backward to the optimizer step with depth is still found. Valid for models whose layers are
    identical (dense decoders); the two runs must differ only in depth. With FSDP use 4 and 8
    layers: shallower runs have not reached the steady prefetch/reduce-scatter overlap. The
    result's ``warnings`` list says when either caveat applies.
    """
    _positive_int("target_layers", target_layers)
    for name, m in (("shallow", shallow), ("deeper", deeper)):
        if not isinstance(m, MemoryMeasurement):
            raise InputError(name, type(m).__name__, "a MemoryMeasurement")
    l1, l2 = shallow.settings["num_layers"], deeper.settings["num_layers"]
    if not l2 > l1:
        raise InputError("deeper", l2, f"a measurement with more layers than the shallow one ({l1})")
    s1 = {k: v for k, v in shallow.settings.items() if k not in _DEPTH_KEYS}
    s2 = {k: v for k, v in deeper.settings.items() if k not in _DEPTH_KEYS}
    if s1 != s2:
        diff = sorted(k for k in set(s1) | set(s2) if s1.get(k) != s2.get(k))
        raise InputError("deeper", diff, "two measurements that differ only in num_layers")

    def line(a: float, b: float) -> int:
        return round(a + (b - a) * (target_layers - l1) / (l2 - l1))

    def per_layer(a: float, b: float) -> float:
        return (b - a) / (l2 - l1)

    phases = {}
    for phase in PHASES:
        if phase in shallow.phase_peaks and phase in deeper.phase_peaks:
            p1, p2 = shallow.phase_peaks[phase], deeper.phase_peaks[phase]
            phases[phase] = {k: line(p1[k], p2[k]) for k in p1}
    if phases:
        peak_phase = max(phases, key=lambda p: phases[p]["total"])
        peak_bytes = phases[peak_phase]["total"]
        at_peak = {k: v for k, v in phases[peak_phase].items() if k != "total"}
    else:  # measurements without per-phase detail
        peak_phase = deeper.peak_phase
        peak_bytes = line(shallow.peak_bytes, deeper.peak_bytes)
        at_peak = {k: line(shallow.at_peak[k], deeper.at_peak[k]) for k in CATEGORIES}
    # A category's maximum can be the larger of two lines (e.g. temp: the constant logit
    # gradient in backward vs the 2-bytes-per-parameter foreach temporary in the optimizer
    # step), so extrapolate per phase and take the largest.
    both = [p for p in PHASES if p in shallow.phase_max_by_category and p in deeper.phase_max_by_category]
    if both:
        max_by_category = {k: max(line(shallow.phase_max_by_category[p][k],
                                       deeper.phase_max_by_category[p][k]) for p in both)
                           for k in CATEGORIES}
    else:
        max_by_category = {k: line(shallow.max_by_category[k], deeper.max_by_category[k])
                           for k in CATEGORIES}
    warnings = []
    if deeper.settings.get("world_size", 1) > 1 and l1 < 4:
        warnings.append(
            "FSDP: all-gather prefetch and reduce-scatter overlap span a few layers, so runs "
            "shallower than 4 layers are not yet on the line (temp maximum); use 4 and 8 layers")
    if shallow.peak_phase != deeper.peak_phase:
        warnings.append(f"the peak moves from {shallow.peak_phase} to {deeper.peak_phase} "
                        "between the two runs; extrapolated per phase")
    return {
        "target_layers": target_layers,
        "from_layers": [l1, l2],
        "peak_bytes": peak_bytes,
        "peak_phase": peak_phase,
        "at_peak": at_peak,
        "max_by_category": max_by_category,
        "activation_bytes_end_of_forward": line(shallow.activation_bytes_end_of_forward,
                                                deeper.activation_bytes_end_of_forward),
        "phase_peaks": phases,
        "per_layer": {
            "peak_bytes": per_layer(shallow.peak_bytes, deeper.peak_bytes),
            "activation_bytes_end_of_forward": per_layer(shallow.activation_bytes_end_of_forward,
                                                         deeper.activation_bytes_end_of_forward),
            **{k: per_layer(shallow.max_by_category[k], deeper.max_by_category[k]) for k in CATEGORIES},
        },
        "warnings": warnings,
        "settings": {**deeper.settings, "num_layers": target_layers,
                     "num_params": line(shallow.settings["num_params"], deeper.settings["num_params"]),
                     "extrapolated_from_layers": [l1, l2]},
    }
