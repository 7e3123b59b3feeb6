"""The step model's eager-stack path: where StepSettings.eager_ops names an eager op profile (what Hugging
Face transformers dispatches), core.time.step times the micro-batch and the optimizer step op class by op
class with host time (core.time.eager_step) instead of its fused model. ``settings`` is a
core.time.step_settings.StepSettings (read by attribute, not imported). Units: seconds, FLOP/s, bytes/s."""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.comm.topology import Cluster
from gpuplan.core.time.efficiency import _mamf, attention_efficiency
from gpuplan.core.time.low_precision import attention_head_peak


def eager_run(spec: ModelSpec, cluster: Cluster, settings):
    """The eager step's inputs on this cluster's part (core.time.eager_step)."""
    from gpuplan.core.time.eager_step import EagerRun

    gpu = cluster.gpu
    fp32 = gpu.peak("fp32") if gpu.has_dtype("fp32") else gpu.peak("bf16") / 16
    return EagerRun(settings.eager_ops.for_recompute(settings.recompute),
                    attention_head_peak(gpu, settings.dtype), fp32,  # bf16 autocast; --dtype fp32 / tf32: none
                    _mamf(gpu), settings.gemm_d_half, gpu.memory_bandwidth, gpu,
                    settings.attention_efficiency or attention_efficiency(gpu), settings.seq_len,
                    settings.lora_rank if settings.finetune != "full" else 0, settings.recompute,
                    settings.eager_ops.attention or settings.attention_kernel, settings.param_bytes,
                    settings.optimizer_impl, settings.eager_factors)


def eager_microbatch_seconds(spec: ModelSpec, cluster: Cluster, settings, micro_batch, layers,
                             head) -> tuple[float, float, float]:
    """(forward + backward, attention, backward matmuls) seconds of one micro-batch of ``layers`` layers
    (``head``: the LM head too), as core.time.step.MicroBatchTimes takes them."""
    from gpuplan.core.time.eager_step import microbatch

    run = eager_run(spec, cluster, settings)
    fwd, bwd = microbatch(spec, run, micro_batch * settings.seq_len, layers, head=1.0 * head)
    return fwd.wall + bwd.wall, fwd.attention + bwd.attention, bwd.gemm


def eager_optimizer_seconds(spec: ModelSpec, cluster: Cluster, settings, trained, pp) -> float:
    """Seconds of the optimizer step over ``trained`` parameters per GPU (a stage of spec.num_layers / pp layers)."""
    from gpuplan.core.time.eager_step import optimizer_step, trained_tensors

    rank = settings.lora_rank if settings.finetune != "full" else 0
    layers = spec.num_layers / pp  # ``trained``: core.model.finetune.lora_params' peft count under LoRA (trained_params_per_gpu)
    return optimizer_step(eager_run(spec, cluster, settings), trained, trained_tensors(spec, rank, layers)).wall
