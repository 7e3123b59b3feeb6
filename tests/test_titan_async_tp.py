"""torchtitan's async TP (core/comm/async_tp.py): Inductor's micro-pipeline TP fuses every all-gather with its
matmuls but a reduce-scatter only where one mm produces its input, so the backward reduce-scatters of the
inputs several column-parallel linears share (wq + wk + wv, w1 + w3) stay plain NCCL; each fused op still
runs its shard copy (all-gather) or partial sum (reduce-scatter) on the compute stream."""

from __future__ import annotations

import pytest
from helpers import published_rows_by_id

from gpuplan.core.comm import async_tp as AT
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY

ONE_TB = 1e12 / HBM_STREAM_EFFICIENCY  # 1e12 B/s achieved


def test_exposed_seconds_by_hand():
    """One layer and micro-batch, 4 exchanges (no full recompute), tp 8, each collective 1 ms, an 800 MB buffer.
    Separate wq / wk / wv: 2 unfused reduce-scatters (2 ms), 1/8 of the 4 all-gathers and 2 fused reduce-scatters
    (0.75 ms), shard copies 4 x 2 x 100 MB + partial sums 2 x 900 MB = 2.6 GB (2.6 ms) in 6 kernels of 7.84 us:
    5.39704 ms. One wqkv: 1 unfused (1 ms), 7/8 ms, 0.8 + 3 x 0.9 = 3.5 GB in 7 kernels: 5.42988 ms."""
    common = dict(reduce_scatter=1e-3, all_gather=1e-3, exchanges_per_layer=4, tp=8, calls_per_exchange_layer=1,
                  act_bytes=8e8, hbm_bytes_per_s=ONE_TB)
    assert AT.exposed_seconds(**common, fused_qkv=False) == pytest.approx(5.39704e-3, rel=1e-9)
    assert AT.exposed_seconds(**common, fused_qkv=True) == pytest.approx(5.42988e-3, rel=1e-9)
    assert AT.exposed_seconds(**{**common, "calls_per_exchange_layer": 0}, fused_qkv=False) == 0


ASYNC_PAIRS = {  # benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md (820504e, torch 38410cf9): vanilla, async TP
    "llama-3.1-8b-64g-bf16": (4378.0, 4809.4),
    "llama-3.1-8b-64g-fp8tw": (5078.1, 5570.1),
    "llama-3.1-70b-256g-bf16": (597.3, 652.4),
    "llama-3.1-70b-256g-fp8tw": (809.8, 942.4),
}


@pytest.mark.parametrize("pair", sorted(ASYNC_PAIRS))
def test_the_async_tp_gain_is_the_published_one(pair):
    """The step model's async-TP speed-up over vanilla TP at the published layouts (FSDP 8 x TP 8 / FSDP 32 x
    TP 8) against the table's: measured +9.9% / +9.7% / +9.2% / +16.4%. Charging only 1/tp of every collective
    the model gave +18.0% / +23.1% / +17.3% / +24.1% (2026-12-06, before core.comm.async_tp); now +11.1% /
    +14.0% / +11.9% / +16.3%. Tolerance: 5 points of speed-up (the old figures miss by 7.7 ... 13.4)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    rows = published_rows_by_id()
    vanilla, asynchronous = (rows[f"torchtitan-2506-{pair}-{kind}"] for kind in ("vanilla-tp", "async-tp"))
    assert (vanilla["measured"]["tokens_per_s_per_gpu"], asynchronous["measured"]["tokens_per_s_per_gpu"]) == \
        ASYNC_PAIRS[pair]
    measured = ASYNC_PAIRS[pair][1] / ASYNC_PAIRS[pair][0]
    model = predict_tokens_per_gpu_s(asynchronous) / predict_tokens_per_gpu_s(vanilla)
    assert model - 1 == pytest.approx(measured - 1, abs=0.05)


def test_megatron_keeps_one_chunk_in_tp():
    """Transformer Engine's userbuffers (no titan_ops): still one chunk in tp of every TP collective exposed."""
    import numpy as np

    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.comm.step_comm import _tp_cost
    from gpuplan.core.comm.topology import cluster_for
    from gpuplan.core.time.step import StepSettings

    spec, cluster = load_model("llama-3.1-8b"), cluster_for(load_accelerator("h100"))
    settings = StepSettings(seq_len=8192, tp_comm_overlap=True, sequence_parallel=True)
    cost = _tp_cost(spec, cluster, settings, np.asarray(8), 1, 32, 8192 * 4096 * 2.0)
    assert float(cost.exposed) == pytest.approx(float(cost.total) / 8, rel=1e-12)
