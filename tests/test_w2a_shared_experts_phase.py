"""Under Megatron-Core's combined 1F1B schedule the attention node runs the router and, from core 0.16, the shared
experts before the dispatch (core.comm.moe_overlap.pre_dispatch_mlp_weights; issue 37, wave 12 W2-A)."""

import pytest
from helpers import row_step_settings

from gpuplan.adapters.resolve import resolve_model
from gpuplan.catalog import load_accelerator
from gpuplan.core.comm.moe_overlap import pre_dispatch_mlp_weights
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings, microbatch_compute_time

# DeepSeek-V3 (hidden 7168, 256 routed experts, one shared of width 2048, 58 MoE of 61 layers), by hand:
ROUTER = 7168 * 256  # 1,835,008 a MoE layer
SHARED = 3 * 7168 * 2048  # gated: 44,040,192 a MoE layer
# MLA projections a layer: q 7168 x 1536 + 1536 x 128 x 192, kv 7168 x 576 + 512 x 128 x 256, out 128 x 128 x 7168
ATTENTION = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168  # 187,105,280


@pytest.fixture(scope="module")
def dsv3():
    return resolve_model("deepseek-v3"), cluster_for(load_accelerator("b200"))


def test_pre_dispatch_weights_by_hand(dsv3):
    spec, _ = dsv3
    assert pre_dispatch_mlp_weights(spec, True) == pytest.approx((ROUTER + SHARED) * 58 / 61)  # 43,619,043
    assert pre_dispatch_mlp_weights(spec, False) == pytest.approx(ROUTER * 58 / 61)  # 1,744,762


@pytest.mark.parametrize("shared", [True, False])
def test_phases_move_the_router_and_shared_experts(dsv3, shared):
    spec, cluster = dsv3

    def phases(overlap):
        settings = StepSettings(seq_len=4096, ep_a2a_overlap=overlap, shared_experts_before_dispatch=shared)
        return microbatch_compute_time(spec, cluster, settings, 1, 1, 1, 4, False, ep=8).moe_phases

    off, on = phases(False), phases(True)
    early = pre_dispatch_mlp_weights(spec, shared)
    # the attention projections' weight gradients a pass (off) set the scale: the early GEMMs' forward is early / ATTENTION of it
    assert on.pre_dispatch_forward - off.pre_dispatch_forward == pytest.approx(
        off.attention_weight_grad * early / ATTENTION, rel=1e-9)
    # the work only moves between the phases
    assert on.pre_dispatch_forward + on.mlp_forward == pytest.approx(off.pre_dispatch_forward + off.mlp_forward, rel=1e-12)
    assert on.pre_dispatch_backward + on.mlp_backward == pytest.approx(
        off.pre_dispatch_backward + off.mlp_backward, rel=1e-12)
    # the delayed weight gradients take the shared experts' (core 0.16: L363-379), never the router's
    delayed = SHARED * 58 / 61 if shared else 0.0
    assert on.attention_weight_grad / off.attention_weight_grad == pytest.approx(1 + delayed / ATTENTION, rel=1e-9)
    if shared:  # 1 + 41,874,281 / 187,105,280
        assert on.attention_weight_grad / off.attention_weight_grad == pytest.approx(1.2238, abs=1e-4)


@pytest.mark.parametrize("row, expected", [
    ("mbridge-26.06-deepseek-v3-gb200-256g-mxfp8", True),  # NeMo 26.06: Megatron-Core 0.16 on
    ("mbridge-25.09-deepseek-v3-h100-sxm-1024g-fp8cs", False),  # 25.09: core 0.14, the MLP node
])
def test_rows_take_their_release(monkeypatch, published_rows, row, expected):
    assert row_step_settings(monkeypatch, published_rows[row]).shared_experts_before_dispatch is expected
