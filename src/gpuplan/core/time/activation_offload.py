"""CPU activation offloading as Megatron-Core runs it (``--cpu-offloading``, Megatron-Bridge's
``cpu_offloading_num_layers``): what is copied, when, and what of it the step waits for.

Megatron-Core wraps each layer of its TransformerBlock in TE's offload context and calls the
returned commit function after every layer (megatron/core/transformer/transformer_block.py
@core_v0.15.0 L302-315, L712-718; extensions/transformer_engine.py ``get_cpu_offload_context``),
and refuses offloading with pipeline parallelism or recompute (transformer_config.py L887-899).
Transformer Engine (transformer_engine/pytorch/cpu_offload.py @v2.9,
``AsyncDoubleBufferGroupOffloadHandler``):

* **What.** Only tensors its modules mark with ``mark_activation_offload`` leave the GPU, for the
  first N layers (groups 0..N-1). In Megatron's TE layer: LayerNormLinear (QKV and fc1,
  module/layernorm_linear.py L421) the norm input (h, bf16) and its output ``ln_out`` (h, the
  GEMM's saved input: 1 B in FP8) and the per-token rsigma (fp32); Linear (proj and fc2,
  module/linear.py L398) the saved GEMM input (the attention output and the SwiGLU output, 1 B
  in FP8); the fused attention (attention/dot_product_attention/backends.py L1304-1305) q, k, v,
  its output (bf16) and the softmax statistics (fp32 per head). Not marked: the fc1 output
  Megatron's jit-fused SwiGLU saves (fusions/fused_bias_swiglu.py, not a TE module) stays on the GPU.
* **When (forward).** Group 0's copy starts after layer 0 on a separate ``d2h_stream``; at the
  end of layer ``window[i]`` = (L // N)(i + 1) - 1 (the remainder spread over the first groups,
  ``layer_window_map``) the compute stream waits for the copy in flight (``wait_stream`` both
  ways), frees it and starts the next group's. So each copy has the layers up to the next window
  point to hide behind (about L // N; layer_windows); whatever it takes beyond that, the step waits.
* **When (backward).** Mirrored on an ``h2d_stream``: at each window point the next group is
  reloaded and the compute stream waits for the previous reload (``on_group_commit_backward``,
  and before layer 0's backward for the last one): the same windows of backward layers.

The host link per GPU and direction: PCIe Gen5 x16 for HGX parts (64 GB/s per direction, PCI-SIG
5.0: 32 GT/s x 16 lanes, 128b/130b); on GB200 / GB300 one Grace serves two GPUs over NVLink-C2C,
900 GB/s bidirectional (NVIDIA GB200 NVL72 specifications; 450 GB/s per direction, as on GH200:
NVIDIA Grace Hopper Superchip Architecture whitepaper), shared by the superchip's two GPUs, which
offload at the same time in a data-parallel step: 225 GB/s per GPU and direction. Units: bytes,
seconds, bytes per second.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.bulk import maximum, minimum, scalar_or_array
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.megatron_ops import MXFP8_SCALED_BYTES, NVFP4_SCALED_BYTES
from gpuplan.core.time.titan_ops import BF16, FP32

PCIE_GEN5_X16_BYTES_PER_S = 64e9
"""PCIe 5.0 x16, one direction (32 GT/s x 16 lanes x 128/130, rounded as vendors quote it)."""
NVLINK_C2C_BYTES_PER_S_PER_GPU = 900e9 / 2 / 2
"""NVLink-C2C 900 GB/s bidirectional per Grace superchip, per direction, over its two GPUs."""
GRACE_SUPERCHIP_PARTS = ("gb200", "gb300")
SAVED_GEMM_INPUT_BYTES = {"fp32": FP32, "tf32": FP32, "bf16": BF16, "fp16": BF16, "fp8": 1.0,
                          "mxfp8": MXFP8_SCALED_BYTES, "fp4": NVFP4_SCALED_BYTES}
"""Bytes per element of a GEMM input a TE module saves for its weight gradient, by compute dtype (tf32: fp32
tensors, TF32 only inside the GEMM's tensor cores)."""
FP32_ACTIVATION_DTYPES = ("fp32", "tf32")
"""Compute dtypes whose other saved tensors (norm inputs, q, k, v, the attention output) are fp32, not bf16."""


def host_link_bytes_per_s(gpu_id: str) -> float:
    """Bytes per second one GPU copies to (or from) host memory in one direction (module docstring)."""
    return NVLINK_C2C_BYTES_PER_S_PER_GPU if gpu_id in GRACE_SUPERCHIP_PARTS else PCIE_GEN5_X16_BYTES_PER_S


def offloaded_bytes_per_token(spec: ModelSpec, gemm_input: str = "bf16", tp=1) -> float:
    """Bytes per token one offloaded layer copies to the host (module docstring), one GPU's share
    under tensor / sequence parallelism; ``gemm_input``: the dtype of the saved GEMM inputs."""
    if gemm_input not in SAVED_GEMM_INPUT_BYTES:
        raise ValueError(f"gemm_input must be one of {tuple(SAVED_GEMM_INPUT_BYTES)}, not {gemm_input!r}")
    a = spec.attention
    h, q, kv = spec.hidden_size, a.num_heads * a.qk_head_dim, a.num_kv_heads * a.qk_head_dim
    v, out = a.num_kv_heads * a.value_head_dim, a.num_heads * a.value_head_dim
    quant = SAVED_GEMM_INPUT_BYTES[gemm_input]
    act = FP32 if gemm_input in FP32_ACTIVATION_DTYPES else BF16
    norms = 2 * (act * h + quant * h + FP32)  # QKV and fc1 LayerNormLinear: input, ln_out, rsigma
    attention = act * (q + kv + v + out) + FP32 * a.num_heads  # q, k, v, output, softmax statistics
    linears = quant * (out + spec.mlp.intermediate_size)  # proj and fc2 saved inputs
    return (norms + attention + linears) / tp


def layer_windows(offload_layers: int, stage_layers) -> list:
    """Layers of compute each group's copy has to hide behind, forward and backward alike: TE's
    ``layer_window_map`` (window[i] = (L // N)(i + 1) - 1, the remainder added to the first L % N
    groups: + min(i + 1, L % N)), group 0 from layer 1 to window[0], group i from window[i - 1] + 1 to
    window[i]. ``stage_layers`` may be a numpy array (one entry per layout); ``offload_layers`` is one N."""
    n, total = offload_layers, stage_layers
    ends = [(total // n) * (i + 1) - 1 + minimum(i + 1, total % n) for i in range(n)]
    return [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]


def exposed_seconds(offload_layers: int, stage_layers, copy_seconds, layer_forward, layer_backward):
    """Seconds a micro-batch waits for its offload copies (``copy_seconds``: one layer's copy each
    way, ``layer_forward`` / ``layer_backward``: one layer's GPU seconds): per group, its copy beyond
    its window's compute (layer_windows), forward and backward; 0 without offloading. Where N is not
    below the stage's layers Megatron-Core refuses the run (transformer_config.py L887-892): infinite,
    elementwise, so no layout of an array is taken (the schema refuses it for a given layout)."""
    if offload_layers <= 0:
        return 0.0
    runs = offload_layers < np.asarray(stage_layers)
    windows = layer_windows(offload_layers, maximum(stage_layers, offload_layers + 1))
    waits = sum(maximum(copy_seconds - d * layer_forward, 0.0) + maximum(copy_seconds - d * layer_backward, 0.0)
                for d in windows)
    return scalar_or_array(np.where(runs, waits, np.inf))


def microbatch_exposed_seconds(spec: ModelSpec, settings, gpu_id: str, tokens, tp, stage_layers, phases):
    """What settings.offload_layers adds to one micro-batch on ``gpu_id`` (``tokens``: the
    micro-batch's tokens per GPU before tp; ``phases``: one layer's core.comm.moe_overlap.MoeLayerPhases)."""
    if settings.offload_layers <= 0:
        return 0.0
    dtype = "mxfp8" if settings.dtype == "fp8" and settings.fp8_recipe == "mxfp8" else settings.dtype
    copy = tokens * offloaded_bytes_per_token(spec, dtype, tp) / host_link_bytes_per_s(gpu_id)
    return exposed_seconds(settings.offload_layers, stage_layers, copy, phases.pre_dispatch_forward + phases.mlp_forward,
                           phases.pre_dispatch_backward + phases.mlp_backward)
