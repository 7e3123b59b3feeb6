"""Data-parallel traffic as the runs' code issues it (core/comm/dp_costs.py): GPT-NeoX v1.0's ZeRO-1 all-reduces
every gradient and then gathers the updated shards (StepSettings.grad_all_reduce, `train --grad-all-reduce`;
DeeperSpeed@eb7f5cff pipe/engine.py L234-246, zero/stage1.py L761-772), and DeepSpeed ZeRO-3's fitted bandwidth
share (core.comm.dp_overlap.DEEPSPEED_ZERO3_BANDWIDTH_SHARE, fitted on three ZeRO-3 rows) applies at ZeRO-3 only."""

from dataclasses import replace

import pytest
from helpers import reference_runs_by_id as _runs

from gpuplan.catalog import load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.dp_costs import data_parallel_costs, params_per_gpu
from gpuplan.core.comm.dp_overlap import DEEPSPEED_ZERO3_BANDWIDTH_SHARE, megatron_buckets
from gpuplan.core.comm.topology import cluster_for
from gpuplan.adapters.resolve import resolve_gpu
from gpuplan.core.time.step import StepSettings
from gpuplan.jobs.validation.gpu_hours import run_inputs

SPEC = load_model("pythia-12b")
CLUSTER = cluster_for(resolve_gpu("a100-sxm4-40gb"), nic_gbit_per_gpu=50)  # the Pythia rows' EFA v1


def _costs(settings, zero, dp=64, tp=4):
    params = params_per_gpu(SPEC, tp, 1, 1)
    costs = data_parallel_costs(SPEC, CLUSTER, settings, dp=dp, tp=tp, pp=1, cp=1, ep=1, zero=zero, micro_batches=2,
                                shard_group=None, layers=SPEC.num_layers, trained_params=params, t_bwd_gemm_mb=1.0,
                                compute=4.0)
    return {c.collective.split(" ")[0]: c for c in costs}, params


def test_grad_all_reduce_charges_an_all_reduce_then_the_gather():
    """Pythia 12B at dp64 tp4 ZeRO-1: 11.85e9 / 4 parameters a GPU, 2 B each, in Megatron's buckets; with
    grad_all_reduce each bucket is all-reduced (2S on a ring) instead of reduce-scattered (S), and the gather
    of the updated fp16 shards stays: 2S + S against S + S, one more reduce-scatter's time."""
    base = StepSettings(seq_len=2048, dp_overlap=0.0)
    plain, params = _costs(base, 1)
    neox, _ = _costs(replace(base, grad_all_reduce=True), 1)
    units = float(megatron_buckets(params, 64))
    size = params * 2 / units
    group = CLUSTER.group(64, 4)
    assert neox["grad"].nccl == "all_reduce" and plain["grad"].nccl == "reduce_scatter"
    assert float(neox["grad"].total) == pytest.approx(units * float(K.collective_seconds("all_reduce", size, group)))
    assert float(plain["grad"].total) == pytest.approx(units * float(K.collective_seconds("reduce_scatter", size, group)))
    assert float(neox["param"].total) == pytest.approx(float(plain["param"].total))  # the gather is unchanged
    ratio = float(neox["grad"].total) / float(plain["grad"].total)
    assert ratio == pytest.approx(2.0, rel=0.1)  # 2S against S, bandwidth-bound at ~90 MB a bucket
    # the extra S: ~0.54 s a step on the 12B row (docs/training.md's estimate from plan --explain, 0.544 s)
    assert float(neox["grad"].total - plain["grad"].total) == pytest.approx(0.544, rel=0.1)


def test_grad_all_reduce_is_refused_off_zero_1_and_the_core_times_zero_1_only():
    """The option is ZeRO-1's all-reduce then gather: at ZeRO-0 (an all-reduce already), 2 or 3 (sharded gradients)
    or with the stage left to the planner it would change nothing, so the schema refuses it in one line
    (schema/layout_rules.py; the CLI, plan-file and web doors: tests/test_option_rules_step_facts.py). The core
    keeps its own guard: at any other stage of a layout array it times the stage's own collective."""
    from gpuplan.errors import InputError
    from gpuplan.jobs.training.schema import TrainingInputs

    for zero in (0, 2, 3, None):
        with pytest.raises(InputError, match="grad_all_reduce: got True; .* give --zero 1"):
            TrainingInputs(params="13B", tokens="1T", gpus=64, zero=zero, grad_all_reduce=True)
    assert TrainingInputs(params="13B", tokens="1T", gpus=64, zero=1, grad_all_reduce=True).grad_all_reduce
    base = StepSettings(seq_len=2048, dp_overlap=0.0)
    for zero in (0, 2, 3):
        plain, _ = _costs(base, zero)
        flagged, _ = _costs(replace(base, grad_all_reduce=True), zero)
        assert float(flagged["grad"].total) == float(plain["grad"].total), zero


def test_deepspeed_share_applies_at_zero_3_only():
    """The 0.18 share was fitted on the three GPT-3 174B ZeRO-3 rows (hook-driven per-submodule fetches): under
    ZeRO-1 the deepspeed schedule's collectives run at NCCL's rate (its own: each 5e8-element bucket all-reduced,
    one all-gather a step, core.comm.dp_costs); under ZeRO-3 each fetch still takes 1 / 0.18 of NCCL's time."""
    megatron = StepSettings(seq_len=2048, dp_overlap=0.0)
    deepspeed = replace(megatron, dp_schedule="deepspeed")
    d1, _ = _costs(deepspeed, 1)
    group = CLUSTER.group(64, 4)
    for name, kind in (("grad", "all_reduce"), ("param", "all_gather")):
        one = float(d1[name].bytes_per_call)
        assert float(d1[name].total) == pytest.approx(float(d1[name].calls)
                                                       * float(K.collective_seconds(kind, one, group)))
    d3, _ = _costs(deepspeed, 3)
    one = float(d3["grad"].bytes_per_call)
    seconds = float(K.collective_seconds("reduce_scatter", one, group)) / DEEPSPEED_ZERO3_BANDWIDTH_SHARE
    assert float(d3["grad"].total) == pytest.approx(float(d3["grad"].calls) * seconds)


def test_the_rows_that_ran_deepspeeds_pipeline_engine_state_it():
    """The six GPT-NeoX v1.0 rows pass --grad-all-reduce with DeeperSpeed's code cited, BLOOM with its DeepSpeed
    branch's (_bf16_reduce_grads, 5ea1c60f8) and --dp-overlap 0 (ReduceGrads after the last backward); the rows
    whose code reduce-scatters (LLaMA-65B: ZeRO-0 anyway; StarCoderBase's distributed optimizer) do not."""
    runs = _runs()
    for rid in ("pythia-160m", "pythia-410m", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b"):
        assert run_inputs(runs[rid]).grad_all_reduce is True, rid
        assert "engine.py L234-246" in runs[rid]["grad_all_reduce_source"], rid
    bloom = run_inputs(runs["bloom-176b"])
    assert bloom.grad_all_reduce is True and bloom.dp_overlap == 0.0
    assert "_bf16_reduce_grads" in runs["bloom-176b"]["grad_all_reduce_source"]
    for rid in ("llama1-65b", "starcoderbase-15.5b"):
        assert run_inputs(runs[rid]).grad_all_reduce is False, rid
