"""torchtitan's memory-bound work per decoder layer, eager and under torch.compile.

What one Llama TransformerBlock of torchtitan dispatches besides its matmuls and SDPA, op class by
op class, per token of the micro-batch (bytes each kernel reads + writes), read from the code:

* eager, torchtitan 9dec370 (the Dec-2024 H100 benchmark, benchmarks/llama3_h100_202412_torchtitan.md):
  torchtitan/models/llama/model.py + models/norms.py: ``RMSNorm`` is Python
  (``self._norm(x.float()).type_as(x) * self.weight``, ``_norm = x * rsqrt(x.pow(2).mean(-1) + eps)``:
  8 kernels forward); ``apply_rotary_emb`` casts q and k to fp32 and multiplies them as complex64
  by ``freqs_cis`` (``view_as_complex(xq.float()...)``, ``.type_as``: 3 kernels each);
  ``repeat_kv`` materialises k and v at the query width (``expand(...).reshape``: one copy each
  when n_heads > n_kv_heads); ``w2(silu(w1 x) * w3 x)`` (2 kernels); two residual adds.
  torchtitan 0.3.0 / 2025 trees run ``nn.RMSNorm`` instead (norm='fused': aten._fused_rms_norm,
  one kernel forward, a row kernel + the weight-gradient reduction backward).
* backward: autograd's formulas for the same ops (torch/csrc/autograd/FunctionsManual.cpp
  pow_backward, mean backward = expand / N, to_copy backward = the reverse cast), plus the sums
  autograd makes where one tensor feeds several ops (the norm's output feeds wq, wk, wv: 2 adds;
  w1, w3: 1 add; each residual branch point: 1 add).
* q / k / v per release (TitanOps.fused_qkv, the fact core.frameworks.torchtitan_fuses_qkv /
  op_sac_fused_qkv keeps; StepSettings.op_sac_fused_qkv carries the same one): before 3396a4b37 three
  linears wq, wk, wv read the norm's output, so its gradient takes 2 adds (above). From 3396a4b37
  (torchtitan 0.3.0) one ``wqkv`` (models/common/attention.py@b5bcd76 FusedQKVLinear.forward L771-796,
  the same at 3396a4b37 L697-709): no adds, but its output is split and materialised,
  ``xq.reshape(...)`` (a copy: the q slice is strided), ``xk / xv .reshape(...).contiguous()`` (3
  copies forward, read + write q + 2 kv), and split's backward concatenates dq, dk, dv into one
  gradient (1 cat kernel, the same bytes); checked with autograd on the CPU (a TorchDispatchMode
  census, tests/test_titan_ops_qkv.py): three linears' backward dispatch 2 aten.add, the fused
  one 3 aten.clone forward and 1 aten.cat backward. Two linears fewer: 4 matmuls fewer a block.
* compiled (torchtitan apply_compile: ``torch.compile(transformer_block, fullgraph=True)`` per
  block, parallelize_llama.py at 9dec370, torchtitan/distributed/compile.py later): Inductor
  fuses every pointwise op and row reduction between two extern kernels into one Triton kernel, so a
  fused kernel moves only its inputs and outputs. Boundaries assumed: the matmuls (cuBLAS extern
  calls; torchtitan's default compile mode has no max-autotune GEMM templates that could take an
  epilogue), SDPA (the flash kernel is a fallback), the block's graph edges (FSDP2's hooks and
  collectives run between the compiled blocks), and a different reduction axis (the norm's
  weight gradient reduces over tokens: its own kernel + a small final sum). Saved intermediates
  are recomputed inside the backward kernels (AOTAutograd's min-cut partitioner recomputes
  pointwise ops), so a fused backward kernel re-reads the forward's inputs instead. One exception
  read from Inductor's generated code (scripts/titan_op_census.py --inductor): RoPE's complex64
  multiply is an ATen fallback, so its fp32 casts stay separate kernels.

The loss: ``cross_entropy(pred.float(), labels)`` over the vocabulary (train.py at 9dec370: the
compile of the loss is commented out, "compiling loss function causes CUDA errors"; from 2025
components/loss.py compiles it with the model).

Kernel time is core.time.memory_kernels' measured line (fixed time per kernel + bytes at 89% of
HBM). Host time: an eager op costs core.time.host's measured CPU seconds per dispatched op carried
to the GPU host; a compiled kernel costs one launch (Inductor's generated wrapper calls the
kernels without the dispatcher). Units: bytes per token, kernels per layer, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.core.bulk import maximum
from gpuplan.core.model.spec import ModelSpec, count_parameters
from gpuplan.core.time.host import cpu_seconds_per_op, reference_scale
from gpuplan.core.time.memory_kernels import memory_bound_seconds

BF16 = 2.0
FP32 = 4.0
NORM_MODES = ("python", "fused")


@dataclass(frozen=True)
class TitanOps:
    """How torchtitan runs the block's memory-bound work (StepSettings.titan_ops)."""

    compiled: bool
    """torch.compile per TransformerBlock (torchtitan --training.compile / [compile] enable)."""
    norm: str = "fused"
    """'python' (9dec370's RMSNorm in Python ops) or 'fused' (nn.RMSNorm, torchtitan 2025 on)."""
    loss_compiled: bool = False
    """The loss is compiled too (torchtitan components/loss.py from 2025; not at 9dec370)."""
    fused_qkv: bool = False
    """q, k, v as one wqkv linear (torchtitan 3396a4b37 on, 0.3.0) or three (before): the release's
    fact from core.frameworks (torchtitan_fuses_qkv), passed by whoever builds the op list."""
    repeats_kv: bool = True
    """Grouped-query k and v copied to the query's heads (repeat_kv, before ff0829c10) or handed to SDPA
    with enable_gqa (0.3.0; flash attention reads them grouped): core.frameworks.torchtitan_repeats_kv."""


@dataclass(frozen=True)
class OpClass:
    """One op class of a layer (or of the loss): kernels per micro-batch and bytes per token."""

    name: str
    forward_kernels: float
    forward_bytes: float
    backward_kernels: float
    backward_bytes: float

    @property
    def bytes(self) -> float:
        return self.forward_bytes + self.backward_bytes

    @property
    def kernels(self) -> float:
        return self.forward_kernels + self.backward_kernels


def from_framework_label(framework: str, *, fused_qkv: bool, repeats_kv: bool = True) -> TitanOps:
    """TitanOps of a published row's framework string: '+ torch.compile' compiles; the
    Dec-2024 tree (git 9dec370) has the Python RMSNorm and an eager loss; ``fused_qkv`` / ``repeats_kv``:
    the release's q/k/v and GQA (core.frameworks.torchtitan_fuses_qkv / torchtitan_repeats_kv of the string)."""
    compiled = "torch.compile" in framework
    old_tree = "9dec370" in framework
    return TitanOps(compiled=compiled, norm="python" if old_tree else "fused",
                    loss_compiled=compiled and not old_tree, fused_qkv=fused_qkv, repeats_kv=repeats_kv)


def _widths(spec: ModelSpec, repeats_kv: bool = True) -> tuple[float, float, float, float, bool]:
    """(h, q, kv, I, repeats): hidden, query width, key/value width, MLP width, k/v repeated (grouped-query
    heads where the release runs repeat_kv: TitanOps.repeats_kv)."""
    a = spec.attention
    q, kv = a.num_heads * a.head_dim, a.num_kv_heads * a.head_dim
    return (float(spec.hidden_size), float(q), float(kv), float(spec.mlp.intermediate_size),
            repeats_kv and a.num_heads > a.num_kv_heads)


def _eager_norm(h: float, norm: str) -> tuple[float, float, float, float]:
    """(fwd kernels, fwd bytes, bwd kernels, bwd bytes) of one RMSNorm per token, eager."""
    if norm == "fused":  # _fused_rms_norm: read x, write y (+ fp32 rstd); backward: row kernel
        # reads dy, x, writes dx; the weight gradient re-reads dy and x (token reduction)
        return 1, 2 * BF16 * h, 2, 3 * BF16 * h + 2 * BF16 * h
    # forward: x.float() 2h+4h, pow(2) 4h+4h, mean 4h, (+eps, rsqrt: per-token scalars), x*rsqrt
    # 4h+4h, type_as 4h+2h, *weight 2h+2h  ->  36h bytes, 8 kernels
    fwd = (BF16 + FP32) + 2 * FP32 + FP32 + 2 * FP32 + (FP32 + BF16) + 2 * BF16
    # backward: *weight: dy*w 2h+2h, dy*y 4h+2h, sum over tokens 2h; type_as^-1 2h+4h;
    # x*rsqrt: g*r 4h+4h, g*x 8h+4h, sum(-1) 4h; rsqrt^-1 (3 per-token kernels); mean^-1 writes 4h;
    # pow^-1 = g * 2 * x.pow(1): copy 4h+4h, *2 4h+4h, *g 8h+4h; sum of the two dx 8h+4h;
    # float()^-1 4h+2h  ->  92h bytes, 16 kernels
    bwd = (2 * BF16 + 3 * BF16 + BF16) + (BF16 + FP32) + (2 * FP32 + 3 * FP32 + FP32) + FP32 \
        + (2 * FP32 + 2 * FP32 + 3 * FP32) + 3 * FP32 + (FP32 + BF16)
    return 8, fwd * h, 16, bwd * h


def eager_layer_classes(spec: ModelSpec, norm: str = "python", fused_qkv: bool = False,
                        repeats_kv: bool = True) -> tuple[OpClass, ...]:
    """torchtitan's eager Llama block, per op class (module docstring); ``fused_qkv``: one wqkv;
    ``repeats_kv``: repeat_kv's copies (TitanOps.repeats_kv)."""
    if norm not in NORM_MODES:
        raise ValueError(f"norm must be one of {NORM_MODES}, not {norm!r}")
    h, q, kv, inter, repeats = _widths(spec, repeats_kv)
    nk_f, nb_f, nk_b, nb_b = _eager_norm(h, norm)
    # RoPE per tensor of width w: float() 2w+4w, complex mul 4w+4w (the complex64 freqs_cis,
    # 4 x head_dim B per token, broadcast over the heads: left out), type_as 4w+2w; backward the
    # same three: to_copy^-1 2w+4w, grad x conj(freqs) 4w+4w, float()^-1 4w+2w
    rope = lambda w: (BF16 + FP32) * w + 2 * FP32 * w + (FP32 + BF16) * w  # noqa: E731
    rep = (BF16 * kv + BF16 * q) * 2 if repeats else 0.0  # k and v: copy to the query width; bwd: sum back
    return (
        OpClass("norm", 2 * nk_f, 2 * nb_f, 2 * nk_b, 2 * nb_b),
        # backward: + freqs_cis.conj() materialised once per tensor (2 kernels, a (seq, head_dim/2)
        # complex64 table: bytes per sequence, left out)
        OpClass("rope", 6, rope(q) + rope(kv), 8, rope(q) + rope(kv)),
        OpClass("repeat_kv", 2 * repeats, rep, 2 * repeats, rep),
        # silu(w1 x) 2I+2I, * w3 x 4I+2I; backward: d(a*b) two muls 4I+2I each, silu_backward 4I+2I
        OpClass("swiglu", 2, 10 * inter, 3, 18 * inter),
        # two residual adds 4h+2h each; backward: autograd's sum at each branch point 4h+2h
        OpClass("residual", 2, 12 * h, 2, 12 * h),
        *_qkv_classes(h, q, kv, fused_qkv),
    )


def _qkv_classes(h: float, q: float, kv: float, fused_qkv: bool) -> tuple[OpClass, OpClass]:
    """The eager block's q/k/v-form classes (module docstring): backward sums of the linear-input
    gradients, an add 2h read + h written each (wq/wk/wv: 2, w1/w3: 1); one wqkv: only w1/w3's, and
    the split's copies (read + write q + 2kv; backward one cat of dq, dk, dv)."""
    if not fused_qkv:
        return OpClass("grad_sums", 0, 0.0, 3, 3 * 3 * BF16 * h), OpClass("qkv_split", 0, 0.0, 0, 0.0)
    split = 2 * BF16 * (q + 2 * kv)
    return OpClass("grad_sums", 0, 0.0, 1, 3 * BF16 * h), OpClass("qkv_split", 3, split, 1, split)


def compiled_layer_classes(spec: ModelSpec, fused_qkv: bool = False, repeats_kv: bool = True) -> tuple[OpClass, ...]:
    """torchtitan's block under torch.compile: one Inductor kernel per fused region (module docstring);
    ``fused_qkv``: one wqkv, so attention_norm's backward reads one linear-input gradient, not three
    (the split's copies ride in RoPE's cast kernels and its cat in the kernels that write dq, dk, dv:
    assumed from Inductor's pointwise fusion and cat lowering, not read on generated code); ``repeats_kv``
    False: RoPE's cast-back writes k at its own width and v is not copied."""
    h, q, kv, inter, repeats = _widths(spec, repeats_kv)
    # norms: attention_norm reads x, writes its output; ffn_norm is fused with the residual before
    # it (reads x and the wo output, writes h and its output). Backward per norm with m consumers:
    # a row kernel reads the m linear-input gradients, x and the residual gradient, writes dx;
    # the weight-gradient reduction re-reads the m gradients and x (+ a small final sum)
    norm_bwd = lambda m: (m * BF16 + BF16 + BF16) * h + BF16 * h + (m * BF16 + BF16) * h  # noqa: E731
    # RoPE's complex64 multiply is not fused: Inductor falls back to aten.mul for complex dtypes
    # (torch/_inductor/lowering.py: "Torchinductor does not support code generation for complex
    # operators"), so q and k are cast to fp32 by one kernel each (2w + 4w), multiplied by the
    # fallback (4w + 4w) and cast back by one kernel that also writes k and v repeated (q, k: 4w
    # read, 2 B out per element at the query width; v: 2kv read, 2q written); backward the mirror
    # (checked on Inductor's generated code for 9dec370's block, docs/step.md)
    rope = (BF16 + FP32) * (q + kv) + 2 * FP32 * (q + kv) + FP32 * (q + kv) + BF16 * (3 * q if repeats else q + kv) \
        + (BF16 * kv if repeats else 0.0)
    return (
        OpClass("norm", 2, 2 * BF16 * h + 4 * BF16 * h, 6, norm_bwd(1 if fused_qkv else 3) + norm_bwd(2)),
        # forward: 2 casts + 2 fallback multiplies + 1 cast-back; backward: the casts of dq and the
        # repeated dk (its sum inside), 2 multiplies, dv's sum, 2 casts back, freqs_cis.conj()
        OpClass("rope", 5, rope, 8, rope),
        OpClass("repeat_kv", 0, 0.0, 0, 0.0),  # inside RoPE's cast-back kernels
        # silu(a) * b: reads a, b, writes the product; backward reads dy, a, b, writes da, db
        OpClass("swiglu", 1, 3 * BF16 * inter, 1, 5 * BF16 * inter),
        # the block's last residual add (the first is fused with ffn_norm); its backward is the
        # ffn_norm row kernel's residual gradient
        OpClass("residual", 1, 3 * BF16 * h, 0, 0.0),
        OpClass("grad_sums", 0, 0.0, 0, 0.0),  # inside the norm kernels
    )


def loss_class(spec: ModelSpec, compiled: bool, tp=1) -> OpClass:
    """cross_entropy(pred.float(), labels) over the vocabulary (vocab-sharded under TP: loss_parallel)."""
    v = spec.vocab_size / tp
    if compiled:  # one kernel: read the bf16 logits, online log-sum-exp; backward: re-read, write d logits
        return OpClass("loss", 1, BF16 * v, 1, 2 * BF16 * v)
    # float() 2V+4V, log_softmax 4V+4V (nll_loss: a gather); backward: nll_loss_backward fill +
    # scatter 4V, log_softmax_backward 4V+4V+4V, float()^-1 4V+2V
    return OpClass("loss", 3, (BF16 + FP32 + 2 * FP32) * v, 4, (FP32 + 3 * FP32 + FP32 + BF16) * v)


def covers(spec: ModelSpec) -> bool:
    """The op list covers dense gated (Llama) blocks only, not MoE or ungated MLPs."""
    return spec.is_dense_gated


def layer_classes(spec: ModelSpec, ops: TitanOps) -> tuple[OpClass, ...]:
    if not covers(spec):
        raise ValueError(f"{spec.name}: torchtitan's op list covers dense gated (Llama) blocks only")
    if ops.compiled:
        return compiled_layer_classes(spec, ops.fused_qkv, ops.repeats_kv)
    return eager_layer_classes(spec, ops.norm, ops.fused_qkv, ops.repeats_kv)


def elementwise_seconds_per_token(spec: ModelSpec, ops: TitanOps, tokens, hbm_bytes_per_s: float, tp=1):
    """(forward, backward) seconds per token of one layer's memory-bound kernels: each class's
    bytes / tp (sequence-parallel norms and residuals, head- and width-sharded RoPE and SwiGLU)
    at core.time.memory_kernels' measured rate, its kernels' fixed time spread over the tokens."""
    classes = layer_classes(spec, ops)
    fwd = sum(memory_bound_seconds(c.forward_bytes / tp, c.forward_kernels / tokens, hbm_bytes_per_s)
              for c in classes)
    bwd = sum(memory_bound_seconds(c.backward_bytes / tp, c.backward_kernels / tokens, hbm_bytes_per_s)
              for c in classes)
    return fwd, bwd


def loss_seconds_per_token(spec: ModelSpec, ops: TitanOps, tokens, hbm_bytes_per_s: float, tp=1):
    """Forward + backward seconds per token of the loss over the vocabulary (the last stage only)."""
    c = loss_class(spec, ops.loss_compiled, tp)
    return memory_bound_seconds(c.bytes, c.kernels / tokens, hbm_bytes_per_s)


# Ops an eager block dispatches beside its memory-bound kernels, counted from 9dec370's
# model.py (not under fake tensors): forward, 7 nn.Linear on 3-D inputs (view, t, mm,
# _unsafe_view: 28), SDPA 1, views (q/k/v view 3, RoPE's reshape / view_as_complex /
# view_as_real / flatten 8 + the freqs slice and view 2, repeat_kv unsqueeze / expand / reshape 6,
# transposes 4, output view 1: 24); backward, each linear's two mm, two t and its views (6 each:
# 42), SDPA's backward 1 and the views' backward (24).
EAGER_OTHER_OPS_FORWARD = 28 + 1 + 24
EAGER_OTHER_OPS_BACKWARD = 42 + 1 + 24
# Kernels a block launches beside its memory-bound ones, eager or compiled: 7 matmuls forward,
# 14 backward (input and weight gradients), SDPA's forward and backward kernel.
EXTERN_KERNELS_FORWARD = 7 + 1
EXTERN_KERNELS_BACKWARD = 14 + 1
# One wqkv instead of wq, wk, wv (TitanOps.fused_qkv): two linears fewer (forward 2 x 4 ops and 2 mm, backward
# 2 x 6 ops and 4 mm); the three q/k/v views become the split's view, split_with_sizes, _unsafe_view and two
# views forward (5) and four view backwards (the autograd census of tests/test_titan_ops_qkv.py).
FUSED_QKV_OTHER_OPS = (-2 * 4 - 3 + 5, -2 * 6 - 3 + 4)
FUSED_QKV_EXTERN_KERNELS = (-2, -4)
REPEAT_KV_VIEW_OPS = 6
"""repeat_kv's unsqueeze / expand / reshape for k and v (in the 24 views above, forward and backward alike):
gone where k and v are not repeated (MHA: repeat_kv returns x at n_rep 1; 0.3.0: enable_gqa)."""


def _other_ops_and_extern_kernels(ops: TitanOps, repeats: bool) -> tuple[float, float, float, float]:
    """(forward other ops, backward other ops, forward extern kernels, backward extern kernels) of a block;
    ``repeats``: k and v copied by repeat_kv."""
    d_ops, d_kernels = (FUSED_QKV_OTHER_OPS, FUSED_QKV_EXTERN_KERNELS) if ops.fused_qkv else ((0, 0), (0, 0))
    views = 0 if repeats else REPEAT_KV_VIEW_OPS
    return (EAGER_OTHER_OPS_FORWARD + d_ops[0] - views, EAGER_OTHER_OPS_BACKWARD + d_ops[1] - views,
            EXTERN_KERNELS_FORWARD + d_kernels[0], EXTERN_KERNELS_BACKWARD + d_kernels[1])


def host_seconds_per_layer(spec: ModelSpec, ops: TitanOps, sac: bool) -> tuple[float, float]:
    """(forward, backward) host seconds one block takes to issue on the GPU machine's host
    (core.time.host): eager, dispatched ops x the measured CPU cost per op (under op-level SAC the
    dispatch mode's), carried over with r and k; compiled, one launch (k) per kernel."""
    classes = layer_classes(spec, ops)
    kf = sum(c.forward_kernels for c in classes)
    kb = sum(c.backward_kernels for c in classes)
    scale = reference_scale()
    other_f, other_b, extern_f, extern_b = _other_ops_and_extern_kernels(ops, _widths(spec, ops.repeats_kv)[4])
    if ops.compiled:
        return (kf + extern_f) * scale.launch, (kb + extern_b) * scale.launch
    nf, nb = kf + other_f, kb + other_b
    return (scale.seconds(nf * cpu_seconds_per_op("forward", sac), kf + extern_f),
            scale.seconds(nb * cpu_seconds_per_op("backward", sac), kb + extern_b))


def exposed_host_seconds(spec: ModelSpec, ops: TitanOps, forward_gpu, backward_gpu, sac: bool):
    """Seconds a layer's GPU waits for its host per micro-batch: max(0, host - GPU) per phase
    (core.time.host: the host runs ahead while kernels are long)."""
    host_f, host_b = host_seconds_per_layer(spec, ops, sac)
    return maximum(host_f - forward_gpu, 0.0) + maximum(host_b - backward_gpu, 0.0)


def class_seconds(spec: ModelSpec, ops: TitanOps, tokens, hbm_bytes_per_s: float, tp=1) -> dict[str, float]:
    """Seconds per micro-batch of ``tokens`` per layer by op class (forward + backward), and the
    loss: the breakdown `plan --explain` can show."""
    out = {c.name: memory_bound_seconds(c.bytes / tp * tokens, c.kernels, hbm_bytes_per_s)
           for c in layer_classes(spec, ops) if c.kernels}
    loss = loss_class(spec, ops.loss_compiled, tp)
    out["loss"] = memory_bound_seconds(loss.bytes * tokens, loss.kernels, hbm_bytes_per_s)
    return out


def microbatch_extra_seconds(spec: ModelSpec, settings, tokens, hbm_bytes_per_s: float, tp, layer_phases,
                             layers, head) -> float:
    """What torchtitan's step adds to a micro-batch beside its layers' kernels: the loss where the
    stage holds the LM head, and each layer's exposed host time (``layer_phases``: the layer's
    forward and backward GPU seconds per micro-batch); 0 when settings.titan_ops is None."""
    ops = settings.titan_ops
    if ops is None:
        return 0.0
    sac = settings.recompute == "selective"  # torchtitan's op-level SAC issues through a dispatch mode
    host = exposed_host_seconds(spec, ops, layer_phases[0], layer_phases[1], sac)
    loss = tokens * loss_seconds_per_token(spec, ops, tokens, hbm_bytes_per_s, tp)
    return layers * host + head * loss


# FSDP2's copies around its collectives that run on the compute stream (torch 2.13,
# torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py; scripts/fsdp_copy_census.py lists them on
# CPU): foreach_all_gather_copy_out's split_with_sizes_copy reads the bf16 all-gather output and
# writes the unsharded bf16 parameters (2 + 2 B per unsharded parameter, every all-gather, on the
# default stream after wait_event); foreach_reduce's chunk_cat reads the bf16 unsharded gradient and
# writes the fp32 reduce-scatter input (2 + 4 B, MixedPrecisionPolicy reduce_dtype fp32), on the
# current stream before reduce_scatter_stream.wait_stream. Not charged: the copy-in (the fp32 -> bf16
# cast of the shard and the _foreach_copy_ into the all-gather input, (4 + 2 + 2 + 2) / shard B) runs
# on all_gather_copy_in_stream (get_all_gather_streams, _fsdp_param_group.py) and the gradient
# accumulation += on the reduce-scatter stream, both beside compute; NCCL averages fp32 (ReduceOp.AVG:
# no div_ kernel).
FSDP_COPY_OUT_BYTES = BF16 + BF16
# torchtitan's ZeRO-2 is fully_shard(reshard_after_forward=False) (the torchtitan profile's zero2_is_fsdp2_no_reshard,
# which tests/test_w2_titan_zero2_copies.py holds True; torchtitan/distributed/fsdp.py@b5bcd76:112-135, 236-256): reshard()
# returns in the forward, pre_backward's unshard is a no-op on the unsharded group (``if self.is_unsharded: return``):
# no backward copy-out; post_backward's foreach_reduce every micro-batch at pp 1, then reshard_after_backward
# (_fsdp_param_group.py@v2.13.0 L372-376, 499-509, 576-586, 637-638; the same at pytorch 002a76f).
FSDP_GRAD_COPY_IN_BYTES = BF16 + FP32
# Under a pipeline (torch.distributed.pipelining, torch 2.13 stage.py backward_maybe_with_nosync L844-848:
# set_requires_gradient_sync(False) for every micro-batch's backward; perform_reduce_grad L1164-1191 calls
# each group's post_backward once after the stage's last backward; earlier releases' stage.py did the same in
# its last_backward branch) FSDP2's post_backward keeps each unsharded gradient in the reduce dtype
# (_fsdp_param_group.py post_backward L603-612; _fsdp_param.py to_accumulated_grad_if_needed L802-813:
# grad.to(fp32), 2 + 4 B; accumulate_unsharded_grad_if_needed L815-821: fp32 += bf16, 4 + 2 + 4 B, every
# later micro-batch), one kernel per parameter tensor on the compute stream (post_backward runs in the
# autograd hook), and the step's one reduction copies the fp32 accumulator into the reduce-scatter input
# (chunk_cat, 4 + 4 B). torchtitan 9dec370 config_manager.py: mixed_precision_reduce "float32" is the only
# choice.
FSDP_PP_FIRST_ACCUMULATION_BYTES = BF16 + FP32
FSDP_PP_ACCUMULATION_BYTES = FP32 + BF16 + FP32
FSDP_PP_GRAD_COPY_IN_BYTES = FP32 + FP32
TITAN_BLOCK_PARAMETER_TENSORS = 9
"""Parameter tensors of torchtitan's Llama TransformerBlock (models/llama/model.py at 9dec370: wq, wk, wv,
wo, w1, w2, w3, attention_norm, ffn_norm): one accumulation kernel each per micro-batch (the stage's root
tensors, at most tok_embeddings / norm / output, are left out)."""


def fsdp_copy_seconds(spec: ModelSpec, hbm_bytes_per_s: float, *, tp, pp, shard, zero, micro_batches):
    """Seconds a step's compute stream spends in FSDP2's copy-out and gradient copy-in (above), per
    GPU: each unit gathered before its forward and all blocks but the last again before their
    backward (torchtitan 9dec370 parallelize_llama.py apply_fsdp: reshard_after_forward =
    layer_id < n_layers - 1; the root, embeddings + norm + output, not resharded), every gradient
    reduced, every micro-batch; under a pipeline torchtitan keeps the stage unsharded (reshard False):
    one gather and one reduction a step, and the gradients accumulate unsharded in fp32
    (pipeline_accumulation_seconds). ZeRO-2 (torchtitan's, kept gathered: above): no backward re-gather, else as ZeRO-3.
    0 without FSDP (zero < 2 or a shard group of 1). One kernel per unit and copy at core.time.memory_kernels'
    line. Scalars or arrays."""
    import numpy as np

    counts = count_parameters(spec)
    stage = counts.total / (tp * pp)
    layer = counts.non_embedding / spec.num_layers / tp
    units = spec.num_layers / pp + 1
    once = memory_bound_seconds((FSDP_COPY_OUT_BYTES + FSDP_GRAD_COPY_IN_BYTES) * stage, 2 * units,
                                hbm_bytes_per_s)
    regather = memory_bound_seconds(FSDP_COPY_OUT_BYTES * (spec.num_layers - 1) * layer, spec.num_layers - 1,
                                    hbm_bytes_per_s)
    staged = once + pipeline_accumulation_seconds(spec, hbm_bytes_per_s, stage, pp, micro_batches)
    kept = np.asarray(zero) == 2  # only torchtitan's steps call this (StepSettings.titan_ops)
    per_step = np.where(np.asarray(pp) == 1, micro_batches * (once + np.where(kept, 0.0, regather)), staged)
    out = per_step * (((np.asarray(zero) >= 3) | kept) & (np.asarray(shard) > 1))
    return float(out) if np.ndim(out) == 0 else out


def pipeline_accumulation_seconds(spec: ModelSpec, hbm_bytes_per_s: float, stage, pp, micro_batches):
    """Seconds a pipeline stage's FSDP2 groups spend keeping their unsharded gradients in fp32 across a
    step's ``micro_batches`` (above): the first micro-batch's cast, each later one's +=, and the extra
    2 B / parameter of the fp32 reduce-scatter copy-in; ``stage`` parameters per GPU, one kernel per
    block parameter tensor and micro-batch. Scalars or arrays."""
    import numpy as np

    m = np.maximum(np.asarray(micro_batches, dtype=float), 1.0)
    nbytes = stage * (FSDP_PP_FIRST_ACCUMULATION_BYTES + (m - 1) * FSDP_PP_ACCUMULATION_BYTES
                      + FSDP_PP_GRAD_COPY_IN_BYTES - FSDP_GRAD_COPY_IN_BYTES)
    kernels = m * TITAN_BLOCK_PARAMETER_TENSORS * spec.num_layers / np.asarray(pp, dtype=float)
    return memory_bound_seconds(nbytes, kernels, hbm_bytes_per_s)


def default_ops(spec: ModelSpec, compiled: bool = False, *, fused_qkv: bool, repeats_kv: bool) -> TitanOps | None:
    """`--framework torchtitan`'s op list: eager by default (torchtitan's CompileConfig.enable
    defaults to False, torchtitan/config/configs.py at b5bcd76; 9dec370's ``training.compile`` too);
    ``compiled`` (--compile): every block and the loss compiled (CompileConfig.components defaults
    to ["model", "loss"] at b5bcd76). nn.RMSNorm either way; None (the fused model) for blocks the
    list does not cover (MoE, ungated MLPs). ``fused_qkv``: the release's q/k/v (core.frameworks.op_sac_fused_qkv,
    the value StepSettings.op_sac_fused_qkv takes: one wqkv at 0.3.0); ``repeats_kv``: its GQA
    (core.frameworks.torchtitan_repeats_kv: none at 0.3.0)."""
    if not covers(spec):
        return None
    return TitanOps(compiled=compiled, norm="fused", loss_compiled=compiled, fused_qkv=fused_qkv,
                    repeats_kv=repeats_kv)
