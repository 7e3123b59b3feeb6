"""One kind of collective in a training step, as core.comm.step_comm lists them and ``plan --explain``
prints them. Units: seconds, bytes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DirectLinks:
    """The links a cost outside NCCL's collective model was timed on (core.comm.volumes' alpha-beta links at
    core.comm.topology.Cluster.link's rates), as core.comm.step_comm chose them: ``ranks`` exchanging, ``per_domain``
    of them in one scale-up domain, talking over NVLink at ``nvlink`` B/s a GPU, the rest over the network at
    ``network`` B/s a GPU (one direction each). The expert all-to-all: ep ranks, both links at once
    (volumes.expert_all_to_all_time); a send between two pipeline stages or CP ranks: 2 ranks, per_domain 2 where
    its group stays inside a domain (NVLink only), else 1 (the network only). Values may be numpy arrays."""

    ranks: object
    per_domain: object
    nvlink: object
    network: object


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
    """Seconds per step, all calls, hidden or not; for PP send/recv the larger of a rank's own sends (``calls`` x one
    call) and the critical path's exposed sends (plain 1F1B's blocking exchanges chain through every stage: 2 (m +
    pp) - 5 transfers against a rank's 2 m, core.comm.step_comm, core.time.pipeline_schedule), so it may exceed
    ``calls`` x one call's seconds."""
    exposed: object
    """Seconds per step on the critical path."""
    nccl: str = ""
    """The NCCL collective one call is (all_reduce, reduce_scatter, all_gather; '' = point-to-point
    or all-to-all), for core.comm.collectives.chosen."""
    group: object = None
    """The group's links (core.comm.topology.GroupLinks) when ``nccl`` is set."""
    links: DirectLinks | None = None
    """The links a send or the expert all-to-all was timed on (``nccl`` unset; None for a row with no such cost)."""
