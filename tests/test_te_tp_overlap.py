"""TE's linears hide 2 of the 8 TP collectives a layer is charged (core.time.megatron_ops.TE_HIDDEN_TP_SHARE),
and Megatron-Bridge's NVFP4 Llama recipes run without userbuffers (published_throughput.tp_comm_overlapped)."""

from __future__ import annotations

import pytest

from gpuplan.core.time.megatron_ops import TE_HIDDEN_TP_SHARE


def _tp_cost(run, **overrides):
    """The TP CollectiveCost of a published row's step, as predict_tokens_per_gpu_s builds it."""
    import gpuplan.core.time.step as S
    from gpuplan.jobs.validation import published_throughput as P

    seen = {}
    original = S.step_communication

    def keep(*args, **kwargs):
        seen["costs"] = original(*args, **kwargs)
        return seen["costs"]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(S, "step_communication", keep)
        P.predict_tokens_per_gpu_s(run, **overrides)
    return next(c for c in seen["costs"] if c.parallelism == "TP")


def test_te_hides_the_column_parallel_backward_reduce_scatters(published_rows):
    """Per layer: forward AG + RS for attention and MLP (4, blocking), backward the row-parallel
    linears' grad_output AGs (2, blocking) and the column-parallel dgrad RSs (2, async beside wgrad:
    TE v2.9 module/linear.py L730-745, layernorm_mlp.py L1136-1139, cited at megatron_ops.TE_HIDDEN_TP_SHARE
    and docs/step.md 'TP as Transformer Engine runs it'). The hidden seconds of a step are those two
    reduce-scatters, worked out for the 26.04.01 GB200 Llama 3.1 405B NVFP4 row (no userbuffers):
    tp 4, pp 16, dp 4, mb 1, GBS 1,536: 384 micro-batches, ceil(126 / 16) = 8 layers on the slowest stage;
    each collective one sequence's activations, 8,192 x 16,384 x 2 B = 268,435,456 B; 384 x 8 x 4 =
    12,288 RS + AG pairs charged, 384 x 8 x 2 = 6,144 dgrad reduce-scatters hidden. A ring reduce-scatter
    moves 3/4 of the buffer over each link: at least 0.75 x 268,435,456 / 680.4e9 s = 0.2959 ms
    (gb200.toml: ring busbw 0.756 x 900 GB/s)."""
    from gpuplan.core.comm import collectives as K

    cost = _tp_cost(published_rows["mbridge-26.04.01-llama-3.1-405b-gb200-256g-nvfp4"])
    assert cost.bytes_per_call == 8192 * 16384 * 2 == 268_435_456
    assert cost.calls == 384 * 8 * 4 == 12_288
    reduce_scatter = float(K.collective_seconds("reduce_scatter", cost.bytes_per_call, cost.group))
    assert reduce_scatter >= 0.75 * 268_435_456 / 680.4e9 == pytest.approx(0.2959e-3, rel=1e-3)
    # the share charges 2 of 8 collectives' seconds as hidden; that is the two reduce-scatters' time
    assert cost.total - cost.exposed == pytest.approx(6_144 * reduce_scatter, rel=1e-9)


def test_nvfp4_rows_expose_three_quarters_of_their_tp_traffic(published_rows):
    """26.04.01 GB200 Llama 3.1 405B at tp 4: the NVFP4 row (no userbuffers) leaves 0.75 of the TP
    time exposed, the FP8-CS row (userbuffers, one chunk in tp) 0.75 / 4."""
    from gpuplan.jobs.validation.published_throughput import tp_comm_overlapped

    nvfp4 = published_rows["mbridge-26.04.01-llama-3.1-405b-gb200-256g-nvfp4"]
    fp8 = published_rows["mbridge-26.04.01-llama-3.1-405b-gb200-256g-fp8cs"]
    assert nvfp4["layout"]["tp"] == fp8["layout"]["tp"] == 4
    assert not tp_comm_overlapped(nvfp4) and tp_comm_overlapped(fp8)
    plain, chunked = _tp_cost(nvfp4), _tp_cost(fp8)
    assert plain.exposed == pytest.approx(0.75 * plain.total, rel=1e-9)
    assert chunked.exposed == pytest.approx(0.75 / 4 * chunked.total, rel=1e-9)


def test_torchtitan_rows_keep_every_tp_collective_on_the_path(published_rows):
    """torchtitan's DTensor TP (no AsyncTP) waits on each collective it issues: nothing hidden."""
    vanilla = published_rows["torchtitan-2506-llama-3.1-70b-256g-bf16-vanilla-tp"]
    cost = _tp_cost(vanilla)
    assert cost.total > 0 and cost.exposed == pytest.approx(cost.total, rel=1e-9)


def test_full_recompute_hides_the_same_two_collectives(published_rows):
    """Full recompute re-runs the forward's blocking pairs (6 pairs a layer counted, not 4), but TE
    still hides the same two backward collectives: the hidden seconds do not change, the share
    drops to 2 / 12."""
    from gpuplan.core.time.megatron_ops import te_hidden_tp_share

    assert te_hidden_tp_share("none") == TE_HIDDEN_TP_SHARE and te_hidden_tp_share("full") == pytest.approx(1 / 6)
    run = published_rows["mbridge-26.04.01-llama-3.1-405b-gb200-256g-nvfp4"]  # no userbuffers: nothing chunked
    plain = _tp_cost(run)
    full = _tp_cost(run, recompute="full", tp_overlap=te_hidden_tp_share("full"))
    assert full.total == pytest.approx(1.5 * plain.total, rel=1e-9)
    assert full.total - full.exposed == pytest.approx(plain.total - plain.exposed, rel=1e-9)
