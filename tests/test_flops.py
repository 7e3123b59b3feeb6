"""FLOPs: hand-worked tiny model, Megatron's closed form, the article's 6ND, properties."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.core.model import flops as F

TINY = dict(model_type="llama", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=4, vocab_size=100, tie_word_embeddings=False)


def test_article_6nd():
    assert F.flops_6nd(7e9, 2e12) == pytest.approx(8.4e22, rel=1e-12)


def test_tiny_model_by_hand():
    spec = model_spec_from_hf_config(TINY)
    # matmul weights per layer: attention 4·64² = 16,384 + SwiGLU 3·64·128 = 24,576 -> x2 layers x2 FLOPs
    # LM head 2·100·64 = 12,800; attention core per key 2·4 heads·(16+16) = 256, x 32 keys x 2 layers
    per_token = F.training_flops_per_token(spec, 32, "full")
    assert per_token.layer_matmuls_forward == 163_840
    assert per_token.lm_head_forward == 12_800
    assert per_token.attention_core_forward == 16_384
    assert per_token.model == 3 * 193_024
    assert F.training_flops_per_token(spec, 32, "causal").attention_core_forward == 256 * 16.5 * 2
    assert F.training_flops_per_token(spec, 32, "full", "full").hardware == 3 * 193_024 + 163_840 + 16_384
    assert F.training_flops_per_token(spec, 32, "full", "selective").hardware == 3 * 193_024 + 16_384


@pytest.mark.parametrize("s, h, layers, vocab", [(2048, 12288, 96, 51200), (1024, 768, 12, 50257), (4096, 4096, 32, 32000)])
def test_matches_megatron_closed_form(s, h, layers, vocab):
    # Narayanan et al. 2021 (Megatron, eq. 3): per sequence 72·s·l·h²·(1 + s/6h + V/12lh) model FLOPs,
    # 96·s·l·h²·(1 + s/6h + V/16lh) with full recompute; GPT shape: MHA, plain 4h MLP.
    cfg = dict(model_type="gpt2", n_embd=h, n_layer=layers, n_head=h // 128, vocab_size=vocab, n_positions=s)
    spec = model_spec_from_hf_config(cfg)
    model = 72 * s * layers * h**2 * (1 + s / (6 * h) + vocab / (12 * layers * h))
    hardware = 96 * s * layers * h**2 * (1 + s / (6 * h) + vocab / (16 * layers * h))
    per_token = F.training_flops_per_token(spec, s, "full", "full")
    assert per_token.model * s == pytest.approx(model, rel=1e-12)
    assert per_token.hardware * s == pytest.approx(hardware, rel=1e-12)


def test_full_recompute_costs_about_a_third_more():
    # the article: full recomputation adds ~33% compute (4 forwards instead of 3 in the layers)
    spec = model_spec_from_hf_config(dict(TINY, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                          num_attention_heads=32, num_key_value_heads=32, vocab_size=32000))
    per_token = F.training_flops_per_token(spec, 4096, "full", "full")
    assert per_token.hardware / per_token.model == pytest.approx(4 / 3, abs=0.01)


def test_mean_attended_keys_with_sliding_window():
    assert F.mean_attended_keys(32, None, "causal") == 16.5
    assert F.mean_attended_keys(32, 8, "causal") == (36 + 24 * 8) / 32  # (w(w+1)/2 + (s-w)·w)/s
    assert F.mean_attended_keys(32, 8, "full") == 8
    assert F.mean_attended_keys(4, 8, "causal") == 2.5  # window longer than sequence: plain causal


def test_mean_attended_keys_accepts_numpy_arrays():
    np = pytest.importorskip("numpy")
    seq = np.array([4, 32, 4096])
    assert list(F.mean_attended_keys(seq, 8, "full")) == [4, 8, 8]
    assert F.mean_attended_keys(seq, 8, "causal")[1] == pytest.approx(7.125)


def test_moe_counts_only_active_experts():
    dense = model_spec_from_hf_config(dict(TINY, model_type="mixtral", num_local_experts=1, num_experts_per_tok=1))
    moe = model_spec_from_hf_config(dict(TINY, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2))
    extra = F.layer_matmul_weights_per_token(moe) - F.layer_matmul_weights_per_token(dense)
    # one more active expert (3·64·128) and 7 more router columns (64·7), per layer
    assert extra == 2 * (3 * 64 * 128 + 64 * 7)


@given(st.integers(1, 64), st.integers(1, 64), st.integers(16, 8192))
def test_flops_grow_with_layers_and_sequence(layers_a, layers_b, seq):
    a = model_spec_from_hf_config(dict(TINY, num_hidden_layers=layers_a))
    b = model_spec_from_hf_config(dict(TINY, num_hidden_layers=layers_b))
    fa, fb = F.training_flops_per_token(a, seq).model, F.training_flops_per_token(b, seq).model
    assert (fa < fb) == (layers_a < layers_b)
    assert F.training_flops_per_token(a, seq + 1).model > fa


@given(st.floats(1e6, 1e13), st.floats(1e6, 1e14))
def test_6nd_grows_with_tokens(n, d):
    assert F.flops_6nd(n, 2 * d) == pytest.approx(2 * F.flops_6nd(n, d))
