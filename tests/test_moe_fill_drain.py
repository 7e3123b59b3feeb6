"""The pipeline's fill and drain carry each micro-batch's EP all-to-alls (core.comm.moe_overlap.fill_drain_all_to_all).

Megatron-Core's warm-up runs pp - rank - 1 whole forward_steps and the cool-down their backward_steps
(schedules.py@core_v0.14.0 L2079-2083, L2131-2132, L2257-2259), each MoE layer's dispatch and combine inside
them, so the bubble idles a stage for other stages' micro-batches all-to-alls included. Numbers worked by hand.
"""

from __future__ import annotations

import pytest

from gpuplan.core.comm.moe_overlap import fill_drain_all_to_all


def test_non_interleaved_fill_charges_the_exposed_all_to_all_per_micro_batch():
    # pp 16, no interleaving, 128 micro-batches: the bubble is pp - 1 = 15 micro-batches; 1.245 s of exposed
    # all-to-all over 128 micro-batches is 9.727 ms each: 15 x 9.727 ms = 145.90 ms
    assert fill_drain_all_to_all(1.245, 2.0, False, 16, 1, 128) == pytest.approx(15 * 1.245 / 128, rel=1e-12)
    assert fill_drain_all_to_all(1.245, 2.0, False, 16, 1, 128) == pytest.approx(0.14590, abs=1e-5)


def test_combined_schedule_fill_pays_the_whole_all_to_all():
    # pp 8, vpp 2, 64 micro-batches: bubble (pp - 1) / vpp = 3.5 micro-batches; the fill's forwards are unpaired,
    # so each carries its full all-to-all (2.0 s / 64), not the paired step's exposed share (1.0 s / 64)
    assert fill_drain_all_to_all(1.0, 2.0, True, 8, 2, 64) == pytest.approx(3.5 * 2.0 / 64, rel=1e-12)
    assert fill_drain_all_to_all(1.0, 2.0, False, 8, 2, 64) == pytest.approx(3.5 * 1.0 / 64, rel=1e-12)


def test_no_pipeline_no_fill():
    assert fill_drain_all_to_all(1.0, 1.0, False, 1, 1, 10) == 0.0


def test_deepseek_v3_b200_row_bubble_grows_by_the_fill_all_to_all(monkeypatch, published_rows):
    # Megatron-Bridge 25.09 DeepSeek-V3 on 256 B200 (pp 16, ep 8, 128 micro-batches, NCCL alltoall, no combined
    # schedule): the step's bubble grows by 15 x (exposed EP seconds) / 128 and nothing else moves
    import gpuplan.core.time.step as step
    from gpuplan.jobs.validation.published_throughput import predicted_step

    row = published_rows["mbridge-25.09-deepseek-v3-b200-256g-mxfp8"]
    with_fill = predicted_step(row)
    monkeypatch.setattr(step, "fill_drain_all_to_all", lambda *a: 0.0)
    without = predicted_step(row)
    assert with_fill.ep_comm == pytest.approx(without.ep_comm, rel=1e-12)
    assert with_fill.compute == pytest.approx(without.compute, rel=1e-12)
    assert with_fill.bubble - without.bubble == pytest.approx(15 * with_fill.ep_comm / 128, rel=1e-9)
    # the row's exposed all-to-all is ~1.2 s a step (16 calls of ~0.64 ms per micro-batch on NVLink), so ~0.15 s
    assert 0.10 < with_fill.bubble - without.bubble < 0.20
