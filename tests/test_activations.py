"""Activation bytes against published / measured closed forms."""

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.core.memory import activations as A

LLAMA2_7B = dict(model_type="llama", hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, vocab_size=32000, tie_word_embeddings=False)
LLAMA3_8B = dict(LLAMA2_7B, intermediate_size=14336, num_key_value_heads=8, vocab_size=128256)


def hf_formula(h, h_kv, i, a):
    """The measured HF Llama layer (bf16, SDPA), bytes per token:
    h·(16 + 4 + 4·h_kv/h + 8·i/h) + 4·a + 8."""
    return h * (16 + 4 + 4 * h_kv / h + 8 * i / h) + 4 * a + 8


@pytest.mark.parametrize("cfg, measured_per_sbh", [(LLAMA2_7B, 45.533), (LLAMA3_8B, 49.033)])
def test_hf_llama_layer_matches_measured_formula(cfg, measured_per_sbh):
    spec = model_spec_from_hf_config(cfg)
    per_token = A.layer_activations(spec, 4096, impl="hf").total
    h_kv = cfg["num_key_value_heads"] * 128
    assert per_token == hf_formula(4096, h_kv, cfg["intermediate_size"], 32)
    # measured with FakeTensor + MemTracker (torch 2.13, transformers 5.x), in units of s·b·h
    assert per_token / 4096 == pytest.approx(measured_per_sbh, abs=0.002)


def test_megatron_reproduces_korthikanti_34sbh_plus_5as2b():
    # Korthikanti et al. 2022 Table 2 / eq. 1: GPT layer (MHA, 4h GeLU MLP, dropout, no flash):
    # 34·s·b·h + 5·a·s²·b bytes; per token: 34·h + 5·a·s, plus the two LayerNorms' fp32 mean
    # and rstd (16 bytes per token), which the paper neglects
    gpt = dict(model_type="gpt2", n_embd=4096, n_layer=32, n_head=32, vocab_size=51200, n_positions=2048)
    spec = model_spec_from_hf_config(gpt)
    per_token = A.layer_activations(spec, 2048, impl="megatron", kernel="eager", dropout=0.1).total
    assert per_token == 34 * 4096 + 5 * 32 * 2048 + 16


def test_tensor_and_sequence_parallel_split():
    # Korthikanti eq. 4/5: with TP alone 10·sbh stay replicated (norms, dropout), the rest /t;
    # with TP + SP everything /t (flash attention: no s² term).
    gpt = dict(model_type="gpt2", n_embd=4096, n_layer=32, n_head=32, vocab_size=51200, n_positions=2048)
    spec = model_spec_from_hf_config(gpt)
    kw = dict(impl="megatron", kernel="eager", dropout=0.1)
    full = A.saved_bytes_per_token(spec, 2048, 1, 0, **kw)
    sp = A.saved_bytes_per_token(spec, 2048, 1, 0, tp=8, sequence_parallel=True, **kw)
    no_sp = A.saved_bytes_per_token(spec, 2048, 1, 0, tp=8, sequence_parallel=False, **kw)
    assert sp == pytest.approx(full / 8)
    h, a, s = 4096, 32, 2048
    assert no_sp == pytest.approx((24 * h + 5 * a * s) / 8 + 10 * h + 16)


def test_full_recompute_keeps_layer_inputs():
    # HF gradient checkpointing measured 2.000·sbh per layer (the bf16 layer input); the one layer
    # recomputed during backward is a separate, later moment of the step
    spec = model_spec_from_hf_config(LLAMA2_7B)
    assert A.saved_bytes_per_token(spec, 4096, 32, 0, recompute="full") == 32 * 2 * 4096
    assert A.recomputed_layer_bytes_per_token(spec, 4096, 0) == A.layer_activations(spec, 4096).total


def test_autocast_norms_keep_fp32_and_per_consumer_casts():
    # fp32 params + autocast: each RMSNorm keeps x and the normalised tensor in fp32 (8h) and each
    # consuming linear its own bf16 cast (q, k, v: 6h; gate, up: 4h) -> +10h per Llama layer vs bf16
    spec = model_spec_from_hf_config(LLAMA2_7B)
    bf16 = A.layer_activations(spec, 4096).total
    amp = A.layer_activations(spec, 4096, autocast=True).total
    assert amp - bf16 == 10 * 4096


def test_fused_qkv_with_rope_keeps_the_fused_buffer():
    # GPT-NeoX: v is a view of the fused qkv output, RoPE writes new q and k -> +c·(q + k) = +4h
    neox = dict(model_type="gpt_neox", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=8, vocab_size=50304, tie_word_embeddings=False)
    spec = model_spec_from_hf_config(neox)
    gpt2_like = model_spec_from_hf_config({**neox, "model_type": "gpt2", "n_positions": 2048})
    assert (A.layer_activations(spec, 2048).attention - A.layer_activations(gpt2_like, 2048).attention
            == 4 * 2048)


def test_outside_layers_llama2_vocab():
    # measured (notes): V=32000, s=4096: logits 0.25 GiB + fp32 log-softmax 0.5 GiB; temp ~1 GiB
    spec = model_spec_from_hf_config(LLAMA2_7B)
    out = A.outside_layer_bytes(spec)
    assert (out.saved - (8 * 4096 + 4)) * 4096 / 2**30 == pytest.approx(0.25 + 0.5 - 0.018, abs=0.02)
    assert out.backward_temp * 4096 / 2**30 == pytest.approx(0.98, abs=0.01)


def test_pipeline_in_flight():
    assert A.pipeline_micro_batches_in_flight(1, 1, 64) == 1
    assert A.pipeline_micro_batches_in_flight(8, 1, 64) == 8
    assert A.pipeline_micro_batches_in_flight(8, 4, 64) == pytest.approx(8 * (1 + 7 / 32))
    assert A.pipeline_micro_batches_in_flight(8, 1, 4) == 4


def test_moe_capacity_factor_scales_routed_part():
    mixtral = dict(LLAMA2_7B, model_type="mixtral", num_key_value_heads=8, intermediate_size=14336,
                   num_local_experts=8, num_experts_per_tok=2)
    spec = model_spec_from_hf_config(mixtral)
    one = A.layer_activations(spec, 4096, moe_layer=True).mlp
    padded = A.layer_activations(spec, 4096, moe_layer=True, capacity_factor=1.25).mlp
    # per routed token: gathered input 2h + expert MLP 8i + weighted output 2h, for top-2 experts
    routed = 2 * (2 * 2 * 4096 + 8 * 14336)
    assert padded - one == pytest.approx(0.25 * routed)
