"""FSDP2 under a pipeline (torchtitan PP): the unsharded gradients kept in fp32 across micro-batches
(core/time/titan_ops.pipeline_accumulation_seconds) and the stage's reduce-scatters issued after its
last backward (core/comm/dp_overlap.pipeline_reduce_exposed), checked by hand and against what torch's
own fully_shard does when driven as torch.distributed.pipelining drives a stage
(scripts/fsdp_copy_census.py --pipeline-micro-batches). Nothing here is fitted."""

import json

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.comm import dp_overlap as O
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.time import titan_ops as T
from gpuplan.core.time.memory_kernels import HBM_STREAM_EFFICIENCY, KERNEL_FIXED_SECONDS

ONE_TB = 1e12 / HBM_STREAM_EFFICIENCY  # achieved rate exactly 1e12 B/s


def _census(micro_batches: int) -> dict:
    """scripts/fsdp_copy_census.py --pipeline-micro-batches M's ops (helpers.fsdp_copy_census: the three cases
    this file and test_fsdp_copies.py read, run once a test run)."""
    from helpers import fsdp_copy_census_ops

    return fsdp_copy_census_ops(micro_batches)


def test_torchs_fully_shard_keeps_pipeline_gradients_in_fp32():
    """Two Linear(64, 64) layers (4,096 parameters each) on 2 gloo ranks, 3 micro-batches with gradient
    sync off, then the one post_backward: per layer one bf16 -> fp32 cast (2 + 4 B a parameter), two
    fp32 += bf16 (the census counts an in-place op's written operand once, 2 + 4 B; the kernel also
    reads it, 4 B more: FSDP_PP_ACCUMULATION_BYTES = 10), one gather kept for all three (2 + 2 B) and
    one fp32 -> fp32 reduce-scatter copy-in (4 + 4 B)."""
    pytest.importorskip("torch")
    per_layer = 64 * 64
    ops = _census(3)
    assert ops["aten::_to_copy (parameter-sized)"] == {"count": 2, "bytes": 2 * 6 * per_layer}
    assert 2 * 6 * per_layer == 2 * T.FSDP_PP_FIRST_ACCUMULATION_BYTES * per_layer
    assert ops["aten::add_ (parameter-sized)"] == {"count": 4, "bytes": 4 * 6 * per_layer}
    assert 4 * (6 + 4) * per_layer == 4 * T.FSDP_PP_ACCUMULATION_BYTES * per_layer
    assert ops["fsdp::chunk_cat (parameter-sized)"] == {"count": 2, "bytes": 2 * T.FSDP_PP_GRAD_COPY_IN_BYTES * per_layer}
    assert ops["fsdp::split_with_sizes_copy"]["count"] == 2  # gathered once for all micro-batches
    # one micro-batch: the cast, no +=
    one = _census(1)
    assert one["aten::_to_copy (parameter-sized)"]["count"] == 2 and "aten::add_ (parameter-sized)" not in one


def test_llama_70b_stage_accumulation_by_hand():
    """Llama 3.1 70B at tp 4 pp 4 (the stage holds total / 16 parameters), 64 micro-batches: bytes =
    stage x (6 + 63 x 10 + 2) (the cast, the +=, the copy-in's extra 2 B over the plain 6), kernels =
    64 x 9 tensors x 20 blocks; at 1 TB/s achieved."""
    spec = load_model("llama-3.1-70b")
    stage = count_parameters(spec).total / 16
    by_hand = stage * (6 + 63 * 10 + 2) / 1e12 + 64 * 9 * 20 * KERNEL_FIXED_SECONDS
    got = T.pipeline_accumulation_seconds(spec, ONE_TB, stage, 4, 64)
    assert got == pytest.approx(by_hand, rel=1e-9)
    assert 2.8 < stage * 638 / 1e12 < 2.9  # 4.41e9 parameters x 638 B: ~2.8 TB a step
    # it is part of fsdp_copy_seconds under a pipeline, on top of the step's one copy-out + copy-in
    copies = T.fsdp_copy_seconds(spec, ONE_TB, tp=4, pp=4, shard=16, zero=3, micro_batches=64)
    once = 10 * stage / 1e12 + 2 * (80 / 4 + 1) * KERNEL_FIXED_SECONDS
    assert copies == pytest.approx(once + by_hand, rel=1e-9)
    # no FSDP (a shard group of one), nothing
    assert T.fsdp_copy_seconds(spec, ONE_TB, tp=4, pp=4, shard=1, zero=3, micro_batches=64) == 0


def test_pipeline_reductions_are_exposed_but_for_earlier_chunks():
    """One chunk a rank: every reduce-scatter after the last backward, all exposed; two chunks: the
    first chunk's half runs beside the window (0.3 s) at the NCCL SM share (0.1): 0.5 + max(0.2, 0.05)."""
    assert O.pipeline_reduce_exposed(1.0, 1, 0.3, 0.1) == pytest.approx(1.0)
    assert O.pipeline_reduce_exposed(1.0, 2, 0.3, 0.1) == pytest.approx(0.7)
    assert O.pipeline_reduce_exposed(1.0, 2, 0.9, 0.1) == pytest.approx(0.55)  # 0.5 + max(0.5 - 0.9, 0.5 x 0.1)
    # fsdp2_exposed under a pipeline: the gather as before (bucketed by block), the reductions by chunk;
    # without chunks (other ZeRO-3 schedules) the old per-block rule
    gather, scatter, fwd, bwd, blocks = 0.01, 0.02, 0.05, 0.1, 10
    staged = O.fsdp2_exposed(gather, scatter, fwd, bwd, blocks, 8, False, 0.1, 1)
    assert staged == pytest.approx(O.bucketed_exposed(0.1, 10, 0.5, 0.1) + 0.2)
    old = O.fsdp2_exposed(gather, scatter, fwd, bwd, blocks, 8, False, 0.1)
    assert old == pytest.approx(O.bucketed_exposed(0.1, 10, 0.5, 0.1) + O.bucketed_exposed(0.2, 10, 1.0, 0.1))
    assert staged > old


def test_plan_explain_names_and_times_the_pipeline_accumulation(run_cli):
    """plan Llama 3.1 8B on 16 H100, torchtitan, pp 2 tp 1: the planner's dp 8 x pp 2 (vpp 8), micro-batch 1,
    1,024 sequences: 128 micro-batches through a stage of 8,030,261,248 / 2 parameters. By hand at 3.35 TB/s
    x 0.89: the stage's one copy-out + copy-in 10 B, the fp32 accumulation 6 + 127 x 10 + 2 B, kernels
    2 x 17 + 128 x 9 x 16 at 7.84 us: 1.879 s, shown as its own op class with what it is."""
    code, out, _ = run_cli("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "16", "--pp", "2",
                           "--tp", "1", "--framework", "torchtitan", "--full", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["results"]["best_layout"].startswith("dp8 tp1 pp2") and report["results"]["global_batch"] == 1024
    section = next(s for s in report["sections"] if "op class" in s["title"])
    line = next(ln for ln in section["lines"] if ln["key"] == "class_titan_fsdp_copies")
    stage = 8_030_261_248 / 2
    by_hand = stage * (10 + 6 + 127 * 10 + 2) / (3.35e12 * 0.89) + (2 * 17 + 128 * 9 * 16) * 7.84e-6
    assert by_hand == pytest.approx(1.879, abs=0.001)
    assert line["value"] == pytest.approx(by_hand, rel=1e-9)
    assert "fp32 accumulation" in line["label"] and "accumulate_unsharded_grad_if_needed" in line["formula"]


def test_a_pipeline_stage_is_gathered_once_a_step(monkeypatch, published_rows):
    """torchtitan's Llama 3.1 405B interleaved row (pp 8, vpp 2, dp 8, 8 micro-batches): the first stage's
    16 blocks are gathered once for the whole step (reshard_after_forward False under PP), so 16
    all-gathers, not 16 x 2 (forward and backward) as a resharding schedule would; 16 reduce-scatters."""
    import numpy as np

    from gpuplan.core.comm import step_comm
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    seen = {}
    original = step_comm.data_parallel_costs

    def spy(*args, **kwargs):
        seen["costs"] = original(*args, **kwargs)
        return seen["costs"]

    monkeypatch.setattr(step_comm, "data_parallel_costs", spy)
    run = published_rows["torchtitan-2412-llama-3.1-405b-512g-interleaved-1f1b"]
    predict_tokens_per_gpu_s(run)
    calls = {c.collective: float(np.sum(c.calls)) for c in seen["costs"]}
    assert calls["param all-gather"] == 16 and calls["grad reduce-scatter / all-reduce"] == 16
