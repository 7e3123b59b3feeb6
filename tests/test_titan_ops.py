"""torchtitan's memory-bound work, eager vs torch.compile (core/time/titan_ops.py): one small
Llama block's bytes and kernels worked by hand from the code (torchtitan 9dec370 model.py /
norms.py; Inductor's fusion between extern kernels), and the held-out torchtitan rows."""

import pytest
from helpers import titan_layer_totals

from gpuplan.core.model.spec import AttentionSpec, MLPSpec, ModelSpec
from gpuplan.core.time import titan_ops as T

# h 64, 4 query heads of 16 (q 64), 2 key/value heads (kv 32: repeated), SwiGLU width 128
SPEC = ModelSpec("t", hidden_size=64, num_layers=2, vocab_size=1000,
                 attention=AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=16), mlp=MLPSpec(128))
EAGER = T.TitanOps(compiled=False, norm="python")
COMPILED = T.TitanOps(compiled=True)


def test_eager_block_bytes_and_kernels_by_hand():
    # forward per token: 2 Python RMSNorms x 36h = 4,608; RoPE 20q + 20kv = 1,920; repeat_kv
    # copies k and v to the query width 2 x (2kv + 2q) = 384; SwiGLU 10I = 1,280; 2 residual adds
    # 12h = 768  ->  8,960 B in 16 + 6 + 2 + 2 + 2 = 28 kernels
    # backward: norms 2 x 92h = 11,776; RoPE 1,920; repeat_kv's sums 384; SwiGLU 18I = 2,304;
    # residual sums 768; linear-input gradient sums 3 x 6h = 1,152  ->  18,304 B in 32 + 8 + 2 + 3
    # + 2 + 3 = 50 kernels (RoPE's 8: 3 per tensor + freqs_cis.conj() once per tensor)
    assert titan_layer_totals(SPEC, EAGER) == pytest.approx((28, 8960, 50, 18304), rel=1e-12)


def test_compiled_block_bytes_and_kernels_by_hand():
    # forward: attention_norm 4h + (residual + ffn_norm) 8h = 768; RoPE (its complex multiply is an
    # Inductor fallback): fp32 casts 6 x 96, the two multiplies 8 x 96, cast back reading 4 x 96 + v
    # 2 x 32 and writing q, k, v at the query width 2 x 192  ->  24q + 20kv = 2,176 in 2 + 2 + 1
    # kernels; silu x mul 6I = 768; last residual 6h = 384  ->  4,096 B in 9 kernels.
    # backward: norm row + weight-gradient kernels with 3 and 2 consumers (2m + 4) x 2h = 20h + 16h
    # = 2,304; RoPE 2,176 in 8; SwiGLU 10I = 1,280  ->  5,760 B in 6 + 8 + 1 = 15 kernels
    assert titan_layer_totals(SPEC, COMPILED) == pytest.approx((9, 4096, 15, 5760), rel=1e-12)


def test_loss_eager_and_compiled_by_hand():
    eager, compiled = T.loss_class(SPEC, False), T.loss_class(SPEC, True)
    # eager: float() 6V + log_softmax 8V forward; nll backward 4V + log_softmax backward 12V + cast 6V
    assert (eager.bytes, eager.kernels) == (36 * 1000, 7)
    # compiled: read the bf16 logits forward, re-read them and write the gradient backward
    assert (compiled.bytes, compiled.kernels) == (6 * 1000, 2)


@pytest.mark.parametrize("tokens", [256, 8192, 131072])
def test_compiled_is_never_slower_than_eager(tokens):
    hbm = 3.35e12
    eager = sum(T.elementwise_seconds_per_token(SPEC, EAGER, tokens, hbm))
    compiled = sum(T.elementwise_seconds_per_token(SPEC, COMPILED, tokens, hbm))
    assert compiled < eager
    host_e, host_c = T.host_seconds_per_layer(SPEC, EAGER, True), T.host_seconds_per_layer(SPEC, COMPILED, True)
    assert host_c[0] < host_e[0] and host_c[1] < host_e[1]


def test_elementwise_seconds_follow_the_measured_kernel_line():
    # memory_kernels: 7.84 us per kernel + bytes / (0.89 x HBM); per token the fixed time is spread
    fwd, bwd = T.elementwise_seconds_per_token(SPEC, COMPILED, 1000, 1e12)
    assert fwd == pytest.approx(9 * 7.84e-6 / 1000 + 4096 / 0.89e12, rel=1e-9)
    assert bwd == pytest.approx(15 * 7.84e-6 / 1000 + 5760 / 0.89e12, rel=1e-9)


def test_framework_label_picks_eager_or_compiled():
    assert T.from_framework_label("torchtitan @9dec370 (torch 1963fc8; FSDP2)", fused_qkv=False) == \
        T.TitanOps(compiled=False, norm="python", loss_compiled=False)
    assert T.from_framework_label("torchtitan @9dec370 (FSDP2) + torch.compile", fused_qkv=False) == \
        T.TitanOps(compiled=True, norm="python", loss_compiled=False)
    assert T.from_framework_label("torchtitan @e7c0cae (FSDP2) + torch.compile", fused_qkv=False).loss_compiled


def test_moe_blocks_are_refused():
    from gpuplan.core.model.spec import MoESpec

    moe = ModelSpec("m", hidden_size=64, num_layers=2, vocab_size=1000,
                    attention=AttentionSpec(num_heads=4, num_kv_heads=2, head_dim=16), mlp=MLPSpec(128),
                    moe=MoESpec(num_experts=4, experts_per_token=2, expert_intermediate_size=32))
    with pytest.raises(ValueError, match="dense gated"):
        T.layer_classes(moe, EAGER)


def test_host_is_exposed_only_beyond_the_gpu_work():
    # host.py's rule per phase: max(0, host - GPU). Eager forward under SAC: (28 memory kernels +
    # 53 other ops) x the SAC dispatch cost, carried over with r and k; compiled: 9 + 8 launches x k
    from gpuplan.core.time.host import cpu_seconds_per_op, reference_scale

    scale = reference_scale()
    host_f, host_b = T.host_seconds_per_layer(SPEC, EAGER, sac=True)
    assert host_f == pytest.approx(scale.seconds((28 + 53) * cpu_seconds_per_op("forward", True), 28 + 8), rel=1e-12)
    assert T.host_seconds_per_layer(SPEC, COMPILED, sac=True)[0] == pytest.approx((9 + 8) * scale.launch, rel=1e-12)
    assert T.exposed_host_seconds(SPEC, EAGER, 0.0, 0.0, True) == pytest.approx(host_f + host_b, rel=1e-12)
    assert T.exposed_host_seconds(SPEC, EAGER, 1.0, 1.0, True) == 0.0
