"""DeepSpeed's BF16_Optimizer adds each micro-batch's bf16 gradients into an fp32 copy, with or without its
pipeline engine, at ZeRO <= 1 (core.time.optimizer.grad_accumulation_seconds, BF16_OPTIMIZER_MAX_ZERO;
StepSettings.deepspeed_bf16)."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.step_comm import params_per_gpu
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.optimizer import grad_accumulation_seconds, largest_stage_params
from gpuplan.core.time.step import StepSettings, step_time


def test_one_pass_moves_eighteen_bytes_per_parameter():
    # cast: read 2 B, write 4 B; add: read 4 + 4 B, write 4 B -> 18 B; 1e9 parameters at 1.5e12 B/s = 12 ms
    assert grad_accumulation_seconds(1e9, 1.5e12) == pytest.approx(0.012)


def test_charged_once_per_micro_batch_on_the_largest_stage_at_zero_1_or_below():
    spec, gpu = load_model("llama-2-7b"), load_accelerator("a100-sxm4-80gb")
    cluster = cluster_for(gpu)
    plain = StepSettings(seq_len=2048, recompute="full")
    bf16 = replace(plain, deepspeed_bf16=True)
    layout = dict(dp=4, tp=2, pp=4, zero=1, micro_batch=1, micro_batches=16)
    base, acc = step_time(spec, cluster, plain, **layout), step_time(spec, cluster, bf16, **layout)
    # Llama 2 7B (32 layers, h 4,096, FFN 11,008, untied 32,000 vocab) at tp2 pp4: a stage's 8 layers hold
    # 8 x ((4 x 4,096^2 + 3 x 4,096 x 11,008) / 2 + 2 x 4,096 norm) = 809,566,208; the first adds the
    # embedding (32,000 x 4,096 / 2 = 65,536,000): 875,102,208; the last the head (65,536,000) and the final
    # norm (4,096): 875,106,304, the largest (the mean, 6,738,415,616 / 8 = 842,301,952, is no stage's).
    assert largest_stage_params(spec, 2, 4, 1) == 875_106_304
    assert params_per_gpu(spec, 2, 4, 1) == 842_301_952
    # 16 micro-batches x 18 B x 875,106,304 = 2.52031e11 B / (2.039 TB/s x 0.75 = 1.52925e12 B/s) = 0.164807 s
    assert acc.compute - base.compute == pytest.approx(0.164807, rel=1e-5)
    assert acc.bubble > base.bubble  # the pipeline's idle slots are micro-batches, now longer
    # no pipeline: BF16_Optimizer.backward itself calls update_hp_grads; the whole model at tp2,
    # 32 layers x 101,195,776 + embedding and head 2 x 65,536,000 + final norm 4,096 = 3,369,340,928:
    # 16 x 18 B x 3,369,340,928 = 9.70370e11 B / 1.52925e12 B/s = 0.634540 s
    flat = dict(layout, pp=1, dp=16)
    gained = step_time(spec, cluster, bf16, **flat).compute - step_time(spec, cluster, plain, **flat).compute
    assert gained == pytest.approx(0.634540, rel=1e-5)
    for zero in (2, 3):  # the ZeRO optimizer, not the BF16_Optimizer (engine.py _do_optimizer_sanity_check)
        other = dict(flat, zero=zero)
        without = step_time(spec, cluster, plain, **other).total
        assert step_time(spec, cluster, bf16, **other).total == pytest.approx(without)


def test_largest_stage_takes_the_planners_float_degree_arrays():
    """The planner passes its degrees as float arrays; the same counts as above, per layout (tp2 pp4; tp2 pp1)."""
    import numpy as np

    spec = load_model("llama-2-7b")
    got = largest_stage_params(spec, np.array([2.0, 2.0]), np.array([4.0, 1.0]), np.array([1.0, 1.0]))
    assert got.tolist() == [875_106_304, 3_369_340_928]


def test_set_by_deepspeed_in_bf16_only():
    """BLOOM's run (Megatron-DeepSpeed, bf16, stated pp12) gets the pass; the same inputs under Megatron or in
    fp16 do not (DeepSpeed's fp16 pipeline keeps its gradients in fp16)."""
    import yaml
    from importlib import resources

    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.validation.gpu_hours import run_inputs

    runs = {r["id"]: r for r in yaml.safe_load((resources.files("gpuplan.catalog") / "reference" /
                                                "training_runs.yaml").read_text("utf-8"))["runs"]}
    inputs = run_inputs(runs["bloom-176b"])
    ev = evaluator_for(inputs)
    assert ev.step.deepspeed_bf16
    assert not evaluator_for(inputs.model_copy(update={"framework": "megatron"})).step.deepspeed_bf16
    assert not evaluator_for(inputs.model_copy(update={"dtype": "fp16"})).step.deepspeed_bf16
