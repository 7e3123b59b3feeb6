"""The vocabulary loss Megatron runs on the last pipeline stage, charged in the fused step model
(StepSettings.megatron_loss; core/time/megatron_ops.py loss_class / loss_seconds)."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import megatron_ops as MO
from gpuplan.core.time.step import StepSettings, step_time
from gpuplan.jobs.eager_stack import eager_step_settings

FIXED = 7.84e-6  # memory_kernels.KERNEL_FIXED_SECONDS
EFF = 0.89  # memory_kernels.HBM_STREAM_EFFICIENCY


def test_gpt_oss_native_loss_on_b200_by_hand():
    """GPT-OSS 120B (vocabulary 201,088) runs GPTModelProvider's 'native' fused vocab-parallel loss:
    28 B per vocabulary element and 4 kernels. One 8,192-token micro-batch on a B200 (8 TB/s):
    28 x 201,088 x 8,192 B / (8e12 x 0.89) + 4 x 7.84 us = 6.478 + 0.031 = 6.510 ms."""
    spec = load_model("gpt-oss-120b")
    assert MO.loss_impl(spec) == "native"
    by_hand = 28 * 201_088 * 8192 / (8e12 * EFF) + 4 * FIXED
    assert by_hand == pytest.approx(6.5096e-3, rel=1e-4)
    assert MO.loss_seconds(spec, "native", 8192, 8e12) == pytest.approx(by_hand, rel=1e-9)
    # vocab-parallel: each of tp = 4 GPUs holds a quarter of the vocabulary (the kernels stay 4)
    assert MO.loss_seconds(spec, "native", 8192, 8e12, tp=4) == pytest.approx(
        28 * 201_088 / 4 * 8192 / (8e12 * EFF) + 4 * FIXED, rel=1e-9)


def test_llama3_te_loss_on_h100_by_hand():
    """Llama 3 8B's provider sets cross_entropy_fusion_impl = 'te': TE's Triton loss, 10 B per
    element, 3 kernels. 8,192 tokens on an H100 SXM (3.35 TB/s): 10 x 128,256 x 8,192 /
    (3.35e12 x 0.89) + 3 x 7.84 us = 3.524 + 0.024 = 3.547 ms."""
    spec = load_model("llama-3-8b")
    assert MO.loss_impl(spec) == "te"
    assert MO.loss_seconds(spec, "te", 8192, 3.35e12) == pytest.approx(3.5475e-3, rel=1e-4)


def test_step_charges_the_loss_once_per_micro_batch():
    """At pp 1 and dp 1 nothing hides the loss: the step grows by micro-batches x one loss. megatron_loss also marks
    Megatron-Core's output layer (core/comm/embedding_tp.py megatron_core_output): its backward reduce-scatter of the
    input gradient (sequence parallel, tp 2) runs beside the wgrad GEMM and its re-gather beside dgrad, each a pass of
    8,192 x 2 x 128,256 x 4,096 / 2 = 4.30e12 FLOPs, >= 4.35 ms at the 989.4 TFLOP/s bf16 peak (h100-sxm.toml), far
    past one 67,108,864 B collective: the step sheds one exposed reduce-scatter a micro-batch."""
    from gpuplan.core.comm import collectives as K

    spec = load_model("llama-3-8b")
    gpu = load_accelerator("h100-sxm")
    base = StepSettings(seq_len=8192)
    assert base.sequence_parallel and base.finetune == "full"  # the output layer's AG + RS pair, with a wgrad GEMM
    layout = dict(tp=2, micro_batch=1, micro_batches=4)
    without = step_time(spec, cluster_for(gpu), base, **layout).total
    with_loss = step_time(spec, cluster_for(gpu), replace(base, megatron_loss="te"), **layout).total
    one = 10 * 128_256 / 2 * 8192 / (3.35e12 * EFF) + 3 * FIXED
    # one 2-GPU ring RS of the [8,192, 1, 4,096] bf16 buffer: at least half of it at 369 GB/s = 90.9 us
    reduce_scatter = float(K.collective_seconds("reduce_scatter", 8192 * 4096 * 2.0, cluster_for(gpu).group(2, 1)))
    assert 0.5 * 8192 * 4096 * 2 / 369e9 <= reduce_scatter < 8192 * 2 * 128_256 * 4096 / 2 / 989.4e12 / 10
    assert with_loss - without == pytest.approx(4 * one - 4 * reduce_scatter, rel=1e-6)


def test_megatron_framework_sets_the_loss_and_others_do_not():
    spec = load_model("gpt-oss-120b")
    assert eager_step_settings(SimpleNamespace(framework="megatron"), spec) == {"megatron_loss": "native"}
    assert "megatron_loss" not in eager_step_settings(SimpleNamespace(framework="generic"), spec)


def test_unknown_loss_implementation_is_refused():
    with pytest.raises(ValueError, match="cross-entropy implementation"):
        MO.loss_seconds(load_model("llama-3-8b"), "triton", 8192, 3.35e12)


def test_loss_names_and_implementations_map_both_ways():
    """One table (LOSS_OF_CROSS_ENTROPY) names the loss of each cross_entropy_fusion_impl and inverts it:
    te <-> te-ce, native <-> vocab-parallel-ce; any other --loss runs Megatron's native one; no --loss: the
    provider's (Llama 3 8B 'te', GPT-OSS 120B 'native'). SetupFields.loss_for and the step read the same."""
    from gpuplan.jobs.training.schema import TrainingInputs

    assert MO.LOSS_OF_CROSS_ENTROPY == {"te": "te-ce", "native": "vocab-parallel-ce"}
    llama, oss = load_model("llama-3-8b"), load_model("gpt-oss-120b")
    for loss, impl in (("te-ce", "te"), ("vocab-parallel-ce", "native"), ("hf-ce", "native"), ("chunked", "native")):
        assert MO.cross_entropy_impl(oss, loss) == MO.cross_entropy_impl(llama, loss) == impl
    assert (MO.cross_entropy_impl(llama, None), MO.cross_entropy_impl(oss, None)) == ("te", "native")
    for spec, loss in ((llama, "te-ce"), (oss, "vocab-parallel-ce")):
        inputs = TrainingInputs(model=spec.name, framework="megatron")
        assert inputs.loss_for(spec) == loss
        assert eager_step_settings(inputs, spec)["megatron_loss"] == MO.cross_entropy_impl(spec, loss)
