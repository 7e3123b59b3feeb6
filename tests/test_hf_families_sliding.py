"""Sliding-window layers under SDPA on --framework hf past the window (Mistral, Phi-3; transformers 5.17.0):
the memory-bound work the op profiles do not see (their shapes stay below the window), from
core.time.eager_step.masked_sdpa_extra."""

from __future__ import annotations

import pytest

from gpuplan.adapters.resolve import resolve_gpu, resolve_model
from gpuplan.catalog.op_profiles import eager_ops_for
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import eager_step as E
from gpuplan.core.time.eager_path import eager_run
from gpuplan.core.time.memory_kernels import memory_bound_seconds
from gpuplan.core.time.op_profile import layer_features
from gpuplan.core.time.step import StepSettings

H200 = resolve_gpu("h200")


def _run(spec, seq_len: int, recompute: str = "none"):
    ops = eager_ops_for(spec.model_type, "bf16", "full", "flash")
    return eager_run(spec, cluster_for(H200, None, None), StepSettings(seq_len=seq_len, eager_ops=ops,
                                                                       recompute=recompute))


def test_mistral_past_its_window_repeats_kv_and_converts_the_mask():
    """Mistral-7B (32 heads, 8 KV heads, d 128, window 4,096) at s = 4,096, one sequence: the boolean mask
    turned additive, 5 B x 4,096 x 4,096 = 83.89 MB; k and v repeated to 32 heads, 2 B x 4,096 x (1,024 +
    1,024 + 32 x 256) = 83.89 MB: forward 167.77 MB in 4 kernels; backward the two sums, 83.89 MB in 2."""
    spec = resolve_model("mistral-7b-v0.1")
    fwd, bwd = E.masked_sdpa_extra(spec, _run(spec, 4096), 4096)
    assert fwd == pytest.approx((167.77e6, 4.0), rel=1e-4) and bwd == pytest.approx((83.89e6, 2.0), rel=1e-4)
    full = E.masked_sdpa_extra(spec, _run(spec, 4096, "full"), 4096)[1]
    assert full == pytest.approx((83.89e6 + 167.77e6, 6.0), rel=1e-4)  # the recomputed forward's again
    assert E.masked_sdpa_extra(spec, _run(spec, 2048), 4096) == ((0.0, 0.0), (0.0, 0.0))  # below the window
    # through the step: one layer's forward memory-bound seconds carry it
    run = _run(spec, 4096)
    f, _ = E.microbatch(spec, run, 4096, 1, head=0.0)
    lf = layer_features(spec, 4096, 4096)
    by_profile = run.ops.value("layer", "forward.memory", "bytes", lf), run.ops.value("layer", "forward.memory",
                                                                                       "kernels", lf)
    want = memory_bound_seconds(by_profile[0] + 167.77e6, by_profile[1] + 4, H200.memory_bandwidth)
    assert f.memory == pytest.approx(want, rel=1e-4)


def test_phi3_has_no_kv_to_repeat_and_llama_no_mask():
    """Phi-3-mini has as many KV heads as heads (no repeat_kv) and a 2,047 window: at 2,048 only the mask
    conversion, 5 x 2,048 x 2,048 B per sequence. Llama has no window: nothing."""
    phi = resolve_model("phi-3-mini-4k")
    fwd, bwd = E.masked_sdpa_extra(phi, _run(phi, 2048), 4096)
    assert fwd == pytest.approx((5.0 * 4096 * 2048, 2.0)) and bwd == (0.0, 0.0)
    llama = resolve_model("llama-3.2-1b")
    assert E.masked_sdpa_extra(llama, _run(llama, 8192), 8192) == ((0.0, 0.0), (0.0, 0.0))
