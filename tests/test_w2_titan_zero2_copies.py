"""torchtitan's ZeRO-2 is FSDP2 kept gathered from forward into backward (fully_shard(reshard_after_forward=False),
core.frameworks zero2_is_fsdp2_no_reshard): its compute stream carries FSDP2's copy-out once a micro-batch (the
forward's all-gather; the backward gathers nothing) and the gradient copy-in every micro-batch
(core/time/titan_ops.fsdp_copy_seconds), and the planner widens its uncertainty by the FSDP traffic term as for
ZeRO-3 (planner.uncertainty.fsdp_traffic_uncertainty). Both were ZeRO >= 3 only."""

import numpy as np
import pytest

from gpuplan.catalog import load_model
from gpuplan.core.frameworks import framework
from gpuplan.core.time import titan_ops as T
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY

ONE_TB = 1e12 / HBM_STREAM_EFFICIENCY  # achieved 1e12 B/s
ALL = 8_030_261_248  # Llama 3.1 8B parameters (tests/test_fsdp_copies.py)
BLOCKS = 6_979_588_096  # in its 32 blocks


def test_titan_ops_flag_is_the_framework_profiles():
    """fsdp_copy_seconds (torchtitan's only) keeps ZeRO-2 gathered from forward into backward: the torchtitan
    profile must say so (core.frameworks imports titan_ops through megatron_ops, so titan_ops cannot read it)."""
    assert framework("torchtitan").zero2_is_fsdp2_no_reshard is True
    assert not hasattr(T, "ZERO2_KEPT_GATHERED")  # one definition: the profile's


def test_zero2_copies_by_hand():
    """Per micro-batch at pp 1, FSDP over 8: ZeRO-2 copies out 4 B x every parameter once (the forward) and
    copies in 6 B x every parameter (the reduce-scatter): 10 x 8.030 GB = 80.30 GB at 1 TB/s = 80.30 ms, plus
    33 + 33 kernels x 7.84 us = 0.517 ms: 80.82 ms. ZeRO-3 adds the 31 re-gathered blocks' 4 B (27.05 GB, 31
    kernels): 108.11 ms."""
    spec = load_model("llama-3.1-8b")
    zero2 = 10 * ALL / 1e12 + 66 * 7.84e-6
    zero3 = zero2 + 4 * 31 * BLOCKS / 32 / 1e12 + 31 * 7.84e-6
    assert zero2 == pytest.approx(0.080820, rel=1e-5) and zero3 == pytest.approx(0.108109, rel=1e-5)
    got = T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=8, zero=np.array([1, 2, 3]), micro_batches=4)
    assert list(got) == pytest.approx([0.0, 4 * zero2, 4 * zero3], rel=1e-9)
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=8, zero=2, micro_batches=1) == pytest.approx(zero2)
    # a shard group of one GPU: no FSDP collectives, no copies
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=1, zero=2, micro_batches=4) == 0
    # under a pipeline the stage is kept gathered at either stage: ZeRO-2 = ZeRO-3 (tests/test_fsdp_copies.py)
    staged = [T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=2, shard=8, zero=z, micro_batches=8) for z in (2, 3)]
    assert staged[0] == staged[1] == pytest.approx((10 + 78) * ALL / 2 / 1e12 + (2 * 17 + 8 * 9 * 16) * 7.84e-6)


def test_plan_charges_zero2_its_copies(run_cli):
    """llama-3.1-8b on 64 H100, torchtitan ZeRO-2, global batch 512: dp64 mb2, 4 micro-batches, each
    10 B x 8.030e9 / (3.35e12 x 0.89 B/s) + 66 x 7.84 us = 27.45 ms: 0.1098 s a step (was 0, ZeRO-3's 0.1471)."""
    code, out, _ = run_cli("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "64", "--framework", "torchtitan",
                           "--zero", "2", "--global-batch", "512", "--full", "--json")
    assert code == 0
    from helpers import op_class_values

    classes, report = op_class_values(out)
    assert report["results"]["best_layout"] == "dp64 tp1 pp1 ZeRO-2 mb2, no recompute"
    by_hand = 4 * (10 * ALL / (3.35e12 * 0.89) + 66 * 7.84e-6)
    assert by_hand == pytest.approx(0.1098, abs=1e-4)
    assert classes["class_titan_fsdp_copies"] == pytest.approx(by_hand, rel=1e-3)


def test_zero2_takes_the_fsdp_traffic_term():
    """The term itself: 0.59 x (traffic / compute - 0.71) for ZeRO-2 rows that are FSDP2 (zero2_fsdp), 0 for
    the ZeRO-2 rows that are not (a bucketed ZeRO-2's traffic is not FSDP's)."""
    from gpuplan.planner.uncertainty import fsdp_traffic_uncertainty

    u = fsdp_traffic_uncertainty(np.array([0.8152, 0.8152, 0.8152]), np.ones(3), np.array([2, 2, 3]),
                                 np.array([True, False, False]))
    assert list(u) == pytest.approx([0.59 * 0.1052, 0.0, 0.59 * 0.1052], abs=1e-9)


def test_planner_widens_torchtitan_zero2_beyond_the_published_traffic():
    """llama-3.1-8b on 256 H100, s 2048, global batch 256, dp 256 mb 1 held: torchtitan's ZeRO-2 carries
    0.815 of its compute in FSDP traffic (one gather and one reduce-scatter a micro-batch), beyond the
    0.71 any published run carried (0.704: planner.uncertainty.PUBLISHED_FSDP_TRAFFIC): +0.59 x 0.105 = +0.062 on its
    uncertainty (+0.109 at the earlier 0.63; +0 before the ZeRO-2 rule)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.planner.uncertainty import layout_uncertainty

    inputs = PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100", gpus=256, seq_len=2048, global_batch=256,
                        framework="torchtitan", tp=1, pp=1, cp=1, zero=2, micro_batch=1, recompute="none")
    result = search(inputs)
    t, u = result.table, result.evaluator.uncertainty
    base = layout_uncertainty(t.columns, u.active_params, result.evaluator.cluster.gpus_per_node, False, u.known,
                              u.widest)
    i = int(np.flatnonzero(t["gpus"] == 256)[0])  # the count asked (the table also weighs the counts below since 208a97ae)
    traffic = float(t["dp_traffic_seconds"][i] / t["compute_seconds"][i])
    assert traffic == pytest.approx(0.815, abs=0.01)
    assert float(t["uncertainty"][i] - base[i]) == pytest.approx(0.59 * (traffic - 0.71), rel=1e-9)
    assert float(t["uncertainty"][i] - base[i]) == pytest.approx(0.062, abs=0.006)
