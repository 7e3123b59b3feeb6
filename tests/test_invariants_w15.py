"""Invariants over VALID inputs (wave 14 helper A8, 2026-12-06): answers that cannot be right, found by a seeded random
sweep of every job through the Python API (catalog models x GPUs x frameworks, tokens 1 .. 1e15, GPUs 1 .. 1e6,
days 1e-3 .. 1e4, seq_len 1 .. 1M, batch 1 .. 1e6, serving contexts, rates, quantisations and engines), one test per
defect it found; each fails on the commit before its fix. Waves 9 and 10's grids: tests/test_invariants_wave9.py,
tests/test_invariants_wave10.py."""

from __future__ import annotations

import pytest

from gpuplan import estimate_memory

pytestmark = pytest.mark.usefixtures("time_box")
PARTS = ("weights", "grads", "master", "optimizer", "activations", "outside_layers", "temporaries", "fsdp_working_set")
"""The memory report's per-GPU parts (jobs.memory.estimate._peak_section): they sum to the allocated peak."""


@pytest.mark.parametrize(("model", "gpu", "framework", "micro_batch"),
                         [("llama-3-8b", "h100", "megatron", 1), ("pythia-6.9b", "b200", "torchtitan", 16)])
def test_full_recompute_parts_sum_to_the_allocated_peak(model, gpu, framework, micro_batch):
    """Under --recompute full the peak can fall later in backward, with one layer's activations recomputed
    (core.memory.training.stage_memory_parts): that layer is printed among the temporaries, so the parts sum to the
    allocated peak. Before: Llama-3-8B on 8 H100s (megatron) printed parts 570,982,400 B (545 MiB) short of it,
    Pythia-6.9B at micro-batch 16 on 64 B200s (torchtitan) 1,576,009,728 B."""
    r = estimate_memory({"model": model, "gpu": gpu, "gpus": 8 if framework == "megatron" else 64, "recompute": "full",
                         "framework": framework, "micro_batch": micro_batch}).to_dict()["results"]
    parts = sum(r[f"peak_{k}"] for k in PARTS)
    assert parts == pytest.approx(r["peak_allocated"], rel=1e-12), (parts, r["peak_allocated"])
    assert r["peak_temporaries"] > 0
