"""Two refusals made cheaper without changing an answer (helper S, s22): the smallest common cluster size that fits
(planner.plan.smallest_fitting_count through planner.fit_count.counts_that_fit, which evaluates only the rows that
decide the pruned search's answer) and the largest batch a no-completion refusal offers (jobs.plan.completes.
largest_aligned, which aligns the largest raw bounds first). Each is checked against the computation it replaced,
run here in full: the same counts, the same batch, exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import gpuplan.planner.fit_count as fit_count
import gpuplan.planner.plan as plan_module
from gpuplan.jobs.plan.completes import _aligned, largest_aligned
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.planner.search import MIN_PRUNED_RUN, micro_batch_runs, search_layouts


def _all_rows_aligned(best, ever, granule) -> float:
    """The rule largest_aligned replaced: every row aligned, the largest kept."""
    grains = np.broadcast_to(granule, best.shape)
    aligned = np.array([_aligned(float(b), int(g)) for b, g in zip(best, grains)])
    return float(aligned[ever].max(initial=0.0))


@pytest.mark.parametrize("seed", range(40))
def test_largest_aligned_is_every_row_aligned(seed):
    """Random bounds (tokens) with inf, NaN, 0 and negatives, granules per row and one for all: the same float."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300)) if seed % 4 else int(rng.integers(300, 3000))
    best = 10 ** rng.uniform(2, 13, n)
    special = rng.random(n)
    best[special < 0.05] = np.inf
    best[(special >= 0.05) & (special < 0.08)] = np.nan
    best[(special >= 0.08) & (special < 0.12)] = 0.0
    best[(special >= 0.12) & (special < 0.14)] = -5.0
    ever = rng.random(n) < 0.8
    for granule in (rng.integers(1, 10**7, n) * int(rng.choice([1, 8, 4096])), int(rng.integers(1, 10**6))):
        assert largest_aligned(best, ever, granule) == _all_rows_aligned(best, ever, granule)


def test_largest_aligned_stops_at_a_bound_no_row_beats():
    """1e9 tokens on a granule of 1 aligns to 1e9 itself, so the row of 9.99e8 after it is not aligned and the other
    1e9 adds nothing; inf aligns to 0. By hand: 1,234,567 tokens on a granule of 1,000 -> three digits, a multiple of
    lcm(1,000, 10^4): 1,230,000, within one third-digit unit of the three-digit floor 1,230,000 (the fewest digits)."""
    assert _aligned(1_234_567.0, 1_000) == 1_230_000.0  # the three-digit floor is within one unit of itself
    best = np.array([1e9, 9.99e8, 1e9, np.inf])
    assert largest_aligned(best, np.ones(4, dtype=bool), 1) == 1e9
    assert largest_aligned(best, np.array([False, True, False, True]), 1) == 9.99e8
    assert largest_aligned(np.zeros(0), np.zeros(0, dtype=bool), 7) == 0.0


def _fitting_by_search(ev, counts, target, limits) -> list[int]:
    rows = search_layouts(ev, counts, target, max_tp(ev), limits)
    return sorted(set(rows["gpus"][rows["fits"]].tolist())) if len(rows) else []


ASKS = [  # (inputs, counts): some counts fit, some do not; a batch with long runs of micro-batches; one mode only
    (dict(model="llama-3.1-70b", tokens="1e12", gpu="h100"), (1, 2, 4, 8, 16, 24, 48)),
    (dict(model="llama-3.1-8b", tokens="1e12", gpu="l4", global_batch_tokens="1e9"), (1, 2, 3, 4, 8, 12)),
    (dict(model="llama-3.1-405b", tokens="1e12", gpu="h100", recompute="full"), (8, 16, 32, 64, 96, 128, 256)),
    (dict(model="mixtral-8x7b", tokens="1e12", gpu="a100", seq_len=32768), (2, 4, 8, 16, 32)),
]


@pytest.mark.parametrize("ask,counts", ASKS)
def test_counts_that_fit_are_the_searchs(ask, counts):
    inputs = PlanInputs(**ask)
    ev, limits = evaluator_for(inputs), space_limits(inputs)
    target = inputs.target_batch(inputs.seq_len)
    expected = _fitting_by_search(ev, counts, target, limits)
    got = fit_count.counts_that_fit(ev, counts, target, max_tp(ev), limits)
    assert got is not None and got.tolist() == expected
    assert 0 < len(expected) < len(counts)  # each case mixes counts that fit and counts that do not


def test_the_deciding_rows_are_short_runs_whole_and_the_ends_of_long_ones():
    """Runs of lengths 3, MIN_PRUNED_RUN and 1: every row of the first and last, rows 0 and MIN_PRUNED_RUN - 1 of
    the second."""
    lengths = (3, MIN_PRUNED_RUN, 1)
    mb = np.concatenate([np.arange(1, k + 1) for k in lengths])
    grid = {k: np.zeros(len(mb), dtype=np.int64) for k in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero",
                                                            "global_batch")} | {"micro_batch": mb}
    starts, runs = micro_batch_runs(grid)
    assert starts.tolist() == [0, 3, 3 + MIN_PRUNED_RUN] and runs.tolist() == list(lengths)
    assert fit_count.deciding_rows(grid).tolist() == [0, 1, 2, 3, 3 + MIN_PRUNED_RUN - 1, 3 + MIN_PRUNED_RUN]


def _deep_model(tmp_path) -> str:
    """tests/test_hostile_w23b.py's 16,384-wide, 10,000-deep Llama (~3.2e13 parameters)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248,
        "num_attention_heads": 128, "num_key_value_heads": 8, "num_hidden_layers": 10000, "vocab_size": 128256,
        "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}), encoding="utf-8")
    return str(path)


def test_the_smallest_fitting_count_needs_no_search_and_is_the_searchs(tmp_path, monkeypatch):
    """The deep model on 1,024 H100s: the counts up to 64x (planner.plan.larger_counts) searched in full give the same
    smallest fitting count as counts_that_fit, and smallest_fitting_count runs no search_layouts for it."""
    inputs = PlanInputs(model=_deep_model(tmp_path), tokens="1e18", gpu="h100", gpus="1024")
    ev, limits = evaluator_for(inputs), space_limits(inputs)
    target = inputs.target_batch(inputs.seq_len)
    full = _fitting_by_search(ev, plan_module.larger_counts(1024), target, limits)
    assert full, "some common size up to 64x fits"

    def no_search(*args, **kwargs):
        raise AssertionError("search_layouts ran")

    monkeypatch.setattr(plan_module, "search_layouts", no_search)
    assert plan_module.smallest_fitting_count(ev, 1024, target, max_tp(ev), limits) == full[0]


def test_past_the_evaluated_limit_the_search_decides(monkeypatch):
    """Where the grid has more rows than MAX_EVALUATED, counts_that_fit leaves it to search_layouts (which may
    refuse for size after pruning, or not): None, and smallest_fitting_count's answer is the search's."""
    inputs = PlanInputs(model="llama-3.1-70b", tokens="1e12", gpu="h100")
    ev, limits = evaluator_for(inputs), space_limits(inputs)
    target = inputs.target_batch(inputs.seq_len)
    expected = plan_module.smallest_fitting_count(ev, 2, target, max_tp(ev), limits)
    monkeypatch.setattr(fit_count, "MAX_EVALUATED", 0)
    assert fit_count.counts_that_fit(ev, (4, 8), target, max_tp(ev), limits) is None
    assert plan_module.smallest_fitting_count(ev, 2, target, max_tp(ev), limits) == expected
    assert expected is not None and math.log2(expected) % 1 in (0, math.log2(3) % 1)  # a common size: 2^k or 3 x 2^k
