"""Slow valid asks of wave 15 (helper W4): an MoE deadline under an exact global batch (`plan qwen3-30b-a3b --gpu
h100 --tokens 2T --global-batch 1000 --days 120`: ~3.07 M layout rows, ~760 GPU counts) spent its time in work
that grew with the rows x the counts, made linear without changing an answer:

1. planner.pareto._beaten_in_group: one stable sort by the first objective, then each value's run of rows, not a
   `first == value` pass over every row per distinct value. Checked here against that per-value pass (kept below
   as the reference) on tables with ties, NaN in every column and -0.0 beside 0.0; and the front with the
   prefilter against the front without it (planner.pareto._front on every row).
2. planner.fallback.rows_by_count: one gather in count order, each count's rows a slice of it, not one gather per
   count. Checked against the per-count gather.
3. planner.fallback.with_fallbacks: a group of smaller counts serves many asked counts; its rows are gathered once.
   Checked on a real ask whose fallback groups repeat (gpt2-xl, a prime batch of 7, a one-day deadline: 13 asked
   counts wait on 74 groups, 26 distinct), its answer pinned to the numbers the code before the change printed.

`gpuplan validate --json` was byte-identical before and after, and so were the --json answers of the profiled asks
(but their own search timings); docs/performance.md ('Slow asks: an MoE deadline under an exact batch') has the
seconds.
"""

import contextlib
import io
import json

import numpy as np
import pytest

from gpuplan.cli import main
from gpuplan.planner import pareto as P
from gpuplan.planner.fallback import rows_by_count
from gpuplan.planner.search import LayoutTable


def _beaten_reference(values: np.ndarray) -> np.ndarray:
    """planner.pareto._beaten_in_group as it was before wave 15 W4: a pass over every row per distinct value."""
    beaten = np.zeros(len(values), dtype=bool)
    first = values[:, 0]
    for value in np.unique(values[:, 0]):
        rows = np.flatnonzero(first == value)
        best = rows
        for column in range(1, values.shape[1]):
            part = values[best, column]
            best = best[part == part.min()] if len(best) else best
        if len(best):
            beaten[rows] = np.all(values[rows, 1:] >= values[best[0], 1:], axis=1) & (rows != best[0])
    return beaten


def _table(seed: int, rows: int, columns: int, nan_share: float) -> np.ndarray:
    """Few-valued objectives (many ties, the first a GPU count), NaN in a share of every column, -0.0 beside 0.0."""
    rng = np.random.default_rng(seed)
    values = np.column_stack([rng.choice([-0.0, 0.0, 8.0, 16.0, 24.0, 1024.0], rows)]
                             + [rng.integers(0, 6, rows).astype(float) for _ in range(columns - 1)])
    values[rng.random(values.shape) < nan_share] = np.nan
    return values


@pytest.mark.parametrize("columns", [2, 3])
@pytest.mark.parametrize("nan_share", [0.0, 0.002, 0.05])
def test_beaten_in_group_equals_the_per_value_pass(columns, nan_share):
    for seed in range(4):
        values = _table(seed, 3_000, columns, nan_share)
        reference = _beaten_reference(values)
        assert np.array_equal(P._beaten_in_group(values), reference)
        if nan_share == 0.0:  # without NaN the per-value best beats something in most groups: not a vacuous check
            assert reference.sum() > 1_000


@pytest.mark.parametrize("columns", [2, 3])
def test_front_with_the_prefilter_is_the_front_of_every_row(columns):
    rng = np.random.default_rng(7)
    rows = 5 * P.PREFILTER_MIN_ROWS
    gpus = rng.choice([8.0, 16.0, 24.0, 32.0, 48.0], rows)  # more GPUs, fewer days: a front across the counts
    table = {"gpus": gpus, "days": 960 / gpus + rng.integers(0, 40, rows) / 4.0, "cost": rng.integers(0, 40, rows) / 4.0}
    objectives = ("gpus", "days", "cost")[:columns]
    found = P.pareto_front(table, objectives)
    assert np.array_equal(found, P._front(np.stack([table[o] for o in objectives], axis=1)))
    assert 3 <= len(found) < rows // 100


def test_rows_by_count_equals_the_per_count_gather():
    rng = np.random.default_rng(3)
    gpus = rng.choice([8, 12, 16, 96, 100], 1_000)
    table = LayoutTable({"gpus": gpus, "step_seconds": rng.random(1_000), "fits": rng.random(1_000) < 0.5})
    split = rows_by_count(table)
    assert list(split) == [8, 12, 16, 96, 100]
    for count, rows in split.items():
        expected = table.take(np.flatnonzero(gpus == count))
        assert list(rows.columns) == list(expected.columns)
        for name in expected.columns:
            assert np.array_equal(rows[name], expected[name])
    assert rows_by_count(LayoutTable({})) == {}


@pytest.fixture(scope="module")
def shared_groups_answer():
    """`plan gpt2-xl --gpu h100 --tokens 20B --global-batch 7 --days 1 --json` in this process (0.3-0.5 s)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "gpt2-xl", "--gpu", "h100", "--tokens", "20B", "--global-batch", "7", "--days", "1",
                     "--json"]) == 0
    return json.loads(out.getvalue())


def test_an_ask_whose_fallback_groups_repeat_answers_as_before(shared_groups_answer):
    # the numbers the code before wave 15 W4 printed for this ask were dp7 tp1 pp1 cp2 on 14 GPUs (0.9176 days,
    # 1,230.15 USD), front 14 / 70 (dp7 pp5 cp2) / 84 (dp7 pp3 cp4). Since issue 37's straddle model (d8bc6048 /
    # dd054a5a) a dp-7 group at stride cp 2 splits 4 + 3 over two 8-GPU nodes and its all-reduce crosses the network
    # (the 14-GPU layout: 1.176 days with failures, past the 1-day deadline; the cp-2 layouts on 70 / 84 GPUs
    # straddle likewise), so the answer and front below are plan's --json at f25d721c; the searched count is W5's
    results = shared_groups_answer["results"]
    assert results["best_layout"] == "dp7 tp1 pp4 cp4 ZeRO-1 mb1, no recompute"
    # searched 24,107 and '884 fit' before wave 15 W5 weighed each fallback row once (tests/test_fallback_dedupe_w15.py)
    assert (results["best_gpus"], results["idle_gpus"], results["searched"]) == (112, 0, 1_857)
    assert results["best_days"] == pytest.approx(0.9799630568159798, rel=1e-12)
    assert results["best_cost"] == pytest.approx(10510.221379918203, rel=1e-12)
    front = next(rows for name, rows in shared_groups_answer["tables"].items() if name.startswith("Pareto"))
    assert [(row["GPUs"], row["layout"]) for row in front[:3]] == [
        (112, "dp7 tp1 pp4 cp4 ZeRO-1 mb1, no recompute"), (140, "dp7 tp1 pp5 cp4 ZeRO-1 mb1, no recompute"),
        (196, "dp7 tp1 pp7 cp4 ZeRO-1 mb1, no recompute")]
    assert len(front) == 4  # 5 before the straddle model: the cp-2 layouts left the front (the 280-GPU pp10 joins it)
    # 68 before the straddle model: the layouts whose dp group splits unevenly over 8-GPU nodes now pay the network
    # and 31 of them no longer meet the day (plan's note at f25d721c against d8bc6048's parent)
    assert "37 fit" in json.dumps(shared_groups_answer)
