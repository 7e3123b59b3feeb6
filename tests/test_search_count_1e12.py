"""How many layouts `plan llama-2-7b --global-batch-tokens 1e12` evaluates, by its parts: 346,033
(tests/test_hostile_inputs_2026_12_05.py and tests/test_search_limit_one_verdict.py assert it).

The count is the enumerated layouts less the micro-batches the prune drops (planner.search.micro_batch_prefix):
a run of layouts that differ only in the micro-batch keeps its micro-batches up to and including the first that
fits in no recompute mode, and a run of fewer than MIN_PRUNED_RUN (16) choices is kept whole. The enumeration
and the runs follow from the search space's definition alone (planner/space.py module docstring,
planner/framework_rules.py RULES['megatron'], interleaved_runs), counted below without the package's code:

- the deadline search's 29 GPU counts (8, 12, 16, ..., 131,072: powers of two and 3 x powers of two);
- llama-2-7b: 32 layers, 32 heads = 32 K/V heads, sequence 4,096 (catalog); the batch 1e12 / 4,096 = 5^12 =
  244,140,625 sequences, rounded to a multiple of dp: round(5^12 / dp) a rank;
- tp in {1, 2, 4, 8} (divides the heads, within the 8-GPU node), cp a power of two <= 32 (4,096 % 2 cp == 0),
  pp any divisor of what is left up to 32, vpp 1 or, where pp > 1 divides 32, any divisor > 1 of 32 / pp;
- ZeRO (Megatron: 0, 1, 3; 3 only without a pipeline; only 0 with one data-parallel rank);
- micro-batches: every divisor of the batch a rank, and with vpp > 1 at least pp micro-batches a step.

That gives 938,378 layouts in 19,077 runs; 9,411 runs are shorter than 16 and keep all their 73,020 rows,
and each of the other 9,666 runs keeps one more row than the micro-batches of it that fit. How many fit is
the memory model's answer, not something to work by hand: checked by evaluating every row (not the prune's
galloping / bisection), 263,347 rows of the long runs fit, so 73,020 + 9,666 + 263,347 = 346,033. Exact
integers, tolerance 0.
"""

from functools import cache

import numpy as np
import pytest
from helpers import DEADLINE_COUNTS, SEARCHED_1E12

from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.planner.search import MIN_PRUNED_RUN, micro_batch_prefix
from gpuplan.planner.space import RECOMPUTE_MODES, enumerate_layouts

SEQUENCES = 5**12  # 1e12 tokens / 4,096


@cache
def _divisors(n: int) -> tuple[int, ...]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return tuple(sorted(set(small) | {n // d for d in small}))


def _run_lengths_by_definition() -> list[tuple[int, int]]:
    """(ZeRO choices, micro-batch choices) of every (GPUs, tp, cp, pp, vpp) structure, from the rules above."""
    out = []
    for gpus in DEADLINE_COUNTS:
        for tp in (t for t in (1, 2, 4, 8) if gpus % t == 0):
            for cp in (c for c in (1, 2, 4, 8, 16, 32) if (gpus // tp) % c == 0):
                for pp in (p for p in _divisors(gpus // (tp * cp)) if p <= 32):
                    dp = gpus // (tp * cp * pp)
                    vpps = (1,) + (tuple(v for v in _divisors(32 // pp) if v > 1) if pp > 1 and 32 % pp == 0 else ())
                    per_rank = max(1, round(SEQUENCES / dp))
                    zeros = 1 if dp * cp == 1 else (3 if pp == 1 else 2)
                    for vpp in vpps:
                        mbs = sum(1 for m in _divisors(per_rank) if vpp == 1 or per_rank // m >= pp)
                        out.append((zeros, mbs))
    return out


def test_the_enumeration_and_its_runs_follow_from_the_space_definition():
    runs = _run_lengths_by_definition()
    assert sum(z * m for z, m in runs) == 938_378
    assert sum(z for z, m in runs if m) == 19_077
    short = [(z, m) for z, m in runs if 0 < m < MIN_PRUNED_RUN]
    assert (sum(z for z, _ in short), sum(z * m for z, m in short)) == (9_411, 73_020)


@pytest.fixture(scope="module")
def grid():
    inputs = PlanInputs(model="llama-2-7b", global_batch_tokens="1e12", gpus=",".join(map(str, DEADLINE_COUNTS)))
    ev = evaluator_for(inputs)
    seq = inputs.seq_len
    layouts = enumerate_layouts(ev.spec, inputs.gpu_counts, seq, inputs.target_batch(seq), max_tp(ev), space_limits(inputs))
    return ev, layouts


def test_the_package_enumerates_the_same_layouts(grid):
    _, layouts = grid
    assert len(layouts["gpus"]) == 938_378
    assert set(np.unique(layouts["zero"])) == {0, 1, 3} and int(layouts["tp"].max()) == 8 and int(layouts["cp"].max()) == 32


def test_the_prune_keeps_the_fitting_micro_batches_and_one_more(grid):
    """Every row's memory evaluated once, in full recompute (the least memory of the three modes: planner/search.py
    module docstring), against the prune's galloping search: 263,347 fitting rows in the 9,666 long runs."""
    ev, g = grid
    keys = np.stack([g[k] for k in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero")])
    new_run = np.ones(len(g["gpus"]), dtype=bool)
    new_run[1:] = (keys[:, 1:] != keys[:, :-1]).any(axis=0) | (g["micro_batch"][1:] <= g["micro_batch"][:-1])
    starts = np.flatnonzero(new_run)
    lengths = np.diff(np.append(starts, len(new_run)))
    _, total, excess = ev.memory_of(g, "full")
    fits = ev.fits(total, excess)
    fitting = np.add.reduceat(fits.astype(np.int64), starts)
    position = np.arange(len(new_run)) - np.repeat(starts, lengths)
    assert np.array_equal(fits, position < np.repeat(fitting, lengths))  # the fitting rows are each run's prefix
    long = lengths >= MIN_PRUNED_RUN
    assert (int(long.sum()), int(fitting[long].sum())) == (9_666, 263_347)
    kept = np.where(long, np.minimum(fitting + 1, lengths), lengths)
    assert int(kept.sum()) == 73_020 + 9_666 + 263_347 == SEARCHED_1E12 == 346_033
    assert int(micro_batch_prefix(ev, g, RECOMPUTE_MODES).sum()) == SEARCHED_1E12
