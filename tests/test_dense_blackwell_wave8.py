"""Dense Blackwell rows, wave 8 (issue 37; docs/step.md "Dense Blackwell FP8 rows, wave 8"): negative results, the
hand numbers they rest on.

Hand numbers:
- Llama 3.1 405B (h 16,384, 128 heads, 8 KV heads of 128, SwiGLU width 53,248), one offloaded layer in FP8 (TE's
  marked tensors, core.time.activation_offload): norms 2 x (2 x 16,384 + 1 x 16,384 + 4) = 98,312 B; attention
  2 x (16,384 + 1,024 + 1,024 + 16,384) + 4 x 128 = 70,144 B; proj and fc2 saved inputs 1 x (16,384 + 53,248)
  = 69,632 B; sum 238,088 B a token, / tp 2 = 119,044 B. The 25.09 GB200-128 Megatron-FSDP row (tp 2, 95 of 126
  layers offloaded, scripts/performance/configs/llama31/llama31_405b_llm_pretrain.yaml@v0.1.0rc4 L117-123):
  8,192 x 119,044 = 975.2 MB a layer, over NVLink-C2C's 225 GB/s a GPU and direction = 4.334 ms, against the
  model's 11.0 ms layer forward (4.17 s / 126 layers / 3): hidden in every window.
- TE's layer_window_map for 95 groups over 126 layers: 126 // 95 = 1 layer a window, the 31 left over added to
  groups 1-31 (ends[i] = i + min(i + 1, 31)): windows [1] + [2] x 30 + [1] x 64.
- The six ring-exchanged GEMMs' FLOP share of a 405B layer (scripts/dense_cp_residual.py chunked_share), in units
  of 16,384 x 16,384 / 16,384: QKV 18,432, proj 16,384, fc1 106,496, fc2 53,248 (sum 194,560); forward all four
  plus proj / fc2 dgrad = 194,560 + 69,632 = 264,192 of 3 x 194,560 = 583,680: 0.45263.
"""

from __future__ import annotations

import pytest

from gpuplan.core.time.activation_offload import host_link_bytes_per_s, layer_windows, offloaded_bytes_per_token
from gpuplan.jobs.validation.published_throughput import predicted_step
from gpuplan.jobs.validation.throughput import run_spec

FSDP_ROW = "mbridge-25.09-llama-3.1-405b-gb200-128g-fp8cs"


def test_405b_offloaded_layer_bytes_and_copy_time(published_rows):
    row = published_rows[FSDP_ROW]
    assert (row["layout"]["tp"], row["cpu_offloading_num_layers"]) == (2, 95)
    spec = run_spec(row["model"])
    per_token = offloaded_bytes_per_token(spec, "fp8", tp=2)
    assert per_token == pytest.approx(238_088 / 2, rel=1e-12)
    copy = 8_192 * per_token / host_link_bytes_per_s("gb200")
    assert copy == pytest.approx(4.334e-3, rel=1e-3)


def test_405b_offload_windows_are_te_layer_window_map():
    assert layer_windows(95, 126) == [1] + [2] * 30 + [1] * 64


def test_405b_offload_hides_behind_one_layer(published_rows):
    """The copy (4.3 ms) is shorter than one layer's forward (~11 ms), so the 95 offloaded layers add nothing."""
    row = published_rows[FSDP_ROW]
    with_offload, without = predicted_step(row), predicted_step(row, offload_layers=0)
    assert with_offload.compute / 126 / 3 == pytest.approx(11.0e-3, rel=0.05)
    assert with_offload.total == pytest.approx(without.total, rel=1e-12)


def test_ring_exchange_chunked_share_405b(load_script, published_rows):
    probe = load_script("dense_cp_residual")
    spec = run_spec(published_rows[FSDP_ROW]["model"])
    assert probe.chunked_share(spec) == pytest.approx(264_192 / 583_680, rel=1e-9)
    assert probe.chunked_share(spec) == pytest.approx(0.45263, abs=1e-5)
