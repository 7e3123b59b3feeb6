"""NeMo 25.02's B200 Mixtral rows ran TE's delayed scaling (review w12 R1 S4).

The NeMo v2.2.0 perf scripts (the 25.02 container's) set bf16_with_fp8_mixed() for --compute_dtype fp8: fp8 'hybrid',
amax history 1024, no fp8_recipe, i.e. TE DelayedScaling (nemo/collections/llm/recipes/precision/mixed_precision.py
@v2.2.0 L46-54, cited in the rows' precision_detail). TE GroupedLinear then quantises all experts' inputs in one
multi-tensor cast (cast.cpp multi_tensor_quantize_impl: nvte_multi_cast_transpose, delayed scaling only), so
core.time.moe_layer charges no per-expert quantiser ('delayed': (0, 0)); current scaling pays per expert and call
2 passes x 7.84 us + 2 one-block kernels x 0.92 us = 17.52 us. The 25.04 GB200 rows are current scaling (their page:
scaling factors 'computed in the current step') and keep 'tensorwise'.

Hand count, Mixtral 8x7B on 64 B200 (ep 8: one local expert; 32 layers; pp 1; 2 micro-batches a step, 'static'
launch: no host term): 2 forward + 2 backward quantisations x 17.52 us x 32 layers x 2 = 4.485 ms a step less.
"""

from __future__ import annotations

import pytest

import gpuplan.jobs.validation.published_throughput as PT

DELAYED = ("nemo2502-mixtral-8x7b-b200-64g", "nemo2502-mixtral-8x22b-b200-256g")
CURRENT = ("nemo2504-mixtral-8x7b-gb200-64g", "nemo2504-mixtral-8x22b-gb200-256g")


def test_the_rows_label_their_scaling(published_rows):
    for rid in DELAYED:
        assert published_rows[rid]["precision"] == "fp8-delayed"
        assert "bf16_with_fp8_mixed" in published_rows[rid]["precision_detail"]
    for rid in CURRENT:
        assert published_rows[rid]["precision"] != "fp8-delayed"
    assert PT.FP8_RECIPE["fp8-delayed"] == "delayed"


def test_delayed_scaling_drops_the_per_expert_quantisers(monkeypatch, published_rows):
    row = published_rows[DELAYED[0]]
    lay = row["layout"]
    assert (lay["ep"], lay["pp"], lay["grad_accum"]) == (8, 1, 2)
    delayed = PT.predicted_step(row).total
    monkeypatch.setitem(PT.FP8_RECIPE, "fp8-delayed", "tensorwise")
    current = PT.predicted_step(row).total
    per_call = 2 * 7.84e-6 + 2 * 0.92e-6
    assert current - delayed == pytest.approx((2 + 2) * per_call * 32 * 2, rel=0.01)  # 4.485 ms
