"""Public vLLM / SGLang speed rows (issue 38 point 3): counts, the inclusion criterion applied to every
row, the quoted numbers read as the sources print them, and one row's inputs worked by hand.

Rows: catalog/reference/inference_measurements.yaml, sections latency / online / excluded.
"""

from __future__ import annotations

import pytest
from helpers import serving_cases_by_id as _cases
from helpers import serving_rows_by_id as _rows

from gpuplan.jobs.validation import inference as I

NEW_LATENCY = {  # id -> seconds, as vLLM PR 2192's table prints them (L before / L after)
    "vllm2192-llama2-70b-tp4-a100-bs64-nccl": 16.37,
    "vllm2192-llama-33b-tp2-a100-bs64-nccl": 15.88,
    "vllm2192-llama-33b-tp2-a100-bs64": 14.38,
}
WMX = "wmx-vllm023-qwen2.5-0.5b-l4-256-128-c1"


def test_row_counts_per_engine():
    latency, online = _rows("latency"), _rows("online")
    vllm_latency = [i for i, e in latency.items() if e["release"].startswith("vllm")]
    vllm_online = [i for i, e in online.items() if e["release"].startswith("vllm")]
    sglang = [i for s in ("latency", "online") for i, e in _rows(s).items() if e["release"].startswith("sglang")]
    assert len(vllm_latency) == 12  # PR 2192: 70B after (earlier) + 70B before, 33B before and after; PR 23197: 8
    assert sum(i.startswith("vllm23197-") for i in vllm_latency) == 8
    # + GPUStack's vLLM 0.11.0 Qwen3-8B run and vllm#20469 (tests/test_serving_reference_rows.py)
    assert sorted(vllm_online) == sorted([WMX, "gpustack-vllm0110-qwen3-8b-h100-sharegpt-c1",
                                          "vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager"])
    # the SGLang cookbook's five concurrency-1 runs and sgl-cookbook's three base-model runs
    # (tests/test_sglang_speed_rows.py), its DeepSeek-R1-0528 (3) and gpt-oss-120b (1) runs
    # (tests/test_serving_reference_rows.py); the earlier empty search stays recorded as an excluded entry
    assert len(sglang) == 12 and all(i.startswith("sglang056") for i in sglang)
    excluded = {e["id"] for e in I.reference_measurements()["excluded"]}
    assert {"vllm2192-llama-13b-a30-and-llama-7b-t4", "vllm1805-llama2-7b-a10g-tp4",
            "musgrave-vllm023-llama3.1-8b-a100-40gb", "sglang-speed-none-met"} <= excluded


@pytest.mark.parametrize("row_id", [*NEW_LATENCY, WMX, "vllm23197-llama3.3-70b-tp4-h100-bf16-bs16"])
def test_every_new_row_states_what_the_criterion_asks(row_id):
    e = {**_rows("latency"), **_rows("online")}[row_id]
    for field in ("release", "model", "gpu", "tp", "quantization", "prompt_tokens", "output_tokens", "source"):
        assert e.get(field) not in (None, ""), field
    assert "batch" in e or e.get("concurrency") == 1
    assert e["source"].startswith("https://")


def test_quoted_numbers_are_the_measured_values():
    cases = _cases()
    for row_id, seconds in NEW_LATENCY.items():
        assert cases[row_id][2] == pytest.approx(seconds, abs=1e-9)
        assert cases[row_id][1] == I.KIND_LATENCY
    assert cases[WMX + "-ttft"][2] == pytest.approx(0.0270, abs=1e-9)
    assert cases[WMX + "-tpot"][2] == pytest.approx(0.0051, abs=1e-9)
    assert cases[WMX + "-ttft"][1] == I.KIND_ONLINE_TTFT_VLLM and "vLLM" in I.KIND_ONLINE_TTFT_VLLM
    assert cases[WMX + "-tpot"][1] == I.KIND_ONLINE_TPOT_VLLM and "vLLM" in I.KIND_ONLINE_TPOT_VLLM
    # PR 23197 (BF16 baseline, 256 in / 32 out): 8B tp 1 and 70B tp 4 at batch 1 / 4 / 8 / 16, its own kind
    quoted = {"llama3.1-8b-tp1": (0.236, 0.260, 0.284, 0.336), "llama3.3-70b-tp4": (0.558, 0.629, 0.700, 0.855)}
    for tag, seconds in quoted.items():
        for batch, value in zip((1, 4, 8, 16), seconds):
            case = cases[f"vllm23197-{tag}-h100-bf16-bs{batch}"]
            assert case[2] == pytest.approx(value, abs=1e-9)
            # the 8B rows set Efficiency.graph_layer_s (fitted); the 70B TP 4 rows stay held out
            assert case[1] == (I.KIND_LATENCY_FITTED if "8b" in tag else I.KIND_LATENCY_GPU_UNSTATED)
    # the NIM rows keep their own (TensorRT-LLM) kinds
    assert cases["nim180-llama3.3-70b-fp8-tp2-h100-5000-500-c1-ttft"][1] == I.KIND_ONLINE_TTFT


def test_llama_33b_config_read_as_llama1_33b_by_hand():
    """LLaMA-1 33B at tp 2 in fp16: per layer 4 x 6656^2 (attention) + 3 x 6656 x 17920 (gated MLP) =
    535,035,904 weights, x 60 = 32,102,154,240; embeddings + LM head 2 x 32,000 x 6,656 = 425,984,000;
    sharded over 2 GPUs at 2 bytes -> 32,528,138,240 B; the 121 RMSNorm vectors (2 per layer + final)
    are replicated on each GPU: 121 x 6,656 x 2 B = 1,610,752 B. Total 32,529,748,992 B per GPU."""
    from gpuplan.core.serving import weights as W

    e = _rows("latency")["vllm2192-llama-33b-tp2-a100-bs64-nccl"]
    spec = I._model_of(e)
    assert (spec.hidden_size, spec.num_layers, spec.attention.num_kv_heads) == (6656, 60, 52)
    per_gpu = W.weight_bytes_per_gpu(W.param_groups(spec), I._format(e), spec.num_layers, e["tp"], 1)
    assert per_gpu == pytest.approx(32_528_138_240 + 1_610_752, rel=1e-9)


def test_l4_tpot_prediction_is_above_the_weight_read_floor():
    """Batch-1 decode of Qwen2.5-0.5B in bf16 reads at least its 494,032,768 weights x 2 B = 0.988 GB
    per token; at the L4's 300 GB/s that is 3.29 ms, below the measured 5.1 ms median ITL."""
    from gpuplan.catalog import load_accelerator, load_model
    from gpuplan.core.serving.weights import count_parameters

    # Qwen2.5-0.5B's config (h 896, 24 layers, 14 query + 2 KV heads of 64 with q/k/v biases, MLP 4,864, vocab
    # 151,936, tied): embedding 151,936 x 896 = 136,134,656; attention 24 x (2 x 896^2 + 2 x 896 x 128 + 896 +
    # 2 x 128) = 44,067,840; MLP 24 x 3 x 896 x 4,864 = 313,786,368; norms (2 x 24 + 1) x 896 = 43,904
    assert count_parameters(load_model("qwen2.5-0.5b")).active == 494_032_768
    assert load_accelerator("l4").memory_bandwidth == 300e9  # catalog/hardware/l4.toml (its sources: 300 GB/s)
    predicted = _cases()[WMX + "-tpot"][3]
    floor = 494_032_768 * 2 / 300e9
    assert floor == pytest.approx(3.294e-3, rel=1e-3)
    assert predicted >= floor
