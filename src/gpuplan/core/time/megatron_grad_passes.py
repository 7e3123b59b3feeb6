"""Two passes over gradient memory that Megatron-Core's DDP runs beside the layers' kernels (issue 37, wave 12
W2-A; sized on GPT-OSS 120B in docs/step.md, "GPT-OSS 120B, seventh pass", and charged wherever the code runs them).

* **The untied embedding's dense gradient** (StepSettings.embedding_grad_add). The word embedding's backward is
  ``F.embedding``'s (VocabParallelEmbedding, sparse off), which builds a dense gradient of the rank's whole
  vocabulary shard: ATen's ``embedding_backward_cuda_kernel`` starts from ``at::zeros({num_weights, ...})``
  (aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu) and writes the rows of the tokens it saw. The embedding
  is no TE linear, so nothing adds it into ``main_grad`` in a GEMM epilogue: the DDP's backward hook does, every
  micro-batch, ``param.main_grad.add_(param.grad.data)`` (megatron/core/distributed/distributed_data_parallel.py
  @core_v0.16.0 L440; @2edffad, the Megatron-LM commit Megatron-Bridge v0.4.2 pins, L442-445). Bytes per element
  of the (vocabulary / tp) x hidden shard: the zeros written (2, bf16), then the add reads the main gradient and the
  gradient and writes the main gradient (m + 2 + m, m = its width: 4 under grad_reduce_in_fp32, 2 in bf16):
  4 + 2m; two kernels. On the stage that holds the embedding (the first), each micro-batch. A tied embedding at
  pp 1 shares the head's weight and is left out (not read).
* **Per-token loss scaling** (StepSettings.per_token_loss: ``calculate_per_token_loss = True``, Megatron-Bridge's
  GPT-OSS recipes from v0.3.0, recipes/gpt_oss/gpt_oss.py@v0.4.2 L73, L193). finalize_model_grads all-reduces the
  step's token count and, once a step, scales every local gradient by 1 / num_tokens
  (finalize_model_grads.py@core_v0.16.0 L484-497; @2edffad L488-501: ``model_chunk.scale_gradients``, i.e.
  ``grad_data *= scaling_factor`` over each gradient buffer, param_and_grad_buffer.py@2edffad L1213-1217): the
  whole buffer read and written once, 2 x its width a local parameter, one kernel a buffer (dense and expert).

Units: seconds, bytes, parameters.
"""

from __future__ import annotations

from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.memory_kernels import memory_bound_seconds

EMBEDDING_GRAD_ZEROS_BYTES = 2.0
"""at::zeros of the dense bf16 embedding gradient: one write an element."""
EMBEDDING_GRAD_READ_BYTES = 2.0
"""The bf16 gradient the DDP hook reads once an element."""
EMBEDDING_GRAD_KERNELS = 2  # the zeros, the add_
LOSS_SCALE_BUFFERS = 2  # dense and expert gradient buffers (one kernel each)


def embedding_grad_bytes(spec: ModelSpec, tp, main_grad_bytes: float) -> float:
    """HBM bytes a micro-batch of the first stage moves for the untied embedding's dense gradient (0 when tied)."""
    if spec.tie_embeddings:
        return 0.0
    per_element = EMBEDDING_GRAD_ZEROS_BYTES + EMBEDDING_GRAD_READ_BYTES + 2 * main_grad_bytes
    return per_element * spec.vocab_size * spec.hidden_size / tp


def embedding_grad_seconds(spec: ModelSpec, settings, tp, hbm_bytes_per_s: float):
    """Seconds a micro-batch of the first stage spends on it where settings.embedding_grad_add (Megatron-Core's DDP;
    core.time.step charges it below ZeRO-3 only, Megatron FSDP taking its own path), at memory_kernels' rate; the
    main gradient is settings.grad_comm_bytes wide."""
    if not settings.embedding_grad_add or spec.tie_embeddings:
        return 0.0
    return memory_bound_seconds(embedding_grad_bytes(spec, tp, settings.grad_comm_bytes), EMBEDDING_GRAD_KERNELS,
                                hbm_bytes_per_s)


def loss_scale_seconds(settings, local_params, hbm_bytes_per_s: float):
    """Seconds a step spends scaling the gradient buffer of ``local_params`` trained parameters where
    settings.per_token_loss (read and write at settings.grad_comm_bytes an element)."""
    if not settings.per_token_loss:
        return 0.0
    return memory_bound_seconds(2 * settings.grad_comm_bytes * local_params, LOSS_SCALE_BUFFERS, hbm_bytes_per_s)
