"""Wave 16 A3's leftovers from the fourteenth session's final read: the one run-splitting helper
(planner.sorted_runs.run_bounds) and the words items 7 and 9 changed. Hand-worked numbers only."""

from __future__ import annotations

import numpy as np

from gpuplan.planner.sorted_runs import run_bounds


# ---- item 5: one helper splits a sorted array into runs (planner.pareto x2, planner.fallback.rows_by_count) --------

def test_run_bounds_hand_worked():
    """[1, 1, 2, 5, 5, 5] has runs [0:2], [2:3], [3:6]; NaN != NaN, so two NaNs are two runs."""
    starts, stops = run_bounds(np.array([1, 1, 2, 5, 5, 5]))
    assert starts.tolist() == [0, 2, 3] and stops.tolist() == [2, 3, 6]
    starts, stops = run_bounds(np.array([0.5, np.nan, np.nan]))
    assert starts.tolist() == [0, 1, 2] and stops.tolist() == [1, 2, 3]
    assert [len(b) for b in run_bounds(np.zeros(0))] == [0, 0]
    assert [b.tolist() for b in run_bounds(np.array([7]))] == [[0], [1]]


def test_rows_by_count_uses_the_runs():
    """planner.fallback.rows_by_count groups a table's rows by GPU count, each group in table order."""
    from gpuplan.planner.fallback import rows_by_count
    from gpuplan.planner.search import LayoutTable

    table = LayoutTable({"gpus": np.array([8, 4, 8, 16, 4]), "row": np.arange(5)})
    groups = rows_by_count(table)
    assert list(groups) == [4, 8, 16]
    assert {c: t["row"].tolist() for c, t in groups.items()} == {4: [1, 4], 8: [0, 2], 16: [3]}


# ---- item 7: plan's 'GPUs left idle' line says which reason holds on the count asked -------------------------------

def _idle_line(**ask):
    from gpuplan import PlanInputs, plan_report

    lines = [line for s in plan_report(PlanInputs(**ask)).sections for line in s.lines if line.key == "idle_gpus"]
    assert len(lines) == 1
    return lines[0]


def test_idle_reason_no_layout_on_the_count_asked():
    """llama-3.1-8b, a 7-sequence batch on 1,000 A100s: no layout at all (tests/test_consistency_w15c derives why);
    704 GPUs answer (plan's note there), 1,000 - 704 = 296 idle. The reason says no layout, not 'faster on fewer'."""
    line = _idle_line(model="llama-3.1-8b", gpus=1000, global_batch=7)
    assert (line.value, line.text) == (1000 - 704, "296 of 1,000")
    assert line.formula == ("no layout uses all 1,000 (the global batch, degrees given and framework rules allow "
                            "none): the notes name the counts answering for them")


def test_idle_reason_layouts_but_none_fits():
    """llama-3.1-405b on 1,001 A100-40GB: 1,001 = 7 x 11 x 13 is odd, so tp 1 (tp divides the 128 heads) and cp 1
    (a power of two): the layouts there split no layer's tensors (pp 1 to 91 x dp 11 to 1,001) and the least
    needs 48.6 GB a GPU, over 40; 1,000 answer, 1 idle."""
    line = _idle_line(model="llama-3.1-405b", gpus=1001, gpu="a100-40gb")
    assert line.text == "1 of 1,001"
    assert line.formula.endswith(" layouts use all 1,001 and none fits in memory"), line.formula


def test_idle_reason_faster_on_fewer():
    """The article's llama-3-8b on 1,349 A100s (tests/test_consistency_w15c: layouts exist there): 1,344 run faster,
    5 idle; 'ranked first' where the ranking is by cost, not time."""
    line = _idle_line(model="llama-3-8b", gpus=1349)
    assert line.text == "5 of 1,349"
    assert line.formula.startswith("faster on fewer: ") and line.formula.endswith(" on all 1,349 fit and rank behind it")
    assert _idle_line(model="llama-3-8b", gpus=1349, rank_by="cost").formula.startswith("ranked first on fewer: ")


# ---- item 9: the serving weights line names the k/v projections replicated past the KV heads -----------------------

def test_the_weights_lines_name_the_kv_replicas():
    """llama-3.1-405b bf16 at tp 16 on GB200 (8 KV heads): each KV head on 16 / 8 = 2 GPUs, each holding its head's
    k/v projections whole, 0.5 x 2 x 16,384 x 128 x 126 layers x 2 B = 528,482,304 B = 504 MiB a GPU
    (core.serving.weights.kv_replica_bytes; tests/test_serving_sizing_domain works the same number). At tp 8 none."""
    from gpuplan.core.serving.memory import serving_memory_on
    from gpuplan.jobs.inference.memory_report import memory_section, weights_added
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    plan = resolve_plan(InferenceInputs(model="llama-3.1-405b", gpu="gb200", tp=16))
    m = serving_memory_on(plan.spec, plan.groups, plan.setup, 16, 1, plan.gpu)
    assert (m.kv_head_replicas, m.kv_replicas) == (2, 528_482_304)
    named = "K/V replicas x 2 (k/v projections whole past the KV heads)"
    weights = [line for line in memory_section(plan, m, 1, 0.0).lines if line.key == "weights"]
    assert [line.formula for line in weights] == [f"incl. {named}: 0.53 GB (504.00 MiB)"]
    assert weights_added(m) == f" + 0.53 GB (504.00 MiB) {named}"
    m8 = serving_memory_on(plan.spec, plan.groups, plan.setup, 8, 1, plan.gpu)
    assert (m8.kv_head_replicas, m8.kv_replicas, weights_added(m8)) == (1, 0.0, "")
