"""llm.c's memory-bound kernels, kernel by kernel as its code launches them (``--framework llmc``).

karpathy/llm.c (train_gpt2.cu and llmc/*.cuh, read at @f1e2ace, the llm.c rows' commit) issues one GPT-2
layer from C, with no Python, autograd or allocator between the kernels. Its GEMMs are cuBLASLt calls
with the bias fused into the epilogue (llmc/matmul.cuh L174-198: CUBLASLT_EPILOGUE_BIAS), its attention
cuDNN's fused SDPA (llmc/cudnn_att.cpp): those two are the step's matmul and attention terms
(core.time.step: the same cuBLAS-class GEMM shape model and the part's attention efficiency). What is
left, per layer and token (C = hidden size, bf16 = 2 B), is counted here from the kernels' loads and stores:

forward (gpt2_forward, train_gpt2.cu L685-751), 3 kernels, 32C + 16 B:
  * fused_residual_forward5 twice (llmc/layernorm.cuh L142-212): reads the residual and the GEMM output,
    writes the new residual and its LayerNorm (2 + 2 + 2 + 2 B per element) and mean, rstd (8 B): 8C + 8;
  * gelu_forward (llmc/gelu.cuh L13-25): GELU stays a kernel of its own (gelu_fusion = 0,
    train_gpt2.cu L1516), reads fch and writes fch_gelu, 4C each: 16C.
backward (gpt2_backward_and_reduce, L849-947), 13 kernels, 58C + 16 B:
  * matmul_backward's bias gradient (llmc/matmul.cuh L252-276, matmul_backward_bias_kernel9 reading the
    output gradient + reduce_add_sum_kernel) for fcproj, fc, attproj and qkv: 2C + 8C + 2C + 6C, 8 kernels;
  * gelu_backward_inplace (gelu.cuh L28-44): reads the 4C gradient and fch, writes the gradient: 24C;
  * layernorm_backward twice (layernorm.cuh L233-424, L492-504: a 4-byte flag memset + kernel10): reads dout,
    the input and dresidual, writes dresidual (8 B per element; the first pass's reads of the same row are
    the block's cached row) and mean, rstd: 8C + 8 each, 2 kernels each;
  * at -r 1 (gpuplan's selective) gelu_forward runs again first (L895-899): 16C, 1 kernel.
per micro-batch, where the LM head is: fused_classifier (llmc/fused_classifier.cuh L65-149, one kernel):
reads each token's bf16 logits and overwrites them with their gradient (the second read of the row hits
cache, L79 / L98-99): 4 B per padded vocabulary element; the final LayerNorm's backward (8C + 8, 2 kernels);
encoder_forward (encoder.cuh L164: wte + wpe rows read, encoded written, 6C) and the first
layernorm_forward (4C + 8), encoder_backward (dresidual read, wte and wpe gradient rows read and written:
2C + 8C, 2 kernels; its bucket sort runs on the host while the layers' backward kernels run, L186-228) and
dresidual's memset (2C, L828).

Host: every kernel is a C launch; gpuplan's launch cost per CUDA kernel (core.time.host: k = 3.25 us, from
the two probes on the lent GPU host) x ~30 launches a layer is ~0.1 ms against milliseconds of GPU work per
layer at the published shapes, so the GPU never waits on the host (exposed_host_seconds: max(0, host - GPU)).
Kernel time is core.time.memory_kernels' line (fixed seconds per kernel + bytes at 89% of HBM).
Units: bytes per token, kernels per layer and micro-batch, seconds.
"""

from __future__ import annotations

from gpuplan.core.bulk import maximum
from gpuplan.core.memory.llmc_memory import padded_vocab
from gpuplan.core.model.spec import ModelSpec
from gpuplan.core.time.host import reference_scale
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.titan_ops import OpClass

IMPLEMENTATION = "llmc"
"""StepSettings.implementation of --framework llmc (jobs.eager_stack sets it)."""
LAUNCHES_PER_LAYER = (4 + 1 + 3, 8 + 1 + 8 + 1 + 4)
"""(forward, backward) host launches of a layer: forward 4 cuBLASLt GEMMs, cuDNN's graph, 2 fused residual +
LayerNorm kernels and GELU (train_gpt2.cu L720-750); backward 8 GEMMs (dinp and dweight of 4 linears), cuDNN's
backward graph, 8 bias-gradient kernels, GELU's backward, 2 x (memset + LayerNorm backward) (L895-926)."""


def runs(settings) -> bool:
    """Whether the step is llm.c's (StepSettings.implementation)."""
    return getattr(settings, "implementation", None) == IMPLEMENTATION


def layer_classes(spec: ModelSpec, recompute: str) -> tuple[OpClass, ...]:
    """One layer's memory-bound kernels (module docstring): kernels per micro-batch, bytes per token."""
    c = float(spec.hidden_size)
    gelu_again = 16 * c * (recompute == "selective")  # llm.c -r 1
    return (OpClass("residual_layernorm", 2, 2 * (8 * c + 8), 4, 2 * (8 * c + 8)),
            OpClass("gelu", 1, 16 * c, 1 + (recompute == "selective"), 24 * c + gelu_again),
            OpClass("bias_grads", 0, 0.0, 8, (1 + 4 + 1 + 3) * 2 * c))


def elementwise_seconds_per_token(spec: ModelSpec, settings, tokens, hbm_bytes_per_s: float):
    """Forward + backward seconds per token of one layer's memory-bound kernels (0 when the step is not llm.c's)."""
    if not runs(settings):
        return 0.0
    return sum(memory_bound_seconds(k.bytes, k.kernels / tokens, hbm_bytes_per_s)
               for k in layer_classes(spec, settings.recompute))


def head_class(spec: ModelSpec) -> OpClass:
    """The per-micro-batch kernels outside the layers (module docstring): classifier, final LayerNorm's backward,
    encoder forward and backward, the first LayerNorm, dresidual's memset."""
    c = float(spec.hidden_size)
    return OpClass("classifier_encoder", 1 + 1 + 1, 2 * 2 * padded_vocab(spec.vocab_size) + 6 * c + 4 * c + 8,
                   2 + 2 + 1, 8 * c + 8 + 10 * c + 2 * c)


def microbatch_extra_seconds(spec: ModelSpec, settings, tokens, hbm_bytes_per_s: float, head, layers, layer_phases):
    """Seconds llm.c adds to a micro-batch beside its layers' GEMMs, attention and memory-bound kernels: head_class
    where the stage holds the LM head (``head``: 1 or 0, or arrays) and each layer's exposed host time
    (``layer_phases``: the layer's forward and backward GPU seconds per micro-batch); 0 when the step is not llm.c's."""
    if not runs(settings):
        return 0.0
    k = head_class(spec)
    return head * memory_bound_seconds(k.bytes * tokens, k.kernels, hbm_bytes_per_s) \
        + layers * exposed_host_seconds(*layer_phases)


def exposed_host_seconds(forward_gpu, backward_gpu):
    """Seconds a layer's GPU waits on llm.c's C host per micro-batch: max(0, launches x k - GPU) per phase."""
    k = reference_scale().launch
    forward, backward = (n * k for n in LAUNCHES_PER_LAYER)
    return maximum(forward - forward_gpu, 0.0) + maximum(backward - backward_gpu, 0.0)


def class_seconds(spec: ModelSpec, recompute: str, tokens, hbm_bytes_per_s: float) -> dict[str, float]:
    """Seconds per micro-batch of ``tokens`` per layer by op class, and the head's once under 'loss' (the
    classifier with the encoder and the final LayerNorm: explain lines, jobs.step_classes)."""
    out = {k.name: memory_bound_seconds(k.bytes * tokens, k.kernels, hbm_bytes_per_s)
           for k in layer_classes(spec, recompute)}
    head = head_class(spec)
    out["loss"] = memory_bound_seconds(head.bytes * tokens, head.kernels, hbm_bytes_per_s)
    return out
