"""Collective bus bandwidth against payload: core/comm.py's alpha-beta ring on core/topology.py's
two-level cluster, scored on measured sweeps (catalog/reference/collective_measurements.yaml).

A sweep's point (payload S bytes, busbw GB/s) is compared with the model's busbw at S:
factor x S / t(S), factor = 2(n-1)/n for all-reduce (nccl-tests doc/PERFORMANCE.md), t(S) the
ring time on the link the n-rank group rides (NVLink within a node, one NIC per GPU across nodes).
Split at 16 MiB: below it latency (and NCCL's LL protocols) dominate, above it bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

LATENCY_REGIME_BELOW_BYTES = 16 * 2**20


@dataclass(frozen=True)
class CollectiveCase:
    id: str
    kind: str
    measured: float
    """Bus bandwidth, bytes/s."""
    predicted: float
    source: str


def collective_sweeps() -> list[dict]:
    import yaml

    text = (resources.files("gpuplan.catalog") / "reference" / "collective_measurements.yaml").read_text("utf-8")
    return yaml.safe_load(text)["sweeps"]


def sweep_link(sweep: dict) -> tuple[int, float, float]:
    """(ranks, bandwidth bytes/s, latency s) of the link a sweep's all-reduce group rides."""
    from gpuplan.catalog import load_accelerator
    from gpuplan.core.topology import cluster_for

    cluster = cluster_for(load_accelerator(sweep["gpu"]), gpus_per_node=sweep["gpus_per_node"],
                          nic_gbit_per_gpu=sweep["nic_gbit_per_gpu"])
    ranks = sweep["nodes"] * sweep["gpus_per_node"]
    return (ranks, *cluster.link(ranks))


def model_bus_bandwidth(sweep: dict, payload_bytes: int, link: tuple[int, float, float] | None = None) -> float:
    """The model's all-reduce busbw (bytes/s) for one sweep's cluster and payload (``link``:
    sweep_link(sweep), when the caller already has it)."""
    from gpuplan.core.comm import all_reduce_time

    ranks, bandwidth, latency = link or sweep_link(sweep)
    factor = 2 * (ranks - 1) / ranks
    return factor * payload_bytes / all_reduce_time(payload_bytes, ranks, bandwidth, latency)


def collective_cases() -> list[CollectiveCase]:
    cases = []
    for sweep in collective_sweeps():
        link = sweep_link(sweep)
        where = ("one node, NVLink" if sweep["nodes"] == 1 else
                 f"{sweep['nodes']} nodes, one NIC per GPU in the model")
        for payload, busbw in sweep["points"]:
            regime = "< 16 MiB" if payload < LATENCY_REGIME_BELOW_BYTES else ">= 16 MiB"
            kind = f"communication: {sweep['collective'].replace('_', '-')} busbw, {where}, payload {regime} (held out)"
            cases.append(CollectiveCase(f"{sweep['id']}-{payload}", kind, busbw * 1e9,
                                        model_bus_bandwidth(sweep, payload, link), sweep["cite"]))
    return cases
