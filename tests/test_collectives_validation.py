"""core/comm.py's all-reduce against measured bus bandwidth by payload (collective_measurements.yaml:
stas00/ml-engineering, 1 and 4 nodes of 8 B200, NCCL 2.27.7)."""

from statistics import mean

import pytest

from gpuplan.jobs.validation.collectives import (
    collective_cases,
    collective_sweeps,
    model_bus_bandwidth,
)


def _sweep(nodes):
    return next(s for s in collective_sweeps() if s["nodes"] == nodes)


def test_model_busbw_by_hand():
    # one node, 8 ranks on NVLink: 900 GB/s per direction x 0.8 = 720 GB/s, 5 us per ring step.
    # 1 GiB: 1.75 x 2^30 = 1,879,048,192 B / 720e9 = 2.6098 ms + 14 x 5 us -> 2.6798 ms -> 701.2 GB/s
    assert model_bus_bandwidth(_sweep(1), 2**30) == pytest.approx(701.2e9, rel=1e-3)
    # 4 nodes, 32 ranks on one 400 Gb/s NIC each: 50 GB/s x 0.9 = 45 GB/s, 15 us per step.
    # 16 GiB: 1.9375 x 2^34 = 33,285,996,544 B / 45e9 = 739.69 ms + 62 x 15 us -> 740.62 ms -> 44.94 GB/s
    assert model_bus_bandwidth(_sweep(4), 2**34) == pytest.approx(44.94e9, rel=1e-3)


def test_one_node_bandwidth_regime_within_ten_percent_mean():
    cases = [c for c in collective_cases() if "one node" in c.kind and ">= 16 MiB" in c.kind]
    assert len(cases) == 11
    assert mean(abs(c.predicted / c.measured - 1) for c in cases) < 0.10


def test_multi_node_all_reduce_is_the_documented_gap():
    """NCCL spreads a 32-rank all-reduce's channels over all eight NICs of a node (and reduces
    inside the node first): measured 381.8 GB/s at 16 GiB, 8.5x the one-NIC-per-GPU ring the step
    model keeps (docs/step.md 'Collective bandwidth by payload')."""
    big = next(c for c in collective_cases() if c.id.endswith("4nodes-17179869184"))
    assert big.measured == pytest.approx(381.80e9)
    assert big.measured / big.predicted == pytest.approx(8.50, abs=0.05)
