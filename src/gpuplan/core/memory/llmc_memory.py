"""llm.c's device memory, counted as its own code allocates it (``--framework llmc``).

karpathy/llm.c (train_gpt2.cu and llmc/*, read at @f1e2ace, the commit the llm.c rows of
catalog/reference/training_runs.yaml cite) allocates every buffer once, with cudaMalloc, before the
first step, and frees nothing until exit: there is no caching allocator, no per-op temporaries and no
second peak. What it allocates (BF16 build, PRECISION ?= BF16, Makefile L233; cuDNN attention, USE_CUDNN=1):

* parameters, bf16, one block (train_gpt2.cu L118-168 fill_in_parameter_sizes / malloc_and_point_parameters):
  Vp·C + maxT·C + L·(12C² + 13C) + 2C, with Vp the vocabulary padded to a multiple of 128 (L90; 50,304 for
  GPT-2's 50,257, L583) and maxT the position table's rows;
* gradients, bf16, the same size, unsharded at ZeRO-1 (gpt2_allocate_state L370: malloc_and_point_parameters);
* AdamW m and v and the fp32 master weights, 4 B each per parameter of the rank's shard (L397-409:
  shard_num_parameters = params / ranks at ZeRO-1, llmc/zero.cuh L558-573, where the count divides evenly;
  else ZeRO is switched off and the shard is every parameter);
* the activations (fill_in_activation_sizes, L219-254), per token: each layer keeps ln1 (C, not at -r 2),
  atty (C), residual2 (C), ln2 (C, not at -r 2), fch (4C), fch_gelu (4C at -r 0; one layer's 4C buffer
  reused at -r 1 and 2), residual3 (C) and qkvr (3C) in bf16, and ln1/ln2 mean and rstd (4 floats) plus
  cuDNN's softmax statistics (NH floats; without cuDNN its own attention keeps NH·T bf16 scores); once:
  encoded (C), lnf (C), lnf mean/rstd and losses (3 floats), ``output`` (max(3C, NH·T, Vp) bf16: the logits,
  overwritten in place by their gradient by the fused classifier, llmc/fused_classifier.cuh L65-112 - no fp32
  logits or softmax is kept), scratch_bt4c (4C) and scratch_btc (C);
* inputs and targets, int32 (L380-381), the cuBLASLt workspace, 32 MiB (llmc/cublas_common.h L28), and
  cuDNN's workspace, grown to what its graphs ask "up to 256MiB" (llmc/cudnn_att.cpp L23, L209): counted
  at that bound.

gpuplan's recompute modes map to llm.c's -r flag (train_gpt2.cu L1406 "0|1|2 = none,gelu,gelu+ln"): none
= -r 0, selective = -r 1 (GELU recomputed in backward, L895-899); llm.c has no whole-layer recompute. Its
default is -r 1 (L1449 ``int recompute = 1;``, L1406 "(default = 1)"), which `gpuplan memory` takes where
--recompute is not given (core.frameworks' default_recompute; the planner doors choose -r 0 or 1 themselves).
Units: bytes, elements. Layout degrees may be numpy arrays (the planner).
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.model.spec import ModelSpec

RECOMPUTE_SOURCE = ("llm.c's -r: none = -r 0, selective = -r 1 (the GELU output recomputed in backward); "
                    "not given: its default -r 1 (train_gpt2.cu@f1e2ace L1406, L1449)")
"""The recompute assumption's source under --framework llmc (jobs.memory.assumptions)."""
CUDAMALLOC_ONCE = ("= allocated: llm.c cudaMallocs each buffer once before the first step "
                   "(train_gpt2.cu@f1e2ace L155, L265, L370-408)")
"""The reserved peak's note where there is no caching allocator (FrameworkProfile.caching_allocator False)."""


def peak_labels(caching_allocator: bool) -> tuple[str, str]:
    """The reports' allocated and reserved peak labels: PyTorch's tensors and caching allocator, or (llm.c)
    buffers each allocated once with cudaMalloc, so reserved = allocated."""
    if caching_allocator:
        return "allocated peak (PyTorch tensors)", "reserved peak (caching allocator)"
    return "allocated peak (llm.c's cudaMalloc buffers)", "reserved peak (no caching allocator)"

BF16, FP32, INT32 = 2, 4, 4
VOCAB_PAD = 128  # train_gpt2.cu L90: "padded to e.g. %128==0"
CUBLASLT_WORKSPACE_BYTES = 32 * 1024 * 1024  # llmc/cublas_common.h@f1e2ace L28
CUDNN_WORKSPACE_BYTES = 256 * 1024 * 1024  # llmc/cudnn_att.cpp@f1e2ace L23, L209: "up to 256MiB"
LLMC_RECOMPUTE_FLAG = {"none": 0, "selective": 1}
"""gpuplan's --recompute -> llm.c's -r (train_gpt2.cu@f1e2ace L1406, L1449)."""


def padded_vocab(vocab_size: int) -> int:
    """llm.c's padded vocabulary Vp: the vocabulary rounded up to a multiple of 128 (50,257 -> 50,304)."""
    return -(-vocab_size // VOCAB_PAD) * VOCAB_PAD


def parameter_count(spec: ModelSpec) -> int:
    """llm.c's num_parameters: fill_in_parameter_sizes' 16 tensors (train_gpt2.cu@f1e2ace L118-139)."""
    c, layers = spec.hidden_size, spec.num_layers
    return padded_vocab(spec.vocab_size) * c + spec.learned_positions * c + layers * (12 * c * c + 13 * c) + 2 * c


def activation_bytes(spec: ModelSpec, micro_batch, seq_len: int, recompute: int, cudnn: bool = True):
    """(per-layer tensors of all layers, the rest) of llm.c's activation block, bytes, for B = ``micro_batch``."""
    c, heads, layers = spec.hidden_size, spec.attention.num_heads, spec.num_layers
    tokens = np.asarray(micro_batch) * seq_len
    # ln1, atty, residual2, ln2, fch, fch_gelu, residual3, qkvr (bf16); ln1/ln2 mean, rstd; attention's kept state
    per_layer = BF16 * (c * (recompute < 2) + c + c + c * (recompute < 2) + 4 * c + 4 * c * (recompute < 1) + c + 3 * c)
    per_layer = per_layer + FP32 * 4 + (FP32 * heads if cudnn else BF16 * heads * seq_len)
    # encoded, fch_gelu's one buffer (-r >= 1), lnf, output, scratch_bt4c, scratch_btc (bf16); lnf mean, rstd, losses
    once = BF16 * (c + 4 * c * (recompute >= 1) + c + max(3 * c, heads * seq_len, padded_vocab(spec.vocab_size))
                   + 4 * c + c) + FP32 * 3
    return layers * per_layer * tokens, once * tokens


def stage_memory(spec: ModelSpec, layout, seq_len: int, recompute: str, cudnn: bool = True) -> dict:
    """llm.c's allocations on one GPU by gpuplan's categories (core.memory.training.StageMemory's fields):
    every buffer is live from the first step on, so both candidate peaks are the whole sum."""
    params = parameter_count(spec)
    dp = np.asarray(layout.dp * layout.cp)
    sharded = np.logical_and(np.asarray(layout.zero) == 1, params % dp == 0)  # zero.cuh L565-573
    shard = np.where(sharded, params / dp, params)
    layers, once = activation_bytes(spec, layout.micro_batch, seq_len, LLMC_RECOMPUTE_FLAG[recompute], cudnn)
    once = once + 2 * INT32 * np.asarray(layout.micro_batch) * seq_len  # inputs, targets
    workspaces = CUBLASLT_WORKSPACE_BYTES + CUDNN_WORKSPACE_BYTES * cudnn
    weights, grads, master, optimizer = BF16 * params, BF16 * params, FP32 * shard, 2 * FP32 * shard
    total = weights + grads + master + optimizer + layers + once + workspaces
    return dict(weights=weights, grads_backward=grads, grads_step=grads, master=master, optimizer=optimizer,
                activations=layers, outside_layers=once, temporaries_backward=workspaces, temporaries_step=workspaces,
                fsdp_working_set=0.0, backward_start=total, optimizer_step=total)


LLMC_WIDTH_MULTIPLE = 64
"""llm.c's bias-gradient kernel takes each linear's output width in warps of 64 at BF16: "OC must be a multiple of
64!" (llmc/matmul.cuh@f1e2ace L253, matmul_backward); GPT-2's widths are 3C, C and 4C, so C must be a multiple of 64."""


def gpt2_shape_refusal(spec: ModelSpec) -> str | None:
    """Why llm.c's train_gpt2.cu cannot train ``spec`` (None: it can). Its model is GPT-2's block and nothing else
    (train_gpt2.cu@f1e2ace L87-139, L685-751): LayerNorm with biases, multi-head attention with a head per query
    (qkvw is 3C x C) and biases on every linear (qkvb, attprojb, fcb, fcprojb), a 4C GELU MLP, attention then MLP
    in sequence, dense causal attention, a learned position table and the token embedding tied to the LM head;
    its bias-gradient kernel needs C a multiple of 64 (LLMC_WIDTH_MULTIPLE)."""
    a, mlp = spec.attention, spec.mlp
    norm = f"{spec.norm}{'' if spec.norm_bias else ' without bias'}"
    biasless = [name for name, has in (("q/k/v", a.qkv_bias), ("attention output", a.out_bias), ("MLP", mlp.bias))
                if not has]
    windowed = spec.sliding_window is not None and (not spec.layer_types or "sliding" in spec.layer_types)
    softcap = spec.attn_logit_softcap is not None or spec.final_logit_softcap is not None
    checks = (("a mixture of experts", spec.moe is not None),
              (f"{norm} (llm.c: LayerNorm with bias)", spec.norm != "layernorm" or not spec.norm_bias
               or spec.gemma_norm),
              (f"no {', '.join(biasless)} bias (llm.c: a bias on every linear)", bool(biasless)),
              (f"a {'gated ' if mlp.gated else ''}{mlp.activation} MLP of {mlp.intermediate_size} (llm.c: GELU, 4C)",
               mlp.gated or not mlp.activation.startswith("gelu") or mlp.intermediate_size != 4 * spec.hidden_size),
              (f"{a.num_kv_heads} K/V heads for {a.num_heads} query heads (llm.c: one each)",
               a.num_kv_heads != a.num_heads or a.num_heads * a.qk_head_dim != spec.hidden_size),
              ("a parallel residual (llm.c: attention, then the MLP)", spec.parallel_residual),
              ("sliding-window attention (llm.c: dense causal)", windowed),
              (f"QK norm {a.qk_norm} (llm.c: none)", a.qk_norm != "none"),
              ("logit softcaps (llm.c: none)", softcap),
              (f"width {spec.hidden_size}, not a multiple of {LLMC_WIDTH_MULTIPLE} (llmc/matmul.cuh L253: "
               f"'OC must be a multiple of {LLMC_WIDTH_MULTIPLE}')", spec.hidden_size % LLMC_WIDTH_MULTIPLE != 0),
              ("no learned position table (llm.c: wpe)", not spec.learned_positions),
              ("an LM head of its own (llm.c ties it to wte)", not spec.tie_embeddings))
    found = [what for what, bad in checks if bad]
    if not found:
        return None
    return (f"--framework llmc trains GPT-2 blocks only (karpathy/llm.c train_gpt2.cu); {spec.name} has "
            f"{'; '.join(found)}: give a GPT-2 model (gpt2, gpt2-medium, gpt2-large, gpt2-xl) or another --framework")
