"""layer_kernels.qk_reshape_copies: SGLang's Qwen3 attention reshapes the split q (and k) per head before their
RMSNorms (qwen3_moe.py@v0.5.6:383-385, qwen3.py@v0.5.6:159-161), a copy kernel wherever the reshape cannot be a
view. Hand-worked counts; exact (whole kernels), times to 0.1%."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.serving import first_token_path as FT
from gpuplan.core.serving import layer_kernels as LK
from gpuplan.core.serving.releases import parse_release

SGLANG = parse_release("sglang==0.5.6")


@pytest.fixture(scope="module")
def qwen3_235b():
    return load_model("qwen3-235b-a22b")


def test_q_copies_at_two_tokens_or_more(qwen3_235b):
    """Qwen3-235B-A22B (64 q heads, 4 KV heads of 128) at TP 8: a rank holds 8 q heads in rows of (8 + 2 x 1) x 128
    = 1,280 elements, so q (8 x 128 = 1,024 wide) reshaped to (tokens x 8, 128) copies: 1 kernel; k is one head
    (4 KV heads replicated over 8 ranks), a view. One token: the reshape is a view (0)."""
    assert LK.qk_reshape_copies(qwen3_235b, SGLANG, 961, 8) == 1
    assert LK.qk_reshape_copies(qwen3_235b, SGLANG, 2, 8) == 1
    assert LK.qk_reshape_copies(qwen3_235b, SGLANG, 1, 8) == 0


def test_k_copies_where_a_rank_holds_two_kv_heads(qwen3_235b):
    """TP 2: 2 KV heads a rank, so k (256 wide in rows of (32 + 2 x 2) x 128) copies too: 2. TP 1: 4 KV heads: 2."""
    assert LK.qk_reshape_copies(qwen3_235b, SGLANG, 961, 2) == 2
    assert LK.qk_reshape_copies(qwen3_235b, SGLANG, 961, 1) == 2
    assert LK.qk_reshape_copies(load_model("qwen3-8b"), SGLANG, 961, 8) == 1  # 32 / 8 q heads, 8 / 8 KV heads


def test_other_engines_models_and_releases_keep_the_general_rule(qwen3_235b):
    """vLLM (not this code), SGLang before 0.5.0 (its Qwen3 files not read) and Gemma 3 (per-head norms, another
    file) add nothing."""
    assert LK.qk_reshape_copies(qwen3_235b, parse_release("vllm==0.11.0"), 961, 8) == 0
    assert LK.qk_reshape_copies(qwen3_235b, parse_release("sglang==0.4.4"), 961, 8) == 0
    assert LK.qk_reshape_copies(load_model("gemma-3-27b"), SGLANG, 961, 8) == 0


def test_eager_prefill_issue_by_hand(qwen3_235b):
    """The eager prefill's launches a layer: 11 dense + 4 MoE + 2 q / k norms + 1 q copy + 2 all-reduces = 20 at 961
    tokens (19 at 1 token); issue 94 x 20 x 41.957 us = 78.88 ms + 16.6 ms outside the layers = 95.48 ms."""
    assert LK.issued_kernels(qwen3_235b, SGLANG, tokens=961, tp=8) == 20
    assert LK.issued_kernels(qwen3_235b, SGLANG, tokens=1, tp=8) == 19
    issue = FT.eager_issue_seconds(SGLANG, qwen3_235b, tokens=961, tp=8)
    assert issue == pytest.approx(94 * 20 * 41.957e-6 + 16.6e-3, rel=1e-3)
    assert issue == pytest.approx(95.48e-3, rel=1e-3)


def test_graph_decode_counts_the_q_copy_from_two_tokens(qwen3_235b):
    """Review w14 R1 S1: under CUDA-graph capture SGLang runs q.reshape(-1, head_dim) on the main stream
    (qwen3_moe.py@v0.5.6:376) and k's (a view at TP 8 anyway) on the alternate stream with k_norm (L378-380). Qwen3-235B
    TP 8 graph layer: 11 dense + 4 MoE + 1 q norm (k's on the alt stream) = 16 at batch 1 (a view), 17 from 2 tokens
    (its floor x 17 / 16: 6.836 -> 7.264 ms a step at 94 layers); TP 2, where k copies too, still 17 (k's copy is off
    the critical path). vLLM (17, no such copy) and SGLang 0.4.4 (16) do not move with the batch."""
    assert LK.graph_kernels(qwen3_235b, SGLANG, tp=8, tokens=1) == 16
    assert LK.graph_kernels(qwen3_235b, SGLANG, tp=8, tokens=2) == 17
    assert LK.graph_kernels(qwen3_235b, SGLANG, tp=8, tokens=512) == 17
    assert LK.graph_kernels(qwen3_235b, SGLANG, tp=2, tokens=64) == 17
    assert LK.graph_floor_scale(qwen3_235b, SGLANG, None, "bf16", 8, tokens=2) == pytest.approx(17 / 16, rel=1e-9)
    assert LK.graph_floor_scale(qwen3_235b, SGLANG, None, "bf16", 8) == 1.0  # batch 1: the held-out rows' floor
    vllm, old = parse_release("vllm==0.11.0"), parse_release("sglang==0.4.4")
    assert LK.graph_kernels(qwen3_235b, vllm, tp=8, tokens=64) == LK.graph_kernels(qwen3_235b, vllm, tp=8) == 17
    assert LK.graph_kernels(qwen3_235b, old, tp=8, tokens=64) == LK.graph_kernels(qwen3_235b, old, tp=8) == 16
    assert LK.graph_kernels(load_model("llama-3-8b"), SGLANG, tp=8, tokens=64) == 11  # no per-head norm
