"""The concurrency-1 serving rows added for issue 38 on 2026-12-05 (catalog/reference/
inference_measurements.yaml ``online:``): each row's measured numbers are the ones its quote prints,
its lengths are the ones the quoted totals give, and it names a source page and an engine release.

Hand-checked against the pages: the SGLang cookbook's DeepSeek-R1.md and GPT-OSS.md (sgl-cookbook
@7b5bd9c0) and GPUStack's performance-lab qwen3-8b/h100-latency.md (gpustack @47277d79); vllm#20469."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import serving_cases_by_id

from gpuplan.core.serving.releases import parse_release
from gpuplan.jobs.validation.inference import reference_measurements

# id -> (release, mean TTFT ms, mean TPOT ms) as printed in the quoted result blocks
ADDED = {
    "sglang056p1-deepseek-r1-0528-tp8-b200-1000-1000-c1": ("sglang==0.5.6.post1", 153.00, 9.16),
    "sglang056p1-deepseek-r1-0528-tp8-b200-1000-8000-c1": ("sglang==0.5.6.post1", 125.76, 9.21),
    "sglang056p1-deepseek-r1-0528-tp8-b200-8000-1000-c1": ("sglang==0.5.6.post1", 165.91, 9.26),
    "sglang056-gpt-oss-120b-tp8-b200-sharegpt-c1": ("sglang==0.5.6", 33.71, 2.31),
    "gpustack-vllm0110-qwen3-8b-h100-sharegpt-c1": ("vllm==0.11.0", 59.01, 7.28),
    "vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager": ("vllm==0.9.1", 3345.37, 20.63),
}


def _rows() -> dict[str, dict]:
    return {row["id"]: row for row in reference_measurements()["online"] if row["id"] in ADDED}


def _quoted(source: str, label: str) -> float:
    """The number after ``label`` in a quoted result line, e.g. 'Mean TTFT (ms): 153.00'."""
    match = re.search(re.escape(label) + r":\s*([0-9.]+)'", source)
    assert match, f"{label!r} not quoted in {source[:80]}..."
    return float(match.group(1))


def test_every_added_row_is_in_the_reference_set_once():
    ids = [row["id"] for row in reference_measurements()["online"]]
    assert all(ids.count(name) == 1 for name in ADDED)


@pytest.mark.parametrize("name", sorted(ADDED))
def test_row_numbers_round_trip_from_its_quote(name):
    row = _rows()[name]
    release, ttft, tpot = ADDED[name]
    assert row["release"] == release and parse_release(release).engine == release.split("==")[0]
    url = row["source"].split()[0]  # a page at a commit, or an issue thread
    assert url.startswith("https://github.com/") and ("/blob/" in url or "/issues/" in url)
    assert (row["measured_ttft_ms"], row["measured_tpot_ms"]) == (ttft, tpot)
    assert _quoted(row["source"], "Mean TTFT (ms)") == ttft
    assert _quoted(row["source"], "Mean TPOT (ms)") == tpot
    assert row["statistic"] == "mean" and row["concurrency"] == 1


@pytest.mark.parametrize("name", [n for n in sorted(ADDED) if "deepseek" in n])
def test_seeded_requests_sum_to_the_quoted_totals_and_match_numpy_seed_1(name):
    """bench_serving's random dataset at --seed 1 and range ratio 0: prompt lengths
    randint(1, in + 1), output lengths randint(0, out + 1), 10 each (sglang 0.5.3
    bench_serving.py L1155-1164); the quoted totals are 'Total input / generated tokens'."""
    row = _rows()[name]
    np.random.seed(1)
    prompts = np.random.randint(1, row["prompt_tokens"] + 1, size=10).tolist()
    outputs = np.random.randint(0, row["output_tokens"] + 1, size=10).tolist()
    assert [list(pair) for pair in row["requests"]] == [list(pair) for pair in zip(prompts, outputs)]
    assert sum(prompts) == _quoted(row["source"], "Total input tokens")
    assert sum(outputs) == _quoted(row["source"], "Total generated tokens")


@pytest.mark.parametrize("name", [n for n in sorted(ADDED) if "sharegpt" in n])
def test_sharegpt_rows_take_the_mean_lengths_of_100_requests(name):
    row = _rows()[name]
    assert "'Successful requests: 100'" in row["source"]
    assert row["prompt_tokens"] == round(_quoted(row["source"], "Total input tokens") / 100)
    assert row["output_tokens"] == round(_quoted(row["source"], "Total generated tokens") / 100)
    assert "requests" not in row and "lengths_note" in row


def test_fixed_length_row_is_the_quoted_totals_over_30_requests():
    """vllm#20469: 30 random prompts at the default range ratio, every one 16,000 / 200 tokens;
    the run is eager (--enforce-eager), which the row states."""
    row = _rows()["vllm20469-qwen3-14b-awq-a100pcie-16000-200-c1-eager"]
    assert 30 * row["prompt_tokens"] == _quoted(row["source"], "Total input tokens") == 480000
    assert 30 * row["output_tokens"] == _quoted(row["source"], "Total generated tokens") == 6000
    assert row["enforce_eager"] is True and "--enforce-eager" in row["engine"]
    assert "'GPU 0: NVIDIA A100 80GB PCIe'" in row["source"] and row["gpu"] == "a100-pcie-80gb"


def test_added_rows_are_scored_as_held_out_ttft_and_tpot():
    cases = serving_cases_by_id()
    for name, (_, ttft, tpot) in ADDED.items():
        assert cases[name + "-ttft"][2] == pytest.approx(ttft / 1e3)
        assert cases[name + "-tpot"][2] == pytest.approx(tpot / 1e3)
        assert "held out" in cases[name + "-ttft"][1] and "fitted" not in cases[name + "-tpot"][1]
        assert cases[name + "-tpot"][3] > 0
