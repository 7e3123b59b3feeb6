"""What the framework measurements share: scoped patches, the fake process group, the trackers
and the depth extrapolation (the run description and result: ``run.py``, re-exported here).

All sizes are bytes of *allocated* tensor memory on rank 0 (what ``torch.cuda.memory_allocated``
would count; no caching-allocator reserve, no CUDA context, no NCCL buffers). torch is imported
inside functions only, so ``import gpuplan.profile.frameworks`` stays light.
"""

from __future__ import annotations

import contextlib
import platform
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from gpuplan.profile.frameworks.run import (  # noqa: F401 - re-exported
    ATTENTIONS,
    FLOAT8,
    FRAMEWORKS,
    GIB,
    LORA_TARGETS,
    LOSSES,
    MISSING_PACKAGE,
    OPTIMIZER_IMPLS,
    RECOMPUTE,
    RESHARD,
    DepthPoint,
    FrameworkMeasurement,
    FrameworkRun,
    ModelShape,
    model_shape,
    require,
    run_id,
)

# --------------------------------------------------------------------------------------------
# scoped monkeypatches


class Patches:
    """Monkeypatches set for the duration of an ExitStack and restored (in reverse) on exit.

    Every patch carries a one-line reason; the reasons are reported with the measurement."""

    _ABSENT = object()

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self.reasons: list[str] = []

    def set(self, obj, name: str, value, reason: str | None) -> None:
        """Set ``obj.name = value`` until exit. ``reason=None``: the caller notes it once itself."""
        own = vars(obj).get(name, self._ABSENT) if hasattr(obj, "__dict__") else getattr(obj, name)
        setattr(obj, name, value)
        if reason is not None:
            self.note(f"{getattr(obj, '__name__', type(obj).__name__)}.{name}: {reason}")
        if own is self._ABSENT:
            self._stack.callback(delattr, obj, name)
        else:
            self._stack.callback(setattr, obj, name, own)

    def note(self, reason: str) -> None:
        """A patch applied by other means (e.g. a subclass or a config switch): reason only."""
        if reason not in self.reasons:
            self.reasons.append(reason)


@contextlib.contextmanager
def fake_process_group(world_size: int) -> Iterator[Patches]:
    """A fake process group of ``world_size`` ranks (this process is rank 0) with gpuplan's
    DTensor fake-mode defence (trap 4), torn down on exit; yields a Patches bound to it."""
    from gpuplan.profile.fake_distributed import enter_fake_process_group

    with contextlib.ExitStack() as stack:
        patches = Patches(stack)
        enter_fake_process_group(stack, world_size, patch_sharding_fake_mode=True)
        patches.note("torch.distributed.tensor._sharding_prop.detect_fake_mode -> None: DTensor "
                     "propagation must not reuse the measuring FakeTensorMode (gpuplan trap 4)")
        yield patches


# --------------------------------------------------------------------------------------------
# trackers (gpuplan's FastMemTracker / FastFSDPMemTracker, plus two switches)


class _GlobalOnlyMixin:
    """Drop the per-module hooks: the stock bookkeeping rejects repeated root forwards
    (microbatches, 1F1B). The global peak is unaffected; tensors first seen inside the step
    are labelled activation/temp instead of param/grad."""

    def _pre_fw_hook(self, *a):
        pass

    def _post_fw_hook(self, *a):
        pass

    def _pre_bw_hook(self, *a):
        pass

    def _post_bw_hook(self, *a):
        pass


def make_tracker(fsdp_root=None, optimizer=None, global_only: bool = False, forget=()):
    """gpuplan's fast tracker, labelled with gpuplan's categories.

    ``fsdp_root``: use the FSDP2 tracker on that root module. ``forget``: FSDP modules called
    outside the root forward (the chunked loss calls ``lm_head``), whose per-module stats the
    stock tracker would refuse as "multiple iterative calls"; they are re-created instead."""
    from gpuplan.profile import _trackers
    from gpuplan.profile.measure import _CATEGORY_OF

    if fsdp_root is not None:
        tracker = _trackers.FastFSDPMemTracker(fsdp_root, optimizer)
        if forget:
            _forget_modules(tracker, {id(m) for m in forget})
    else:
        cls = _trackers.FastMemTracker
        if global_only:
            cls = type("GlobalOnlyMemTracker", (_GlobalOnlyMixin, _trackers.FastMemTracker), {})
        tracker = cls()
    tracker.category_of = {m: _CATEGORY_OF[m.name] for m in tracker._ref_class}
    return tracker


def _forget_modules(tracker, ids: set[int]) -> None:
    base = type(tracker.memory_tracking)

    class _Forgetful(base):
        def __contains__(self, key):
            return False if id(key) in ids else base.__contains__(self, key)

    new = _Forgetful()
    new.update(tracker.memory_tracking)
    tracker.memory_tracking = new


def tag_optimizer_states(tracker, optimizer) -> bool:
    """gpuplan's OPT/TEMP split for the optimizer step, where the optimizer is still empty."""
    from gpuplan.profile import _trackers

    if len(optimizer.state):
        return False
    _trackers.tag_optimizer_states(tracker, optimizer)
    return True


def run_two_steps(tracker, step: Callable[[], None]) -> None:
    """Two tracked training steps: the first creates the optimizer states, the second is steady."""
    with tracker:
        step()
        tracker.reset_mod_stats()
        step()
        tracker.phase = "done"


def depth_point(tracker, layers: int) -> DepthPoint:
    from gpuplan.profile.measure import CATEGORIES, _categorise

    peak: dict = {}
    for dev_snap in tracker.get_tracker_snapshot("peak").values():
        for k, v in dev_snap.items():
            peak[k] = peak.get(k, 0) + v
    at_peak, raw = _categorise(peak)
    phases = {}
    for phase, snap in tracker.phase_peaks.items():
        if phase not in ("setup", "done"):
            cats, _ = _categorise(snap)
            phases[phase] = {"total": sum(cats.values()), **cats}
    return DepthPoint(layers=layers, peak_bytes=sum(at_peak.values()), peak_phase=tracker.peak_phase,
                      at_peak=at_peak, raw_at_peak=raw, phase_peaks=phases,
                      max_by_category={k: int(tracker.category_max.get(k, 0)) for k in CATEGORIES})


# --------------------------------------------------------------------------------------------
# depth loop and extrapolation


def extrapolate(a: float, b: float, la: int, lb: int, target: int) -> tuple[float, int]:
    """(slope, value at target) of the line through (la, a) and (lb, b); value = a + (target - la)·slope."""
    slope = (b - a) / (lb - la)
    return slope, round(a + (target - la) * slope)


def measure_depths(run: FrameworkRun, shape: ModelShape, measure_one: Callable[[int], DepthPoint],
                   notes: list[str], patches: Callable[[], list[str]], versions: Mapping[str, str]
                   ) -> FrameworkMeasurement:
    """Measure ``run`` at its two depths with ``measure_one`` and extrapolate to full depth."""
    t0 = time.perf_counter()
    require(shape.layers % run.pp == 0, "pp", run.pp, f"a divisor of the model's {shape.layers} layers")
    full = shape.layers // run.pp
    require(run.depths[1] <= full, "depths", run.depths, f"at most {full} layers per stage")
    points = tuple(measure_one(n) for n in run.depths)
    (la, lb), (pa, pb) = run.depths, points
    lines = {ph: extrapolate(pa.phase_peaks[ph]["total"], pb.phase_peaks[ph]["total"], la, lb, full)
             for ph in pa.phase_peaks if ph in pb.phase_peaks}
    phase = max(lines, key=lambda ph: lines[ph][1])
    slope, full_peak = lines[phase]
    a, b = pa.phase_peaks[phase], pb.phase_peaks[phase]
    at_peak = {k: extrapolate(a[k], b[k], la, lb, full)[1] for k in a if k != "total"}
    act_slope = extrapolate(pa.max_by_category["activation"], pb.max_by_category["activation"], la, lb, full)[0]
    sbh = run.seq_len * run.micro_batch * shape.hidden
    if len({pa.peak_phase, pb.peak_phase, phase}) > 1:
        notes = [*notes, f"peak phase: {pa.peak_phase} at {la} layers, {pb.peak_phase} at {lb}, "
                         f"{phase} at {full} (each phase extrapolated, the largest taken)"]
    return FrameworkMeasurement(
        run=run, points=points, full_layers=full, full_depth_peak_phase=phase, slope_bytes_per_layer=slope,
        full_depth_peak_bytes=full_peak, full_depth_at_peak=at_peak,
        activation_bytes_per_layer=act_slope, activation_per_layer_sbh=act_slope / sbh,
        notes=tuple(notes), patches=tuple(patches()),
        versions={"python": platform.python_version(), **versions},
        wall_seconds=round(time.perf_counter() - t0, 1))


@dataclass
class PatchLog:
    """Collects the patch reasons of every depth's run (the same patches each time)."""

    reasons: list[str] = field(default_factory=list)

    def add(self, reasons: list[str]) -> None:
        for r in reasons:
            if r not in self.reasons:
                self.reasons.append(r)

    def __call__(self) -> list[str]:
        return list(self.reasons)
