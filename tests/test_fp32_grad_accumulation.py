"""DeepSpeed's BF16_Optimizer under its pipeline engine adds each micro-batch's bf16 gradients into an fp32
copy (core.time.optimizer.fp32_grad_accumulation_seconds; StepSettings.fp32_grad_accumulation)."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.step_comm import params_per_gpu
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.optimizer import fp32_grad_accumulation_seconds
from gpuplan.core.time.step import StepSettings, step_time


def test_one_pass_moves_eighteen_bytes_per_parameter():
    # cast: read 2 B, write 4 B; add: read 4 + 4 B, write 4 B -> 18 B; 1e9 parameters at 1.5e12 B/s = 12 ms
    assert fp32_grad_accumulation_seconds(1e9, 1.5e12) == pytest.approx(0.012)


def test_charged_once_per_micro_batch_under_a_pipeline_only():
    spec, gpu = load_model("llama-2-7b"), load_accelerator("a100-sxm4-80gb")
    cluster = cluster_for(gpu)
    plain = StepSettings(seq_len=2048, recompute="full")
    bf16 = replace(plain, fp32_grad_accumulation=True)
    layout = dict(dp=4, tp=2, pp=4, zero=1, micro_batch=1, micro_batches=16)
    base, acc = step_time(spec, cluster, plain, **layout), step_time(spec, cluster, bf16, **layout)
    # 16 micro-batches x 18 B x 842,301,952 first-stage parameters / (2.039 TB/s x 0.75) = 2.4258e11 B / 1.5293e12 B/s
    assert params_per_gpu(spec, 2, 4, 1) == 842_301_952
    assert acc.compute - base.compute == pytest.approx(0.15863, rel=1e-4)
    assert acc.bubble > base.bubble  # the pipeline's idle slots are micro-batches, now longer
    for other in (dict(layout, pp=1, dp=16), dict(layout, zero=3)):  # no pipeline engine / not the BF16 optimizer
        assert step_time(spec, cluster, bf16, **other).total == pytest.approx(step_time(spec, cluster, plain, **other).total)


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
    assert ev.step.fp32_grad_accumulation
    assert not evaluator_for(inputs.model_copy(update={"framework": "megatron"})).step.fp32_grad_accumulation
    assert not evaluator_for(inputs.model_copy(update={"dtype": "fp16"})).step.fp32_grad_accumulation
