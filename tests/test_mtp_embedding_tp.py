"""Each MTP module looks the vocabulary-parallel embedding up and runs the output layer once more (Megatron-Core's
multi_token_prediction.py@d98e8a6: embedding(...) in _get_embeddings L1302, output_layer(...) per module L1013): at
pp 1 their TP exchanges are charged (1 + mtp) times a micro-batch (core.comm.embedding_tp)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings, step_time


def _outside_layers(spec, pp):
    cluster = cluster_for(load_accelerator("h100-sxm"))
    step = step_time(spec, cluster, StepSettings(seq_len=4096), dp=8, tp=8, pp=pp, ep=8, zero=1, micro_batch=1,
                     micro_batches=4)
    return {c.collective.split(",")[0]: c for c in step.collectives
            if c.parallelism == "TP" and c.collective.startswith(("embedding", "output layer"))}


def test_each_mtp_module_adds_a_lookup_and_an_output_layer_at_pp_1():
    spec = load_model("deepseek-v3")  # one MTP module (num_nextn_predict_layers 1)
    assert spec.mtp_layers == 1
    with_mtp, without = _outside_layers(spec, 1), _outside_layers(replace(spec, mtp_layers=0), 1)
    for name in ("embedding (vocab-parallel)", "output layer"):
        assert (with_mtp[name].calls, without[name].calls) == (4 * 2, 4)  # 4 micro-batches x (1 + 1 module)
        assert with_mtp[name].total == pytest.approx(2 * without[name].total, rel=1e-12)


def test_with_a_pipeline_the_first_stage_keeps_its_one_lookup():
    staged = _outside_layers(load_model("deepseek-v3"), 4)
    assert staged["embedding (vocab-parallel)"].calls == 4 and staged["output layer"].calls == 0
