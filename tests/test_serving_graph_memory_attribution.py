"""Where vLLM 0.19's CUDA-graph estimate misses, row by row, and how finely the held-out mean is
known (issue 38's acceptance 'each memory quantity <= 5% mean, held out'; a negative result, the
model unchanged: docs/inference.md, 'Attribution and resolution').

vLLM 0.19's profile_cudagraph_memory (v1/worker/gpu_model_runner.py, v0.19.0 sdist lines
5862-5960) captures the two largest sizes of each mode, logs 'Estimated PIECEWISE / FULL CUDA graph
memory: X MiB first-capture + (n-1) x Y MiB per-graph' (line 5928) and returns max(X) + sum over
modes of (n - 1) x max(Y, 1 MiB) (lines 5942-5955). LOGGED_SPLIT holds X and Y of every scored
0.19 row, read from the log its ``source`` in serving_memory_logs.yaml names
(github.com/llm-d-incubation/llm-d-planner, commit d3121e059da88662db39a926a3ead964be97359b,
accuracy/results/v0.19.0/logs/; rank 0's lines). Putting the logs' own X or Y in place of gpuplan's
splits each row's error into its two parts: the per-graph page (Y, x 50 further sizes) and the
first capture (X).
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.serving import profile as P
from gpuplan.jobs.validation import serving_memory as V

MiB = 2**20
GiB = 2**30

LOGGED_SPLIT = {
    # id: (PIECEWISE first capture, PIECEWISE per-graph, FULL first capture, FULL per-graph), MiB
    "llmd019-codellama-7b-hf-tp1": (122, 6, 262, 6),
    "llmd019-deepseek-v2-lite-chat-tp1": (106, 10, 522, 8),
    "llmd019-kimi-vl-a3b-tp1": (106, 8, 522, 6),
    "llmd019-kimi-vl-a3b-tp2": (106, 8, 264, 8),
    "llmd019-llama-3.3-70b-fp8-dynamic-tp2": (108, 20, 268, 12),
    "llmd019-llama-3.3-70b-fp8-dynamic-tp4": (98, 18, 142, 14),
    "llmd019-qwen2.5-7b-fp8-dynamic-tp1": (108, 6, 228, 4),
    "llmd019-gemma-2-27b-it-tp1": (212, 10, 262, 8),
    "llmd019-gemma-2-2b-it-tp1": (118, 4, 134, 4),
    "llmd019-gemma-2-9b-it-tp1": (146, 6, 262, 6),
    "llmd019-llama-3.1-8b-tp1-kvfp8": (124, 6, 260, 6),
    "llmd019-llama-3.1-8b-tp1": (138, 6, 260, 6),
    "llmd019-llama-3.1-8b-tp1-qfp8": (98, 6, 260, 6),
    "llmd019-llama-3.1-8b-tp1-fp16": (138, 6, 260, 6),
    "llmd019-llama-3.1-8b-tp1-fp32": (224, 6, 4, 6),
    "llmd019-llama-3.1-8b-tp2": (96, 26, 132, 6),
    "llmd019-llama-3.1-8b-tp4": (84, 6, 70, 4),
    "llmd019-mixtral-8x7b-v0.1-tp2": (84, 6, 136, 8),
    "llmd019-kimi-dev-72b-tp2": (152, 18, 266, 10),
    "llmd019-kimi-dev-72b-tp4": (132, 16, 142, 12),
    "llmd019-gpt-oss-20b-tp2": (128, 6, 8, 6),
    "llmd019-qwen2.5-7b-tp1-kvfp8": (160, 4, 228, 4),
    "llmd019-qwen2.5-72b-tp2": (152, 18, 266, 10),
    "llmd019-qwen2.5-7b-tp1": (160, 4, 228, 4),
    "llmd019-qwen2.5-7b-tp2": (122, 4, 116, 6),
    "llmd019-qwen2.5-7b-tp4": (104, 6, 60, 6),
    "llmd019-qwen3-30b-a3b-tp1": (108, 10, 266, 10),
    "llmd019-qwen3-8b-tp1": (130, 8, 262, 4),
    "llmd019-llama-3.3-70b-quantized.w8a8-tp2": (122, 20, 268, 14),
    "llmd019-meta-llama-3.1-8b-quantized.w4a16-tp1": (126, 8, 262, 4),
    "llmd019-meta-llama-3.1-8b-quantized.w8a8-tp1": (112, 8, 262, 4),
    "llmd019-qwen2.5-7b-quantized.w8a8-tp1": (128, 6, 228, 6),
    "llmd019-gemma-3-4b-it-tp1": (112, 6, 4, 6),
    "llmd019-gemma-3-12b-it-tp1": (146, 10, 4, 8),
    "llmd019-gemma-3-27b-it-tp1": (172, 12, 8, 6),
    "llmd019-phi-4-tp1": (156, 6, 328, 4),
}


def _per_layer_mib(spec, activation_quant: bool) -> float:
    """per_graph_bytes's MiB a layer before the pages: the dense term + the MoE share + MLA + W8A8."""
    moe_share = spec.num_moe_layers / spec.num_layers if spec.moe is not None else 0.0
    return (P.GRAPH_BYTES_PER_LAYER + P.GRAPH_BYTES_PER_MOE_LAYER * moe_share
            + (P.GRAPH_BYTES_PER_MLA_LAYER if spec.attention.kv_lora_rank else 0.0)
            + (P.GRAPH_BYTES_PER_QUANT_LAYER if activation_quant else 0.0)) / MiB


def _group(e) -> str:
    if "graphs" in (e.get("fitted") or []):
        return "fitted"
    return "excluded" if "graphs" in (e.get("excluded") or {}) else "held out"


@pytest.fixture(scope="module")
def rows():
    return scored_rows()


def scored_rows() -> dict:
    """Per scored vLLM 0.19 row: its group, the logged GiB, gpuplan's estimate, gpuplan's per-graph
    sample, its larger first capture without that capture's own graph (estimate - per-graph x
    (n + nf - 1)), the sizes per mode (capture_sizes), all MiB, and the row's
    layer count."""
    mp = pytest.MonkeyPatch()
    seen = {}
    per_graph, sizes = P.per_graph_bytes, P.capture_sizes
    def per_graph_seen(spec, layers, activation_quant=False):
        seen["per_layer"] = _per_layer_mib(spec, activation_quant)
        return seen.setdefault("per", per_graph(spec, layers, activation_quant))

    mp.setattr(P, "per_graph_bytes", per_graph_seen)
    mp.setattr(P, "capture_sizes", lambda *a, **k: seen.setdefault("sizes", sizes(*a, **k)))
    out = {}
    try:
        for e in V.memory_logs():
            if not e["engine"].startswith("vllm==0.19") or "graphs_gib" not in e["logged"]:
                continue
            seen.clear()
            total = V.predicted_memory(e)[0].cuda_graphs / MiB
            n, nf = (len(s) for s in seen["sizes"])
            per = seen["per"] / MiB
            out[e["id"]] = dict(group=_group(e), logged=e["logged"]["graphs_gib"] * 1024, model=total, per=per,
                                first=total - per * (n + nf - 1), n=n, nf=nf,
                                layers=load_model(e["model"]).num_layers, per_layer=seen["per_layer"])
    finally:
        mp.undo()
    return out


def _mean_abs(rows, group, estimate) -> tuple[float, float]:
    errs = [abs(estimate(i, r) - r["logged"]) / r["logged"] * 100 for i, r in rows.items() if r["group"] == group]
    return sum(errs) / len(errs), max(errs)


def _logged_pages(i, r) -> float:
    _, pw, _, fu = LOGGED_SPLIT[i]
    return r["first"] + r["per"] + (r["n"] - 1) * pw + (r["nf"] - 1) * fu


def _logged_first(i, r) -> float:
    pw_first, _, fu_first, _ = LOGGED_SPLIT[i]
    return max(pw_first, fu_first) + r["per"] * (r["n"] + r["nf"] - 2)


def test_the_split_is_every_scored_row(rows):
    """36 rows: 10 fitted, 25 held out, 1 excluded (Llama-3.1-8B TP 2); LOGGED_SPLIT covers each."""
    groups = [r["group"] for r in rows.values()]
    assert (groups.count("fitted"), groups.count("held out"), groups.count("excluded")) == (10, 25, 1)
    assert set(rows) == set(LOGGED_SPLIT)


def test_the_logged_split_gives_the_logged_total(rows):
    """vLLM's sum, max(first captures) + (n - 1) x PIECEWISE per-graph + (nf - 1) x FULL per-graph, with
    gpuplan's captured sizes (51 a mode; gpt-oss-20b 83, its config's 1,024 limit), is the logged GiB to
    its 0.01 rounding on all 36 rows: Qwen2.5-7B TP 4, 104 + 50 x 6 + 50 x 6 = 704 MiB = 0.6875 GiB,
    logged 0.69; Llama-3.1-8B TP 1, 260 + 50 x 6 + 50 x 6 = 860 MiB = 0.840, logged 0.84."""
    for i, r in rows.items():
        assert (r["n"], r["nf"]) == ((83, 83) if "gpt-oss" in i else (51, 51)), i
        pw_first, pw, fu_first, fu = LOGGED_SPLIT[i]
        total = max(pw_first, fu_first) + (r["n"] - 1) * pw + (r["nf"] - 1) * fu
        assert total / 1024 == pytest.approx(r["logged"] / 1024, abs=0.005 + 1e-9), i


def test_the_held_out_error_is_the_per_graph_page(rows):
    """Held out (25): 5.12% as modelled (max 31.4%, Qwen2.5-7B TP 4); 0.90% (max 4.25%) with each
    log's own per-graph samples in place of gpuplan's pages; 4.69% with its own first captures in
    place of gpuplan's. Fitted (10): 3.77 / 0.38 / 3.62%. With the logs' pages the worst are first
    captures: Llama-3.1-8B fp32 +4.25% (254 MiB modelled, 224 logged), Qwen2.5-7B TP 4 -3.09% (85
    against 104), gpt-oss-20b TP 2 -2.34% (106 against 128); the 8 held-out rows beyond 5% as modelled
    all come within 3.1% once their pages are the logged ones."""
    assert _mean_abs(rows, "held out", lambda i, r: r["model"]) == pytest.approx((5.12, 31.4), abs=0.05)
    assert _mean_abs(rows, "held out", _logged_pages) == pytest.approx((0.90, 4.25), abs=0.01)
    assert _mean_abs(rows, "held out", _logged_first)[0] == pytest.approx(4.69, abs=0.01)
    assert _mean_abs(rows, "fitted", lambda i, r: r["model"])[0] == pytest.approx(3.77, abs=0.01)
    assert _mean_abs(rows, "fitted", _logged_pages)[0] == pytest.approx(0.38, abs=0.01)
    assert _mean_abs(rows, "fitted", _logged_first)[0] == pytest.approx(3.62, abs=0.01)
    beyond = [i for i, r in rows.items() if r["group"] == "held out" and abs(r["model"] / r["logged"] - 1) > 0.05]
    assert len(beyond) == 8
    assert all(abs(_logged_pages(i, rows[i]) / rows[i]["logged"] - 1) < 0.031 for i in beyond)


def test_the_worst_row_by_hand(rows):
    """Qwen2.5-7B TP 4: 28 x 0.1656 = 4.64 MiB -> 4 MiB a graph in each mode (2 pages; logged 6 and 6),
    first capture 84.75 MiB (2 x 512 tokens x 2 B x the per-rank activations, 48.75 MiB, + the 32 MiB
    cuBLAS workspace + its own 4 MiB graph; logged 104), so 84.8 + 100 x 4 = 484.8 MiB = 0.473 GiB
    against 0.69: -31.4%, of which the two pages are 200 MiB (-28.4% of 704) and the first capture 19."""
    r = rows["llmd019-qwen2.5-7b-tp4"]
    assert r["per"] == 4
    assert r["first"] + r["per"] == pytest.approx(84.75, abs=0.01)
    assert r["model"] == pytest.approx(484.8, abs=0.1)
    assert (r["model"] - r["logged"]) / r["logged"] == pytest.approx(-0.314, abs=0.001)


def test_five_percent_is_inside_the_resolution(rows):
    """The held-out mean's standard error (sample sd / sqrt 25) is 1.53 points: 5.12 +- 1.53, the 5%
    of the acceptance 0.08 standard errors below it; 20,000 bootstrap resamples of the 25 (random, seed
    0) put 95% of the means in 2.5-8.3% and half of them at or under 5%. One page (100 MiB) on one row is 100 / 704 / 25 = 0.57 points
    of the mean for Qwen2.5-7B TP 4, and without that row the 24 others score 4.04%."""
    errs = {i: abs(r["model"] - r["logged"]) / r["logged"] * 100 for i, r in rows.items() if r["group"] == "held out"}
    se = statistics.stdev(errs.values()) / math.sqrt(len(errs))
    assert se == pytest.approx(1.53, abs=0.01)
    draw = random.Random(0)
    values = list(errs.values())
    means = sorted(sum(draw.choice(values) for _ in values) / len(values) for _ in range(20000))
    assert (means[500], means[19500]) == pytest.approx((2.5, 8.3), abs=0.05)
    assert sum(m <= 5 for m in means) / len(means) == pytest.approx(0.50, abs=0.01)
    assert 100 / rows["llmd019-qwen2.5-7b-tp4"]["logged"] * 100 / 25 == pytest.approx(0.57, abs=0.01)
    rest = [e for i, e in errs.items() if i != "llmd019-qwen2.5-7b-tp4"]
    assert sum(rest) / len(rest) == pytest.approx(4.04, abs=0.01)


def _heap_samples(layers: int, a: float, b: float) -> tuple[float, float]:
    """The 'one graph heap from the first sample' reading: the driver lays the four sampled graphs
    (PIECEWISE 512, 496, then FULL 512, 496; get_capture_descs order) in one run of 2 MiB pages that
    starts empty (no CUDA graph exists before the profile), x = layers x a (PIECEWISE, its layers + 1
    piece graphs) or layers x b (FULL) MiB a graph; a second capture's sample is the pages its graph
    newly touches, at least the code's 1 MiB."""
    def ceil(x):
        return math.ceil(x / 2 - 1e-9) * 2
    xp, xf = layers * a, layers * b
    return max(ceil(2 * xp) - ceil(xp), 1.0), max(ceil(2 * xp + 2 * xf) - ceil(2 * xp + xf), 1.0)


def test_one_graph_heap_reading_scored_not_adopted(rows):
    """Both mode-split and one-run readings the docs scored before ('Pages and PyTorch's caching
    allocator' (a) and (b)) put together: per-mode constants in one page run from an empty heap. By
    hand, Qwen2.5-7B (28 layers) at a = 0.22, b = 0.135: x = 6.16 and 3.78 MiB, running sums 6.16,
    12.32, 16.10, 19.88 -> 8, 14, 18, 20 MiB of pages: samples 6 and 2 (logged 4 and 4). Fitted on the
    10 fitted rows' dense term over a grid (0.0025 MiB steps; MoE / MLA / W8A8 terms kept), its
    minimum (0.22, 0.135) scores them 1.80% and the 25 held out 10.23% (5.12% as packaged): it fits
    the fitted rows' pages and not the others'; not adopted."""
    assert _heap_samples(28, 0.22, 0.135) == (6, 2)

    def score(group, a, b):
        def est(i, r):
            extra = r["per_layer"] - P.GRAPH_BYTES_PER_LAYER / MiB
            pw, fu = _heap_samples(r["layers"], a + extra, b + extra)
            return r["first"] + r["per"] + (r["n"] - 1) * pw + (r["nf"] - 1) * fu
        return _mean_abs(rows, group, est)[0]

    grid = [(score("fitted", a / 400, b / 400), a / 400, b / 400) for a in range(40, 120) for b in range(32, 120)]
    best = min(grid)
    assert best[1:] == pytest.approx((0.22, 0.135))
    assert best[0] == pytest.approx(1.80, abs=0.01)
    assert score("held out", *best[1:]) == pytest.approx(10.23, abs=0.01)
