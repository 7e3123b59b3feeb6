"""CPU activation offloading as Megatron-Core + TE run it (core/time/activation_offload.py)."""

from dataclasses import replace

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time import activation_offload as AO
from gpuplan.core.time.step import StepSettings, step_time
from gpuplan.jobs.validation.published_throughput import published_throughput_rows


def test_llama3_70b_offloaded_bytes_by_hand():
    """Llama 3 70B (h = q = 8,192, 8 KV heads x 128, I = 28,672, 64 heads), FP8 GEMM inputs, tp 1:
    two norms x (2 B input + 1 B ln_out + 4 B rsigma) = 6h + 8; q, k, v, output in bf16
    2 x (8,192 + 1,024 + 1,024 + 8,192) + 64 x 4 B of softmax statistics; proj and fc2 inputs
    1 B x (8,192 + 28,672). 49,160 + 37,120 + 36,864 = 123,144 B per token."""
    spec = load_model("llama-3-70b")
    assert AO.offloaded_bytes_per_token(spec, "fp8") == pytest.approx(123_144)
    assert AO.offloaded_bytes_per_token(spec, "fp8", tp=2) == pytest.approx(123_144 / 2)
    # bf16 saves the two norm outputs and the two row-parallel inputs at 2 B: + 2h + 8,192 + 28,672
    assert AO.offloaded_bytes_per_token(spec, "bf16") == pytest.approx(123_144 + 2 * 8192 + 8192 + 28_672)


def test_host_links():
    assert AO.host_link_bytes_per_s("gb200") == pytest.approx(225e9)  # 900 GB/s bidirectional, 2 GPUs
    assert AO.host_link_bytes_per_s("b200") == pytest.approx(64e9)  # PCIe Gen5 x16, one direction


def test_layer_windows_follow_te_layer_window_map():
    """TE v2.9 layer_window_map: 40 of 80 layers -> window ends 1, 3, 5, ... (group 0 hides behind
    layer 1, the others behind two layers); 95 of 126 -> the 31-layer remainder gives the first 31
    groups two layers (group 0 one), the rest one; every window together spans layers 1 .. L - 1."""
    assert AO.layer_windows(40, 80) == [1] + [2] * 39
    assert AO.layer_windows(5, 80) == [15, 16, 16, 16, 16]
    assert AO.layer_windows(95, 126) == [1] + [2] * 30 + [1] * 64
    assert sum(AO.layer_windows(20, 80)) == 79


def test_exposed_part_by_hand():
    """10 ms copies, 4 ms forward and 8 ms backward per layer, 5 of 20 layers offloaded (windows
    3, 4, 4, 4, 4): forward waits 10 - 12 -> 0 for group 0 ... nothing; at 1 ms / 2 ms per layer:
    forward 7 + 4 x 6 = 31 ms, backward 4 + 4 x 2 = 12 ms."""
    assert AO.exposed_seconds(5, 20, 0.010, 0.004, 0.008) == pytest.approx(0.0)
    assert AO.exposed_seconds(5, 20, 0.010, 0.001, 0.002) == pytest.approx(0.031 + 0.012)
    assert AO.exposed_seconds(0, 20, 0.010, 0.001, 0.002) == 0.0
    # N not below the layers: Megatron-Core refuses the run, so no finite step (elementwise on arrays)
    assert AO.exposed_seconds(20, 20, 0.010, 0.001, 0.002) == float("inf")


def test_step_charges_only_what_the_layers_do_not_hide():
    """Llama 3 70B on a B200 with 8 of 80 layers offloaded at micro-batch 1: each 1.01 GB copy
    over PCIe (15.8 ms) hides behind ten layers; on an 8-layer model with 7 offloaded, one layer
    per window, the step grows."""
    spec = load_model("llama-3-70b")
    cluster = cluster_for(load_accelerator("b200"))
    base = StepSettings(seq_len=8192, dtype="fp8")
    plain = step_time(spec, cluster, base, dp=8, micro_batch=1, micro_batches=2).total
    hidden = step_time(spec, cluster, replace(base, offload_layers=8), dp=8, micro_batch=1, micro_batches=2).total
    assert hidden == pytest.approx(plain, rel=1e-12)
    small = replace(spec, num_layers=8)
    a = step_time(small, cluster, base, dp=8, micro_batch=1, micro_batches=2).total
    b = step_time(small, cluster, replace(base, offload_layers=7), dp=8, micro_batch=1, micro_batches=2).total
    assert b > a


def test_reference_rows_state_their_offloading_with_a_source():
    rows = [r for r in published_throughput_rows() if r.get("cpu_offloading_num_layers")]
    assert len(rows) == 12
    for r in rows:
        assert r["layout"]["pp"] == 1  # Megatron-Core refuses offloading with a pipeline
        assert "cpu_offloading_num_layers" in r["derived"]["cpu_offloading_num_layers"]
    by_id = {r["id"]: r["cpu_offloading_num_layers"] for r in rows}
    assert by_id["mbridge-26.04.01-llama-3-70b-gb200-64g-fp8cs"] == 40
    assert by_id["mbridge-26.04.01-llama-3-70b-gb300-64g-fp8cs"] == 20
    assert by_id["mbridge-25.09-llama-3.1-405b-gb200-128g-fp8cs"] == 95
