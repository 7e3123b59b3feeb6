"""torchtitan's ZeRO-2 is FSDP2's fully_shard(reshard_after_forward=False) (core.frameworks zero2_is_fsdp2_no_reshard;
torchtitan/distributed/fsdp.py@b5bcd76:112-135, 236-256). Memory already took it so; the step's collectives
(core.comm.dp_costs.fsdp2_no_reshard) took the bucketed ZeRO-2 (one reduce-scatter and one gather a step) until
this session's leftovers: now each block is gathered once a micro-batch (forward; the backward finds it
unsharded) and reduce-scattered once a micro-batch, and under a pipeline it is ZeRO-3's stage."""

from dataclasses import replace

import pytest

from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.catalog import load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.dp_costs import data_parallel_costs, params_per_gpu
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings

SPEC = load_model("llama-3.1-8b")
CLUSTER = cluster_for(resolve_gpu("h100"))
# s 4096; every collective's share behind compute counted (dp_overlap 1), NCCL's SM share 0: a hidden block costs 0
TITAN = StepSettings(seq_len=4096, dp_overlap=1.0, dp_schedule="fsdp2", nccl_sm_share=0.0)


def _costs(settings, zero, pp=1, micro_batches=4):
    costs = data_parallel_costs(SPEC, CLUSTER, settings, dp=64, tp=1, pp=pp, cp=1, ep=1, zero=zero,
                                micro_batches=micro_batches, shard_group=None, layers=32 // pp,
                                trained_params=params_per_gpu(SPEC, 1, pp, 1), t_bwd_gemm_mb=1.0, compute=1000.0)
    return {c.collective.split(" ")[0]: c for c in costs}


def test_titan_zero2_gathers_once_and_reduces_every_micro_batch_by_hand():
    """Llama 3.1 8B (8,030,261,248 parameters, 525,336,576 in the untied embedding, its own FSDP unit), dp 64,
    32 blocks, 4 micro-batches: a block's unit is (8,030,261,248 - 525,336,576) x 2 B / 32 = 469,057,792 B.
    ZeRO-2 under torchtitan: 32 x 4 = 128 gathers (ZeRO-3: 256, forward and backward) and 128 reduce-scatters
    (the parent: 126 Megatron-sized buckets once a step). With compute far longer than any collective, a pass
    exposes its first collective only: 4 x (gather + reduce-scatter) against ZeRO-3's 4 x (2 gathers + one)."""
    z2, z3 = _costs(TITAN, 2), _costs(TITAN, 3)
    unit = (8_030_261_248 - 525_336_576) * 2 / 32
    assert unit == 469_057_792
    group = CLUSTER.group(64, 1)
    ag = float(K.collective_seconds("all_gather", unit, group))
    rs = float(K.collective_seconds("reduce_scatter", unit, group))
    assert (float(z2["param"].calls), float(z2["grad"].calls)) == (128, 128)
    assert (float(z3["param"].calls), float(z3["grad"].calls)) == (256, 128)
    assert float(z2["param"].bytes_per_call) == float(z2["grad"].bytes_per_call) == unit
    assert float(z2["param"].total) == pytest.approx(128 * ag, rel=1e-12)
    assert float(z2["grad"].total) == pytest.approx(128 * rs, rel=1e-12)
    assert float(z2["param"].exposed) == pytest.approx(4 * (ag + rs), rel=1e-12)
    assert float(z3["param"].exposed) == pytest.approx(4 * (2 * ag + rs), rel=1e-12)
    # the embedding unit (its own fully_shard, same reshard flag): one gather and one reduce-scatter a micro-batch
    assert float(z2["embedding"].calls) == float(z3["embedding"].calls) == 8


def test_titan_zero2_under_a_pipeline_is_zero3s_stage():
    """pp 2: torch.distributed.pipelining keeps the stage gathered across micro-batches whatever the reshard flag,
    so ZeRO-2 and ZeRO-3 issue the same 16 gathers and 16 reduce-scatters a step (the parent: 63 buckets each)."""
    z2, z3 = _costs(TITAN, 2, pp=2), _costs(TITAN, 3, pp=2)
    for name in ("param", "grad"):
        assert float(z2[name].calls) == float(z3[name].calls) == 16
        assert float(z2[name].total) == pytest.approx(float(z3[name].total), rel=1e-12)
        assert float(z2[name].exposed) == pytest.approx(float(z3[name].exposed), rel=1e-12)


def test_other_schedules_keep_bucketed_zero2():
    """Megatron's ZeRO-2 (distributed optimizer) is not FSDP: one reduce-scatter and one gather a step in its buckets."""
    megatron = replace(TITAN, dp_schedule="megatron")
    z2 = _costs(megatron, 2)
    assert float(z2["param"].calls) == float(z2["grad"].calls) < 128
    assert float(z2["embedding"].calls) == 0
