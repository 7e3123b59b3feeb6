"""The dtype the tensor-parallel collectives run in, and what running them wider than the activations costs.

GPT-NeoX's ``fp32_allreduce`` (EleutherAI/gpt-neox@e59c873 megatron/neox_arguments/deepspeed_args.py L72, default
False; megatron/initialize.py L188 hands it to mpu.initialize_model_parallel) makes the model-parallel mappings cast a
bf16 tensor to fp32 before the collective and back after it (megatron/mpu/mappings.py L36-46 ``_reduce``: ``input_ =
input_.float()``, ``torch.distributed.all_reduce``, ``input_ = input_.bfloat16()``; the same around ``_split`` L60-74
and ``_gather`` L87-105). ``_reduce`` is the forward all-reduce of the row-parallel outputs
(_ReduceFromModelParallelRegion) and the backward all-reduce of the column-parallel inputs' gradients
(_CopyToModelParallelRegion.backward), the TP all-reduces core.comm.step_comm counts; the split / gather serve
``gather_output`` linears and input-scattering row-parallel ones, which a training step at that commit does not use
(transformer.py L100, L169, L178, L301, L310: gather_output=False; the output layer's gather_output is not
parallel_output, and training.py L83 builds the model with parallel_output=True). Two more ``_reduce`` calls a
micro-batch, the vocabulary-parallel embedding's forward all-reduce (mpu/layers.py L209) and the output layer's
backward one (L553 ``copy_to_model_parallel_region``, output_layer_parallelism "column"), b x s x h each (~1% of
Llemma 7B's 384 calls), are core.comm.embedding_tp's, widened and cast the same way (wave 17).
At e59c873 the cast runs only for a bf16 tensor (``dt == torch.bfloat16``): under fp16 it is a no-op, and there is no sequence parallelism; from
8b43196f (2024-08) GPT-NeoX casts any dtype and its SP reduce-scatter / all-gather too (mappings.py@8b43196f L31-50,
L186-230), not modelled (schema.tp_comm_dtype refuses those).
Nothing else follows the flag: the data-parallel gradients run in DeepSpeed's communication_data_type (EleutherAI/
DeeperSpeed@0ae3578a deepspeed/runtime/engine.py L783-794, L2217-2218: bf16 under bf16; ``git grep fp32_allreduce``
finds nothing in DeeperSpeed at that commit though GPT-NeoX writes the key into the DeepSpeed config), and pipeline
sends are DeepSpeed's PipelineEngine's, not the mappings'.

Cost of one collective call on a buffer of ``n`` elements: the collective moves n x 4 bytes instead of n x 2, and two
elementwise kernels run on the critical path, ``.float()`` (reads 2 n, writes 4 n bytes) and ``.bfloat16()`` (reads
4 n, writes 2 n): 12 n bytes of HBM traffic a call (CAST_HBM_BYTES_PER_ELEMENT), timed by
core.time.memory_kernels.memory_bound_seconds. Units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

from gpuplan.core.time.memory_kernels import memory_bound_seconds

TP_COMM_DTYPE_BYTES = {"bf16": 2, "fp32": 4}
"""Bytes per element of the TP collectives' buffer for each --tp-comm-dtype (schema.tp_comm_dtype)."""
ACTIVATION_BYTES = 2
"""Bytes per element of the bf16 / fp16 activations the TP collectives reduce (the only ones fp32_allreduce widens)."""
FP32_ACTIVATION_DTYPES = ("fp32", "tf32")
"""--dtype values whose activations, and so the TP collectives and pipeline sends of them, are fp32: 4 B an element
(Megatron-Core's ``_reduce`` all-reduces the tensor it is given, mappings.py@core_v0.16.1 L22-33; tf32 is fp32 outside
the GEMMs' tensor cores: core.time.activation_offload.FP32_ACTIVATION_DTYPES)."""
CAST_KERNELS_PER_CALL = 2
"""``.float()`` before the collective and ``.bfloat16()`` after it (gpt-neox@e59c873 mappings.py L39, L46)."""
CAST_HBM_BYTES_PER_ELEMENT = (ACTIVATION_BYTES + 4) + (4 + ACTIVATION_BYTES)
"""HBM bytes the two casts move per element: read bf16 + write fp32, then read fp32 + write bf16 (12)."""


def activation_bytes(dtype: str) -> float:
    """Bytes an element of the activations under ``--dtype`` (core.comm.step_comm's act_bytes): 4 under fp32 / tf32,
    else 2 (bf16, fp16, and the fp8 / fp4 recipes, whose activations between the linears are bf16)."""
    return 4.0 if dtype in FP32_ACTIVATION_DTYPES else float(ACTIVATION_BYTES)


def widens(tp_comm_bytes: float, element_bytes: float = ACTIVATION_BYTES) -> bool:
    """Whether the collectives run wider than activations of ``element_bytes`` an element (fp32_allreduce on bf16)."""
    return tp_comm_bytes > element_bytes


def widened(act_bytes, tp_comm_bytes: float, element_bytes: float = ACTIVATION_BYTES):
    """The collective's buffer in bytes when its ``act_bytes`` of activations (at ``element_bytes`` an element) are
    sent at ``tp_comm_bytes`` an element (StepSettings.tp_comm_bytes): act_bytes x 2 under fp32_allreduce on bf16,
    unchanged where the activations are already that wide (--dtype fp32 / tf32) or the collective is not widened."""
    return act_bytes * tp_comm_bytes / element_bytes if widens(tp_comm_bytes, element_bytes) else act_bytes


def cast_seconds(act_bytes, tp_comm_bytes: float, hbm_bytes_per_s: float, element_bytes: float = ACTIVATION_BYTES):
    """Seconds of the two casts around one collective call on ``act_bytes`` of activations (0 when the collective
    runs in the activations' dtype): 12 bytes an element of HBM traffic over two memory-bound kernels."""
    if not widens(tp_comm_bytes, element_bytes):
        return 0.0
    elements = act_bytes / element_bytes
    return memory_bound_seconds(elements * CAST_HBM_BYTES_PER_ELEMENT, CAST_KERNELS_PER_CALL, hbm_bytes_per_s)


def cast_seconds_per_call(settings, act_bytes, hbm_bytes_per_s: float):
    """cast_seconds for a step's settings (StepSettings.tp_comm_bytes, its dtype's activation width): the one
    expression the layers' TP calls and the embedding / output layer's share (core.comm.step_comm; 0 unless
    fp32_allreduce widens)."""
    return cast_seconds(act_bytes, settings.tp_comm_bytes, hbm_bytes_per_s, activation_bytes(settings.dtype))
