"""Issue 38, wave 9 (2026-12-06): the held-out reference data this wave added, checked against its quotes.

One SGLang start-up log (catalog/reference/serving_memory_logs.yaml, sglang PR 4760: Llama-3.1-8B BF16 at
TP 1 under the FA3 integration test) and the list of sources looked at and not added
(inference_measurements.yaml ``excluded``). Every number below is read from the quoted log lines or worked
by hand from them; the tolerances are the log's own rounding (two decimals of a GB)."""

from __future__ import annotations

import re

import pytest

from gpuplan.jobs.validation.inference import reference_measurements
from gpuplan.jobs.validation.serving_memory import memory_logs, serving_memory_cases

ROW = "sglang4760-llama3.1-8b-fa3-tp1-h100"
REJECTED = "issue38-serving-sources-rejected-2026-12-06"
GiB = 2**30


def _row() -> dict:
    rows = [e for e in memory_logs() if e["id"] == ROW]
    assert len(rows) == 1, f"{ROW} must appear once in serving_memory_logs.yaml"
    return rows[0]


def _quoted(label: str) -> float:
    """The number after ``label`` in the row's quoted log lines, e.g. 'mem usage=15.11 GB'."""
    match = re.search(re.escape(label) + r"\s*([0-9.]+)", _row()["source"])
    assert match, f"{label!r} not quoted"
    return float(match.group(1))


def test_logged_figures_are_the_quoted_ones():
    row = _row()
    assert row["source"].startswith("https://github.com/sgl-project/sglang/pull/4760 ")
    assert row["logged"]["weights_gib"] == _quoted("mem usage=") == 15.11
    assert row["logged"]["kv_tokens"] == _quoted("#tokens:") == 442750
    # K + V: 27.02 + 27.02 = 54.04 GB (SGLang's GB is bytes / 2**30)
    assert row["logged"]["kv_gib"] == pytest.approx(_quoted("K size:") + _quoted("V size:"), abs=1e-9)
    assert row["logged"]["kv_gib"] == pytest.approx(54.04, abs=1e-9)


def test_the_taken_fraction_reproduces_the_logged_pool():
    """0.4.4's rule: pool = free after loading - (1 - fraction) x free before loading. Free before =
    63.48 + 15.11 = 78.59 GB; 63.48 - 0.12 x 78.59 = 54.049 GB against the logged 54.04 (K + V), inside
    the log's 0.01 GB rounding of three figures. At 0.87 or 0.89 it would be 53.26 or 54.84 GB."""
    row = _row()
    after, weights = _quoted("avail mem="), _quoted("mem usage=")
    before = after + weights
    assert before == pytest.approx(78.59, abs=1e-9)
    pool = after - (1 - row["mem_fraction_static"]) * before
    assert pool == pytest.approx(row["logged"]["kv_gib"], abs=0.02)
    for other in (0.87, 0.89):
        assert abs(after - (1 - other) * before - row["logged"]["kv_gib"]) > 0.5


def test_kv_bytes_per_token_are_llama_3_1_8b_s():
    """2 (K, V) x 8 KV heads x 128 x 2 bytes x 32 layers = 131,072 B a token; 54.04 GiB / 442,750 tokens =
    131,057 B (SGLang also allocates one padding slot and rounds the GB to two decimals): within 0.02%."""
    per_token = 2 * 8 * 128 * 2 * 32
    logged = _row()["logged"]
    assert logged["kv_gib"] * GiB / logged["kv_tokens"] == pytest.approx(per_token, rel=2e-4)


def test_row_is_scored_held_out_in_every_sglang_memory_kind():
    cases = [c for c in serving_memory_cases() if c[0] == ROW]
    kinds = {c[1] for c in cases}
    assert kinds == {"memory, serving (SGLang): weights (held out)",
                     "memory, serving (SGLang): available KV memory (held out)",
                     "inference: KV capacity (tokens), SGLang (held out)",
                     "inference: KV tokens in the logged KV memory, SGLang"}
    measured = {c[1]: c[2] for c in cases}
    assert measured["memory, serving (SGLang): weights (held out)"] == pytest.approx(15.11 * GiB)
    assert measured["inference: KV capacity (tokens), SGLang (held out)"] == 442750


def test_rejected_sources_are_listed_once_with_their_reasons():
    entries = [e for e in reference_measurements()["excluded"] if e["id"] == REJECTED]
    assert len(entries) == 1
    reason = entries[0]["reason"]
    for source in ("QwenLM/Qwen3", "LambdaLabsML/vllm-benchmark", "InferenceX", "sgl-cookbook",
                   "docs_new/src/snippets/configs", "kvcached", "sglang PR 18263", "sglang PR 4826"):
        assert source in reason, source
