"""The eager op profiles read from transformers 5.17.0 and peft 0.21.0, the releases the H200 runs used
(catalog/reference/hf_op_profiles.json; scripts/hf_op_profiles.py). Coefficients are bytes per feature unit of
one decoder layer's memory-bound kernels (core.time.op_profile), checked by hand against the modeling code."""

from __future__ import annotations

import pytest

from gpuplan.catalog.op_profiles import family_profiles, provenance


def _bytes(family: str, setting: str, cell: str) -> dict:
    return family_profiles(family)[setting].counts["layer"][cell]["bytes"]


def _kernels(family: str, setting: str, cell: str) -> float:
    return family_profiles(family)[setting].counts["layer"][cell]["kernels"]["1"]


def test_profiles_read_the_measured_release():
    assert "transformers 5.17.0" in provenance() and "peft 0.21.0" in provenance()


@pytest.mark.parametrize("family", ["qwen3_moe", "mixtral"])
def test_grouped_mm_experts_as_517_runs_them(family):
    """integrations/moe.py@5.17.0 grouped_mm_experts_forward (L377-480), bytes per routed token-expert pair
    (T*k) and feature, bf16: the gather hidden_states[perm // k] (2 h written; its read of all T x h is a T*h
    term), masked_fill_ of it (4 h), masked_fill of the up output (4 x 2Ie), silu of the gate half (4 Ie) and x up
    (6 Ie), masked_fill of the down output (4 h), x the routing weight (4 h), the un-permuting gather (4 h) and
    the sum over k (2 h): T*k*h 2 + 4 + 4 + 4 + 4 + 2 = 20, T*k*Ie 8 + 4 + 6 = 18. The three masked fills
    (L437, L445, L465, with the sentinel compare and clamp_ at L420-421: unconditional in 5.17, expert-parallel
    only in 5.25) are 8 + 8 of them and 5 of the layer's forward
    kernels; a profile read from 5.25 had 12 and 10 (tolerance: T*k-sized index work is spread over the
    features, k being 1-3 in the generator's shapes). Mixtral's routing weights stay fp32 (its router
    returns softmax(float) values, modeling_mixtral.py@5.17.0 L107-110): its product and gathers carry 8 B
    per h more."""
    f = _bytes(family, "bf16", "forward.memory")
    extra = 8.0 if family == "mixtral" else 0.0
    assert f["T*k*h"] == pytest.approx(20.0 + extra, abs=1.0)
    assert f["T*k*Ie"] == pytest.approx(18.0, abs=0.5)
    b = _bytes(family, "bf16", "backward.memory")
    assert b["T*k*Ie"] == pytest.approx(34.0, abs=0.6)  # 26 before the fills' backward masked_fills (2 x 4 Ie)


def test_dense_families_read_the_same_per_layer_in_517_and_525():
    """Llama's layer is unchanged between the releases (modeling_llama.py: only the rotary embedding and the
    cache argument differ): 84 h + 20 q + 20 kv + 10 I bytes per token forward, 30 kernels (docs/step.md)."""
    f = _bytes("llama", "bf16", "forward.memory")
    assert (f["T*h"], f["T*q"], f["T*kv"], f["T*I"]) == pytest.approx((84.0, 20.0, 20.0, 10.0), abs=0.05)
    assert _kernels("llama", "bf16", "forward.memory") == 30


def test_qwen2_bias_gradients():
    """Qwen2.5's q/k/v carry biases (modeling_qwen2.py@5.17.0 L189-191): the forward folds them into addmm (no
    extra kernel); the backward sums each bias gradient over the tokens: 2 q + 2 kv + 2 kv bytes per token
    read, three kernels more than Llama's."""
    q, ll = _bytes("qwen2", "bf16", "backward.memory"), _bytes("llama", "bf16", "backward.memory")
    assert q["T*q"] - ll["T*q"] == pytest.approx(2.0, abs=0.1)
    assert q["T*kv"] - ll["T*kv"] == pytest.approx(4.0, abs=0.1)
    assert _kernels("qwen2", "bf16", "backward.memory") - _kernels("llama", "bf16", "backward.memory") == 3
    assert _kernels("qwen2", "bf16", "forward.memory") == _kernels("llama", "bf16", "forward.memory")
