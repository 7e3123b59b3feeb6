"""Where a CUDA training step dispatches other ATen ops than the CPU census would, and the census's way to
take the CUDA path (profile.op_census runs the step on the CPU under FakeTensorMode).

Three differences matter to a decoder LM's step:

- **Dropout.** A training dropout with 0 < p < 1 on a CUDA tensor is one fused kernel, ``native_dropout``
  (the output and a bool mask), and ``native_dropout_backward`` backward (torch
  aten/src/ATen/native/Dropout.cpp, ``is_fused_kernel_acceptable``: CUDA / XPU / lazy / PrivateUse1 inputs
  only); a CPU tensor takes the unfused ``bernoulli_``, ``div_``, ``mul`` path.
- **Dropout inside SDPA.** ``scaled_dot_product_attention`` with ``dropout_p > 0`` runs on CUDA in the flash
  or memory-efficient kernel, the dropout inside it (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:
  both take dropout; the backward regenerates the mask from the saved Philox state); the CPU falls back to
  the math path (bmm, softmax and dropout ops).
- **Autocast's fp32 list.** CUDA autocast runs the ops of ``AT_FORALL_FP32`` in fp32 (bf16 inputs cast up,
  an fp32 output) and gives those of ``AT_FORALL_FP32_SET_OPT_DTYPE`` an fp32 ``dtype`` (torch
  aten/src/ATen/autocast_mode.h, read at torch 2.13.0; registered for AutocastCUDA in autocast_mode.cpp);
  CPU autocast's lists hold only some of them (its fp32 list has the losses, ``prod``, ``cdist``: those are
  overridden with the same policy), not the elementwise math, the norms or the softmaxes, so on the CPU ``pow``
  of a bf16 tensor stays bf16. Only these two policies are mirrored: CUDA's promote list (addcmul, index_put,
  scatter_add, ...) and its extra low-precision ops (einsum, mv, addmv, ...) are not, none of them on a decoder
  LM's path in the profiled families. GPT-2's ``gelu_new`` (``pow(x, 3)`` of the bf16 ``c_fc`` output) then
  runs in fp32 on CUDA, every op after the ``pow`` too, by type promotion.

Models without dropout (p = 0: the Llama, Qwen and Pythia configurations) dispatch the same ops with and
without the first two; the third changes only ops on bf16 tensors under amp (transformers' norms and
softmaxes mostly upcast by hand already). torch is imported by the caller and passed in; the module leans on
torch's private ``Library._destroy``, ``_ExcludeDispatchKeyGuard`` and ``OpOverload._schema``, read at torch 2.13.0
(tests/test_gpt2_op_profile.py checks the policy applies and is removed). The patches are process-wide while a
census runs: one census at a time in a process.
"""

from __future__ import annotations

import contextlib
import warnings

CUDA_AUTOCAST_FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
    "native_layer_norm", "rms_norm", "group_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
    "pdist", "cdist", "renorm", "logsumexp",
)
"""torch 2.13.0 aten/src/ATen/autocast_mode.h AT_FORALL_FP32 (the norms' and upsampling overloads a decoder LM
does not call are left out): CUDA autocast casts their floating inputs to fp32 (CastPolicy::fp32)."""
CUDA_AUTOCAST_FP32_SET_OPT_DTYPE = (
    "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum", "sum", "sum.dim_IntList",
)
"""torch 2.13.0 aten/src/ATen/autocast_mode.h AT_FORALL_FP32_SET_OPT_DTYPE (the linalg norms left out): an
op whose ``dtype`` is not given gets dtype=float32 when its first input is a floating tensor
(CastPolicy::fp32_set_opt_dtype): it reads bf16 and writes fp32."""


@contextlib.contextmanager
def cuda_dropout_dispatch(torch):
    """Dropout as a CUDA step dispatches it (the module docstring's first two points)."""
    import torch.nn.functional as F

    plain_dropout, plain_sdpa = F.dropout, F.scaled_dot_product_attention

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and not inplace and input.numel():
            return torch.native_dropout(input, p, True)[0]
        return plain_dropout(input, p, training, inplace)

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, *args, **kwargs):
        return plain_sdpa(query, key, value, attn_mask, 0.0, *args, **kwargs)

    F.dropout, F.scaled_dot_product_attention = dropout, scaled_dot_product_attention
    try:
        yield
    finally:
        F.dropout, F.scaled_dot_product_attention = plain_dropout, plain_sdpa


def _overload(torch, name: str):
    base, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, base, None)
    return None if packet is None else getattr(packet, overload or "default", None)


@contextlib.contextmanager
def cuda_autocast_policy(torch):
    """Inside ``torch.autocast("cpu", torch.bfloat16)``: the ops of CUDA autocast's fp32 lists behave as on
    CUDA (kernels registered for the AutocastCPU key, removed on exit; the ops run below autocast, as
    autocast's own wrappers do, so the casts are dispatched and counted as on CUDA)."""
    from torch.utils._pytree import tree_map

    low = (torch.bfloat16, torch.float16)
    below_autocast = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

    def up(value):
        return value.float() if isinstance(value, torch.Tensor) and value.dtype in low else value

    def fp32_kernel(op):
        def kernel(*args, **kwargs):
            with torch._C._ExcludeDispatchKeyGuard(below_autocast):
                return op(*tree_map(up, args), **tree_map(up, kwargs))
        return kernel

    def set_dtype_kernel(op):
        names = [a.name for a in op._schema.arguments]

        def kernel(*args, **kwargs):
            bound = dict(zip(names, args)) | kwargs
            first = bound[names[0]]
            if bound.get("dtype") is None and isinstance(first, torch.Tensor) and first.is_floating_point() \
                    and first.dtype != torch.float64:
                bound["dtype"] = torch.float32
            with torch._C._ExcludeDispatchKeyGuard(below_autocast):
                return op(**bound)
        return kernel

    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "overriding a previously registered kernel" (CPU's own list)
            for names, make in ((CUDA_AUTOCAST_FP32, fp32_kernel),
                                (CUDA_AUTOCAST_FP32_SET_OPT_DTYPE, set_dtype_kernel)):
                for name in names:
                    op = _overload(torch, name)
                    if op is not None:
                        lib.impl(name, make(op), "AutocastCPU")
        yield
    finally:
        lib._destroy()
