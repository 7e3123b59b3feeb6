"""One kind of collective in a training step, as core.comm.step_comm lists them and ``plan --explain``
prints them. Units: seconds, bytes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CollectiveCost:
    """One kind of collective in a step (values may be numpy arrays, one per layout)."""

    parallelism: str
    collective: str
    calls: object
    """Calls per optimizer step on one GPU."""
    bytes_per_call: object
    """The buffer of one call (the full tensor a ring all-gather produces / reduce-scatter reads)."""
    span: object
    """Consecutive ranks the group covers: inside the scale-up domain it rides NVLink."""
    total: object
    """Seconds per step, all calls, hidden or not."""
    exposed: object
    """Seconds per step on the critical path."""
    nccl: str = ""
    """The NCCL collective one call is (all_reduce, reduce_scatter, all_gather; '' = point-to-point
    or all-to-all), for core.comm.collectives.chosen."""
    group: object = None
    """The group's links (core.comm.topology.GroupLinks) when ``nccl`` is set."""
