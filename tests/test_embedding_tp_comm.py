"""The vocabulary-parallel embedding's and the output layer's TP exchanges (core.comm.embedding_tp): one exchange each
per micro-batch on pp 1, the embedding's alone on the first stage with pp > 1; exposed but for Megatron-Core's output
layer, whose backward collectives hide behind its dgrad / wgrad GEMMs (layers.py@core_v0.16.1 L495-625)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import collectives as K, tp_comm_dtype as TPD
from gpuplan.core.comm.embedding_tp import embedding_output_costs, output_gemm_pass_seconds
from gpuplan.core.comm.step_comm import step_communication
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings, step_time

SPEC = load_model("llama-2-7b")
CLUSTER = cluster_for(load_accelerator("a100"))
NEOX = StepSettings(seq_len=4096, sequence_parallel=False, recompute="full")  # GPT-NeoX@e59c873: no SP, no megatron_loss
MEGATRON = StepSettings(seq_len=4096, megatron_loss="native")  # Megatron-Core: SP, its loss on the output layer


def _rows(settings, *, tp=4, pp=1, micro_batches=2, micro_batch=1, output_pass=0.0):
    costs = step_communication(SPEC, CLUSTER, settings, dp=8, tp=tp, pp=pp, vpp=1, cp=1, ep=1, zero=1,
                               micro_batch=micro_batch, micro_batches=micro_batches, shard_group=None, layers=32,
                               trained_params=1.7e9, t_attn_mb=0.1, t_bwd_gemm_mb=0.2, compute=1.0,
                               output_pass=output_pass)
    return {c.collective.split(",")[0]: c for c in costs if c.parallelism == "TP"}


def test_one_exchange_each_per_micro_batch_on_one_stage():
    """pp 1, tp 4, 2 micro-batches of 4,096 tokens: 2 embedding all-reduces + 2 output-layer ones, each on the layers'
    buffer, 4,096 x 4,096 x 2 B = 32 MiB, beside 2 x 32 x 6 = 384 layer all-reduces (full recompute, no SP: the
    forward's 2 twice + 2 backward, Llemma 7B's count); each call costs one NCCL all-reduce of 32 MiB on the group."""
    rows = _rows(NEOX)
    layers, embed, out = rows["all-reduce (no SP)"], rows["embedding (vocab-parallel)"], rows["output layer"]
    assert float(layers.calls) == 384 and float(embed.calls) == 2 and float(out.calls) == 2
    assert float(embed.bytes_per_call) == float(out.bytes_per_call) == 4096 * 4096 * 2 == 32 * 2 ** 20
    one = float(K.collective_seconds("all_reduce", 32 * 2 ** 20, CLUSTER.group(4, 1)))
    assert float(embed.total) == pytest.approx(2 * one, rel=1e-12)
    assert float(out.total) == pytest.approx(2 * one, rel=1e-12)
    assert float(embed.exposed) == float(embed.total) and float(out.exposed) == float(out.total)  # synchronous
    assert float(layers.total) / float(layers.calls) == pytest.approx(one, rel=1e-12)  # the layers' own call
    # ~1% more TP calls: 4 against 384 (docs/step.md)
    assert (float(embed.calls) + float(out.calls)) / float(layers.calls) == pytest.approx(4 / 384)


def test_first_stage_holds_the_embedding_only_and_tp_1_has_none():
    rows = _rows(NEOX, pp=2)
    assert float(rows["embedding (vocab-parallel)"].calls) == 2 and float(rows["output layer"].calls) == 0
    assert float(rows["output layer"].total) == 0.0
    rows = _rows(NEOX, tp=1)
    assert float(rows["embedding (vocab-parallel)"].total) == 0.0 and float(rows["output layer"].total) == 0.0


def test_megatron_core_hides_the_output_backward_behind_its_gemms():
    """Under SP the output layer runs AG forward (exposed), AG again beside dgrad and RS beside wgrad: with no GEMM
    time all three are exposed, with a GEMM longer than either only the forward's AG; the embedding's RS + AG stays
    exposed either way."""
    group = CLUSTER.group(4, 1)
    ag = float(K.collective_seconds("all_gather", 32 * 2 ** 20, group))
    rs = float(K.collective_seconds("reduce_scatter", 32 * 2 ** 20, group))
    bare = _rows(MEGATRON)["output layer"]
    assert float(bare.total) == pytest.approx(2 * (2 * ag + rs), rel=1e-12)
    assert float(bare.exposed) == pytest.approx(float(bare.total), rel=1e-12)
    hidden = _rows(MEGATRON, output_pass=1.0)
    assert float(hidden["output layer"].exposed) == pytest.approx(2 * ag, rel=1e-12)
    assert float(hidden["output layer"].total) == pytest.approx(2 * (2 * ag + rs), rel=1e-12)
    assert float(hidden["embedding (vocab-parallel)"].exposed) == pytest.approx(2 * (rs + ag), rel=1e-12)
    # half the RS's time of GEMM: half the RS left exposed (and the re-gather's excess over it)
    part = _rows(MEGATRON, output_pass=rs / 2)["output layer"]
    assert float(part.exposed) == pytest.approx(2 * (ag + max(0.0, ag - rs / 2) + rs / 2), rel=1e-12)
    # a frozen output layer (LoRA) has no wgrad: no re-gather, the RS exposed
    lora = _rows(replace(MEGATRON, finetune="lora"), output_pass=1.0)["output layer"]
    assert float(lora.total) == pytest.approx(2 * (ag + rs), rel=1e-12)
    assert float(lora.exposed) == pytest.approx(2 * (ag + rs), rel=1e-12)


def test_fp32_allreduce_widens_and_casts_them_like_the_layers():
    """GPT-NeoX's fp32_allreduce: 64 MiB a call and two casts of 12 B an element (4,096 x 4,096 elements) per call."""
    fp32 = replace(NEOX, tp_comm_bytes=4.0)
    embed = _rows(fp32)["embedding (vocab-parallel)"]
    assert float(embed.bytes_per_call) == 64 * 2 ** 20
    one = float(K.collective_seconds("all_reduce", 64 * 2 ** 20, CLUSTER.group(4, 1)))
    casts = TPD.cast_seconds(32 * 2 ** 20, 4.0, CLUSTER.gpu.memory_bandwidth)
    assert casts > 12 * 4096 * 4096 / CLUSTER.gpu.memory_bandwidth * 0.999  # at least the traffic at full HBM rate
    assert float(embed.total) == pytest.approx(2 * (one + casts), rel=1e-12)
    assert "fp32" in embed.collective and float(embed.exposed) == float(embed.total)


def test_output_gemm_pass_is_a_third_of_the_head_time():
    """One pass: 2 V h / tp FLOPs a token (4,096 tokens, V 32,000, h 4,096, tp 4: 268.4 GFLOP) at the LM head's
    rate; core.time.step's head time is three of them (forward, dgrad, wgrad)."""
    seconds = output_gemm_pass_seconds(SPEC, CLUSTER.gpu, MEGATRON, 4, 4096)
    flops = 4096 * 2 * 32000 * 4096 / 4
    assert flops == pytest.approx(268.4e9, rel=1e-3)
    assert flops / CLUSTER.gpu.peak("bf16") < seconds < flops / (0.5 * CLUSTER.gpu.peak("bf16"))


def test_step_time_charges_them_in_its_tp_field():
    """StepBreakdown.tp_comm sums the TP rows' exposed seconds, the new two included (the layers', DeepSpeed's
    checkpoint gathers at 0 calls here, the embedding's, the output layer's)."""
    step = step_time(SPEC, CLUSTER, NEOX, dp=8, tp=4, micro_batch=1, micro_batches=2)
    tp_rows = [c for c in step.collectives if c.parallelism == "TP"]
    assert len(tp_rows) == 4 and float(tp_rows[1].calls) == 0
    assert float(step.tp_comm) == pytest.approx(sum(float(c.exposed) for c in tp_rows), rel=1e-12)
    assert [c.parallelism for c in step.collectives][:4] == ["TP", "PP", "TP", "TP"]  # PP second, as before


def test_costs_take_the_callers_seconds():
    """The function times nothing itself: an exchange is whatever ``seconds`` gives per kind."""
    unit = {"all_reduce": 3.0, "reduce_scatter": 1.0, "all_gather": 2.0}
    embed, out = embedding_output_costs(SPEC, NEOX, tp=2, pp=1, micro_batches=5, buffer=1.0, seconds=unit.get,
                                        group=None, casts=0.5, output_pass=10.0)
    assert float(embed.total) == 5 * 3.5 and float(out.exposed) == 5 * 3.5  # not Megatron-Core: nothing hidden
    embed, out = embedding_output_costs(SPEC, replace(MEGATRON, sequence_parallel=False), tp=2, pp=1, micro_batches=5,
                                        buffer=1.0, seconds=unit.get, group=None, casts=0.0, output_pass=1.0)
    assert float(out.total) == 15.0 and float(out.exposed) == 5 * (3.0 - 1.0)  # the AR beside wgrad


def test_stated_tp_overlap_0_keeps_the_output_layer_synchronous():
    """--tp-overlap 0 stated (StepSettings.tp_synchronous: GPT-NeoX v1.0's synchronous _reduce, the Pythia rows under
    the default --framework megatron): the output layer's AG + RS all exposed with any GEMM beside them, 2 x (ag +
    rs) on 2 micro-batches (no wgrad re-gather: that is Megatron-Core's), not the hidden 2 x ag (wave 17 mend, S1)."""
    group = CLUSTER.group(4, 1)
    ag = float(K.collective_seconds("all_gather", 32 * 2 ** 20, group))
    rs = float(K.collective_seconds("reduce_scatter", 32 * 2 ** 20, group))
    out = _rows(replace(MEGATRON, tp_synchronous=True), output_pass=1.0)["output layer"]
    assert float(out.total) == pytest.approx(2 * (ag + rs), rel=1e-12)
    assert float(out.exposed) == pytest.approx(2 * (ag + rs), rel=1e-12)
    assert "beside the output GEMMs" not in out.collective
    assert "beside the output GEMMs" in _rows(MEGATRON, output_pass=1.0)["output layer"].collective


def test_a_frozen_embedding_has_no_backward_gather_under_sp():
    """LoRA (finetune 'lora'): the embedding computes no gradient, so under SP its reduce-scatter's backward
    all-gather never runs: 2 x rs, where a full fine-tune pays 2 x (rs + ag) (wave 17 mend, N2); no SP: the
    all-reduce forward either way."""
    group = CLUSTER.group(4, 1)
    ag = float(K.collective_seconds("all_gather", 32 * 2 ** 20, group))
    rs = float(K.collective_seconds("reduce_scatter", 32 * 2 ** 20, group))
    lora = _rows(replace(MEGATRON, finetune="lora"))["embedding (vocab-parallel)"]
    assert float(lora.total) == pytest.approx(2 * rs, rel=1e-12) == float(lora.exposed)
    full = _rows(MEGATRON)["embedding (vocab-parallel)"]
    assert float(full.total) == pytest.approx(2 * (rs + ag), rel=1e-12)
    ar = float(K.collective_seconds("all_reduce", 32 * 2 ** 20, group))
    assert float(_rows(replace(NEOX, finetune="lora"))["embedding (vocab-parallel)"].total) == pytest.approx(2 * ar)
