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
