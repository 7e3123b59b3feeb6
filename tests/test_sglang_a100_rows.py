"""The two SGLang cookbook rows on '8x A100' (Llama-3.1-70B TP 8, sglang 0.5.6; issue 38): what the sources
say about the GPU's memory and the benchmark client, checked against the rows' own text, and the two readings
of the unstated memory worked by hand.

Evidence read (2026-12-06): the cited page (sgl-project/sglang@0fbab45d docs_new/cookbook/autoregressive/Llama/
Llama3.1.mdx) says 'Hardware: NVIDIA A100 GPU (8x)' and prints no memory, log line, nvidia-smi or instance
type. Its source, sgl-project/sgl-cookbook's docs/autoregressive/Llama/Llama3.1.md: the author's benchmark
commit d1f61668 (2025-12-28) prints the same results under 'python3 -m sglang.bench_serving \\ --backend
sglang' and 'python -m sglang.launch_server \\ --model Meta-Llama/Llama-3.1-70B \\ --tp 8'; commit 8e0a60fd
('update server command', 2026-01-09, another committer) rewrote every command, the benchmark's too, to
'sglang serve'. Nothing there settles 40 or 80 GB: 80 GB stays taken, and the rows say so with both readings.

Rows: catalog/reference/inference_measurements.yaml, section online.
"""

from __future__ import annotations

import re

import pytest
from helpers import serving_rows_by_id as _rows

from gpuplan.catalog import load_accelerator
from gpuplan.jobs.validation import inference as I

ROWS = ("sglang056-llama3.1-70b-tp8-a100-1000-1000-c1", "sglang056-llama3.1-70b-tp8-a100-8000-1000-c1")
AUTHOR_COMMIT = "d1f61668ac83592787c9a1d4044f2d15ff497c4a"  # sgl-cookbook, Kartik Ramesh, 2025-12-28
REWRITE_COMMIT = "8e0a60fdff72e5c59a4a777677b8e3d2f90ad29f"  # sgl-cookbook, 'update server command'
BW_40, BW_80 = 1.555e12, 2.039e12  # A100 SXM4 40 GB / 80 GB HBM bytes/s (the catalog's, as the notes quote)
READ_WEIGHTS = 69_503_033_344  # Llama-3.1-70B parameters less the input embedding (128,256 x 8,192)
BW_EFF = 0.85  # gpuplan's HBM fraction for weight GEMMs (`gpuplan infer` prints it)


@pytest.mark.parametrize("row_id", ROWS)
def test_the_client_is_bench_serving_as_the_authors_commit_prints_it(row_id):
    """The page's 'sglang serve --backend sglang ...' is the rewrite; the author ran sglang.bench_serving,
    whose warm-up request the TTFT scoring relies on (inference._warm_first reads 'bench_serving')."""
    e = _rows("online")[row_id]
    assert "python3 -m sglang.bench_serving --backend sglang" in e["engine"]
    assert "python -m sglang.launch_server --model Meta-Llama/Llama-3.1-70B --tp 8" in e["engine"]
    assert AUTHOR_COMMIT in e["engine"] and REWRITE_COMMIT in e["engine"]
    assert I._warm_first(e)


@pytest.mark.parametrize("row_id", ROWS)
def test_the_memory_stays_taken_and_the_row_says_both_readings(row_id):
    e = _rows("online")[row_id]
    assert (e["gpu"], e["gpu_stated"]) == ("a100-sxm4-80gb", False)
    note = e["gpu_note"]
    assert "not stated" in note and AUTHOR_COMMIT in note
    assert "1.555 TB/s, 24% less than 2.039" in note and "31% longer" in note
    # the note's figures: 1 - 1.555 / 2.039 = 23.7%; 2.039 / 1.555 = 1.311
    assert 1 - BW_40 / BW_80 == pytest.approx(0.24, abs=0.005)
    assert BW_80 / BW_40 == pytest.approx(1.31, abs=0.005)
    assert load_accelerator("a100-sxm4-40gb").memory_bandwidth == pytest.approx(BW_40)
    assert load_accelerator("a100-sxm4-80gb").memory_bandwidth == pytest.approx(BW_80)


def test_the_two_readings_by_hand():
    """One batch-1 decode step's weight read, per GPU of 8: 69,503,033,344 x 2 B / 8 = 17.376 GB; at 80 GB
    / (2.039e12 x 0.85) = 10.0255 ms, at 40 GB / (1.555e12 x 0.85) = 13.1460 ms (+3.12 ms). The rest of the
    1000/1000 row's mean step is the same on both (test_sglang_speed_rows: FLOPs 69.6 us x 0.75 = 52.2 us,
    floor 4.0 ms, all-reduces 1.2991 ms) but for the KV read, 40,960 B x 820.6 tokens / (BW x 0.95):
    17.4 us at 80 GB, 22.8 us at 40 GB. Mean TPOT: 15.394 ms (80 GB) and 18.520 ms (40 GB) with that floor; since
    w17 ME the floor is 80 x 46.933 us = 3.7547 ms (graph_floor.GRAPH_KERNEL_S: 1.6 ms / 375 kernels x 11), + the 20
    kernels outside the layers (20 x 4.2667 = 85.33 us), the embedding's all-reduce (8.119 us) and the logits
    all-gather (NCCL, 256,512 B over 8 A100s: 13.36 us), 106.81 us (outside_layers): 15.2555 / 18.3815 ms."""
    e = _rows("online")[ROWS[0]]
    read = READ_WEIGHTS * 2 / 8
    hand = {"a100-sxm4-80gb": (read / (BW_80 * BW_EFF), 15.2555e-3),
            "a100-sxm4-40gb": (read / (BW_40 * BW_EFF), 18.3815e-3)}
    assert hand["a100-sxm4-80gb"][0] == pytest.approx(10.0255e-3, rel=1e-4)
    assert hand["a100-sxm4-40gb"][0] == pytest.approx(13.1460e-3, rel=1e-4)
    for gpu, (weights_s, tpot_s) in hand.items():
        _, decode = I._served_request({**e, "gpu": gpu}, 961, 276)
        assert decode.memory_s == pytest.approx(weights_s, rel=1e-3)
        tpot = {c[0]: c for c in I._online_cases({**e, "gpu": gpu})}[ROWS[0] + "-tpot"][3]
        assert tpot == pytest.approx(tpot_s, rel=2e-3)


def test_the_notes_errors_are_the_models_for_each_reading():
    """The gpu_note quotes TPOT's error under each reading ('TPOT -0.5 / -0.9% against -17.3 / -17.7% at
    80 GB'); they must stay what validate computes (within 1 point), or the note is stale."""
    note = _rows("online")[ROWS[0]]["gpu_note"]
    m = re.search(r"TPOT (-?[\d.]+) / (-?[\d.]+)% against (-?[\d.]+) / (-?[\d.]+)% at 80 GB", note)
    assert m, "gpu_note lost its sized sentence"
    quoted = {"a100-sxm4-40gb": (float(m[1]), float(m[2])), "a100-sxm4-80gb": (float(m[3]), float(m[4]))}
    rows = _rows("online")
    for gpu, errors in quoted.items():
        for row_id, quoted_error in zip(ROWS, errors):
            case = {c[0]: c for c in I._online_cases({**rows[row_id], "gpu": gpu})}[row_id + "-tpot"]
            assert 100 * (case[3] / case[2] - 1) == pytest.approx(quoted_error, abs=1.0), (gpu, row_id)
