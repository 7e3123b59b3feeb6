"""FSDP2's copy-out and gradient copy-in on the compute stream (core/time/titan_ops.fsdp_copy_seconds),
checked by hand and against the copies torch's own fully_shard issues (scripts/fsdp_copy_census.py)."""

import pytest
from helpers import op_class_values

from gpuplan.catalog import load_model
from gpuplan.core.time import titan_ops as T
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY

# HBM peak such that the achieved rate is exactly 1e12 B/s (89% efficiency of core.time.memory_kernels)
ONE_TB = 1e12 / HBM_STREAM_EFFICIENCY


def test_bytes_per_parameter_match_torchs_fully_shard():
    """Two bias-free Linear(64, 64) layers under fully_shard on 2 gloo ranks, torchtitan's reshard
    rule (the last layer kept gathered): 2 forward all-gathers + 1 backward re-gather copy out
    2 + 2 B per parameter of their layer, 2 reduce-scatters copy in 2 + 4 B (bf16 -> fp32)."""
    pytest.importorskip("torch")
    from helpers import fsdp_copy_census_ops

    per_layer = 64 * 64
    ops = fsdp_copy_census_ops(0)  # the script's plain pass (scripts/fsdp_copy_census.py, run once a test run)
    assert ops["fsdp::split_with_sizes_copy"]["count"] == 3
    assert ops["fsdp::split_with_sizes_copy"]["bytes"] == 3 * T.FSDP_COPY_OUT_BYTES * per_layer == 49_152
    assert ops["fsdp::chunk_cat"]["count"] == 2
    assert ops["fsdp::chunk_cat"]["bytes"] == 2 * T.FSDP_GRAD_COPY_IN_BYTES * per_layer == 49_152
    # the copy-in, on all_gather_copy_in_stream (not charged): the fp32 shard cast to bf16, (4 + 2) B
    # per parameter of the half this rank holds, then copied into the all-gather input, (2 + 2) B
    assert ops["aten::_foreach_copy_"]["bytes"] == 3 * 6 * per_layer / 2
    assert ops["fsdp::all_gather_copy_in"]["bytes"] == 3 * 4 * per_layer / 2


def test_llama_8b_copies_by_hand():
    """Llama 3.1 8B (8,030,261,248 parameters, 6,979,588,096 in the 32 blocks), FSDP over 8, one
    micro-batch: copy-out 4 B x all + 4 B x 31 blocks re-gathered + copy-in 6 B x all = 80.30 GB +
    27.05 GB = 107.35 GB at 1 TB/s = 107.35 ms, plus 33 + 31 + 33 kernels x 7.84 us = 0.76 ms."""
    spec = load_model("llama-3.1-8b")
    by_hand = (10 * 8_030_261_248 + 4 * 31 * 6_979_588_096 / 32) / 1e12 + 97 * 7.84e-6
    assert by_hand == pytest.approx(0.10811, rel=1e-3)
    one = T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=8, zero=3, micro_batches=1)
    assert one == pytest.approx(by_hand, rel=1e-6)
    # every micro-batch; halved bytes per GPU under tp 2
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=8, zero=3, micro_batches=4) == pytest.approx(4 * one)
    half = T.fsdp_copy_seconds(spec, ONE_TB, tp=2, pp=1, shard=8, zero=3, micro_batches=1)
    assert half == pytest.approx(by_hand / 2 + 97 * 7.84e-6 / 2, rel=1e-6)
    # no FSDP, no copies: ZeRO-1, or a shard group of one GPU
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=8, zero=1, micro_batches=1) == 0
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=1, shard=1, zero=3, micro_batches=1) == 0
    # under a pipeline the stage stays gathered: one copy-out and one copy-in a step, 10 B x the stage,
    # plus its gradients kept in fp32 over the 8 micro-batches: 6 + 7 x 10 + 2 B, 8 x 9 x 16 kernels
    # (titan_ops.pipeline_accumulation_seconds, tests/test_fsdp_pipeline_grads.py)
    staged = T.fsdp_copy_seconds(spec, ONE_TB, tp=1, pp=2, shard=8, zero=3, micro_batches=8)
    assert staged == pytest.approx((10 + 78) * 8_030_261_248 / 2 / 1e12 + (2 * 17 + 8 * 9 * 16) * 7.84e-6, rel=1e-6)


def test_plan_explain_shows_fsdp_copies_and_adds_up(run_cli):
    # mb4 + selective recompute held: the choice until the fit rule took FSDP2's stream pools (now mb2, none)
    code, out, _ = run_cli("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--pp", "1",
                           "--tp", "1", "--micro-batch", "4", "--recompute", "selective", "--framework", "torchtitan",
                           "--full", "--json")
    assert code == 0
    classes, report = op_class_values(out)
    layout = report["results"]
    step = layout["best_step_seconds"]
    assert sum(classes.values()) == pytest.approx(step, rel=0.001)
    # H100 SXM 3.35 TB/s x 0.89; 1,024 sequences / (dp 8 x mb 4) = 32 micro-batches (the chosen layout)
    per_mb = (10 * 8_030_261_248 + 4 * 31 * 6_979_588_096 / 32) / (3.35e12 * 0.89) + 97 * 7.84e-6
    assert classes["class_titan_fsdp_copies"] == pytest.approx(32 * per_mb, rel=0.005)
    code, out, _ = run_cli("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "8", "--pp", "1",
                           "--tp", "1", "--framework", "megatron", "--full", "--json")
    assert code == 0
    assert "class_titan_fsdp_copies" not in op_class_values(out)[0]
