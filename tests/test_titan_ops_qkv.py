"""torchtitan's op list per q/k/v form (core/time/titan_ops.py, TitanOps.fused_qkv): three linears wq, wk, wv
(before 3396a4b37) sum their input gradients (2 adds); one wqkv (0.3.0) does not, but its split copies q, k, v
forward and concatenates their gradients backward (models/common/attention.py@b5bcd76 FusedQKVLinear.forward).
Bytes and kernels worked by hand; the autograd fact checked on the CPU."""

import pytest
from helpers import titan_layer_totals

from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
from gpuplan.core.time import titan_ops as T

# h 64, 4 query heads of 16 (q 64), 2 key/value heads (kv 32), SwiGLU width 128
SPEC = ModelSpec("t", hidden_size=64, num_layers=2, vocab_size=1000,
                 attention=AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=16), mlp=MLPSpec(128))
# Llama-3-8B's widths: h 4,096, q 4,096, kv 1,024 (8 of 32 heads), I 14,336 = 3.5 h
LLAMA3_8B = ModelSpec("l", hidden_size=4096, num_layers=32, vocab_size=128256,
                      attention=AttentionSpec(num_heads=32, num_kv_heads=8, head_dim=128), mlp=MLPSpec(14336))


def test_fused_qkv_drops_the_two_sums_and_adds_the_split_copies():
    # three: grad_sums 3 adds x (2h read + h written) x 2 B = 18h = 1,152 B; one wqkv: w1/w3's add only,
    # 6h = 384 B, and the split: 3 copies of q + 2kv = 128 elements (2 B read + 2 B written = 512 B), its
    # backward one cat of the same 512 B
    three = {c.name: c for c in T.eager_layer_classes(SPEC, "python", fused_qkv=False)}
    one = {c.name: c for c in T.eager_layer_classes(SPEC, "python", fused_qkv=True)}
    assert (three["grad_sums"].backward_kernels, three["grad_sums"].backward_bytes) == (3, 1152)
    assert (one["grad_sums"].backward_kernels, one["grad_sums"].backward_bytes) == (1, 384)
    assert three["qkv_split"].kernels == 0 and three["qkv_split"].bytes == 0
    split = one["qkv_split"]
    assert (split.forward_kernels, split.forward_bytes) == (3, 512)
    assert (split.backward_kernels, split.backward_bytes) == (1, 512)
    f3 = titan_layer_totals(SPEC, T.TitanOps(False, "python"))
    b3 = titan_layer_totals(SPEC, T.TitanOps(False, "python", fused_qkv=True))
    assert (b3[0] - f3[0], b3[1] - f3[1], b3[2] - f3[2], b3[3] - f3[3]) == (3, 512, -1, -256)


def test_llama3_8b_eager_layer_moves_228h_either_way():
    # fused nn.RMSNorm, per token (h = 4,096): norms 8h + 20h, RoPE 25h + 25h (20 B x (q + kv)), repeat_kv
    # 5h + 5h, SwiGLU 35h + 63h, residual 12h + 12h, grad_sums 18h = 228h in 14 + 22 kernels. One wqkv: sums
    # 6h (1 kernel) and the split 4 B x (q + 2kv) = 6h each way (3 + 1 kernels): 228h in 17 + 21 kernels
    h = 4096
    three = titan_layer_totals(LLAMA3_8B, T.TitanOps(compiled=False, norm="fused"))
    one = titan_layer_totals(LLAMA3_8B, T.TitanOps(compiled=False, norm="fused", fused_qkv=True))
    assert (three[0], three[2]) == (14, 22) and three[1] + three[3] == pytest.approx(228 * h, rel=1e-12)
    assert (one[0], one[2]) == (17, 21) and one[1] + one[3] == pytest.approx(228 * h, rel=1e-12)


def test_compiled_norm_reads_one_linear_gradient_with_wqkv():
    # attention_norm's backward per token with m consumers: (2m + 4)h + 2h + (2m + 2)h = (4m + 8)h:
    # m = 3 -> 20h, m = 1 -> 12h: 8h = 512 B less (h 64)
    three = {c.name: c for c in T.compiled_layer_classes(SPEC, fused_qkv=False)}
    one = {c.name: c for c in T.compiled_layer_classes(SPEC, fused_qkv=True)}
    assert three["norm"].backward_bytes - one["norm"].backward_bytes == 512
    assert three["norm"].kernels == one["norm"].kernels


def test_fused_qkv_host_counts():
    # eager forward, Python RMSNorm: memory kernels 28 + 3 (split); other ops 53 - 2 x 4 (two linears) - 3
    # (q/k/v views) + 5 (view, split_with_sizes, _unsafe_view, 2 views) = 47; extern kernels 8 - 2 = 6
    from gpuplan.core.time.host import cpu_seconds_per_op, reference_scale

    scale = reference_scale()
    ops = T.TitanOps(compiled=False, norm="python", fused_qkv=True)
    host_f, host_b = T.host_seconds_per_layer(SPEC, ops, sac=True)
    assert host_f == pytest.approx(scale.seconds((31 + 47) * cpu_seconds_per_op("forward", True), 31 + 6), rel=1e-12)
    # backward: memory kernels 50 - 2 + 1 = 49 (three: 16 x 2 norms + 8 + 2 + 3 + 2 + 3 = 50); other ops
    # 67 - 2 x 6 - 3 + 4 = 56; extern 15 - 4 = 11
    assert host_b == pytest.approx(scale.seconds((49 + 56) * cpu_seconds_per_op("backward", True), 49 + 11),
                                   rel=1e-12)


def test_the_release_decides_the_form():
    from gpuplan.core.frameworks import torchtitan_fuses_qkv, torchtitan_repeats_kv
    from gpuplan.jobs.validation.published_throughput import published_throughput_rows

    labels = {r["framework"] for r in published_throughput_rows() if r["family"].startswith("torchtitan")}
    assert labels  # every published row ran before 3396a4b37: three linears, the two sums kept
    assert not any(T.from_framework_label(x, fused_qkv=torchtitan_fuses_qkv(x)).fused_qkv for x in labels)
    assert all(torchtitan_repeats_kv(x) for x in labels)  # and repeat_kv's copies
    # the plan's release (0.3.0): one wqkv, the same fact the op-SAC memory takes
    from gpuplan.catalog import load_model
    from gpuplan.jobs.eager_stack import eager_step_settings

    class Inputs:
        framework, compile = "torchtitan", False

    ops = eager_step_settings(Inputs, load_model("llama-3.1-8b"))["titan_ops"]
    assert ops.fused_qkv and not ops.repeats_kv


def _aten_ops(fused: bool):
    """aten ops an autograd forward and backward of q/k/v dispatch (three Linears on one input, or one
    wqkv split and materialised as FusedQKVLinear does), counted with a TorchDispatchMode."""
    torch = pytest.importorskip("torch")
    from torch.utils._python_dispatch import TorchDispatchMode

    class Census(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    tokens, h, heads, kv_heads, hd = 8, 32, 4, 2, 8
    x = torch.randn(tokens, h, requires_grad=True)
    with Census() as forward:
        if fused:
            wqkv = torch.nn.Linear(h, (heads + 2 * kv_heads) * hd, bias=False)
            qkv = wqkv(x).view(tokens, -1, heads // kv_heads + 2, hd)
            q, k, v = torch.split(qkv, [heads // kv_heads, 1, 1], dim=-2)
            outs = [t.reshape(tokens, -1, hd).contiguous() for t in (q, k, v)]
        else:
            outs = [torch.nn.Linear(h, n * hd, bias=False)(x) for n in (heads, kv_heads, kv_heads)]
    loss = sum(o.sum() for o in outs)
    with Census() as backward:
        loss.backward()
    return forward.ops, backward.ops


def test_autograd_sums_three_linears_and_cats_the_fused_split():
    f3, b3 = _aten_ops(fused=False)
    f1, b1 = _aten_ops(fused=True)
    assert b3.count("add") == 2 and b1.count("add") == 0  # the two grad sums go
    assert f3.count("clone") == 0 and f1.count("clone") == 3  # q, k, v materialised
    assert b1.count("cat") == 1  # split's backward
    assert (f3.count("mm"), b3.count("mm"), f1.count("mm"), b1.count("mm")) == (3, 6, 1, 2)


def test_gqa_without_repeats_from_ff0829c():
    # ff0829c10 (2026-01-27) hands grouped k and v to SDPA with enable_gqa: repeat_kv's copies go. Published
    # releases repeat (merge-base --is-ancestor false for all five), 0.3.0 does not
    from gpuplan.core.frameworks import torchtitan_repeats_kv

    assert torchtitan_repeats_kv("torchtitan @9dec370 (FSDP2)") and torchtitan_repeats_kv("torchtitan 820504e (x)")
    assert not torchtitan_repeats_kv("") and not torchtitan_repeats_kv("torchtitan @b5bcd76")
    assert torchtitan_repeats_kv("main as of 2026-01-26") and not torchtitan_repeats_kv("main as of 2026-01-27")
    with pytest.raises(ValueError, match="ff0829c"):
        torchtitan_repeats_kv("torchtitan @abcdef0")
    # eager: repeat_kv copies k and v to the query width, 2 x (2kv + 2q) = 384 B each way in 2 + 2 kernels
    # (kv 32, q 64), none without; compiled: RoPE's cast-back writes q, k repeated and v's copy (2 x 3q + 2kv =
    # 448 B) -> q and k at their own widths (2(q + kv) = 192 B): 256 B less each way
    rep = {c.name: c for c in T.eager_layer_classes(SPEC, "fused", repeats_kv=True)}["repeat_kv"]
    assert (rep.forward_bytes, rep.backward_bytes, rep.kernels) == (384, 384, 4)
    none = {c.name: c for c in T.eager_layer_classes(SPEC, "fused", repeats_kv=False)}["repeat_kv"]
    assert none.bytes == 0 and none.kernels == 0
    rope = [{c.name: c for c in T.compiled_layer_classes(SPEC, repeats_kv=r)}["rope"] for r in (True, False)]
    assert rope[0].forward_bytes - rope[1].forward_bytes == 256 and rope[0].kernels == rope[1].kernels
    # host: repeat_kv's 6 view ops forward and backward go too (the 9dec370 count of 53 forward)
    f_rep, f_none = (T._other_ops_and_extern_kernels(T.TitanOps(False), r)[0] for r in (True, False))
    assert (f_rep, f_none) == (53, 47)
