"""Memory trackers used by :mod:`gpuplan.profile.measure` (imports torch; load lazily).

``torch.distributed._tools.mem_tracker.MemTracker`` updates, after *every* dispatched op, the
peak snapshot of every module it has seen that is currently active (a walk over all modules
plus deep copies). For a 7B model that is ~10x the cost of the op itself under FakeTensorMode.
We only need the global peak, so :class:`FastMemTracker` replaces ``_update_peak_stats`` with
the global part of the stock code (same comparison, same moment, so the same peak) and adds:

* the phase in which each peak happened (the caller sets ``tracker.phase``),
* the breakdown at the peak of each phase (used for depth extrapolation),
* each category's own maximum over the step,
* a finer split of the optimizer step: the stock trackers tag *every* tensor created inside
  ``optimizer.step()`` as optimizer state, including transient temporaries (foreach AdamW
  allocates a 2-bytes-per-parameter temporary in bf16). Here tensors created inside the step are
  tagged TEMP, and a tensor becomes OPT when the optimizer stores it into ``optimizer.state``
  (see :func:`tag_optimizer_states`). Totals, and so the peak, are unchanged.

:class:`StockMemTracker` keeps the stock per-module bookkeeping (calls the original
``_update_peak_stats``) and records the same extra information on top, so the two can be
compared in tests.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed._tools.mem_tracker import _TOTAL_KEY, MemTracker


class _PhaseRecorder:
    """Mixin: phase-aware peak bookkeeping on top of a MemTracker's current snapshot."""

    def _init_phase_recorder(self) -> None:
        # reftype -> the caller's category name. Category maxima are taken on the *mapped*
        # categories at each moment: a category that merges several reftypes (FSDP: temp =
        # TEMP + ALL_GATHER + REDUCE_SCATTER) peaks when their sum does, not at the sum of peaks.
        self.category_of: dict = {m: m.name for m in self._ref_class}  # type: ignore[attr-defined]
        self.phase = "setup"
        self.peak_phase = "setup"
        # phase -> {reftype or _TOTAL_KEY: bytes} at that phase's own peak (all devices summed)
        self.phase_peaks: dict[str, dict] = {}
        # category -> max bytes over the step (all devices summed)
        self.category_max: dict = {}
        # phase -> {category: max bytes within that phase}
        self.phase_category_max: dict[str, dict] = {}

    def _track(self, reftype, t) -> None:
        # New tensors inside optimizer.step() are temporaries until stored in optimizer.state.
        if self._in_opt and reftype is self._ref_class.OPT:  # type: ignore[attr-defined]
            reftype = self._ref_class.TEMP  # type: ignore[attr-defined]
        super()._track(reftype, t)  # type: ignore[misc]

    def _current_totals(self) -> dict:
        snap = self._curr_mem_snap  # type: ignore[attr-defined]
        if len(snap) == 1:  # the usual case: everything on "cpu"
            return next(iter(snap.values()))
        summed: dict = {}
        for dev_snap in snap.values():
            for k, v in dev_snap.items():
                summed[k] = summed.get(k, 0) + v
        return summed

    def _record_phase_stats(self) -> None:
        cur = self._current_totals()
        total = cur.get(_TOTAL_KEY, 0)
        best = self.phase_peaks.get(self.phase)
        if best is None or total > best[_TOTAL_KEY]:
            self.phase_peaks[self.phase] = dict(cur)
        cats: dict = {}
        category_of = self.category_of
        for k, v in cur.items():
            c = category_of.get(k)
            if c is not None:
                cats[c] = cats.get(c, 0) + v
        cmax = self.category_max
        pmax = self.phase_category_max.setdefault(self.phase, {})
        for c, v in cats.items():
            if v > cmax.get(c, 0):
                cmax[c] = v
            if v > pmax.get(c, 0):
                pmax[c] = v


class FastMemTracker(_PhaseRecorder, MemTracker):
    """MemTracker that keeps only the global peak (plus per-phase peaks): same numbers, ~10x faster."""

    def __init__(self) -> None:
        super().__init__()
        self._init_phase_recorder()

    def _update_peak_stats(self, peak_state) -> None:  # noqa: ARG002 - signature of the base
        # The global part of MemTracker._update_peak_stats, verbatim in effect (strict '<', first
        # moment at which the peak is reached); the per-module walk is dropped.
        for dev, dev_snap in self._curr_mem_snap.items():
            if self._peak_mem.get(dev, 0) < dev_snap[_TOTAL_KEY]:
                self._peak_mem[dev] = dev_snap[_TOTAL_KEY]
                self._peak_mem_snap[dev] = dict(dev_snap)  # values are ints: a shallow copy is a deep copy
                self.peak_phase = self.phase
        self._record_phase_stats()


class StockMemTracker(_PhaseRecorder, MemTracker):
    """The stock MemTracker (per-module peaks kept), with the phase bookkeeping added. For tests."""

    def __init__(self) -> None:
        super().__init__()
        self._init_phase_recorder()

    def _update_peak_stats(self, peak_state) -> None:
        before = dict(self._peak_mem)
        MemTracker._update_peak_stats(self, peak_state)  # explicit: shared with the FSDP variant
        if self._peak_mem != before:
            self.peak_phase = self.phase
        self._record_phase_stats()


class FastFSDPMemTracker(_PhaseRecorder, FSDPMemTracker):
    """FSDPMemTracker with the same global-peak-only bookkeeping as :class:`FastMemTracker`."""

    def __init__(self, mod, optm=None) -> None:
        super().__init__(mod, optm)
        self._init_phase_recorder()

    _update_peak_stats = FastMemTracker._update_peak_stats


class StockFSDPMemTracker(_PhaseRecorder, FSDPMemTracker):
    """The stock FSDPMemTracker with the phase bookkeeping added. For tests."""

    def __init__(self, mod, optm=None) -> None:
        super().__init__(mod, optm)
        self._init_phase_recorder()

    _update_peak_stats = StockMemTracker._update_peak_stats


class _StateDict(dict):
    """Per-parameter optimizer state dict that tags stored tensors as optimizer state."""

    __slots__ = ("_tracker",)

    def __init__(self, tracker) -> None:
        super().__init__()
        self._tracker = tracker

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        if isinstance(value, torch.Tensor):
            tr = self._tracker
            tr._update_and_maybe_create_winfos(value, tr._ref_class.OPT)


def tag_optimizer_states(tracker, optimizer) -> None:
    """Make ``optimizer.state[p][name] = tensor`` re-tag ``tensor`` as OPT in ``tracker``.

    Call before the first step (the state must still be empty)."""
    if len(optimizer.state):
        raise RuntimeError("tag_optimizer_states needs an optimizer without state")
    optimizer.state = defaultdict(lambda: _StateDict(tracker))


def skip_frozen_grad_hooks(tracker, model) -> None:
    """Register no gradient hook on a frozen parameter (LoRA's base model): MemTracker hooks every
    parameter's gradient and cannot hook a tensor that does not require one."""

    class NoHook:
        def remove(self):
            pass

    for param in model.parameters():
        if not param.requires_grad:
            tracker._param_to_grad_hook_handles[param] = (NoHook(), NoHook())
