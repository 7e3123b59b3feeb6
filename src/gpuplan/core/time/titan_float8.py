"""torchtitan's FSDP2 float8 all-gather (--float8.enable_fsdp_float8_all_gather): what it changes in a step.

torchao's tensorwise Float8Linear wraps its weight in WeightWithDynamicFloat8CastTensor, whose FSDP2 hooks cast
each rank's *shard* to float8 before the all-gather and wrap the gathered bytes as a Float8Tensor after it
(torchao/float8/fsdp_utils.py@eab345c, the torchao of torchtitan's Dec-2024 benchmark):

* fsdp_pre_all_gather L226-244: with a precomputed scale ``hp_tensor_and_scale_to_float8(self._tensor, ...)``
  (the fp32 shard: read 4 B + write 1 B a shard element), else ``hp_tensor_to_float8_dynamic(...,
  reduce_amax=True, device_mesh=mesh)`` (an amax all-reduce per parameter per gather, not modelled: every
  row that gathers in float8 also precomputes its scales); returns ``(float8_tensor._data,)``: the all-gather
  moves 1 B an element (core.comm.dp_costs.gather_bytes with ParamGather.fp8_matrices: the layer matrices at
  1 B, the embedding, norms and LM head, which torchtitan does not convert, float8.py@9dec370 L99
  ``fqn != "output"``, at 2 B). FSDP2 runs this hook on its all-gather copy-in stream, beside compute, where the
  bf16 gather's fp32 -> bf16 copy-in runs too (core.time.titan_ops: not charged): not charged either.
* fsdp_post_all_gather L246-276: ``Float8Tensor(data, scale, ...)`` over the gathered buffer, no cast; FSDP2's
  copy-out (split_with_sizes_copy, titan_ops.FSDP_COPY_OUT_BYTES) copies 1 + 1 B a matrix element instead of
  2 + 2 B.
* Float8Linear then skips its own weight cast: get_weight_scale returns None and cast_weight_to_float8_t
  returns ``weight.t()`` when the weight is already float8 (float8_linear.py@eab345c L324-336), so the
  step's per-micro-batch weight cast (core.time.low_precision.FP8_WEIGHT_CAST_BYTES: amax read 2 B + read 2 B
  + write 1 B a weight, charged by core.time.step for every FP8 layer) does not run on the compute stream.
  It is taken off at the rate step.py charged it (memory_bandwidth x StepSettings.hbm_efficiency, in the
  elementwise work), with the share a recompute re-runs (the forward's third: full recompute, op SAC), so
  none of it stays charged (removed_cast_seconds).
* precompute_float8_dynamic_scale_for_fsdp L30-83 (torchtitan calls it after every optimizer step,
  float8.py@9dec370 L106-119): one ``_foreach_norm(ord=inf)`` over the fp32 shards (read 4 B a shard element)
  and one all-reduce of one fp32 amax a Float8Linear over the weights' mesh (dp_shard x tp), on the compute
  stream, exposed.

torchtitan enables it only where FSDP shards over dp_shard > 1 (float8.py@9dec370 L51-54, components/
quantization/float8.py@820504e L79-92; core.memory.float8_gather.dp_shard_enabled, the memory model's gate too:
dp_shard excludes cp) and never with a recipe_name (rowwise: L57-65). The flag's default is
False (config_manager.py@9dec370 L541-545, @820504e L474-479). Units: seconds per step, bytes.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.comm import collectives as K
from gpuplan.core.comm.per_gpu_params import matrices_per_gpu
from gpuplan.core.memory.float8_gather import dp_shard_enabled
from gpuplan.core.memory.recompute import full_recompute_share
from gpuplan.core.model import flops as F
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time import titan_ops as TT
from gpuplan.core.time.low_precision import FP8_WEIGHT_CAST_BYTES
from gpuplan.core.time.memory_kernels import memory_bound_seconds

FLOAT8 = 1.0
SHARD_FP32 = 4.0
COPY_OUT_SAVED_BYTES = TT.FSDP_COPY_OUT_BYTES - 2 * FLOAT8
"""Bytes a gathered matrix element saves in FSDP2's copy-out: 2 + 2 (bf16) -> 1 + 1 (float8 data)."""
LINEARS_PER_BLOCK = 7
"""Float8Linear modules of a Llama TransformerBlock (wq, wk, wv, wo, w1, w2, w3: models/llama/model.py@9dec370),
one fp32 amax each in the precompute all-reduce (fused wqkv: fewer, the bytes are negligible either way)."""


def gathers_float8(settings) -> bool:
    """The step's FSDP all-gathers carry float8 layer matrices: torchtitan's FP8 tensorwise step whose
    param_gather holds fp8_matrices (the row's fsdp_float8_all_gather, or --fsdp-float8-all-gather)."""
    return (settings.titan_ops is not None and settings.param_gather.fp8_matrices and settings.dtype == "fp8"
            and settings.fp8_recipe == "tensorwise")


def recompute_rerun_share(settings, stage_layers):
    """Share of the forward's elementwise work (core.time.step: t_elem / 3, where the weight cast sits) that the
    recompute re-runs in backward (core.memory.recompute.recompute_seconds_per_token): all of it under full
    recompute (its block share with recompute_layers) and torchtitan's op SAC; none otherwise."""
    if settings.recompute == "full":
        return full_recompute_share(settings, stage_layers)
    return 1.0 if settings.recompute == "selective" and settings.selective == "op-sac" else 0.0


def removed_cast_seconds(spec: ModelSpec, memory_bandwidth: float, *, tp, micro_batches, hbm_efficiency: float,
                         rerun=0.0, stage_layers):
    """Seconds of Float8Linear weight casts a step no longer runs: FP8_WEIGHT_CAST_BYTES a stage weight each
    micro-batch, (1 + rerun / 3) times (the recompute's forward third, recompute_rerun_share), at
    ``memory_bandwidth`` (B/s) x ``hbm_efficiency``, the rate core.time.step charged the cast at (its hbm), on the
    stage it charged it on: ``stage_layers`` (step_time's paced stage: core.time.stages.paced_stage_layers)."""
    weights = F.layer_matmul_weights_per_token(spec) / spec.num_layers / tp * stage_layers
    return FP8_WEIGHT_CAST_BYTES * weights * micro_batches * (1 + np.asarray(rerun) / 3) / (
        memory_bandwidth * hbm_efficiency)


def float8_gather_seconds(spec: ModelSpec, cluster, *, tp, pp, shard, zero, micro_batches, hbm_efficiency: float,
                          cp=1, rerun=0.0, stage_layers):
    """Seconds a step's compute stream gains (negative) or spends under float8 all-gather, per GPU, against
    the bf16 gather the rest of the model costs: the copy-out of the gathered matrices at 1 + 1 B (as often as
    titan_ops.fsdp_copy_seconds gathers: each micro-batch the stage once plus the re-gathered blocks at pp 1,
    none re-gathered at torchtitan's ZeRO-2; once a step under a pipeline), no Float8Linear weight cast
    (removed_cast_seconds at ``hbm_efficiency`` with ``rerun``), and the precompute's amax pass and all-reduce
    once a step. ``shard``: the ranks FSDP shards over (dp_shard x cp). 0 without FSDP (zero < 2) or where
    torchtitan's dp_shard_enabled gate is false (shard / cp = 1: core.memory.float8_gather.dp_shard_enabled).
    ``stage_layers``: the stage the step paces on (core.time.stages.paced_stage_layers): its weight
    cast, its amax pass and all-reduce. The copy-out saving stays on the average stage (matrices_per_gpu:
    num_layers / pp), the stage titan_ops.fsdp_copy_seconds charges the bf16 copy-out on: the copy and its
    saving on one stage (the saving alone on the paced stage would double the net copy's error)."""
    hbm = cluster.gpu.memory_bandwidth
    matrices = matrices_per_gpu(spec, tp, pp, 1, 1)
    kept = np.asarray(zero) == 2
    regathered = np.where(kept, 0.0, (spec.num_layers - 1) / spec.num_layers) * matrices
    gathered = np.where(np.asarray(pp) == 1, micro_batches * (matrices + regathered), matrices)
    copy_out = memory_bound_seconds(COPY_OUT_SAVED_BYTES * gathered, 0, hbm)
    cast = removed_cast_seconds(spec, hbm, tp=tp, micro_batches=micro_batches, hbm_efficiency=hbm_efficiency,
                                rerun=rerun, stage_layers=stage_layers)
    stage_matrices = matrices * (stage_layers * np.asarray(pp) / spec.num_layers)  # 1.0 x where pp divides them
    amax_pass = memory_bound_seconds(SHARD_FP32 * stage_matrices / np.maximum(shard, 1), 1, hbm)
    amax_reduce = K.collective_seconds("all_reduce", SHARD_FP32 * LINEARS_PER_BLOCK * stage_layers,
                                       cluster.group(np.asarray(shard) * tp, 1))
    out = (amax_pass + amax_reduce - copy_out - cast) * (((np.asarray(zero) >= 3) | kept)
                                                         & dp_shard_enabled(shard, cp))
    return float(out) if np.ndim(out) == 0 else out


def step_copy_seconds(spec: ModelSpec, cluster, settings, *, tp, pp, shard, zero, micro_batches, stage_layers,
                      cp=1):
    """What torchtitan's FSDP2 adds to a step's compute stream (core.time.step): its copies
    (titan_ops.fsdp_copy_seconds) and, where the gathers carry float8 (gathers_float8), float8_gather_seconds
    (the weight cast off at settings.hbm_efficiency, with settings' recompute re-run; ``cp`` for the dp_shard
    gate; ``stage_layers``: the stage step_time's micro-batch paces on, core.time.stages.paced_stage_layers).
    0.0 for a step that is not torchtitan's (settings.titan_ops None)."""
    if settings.titan_ops is None:
        return 0.0
    copies = TT.fsdp_copy_seconds(spec, cluster.gpu.memory_bandwidth, tp=tp, pp=pp, shard=shard, zero=zero,
                                  micro_batches=micro_batches)
    if not gathers_float8(settings):
        return copies
    return copies + float8_gather_seconds(spec, cluster, tp=tp, pp=pp, shard=shard, zero=zero,
                                          micro_batches=micro_batches, cp=cp, hbm_efficiency=settings.hbm_efficiency,
                                          rerun=recompute_rerun_share(settings, stage_layers),
                                          stage_layers=stage_layers)
