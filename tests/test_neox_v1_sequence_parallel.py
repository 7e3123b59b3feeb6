"""Tensor parallelism without sequence parallelism (core/time/sequence_parallel.py, StepSettings.sequence_parallel,
`train --no-sequence-parallel`): GPT-NeoX v1.0 (the Pythia rows), Megatron-LM 2021 (the megatron-2021 rows) and
BigScience's Megatron-DeepSpeed (BLOOM) run the norms and residual adds on the whole sequence on every TP rank
and all-reduce. Numbers by hand from the catalog's Pythia 12B (h 5,120, 36 layers, parallel residual) and A100
40GB (1,555 GB/s; core.time.memory_kernels' 89% line)."""

from dataclasses import replace

import pytest
from helpers import reference_runs_by_id as _runs

from gpuplan.catalog import load_model
from gpuplan.core.comm import collectives as K
from gpuplan.core.time import megatron_ops as MO
from gpuplan.core.time import sequence_parallel as SP
from gpuplan.core.time.step import step_time
from gpuplan.errors import InputError
from gpuplan.jobs.plan.search import evaluator_for
from gpuplan.jobs.validation.gpu_hours import run_inputs


def _pythia_12b(sequence_parallel: bool):
    """The row's stated layout (dp64 tp4 pp1 ZeRO-1 mb8, 2 micro-batches, full recompute) with the row's settings."""
    run = _runs()["pythia-12b"]
    ev = evaluator_for(run_inputs(run))
    settings = replace(ev.step_settings("full"), sequence_parallel=sequence_parallel)
    breakdown = step_time(ev.spec, ev.cluster, settings, dp=64, tp=4, pp=1, vpp=1, cp=1, ep=1, zero=1, micro_batch=8,
                          micro_batches=2, shard_group=None)
    return ev, breakdown


def test_the_replicated_bytes_are_megatron_ops_norm_residual_and_grad_sums():
    """44 h B a token and layer (norm 8 + 12, residual 12, grad_sums 12), the op list's own classes; a rank runs
    (1 - 1/tp) of it more without sequence parallelism: Pythia 12B at tp 4, 0.75 x 44 x 5,120 = 168,960 B."""
    spec = load_model("pythia-12b")
    classes = {c.name: c.bytes for c in MO.layer_classes(spec, MO.MegatronOps())}
    assert sum(classes[n] for n in SP.REPLICATED_CLASSES) == 44 * 5120 == SP.REPLICATED_BYTES_PER_HIDDEN * 5120
    assert SP.replicated_bytes_per_token(spec, 4, sequence_parallel=False) == pytest.approx(168_960)
    assert SP.replicated_bytes_per_token(spec, 4, sequence_parallel=True) == 0.0
    assert SP.replicated_bytes_per_token(spec, 1, sequence_parallel=False) == 0.0  # nothing to split at tp 1


def test_tp_exchanges_per_layer_follow_the_code():
    """With SP: 2 forward + 2 backward (+ 2 recomputed) reduce-scatter + all-gather pairs. Without: all-reduces;
    GPT-NeoX's parallel residual reduces the attention + MLP sum once (transformer.py@v1.0 L702), its two
    ColumnParallelLinears all-reduce their input gradients (layers.py L455): 1 + 2, 4 with the recomputed forward."""
    neox, gpt = load_model("pythia-12b"), load_model("llama-2-7b")
    assert neox.parallel_residual and not gpt.parallel_residual
    assert SP.tp_exchanges_per_layer(neox, True, "full") == 6 == SP.tp_exchanges_per_layer(gpt, False, "full")
    assert SP.tp_exchanges_per_layer(neox, False, "full") == 4
    assert SP.tp_exchanges_per_layer(neox, False, "none") == 3
    assert SP.tp_exchanges_per_layer(gpt, True, "none") == 4
    assert SP.tp_collective_kinds(True) == ("reduce_scatter", "all_gather")
    assert SP.tp_collective_kinds(False) == ("all_reduce",)


def test_pythia_12b_step_without_sequence_parallelism_by_hand():
    """Compute: 16,384 tokens x 36 layers x 2 micro-batches x 168,960 B / (1,555 GB/s x 0.89) = 0.1440 s, x 4/3 with
    the recomputed forward's third of the element-wise work = 0.1920 s more. TP: 2 x 36 x 4 = 288 all-reduces of
    8 x 2,048 x 5,120 x 2 B = 167,772,160 B on the tp-4 NVLink group, in place of 2 x 36 x 6 = 432 pairs."""
    ev, with_sp = _pythia_12b(True)
    _, without = _pythia_12b(False)
    # 16,384 x 36 x 2 x 168,960 B / (1,555e9 B/s x 0.89) x 4 / 3 = 0.1920 s
    assert float(without.compute - with_sp.compute) == pytest.approx(0.1920, rel=2e-3)
    group = ev.cluster.group(4, 1)
    size = 167_772_160  # 8 x 2,048 x 5,120 x 2 B
    all_reduce = float(K.collective_seconds("all_reduce", size, group))
    pair = float(K.collective_seconds("reduce_scatter", size, group) + K.collective_seconds("all_gather", size, group))
    # + the embedding's exchange and the output layer's, 1 x 2 micro-batches each, both exposed: the row states
    # --tp-overlap 0 (GPT-NeoX v1.0's synchronous _reduce), so the output layer is not Megatron-Core's, hidden beside
    # its GEMMs, though the row runs under the default --framework megatron (core.comm.embedding_tp; wave 17, S1)
    assert ev.step_settings("full").tp_synchronous and ev.step_settings("full").megatron_loss
    for step, one, layers in ((without, all_reduce, 288), (with_sp, pair, 432)):
        rows = {c.collective.split(",")[0]: c for c in step.collectives if c.parallelism == "TP"}
        assert float(rows["embedding (vocab-parallel)"].exposed) == pytest.approx(2 * one, rel=1e-9)
        assert float(rows["output layer"].exposed) == pytest.approx(2 * one, rel=1e-9)
        assert "beside the output GEMMs" not in rows["output layer"].collective
        assert float(step.tp_comm) == pytest.approx((layers + 4) * one, rel=1e-9)
    assert all_reduce == pytest.approx(pair, rel=0.1)  # a ring all-reduce is a reduce-scatter + an all-gather


def test_the_rows_state_it_from_their_code():
    """The Pythia rows with tp > 1 (6.9B, 12B) and BLOOM pass --no-sequence-parallel, each citing the code that has
    none; the tp-1 Pythia rows state nothing (at tp 1 it changes nothing, and the schema refuses it there:
    schema/layout_rules.py)."""
    runs = _runs()
    pythia = [r for r in runs if r.startswith("pythia-")]
    with_tp = [r for r in pythia if runs[r]["layout"]["tp"] > 1]
    assert sorted(with_tp) == ["pythia-12b", "pythia-6.9b"]
    for rid in with_tp + ["bloom-176b"]:
        assert run_inputs(runs[rid]).sequence_parallel is False, rid
        assert "mappings.py" in runs[rid]["sequence_parallel_source"], rid
    for rid in set(pythia) - set(with_tp):
        assert "sequence_parallel" not in runs[rid] and run_inputs(runs[rid]).sequence_parallel is True, rid
        with pytest.raises(InputError, match="changes nothing with --tp 1"):
            run_inputs(dict(runs[rid], sequence_parallel=False))
    assert "L29-45" in runs["pythia-12b"]["sequence_parallel_source"]
    assert "c3be5d3f" in runs["bloom-176b"]["sequence_parallel_source"]
    assert run_inputs(runs["starcoderbase-15.5b"]).sequence_parallel is True  # its launch script sets it


def test_megatron_2021_rows_run_without_sequence_parallelism():
    """throughput_runs.yaml's layout.sequence_parallel (false on every row) reaches the step: the 18B row (tp 8)
    is slower than with sequence parallelism forced on; a tp-1 row does not move."""
    from gpuplan.jobs.validation.throughput import predict_step_seconds, throughput_reference

    runs = {r["id"]: r for r in throughput_reference()["runs"]}
    tp8, tp1 = runs["narayanan21-table1-18b"], runs["narayanan21-table1-1.7b"]
    assert tp8["layout"]["tp"] == 8 and tp8["layout"]["sequence_parallel"] is False
    forced = dict(tp8, layout=dict(tp8["layout"], sequence_parallel=True))
    assert predict_step_seconds(tp8) > 1.02 * predict_step_seconds(forced)
    assert tp1["layout"]["tp"] == 1
    assert predict_step_seconds(tp1) == predict_step_seconds(dict(tp1, layout=dict(tp1["layout"],
                                                                                    sequence_parallel=True)))


def test_train_takes_both_facts_as_options():
    """`train --no-sequence-parallel` and `--grad-all-reduce` reach the step through the one schema: Pythia 12B on
    its stated layout predicts a lower MFU with each (more element-wise work, 2S + S of DP traffic)."""
    from gpuplan.jobs.training.estimate import estimate_training
    from gpuplan.jobs.training.schema import TrainingInputs

    base = dict(model="pythia-12b", gpu="a100-sxm4-40gb", gpus=256, tp=4, pp=1, zero=1, micro_batch=8,
                global_batch=1024, seq_len=2048, dtype="fp16", recompute="full", mfu="predicted", tokens=3e11,
                nic_gbit_per_gpu=50, dp_overlap=0.0, tp_overlap=0.0)
    mfu = {k: estimate_training(TrainingInputs(**base, **extra)).value("mfu")
           for k, extra in (("plain", {}), ("no_sp", {"sequence_parallel": False}), ("ar", {"grad_all_reduce": True}))}
    assert mfu["no_sp"] < mfu["plain"] and mfu["ar"] < 0.95 * mfu["plain"]
