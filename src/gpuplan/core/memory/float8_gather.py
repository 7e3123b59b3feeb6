"""Unsharded weights under torchtitan's FSDP2 float8 all-gather (--float8.enable_fsdp_float8_all_gather).

torchao's WeightWithDynamicFloat8CastTensor gathers each Float8Linear weight as its float8 bytes and
fsdp_post_all_gather wraps that buffer as a Float8Tensor (torchao/float8/fsdp_utils.py@eab345c L244, L270-276):
the unsharded layer matrices FSDP2 holds are 1 B an element, not the compute dtype's 2 B. The norms, embedding
and LM head are not Float8Linear (torchtitan float8.py@9dec370 L99: ``fqn != "output"``) and stay bf16.
Where that shows: the gathered layer of the FSDP working set (core.memory.step_transients.fsdp_working_set_bytes)
and a pipeline stage FSDP keeps unsharded (core.frameworks.pp_unsharded_stage_bytes). Published pairs that differ
only by it: torchtitan's Dec-2024 Llama 3.1 8B tables, compile vs compile + Float8, 77.0 -> 76.8 GiB (8 GPUs) and
62.0 -> 61.8 GiB (128), and torchtitan PR 808's 47.65 -> 47.32 GiB (published_memory.yaml): the 8B's largest
layer, 218,103,808 matrix elements, is 0.20 GiB at 1 B less. The step time side: core.time.titan_float8.
Units: bytes.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.model.spec import norm_params

FLOAT8_BYTES = 1.0


def layer_norm_params(spec) -> float:
    """Norm weights of one decoder layer, left in bf16 (Float8Linear converts the linears only): its norm modules
    (torchtitan's Llama: attention_norm, ffn_norm) at core.model.spec.norm_params' count each, as the parameter
    count has them."""
    return float(spec.norms_per_layer * norm_params(spec, spec.hidden_size))


def dp_shard_enabled(state_shards, cp=1):
    """torchtitan's gate on the float8 all-gather, for memory and step time alike: Float8Handler sets
    enable_fsdp_float8_all_gather only where ``parallel_dims.dp_shard_enabled`` (float8.py@9dec370 L51-54), i.e.
    dp_shard > 1 (parallelisms/parallel_dims.py@9dec370 L103-104). FSDP2 shards over dp_shard x cp
    (dp_shard_cp), gpuplan's ``state_shards`` (ParallelLayout.state_shards: shard_group or dp x cp), so
    dp_shard = state_shards / cp: context parallelism alone (dp 1, cp 8) does not turn it on. Arrays broadcast."""
    return np.asarray(state_shards) > np.asarray(cp)


def unsharded_float8_saving(spec, params, layout, compute_bytes: float, on):
    """(bytes the gathered largest layer saves, bytes a pipeline stage kept unsharded saves) when ``on``:
    its matrices at FLOAT8_BYTES instead of ``compute_bytes``. ``params``: core.memory.model_states.StageParams
    of the stage; 0 where torchtitan leaves the gather in bf16 (dp_shard_enabled false)."""
    per = (compute_bytes - FLOAT8_BYTES) * np.logical_and(on, dp_shard_enabled(layout.state_shards, layout.cp))
    layer = np.maximum(np.asarray(params.largest_layer, dtype=float) - layer_norm_params(spec), 0.0)
    return per * layer, per * np.asarray(params.matrices, dtype=float)
