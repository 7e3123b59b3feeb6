"""Wave 16 A3's leftovers from the fourteenth session's final read: the one run-splitting helper
(planner.sorted_runs.run_bounds) and the words items 7 and 9 changed, with review w16 R3's fixes (mender MB).
Hand-worked numbers only."""

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
    assert [b.tolist() for b in run_bounds(np.full(4, 3))] == [[0], [4]]  # all equal: one run (review w16 R3 N5)


def test_the_run_splitting_idiom_is_written_once():
    """jobs.plan.completes split its (count, writers) groups with a fourth copy of run_bounds' mask (review w16 R3 S1);
    it calls run_bounds now. Left: core.row_groups (a mask and cumsum for an inverse, core does not import the
    planner) and planner.search's multi-column |= (several columns, not one array)."""
    import pathlib
    import re

    import gpuplan

    idiom = re.compile(r"(\w[\w\[\]]*)\[1:\] != \1\[:-1\]")
    root = pathlib.Path(gpuplan.__file__).parent
    found = sorted(str(f.relative_to(root)) for f in root.rglob("*.py") if idiom.search(f.read_text()))
    assert found == ["core/row_groups.py", "planner/search.py", "planner/sorted_runs.py"], found


def test_completing_rows_groups_by_count_and_writers():
    """completing_rows makes one set of failure plans per (GPU count, checkpoint writers) group: rows 8 GPUs ZeRO-1
    (8 writers), 8 GPUs ZeRO-0 tp 2 pp 2 (4 writers), 8 GPUs ZeRO-1 again and 16 GPUs ZeRO-1 are 3 groups, their
    first rows 0, 1 and 3 (one budget plan each, counted here through the plan builder)."""
    from types import SimpleNamespace

    from gpuplan.jobs.plan import completes
    from gpuplan.planner.search import LayoutTable

    table = LayoutTable({"gpus": np.array([8, 8, 8, 16]), "zero": np.array([1, 0, 1, 1]), "tp": np.array([1, 2, 1, 1]),
                         "pp": np.array([1, 2, 1, 1]), "step_seconds": np.ones(4)})
    firsts = []

    def plans(inputs, evaluator, settings, t, first):
        firsts.extend(first.tolist())  # the groups' first rows, all at once (jobs/plan/failure_plans, session 25)
        return [tuple(np.array([v] * len(first)) for v in (1e9, 1.0, 1.0, 10.0))] * 6  # MTBI 1e9 s: all complete

    saved = completes._table_plans
    completes._table_plans = plans
    try:
        done = completes.completing_rows(SimpleNamespace(budget_settings=lambda: None), None, table)
    finally:
        completes._table_plans = saved
    assert sorted(firsts) == [0, 1, 3] and done.rows.tolist() == [0, 1, 2, 3]


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
    assert line.formula == ("no layout uses all 1,000 (the global batch and the framework's rules allow none): the "
                            "notes name the counts answering for them")


def test_idle_reason_no_layout_names_what_the_note_names():
    """llama-3.1-70b on 1,001 A100s at --tp 8, no --global-batch: 1,001 = 7 x 11 x 13 has no factor 8, so no layout
    with the degrees given (the note's words); the batch is not exact, so the reason does not blame it (review w16 R3
    S3: it said 'the global batch, degrees given and framework rules'). Both from fallbacks_told.binding_asks."""
    from gpuplan import PlanInputs, plan_report

    report = plan_report(PlanInputs(model="llama-3.1-70b", gpus=1001, tp=8))
    note = [n for n in report.notes if n.startswith("no layout")]
    assert len(note) == 1 and note[0].startswith("no layout with the degrees given exists on 1,001 GPUs: ")
    line = [x for s in report.sections for x in s.lines if x.key == "idle_gpus"][0]
    assert line.formula.startswith("no layout uses all 1,001 (the degrees given and the framework's rules allow none)")


def test_no_layout_causes_follow_the_limits():
    """The four cases of (exact batch, degrees given), and no limits at all."""
    from gpuplan.jobs.plan.fallbacks_told import no_layout_causes
    from gpuplan.planner.space import SpaceLimits

    words = {(e, bool(f)): no_layout_causes(SpaceLimits(exact_batch=e, fixed=f)) for e in (False, True)
             for f in ({}, {"tp": 8})}
    assert words == {(False, False): "the framework's rules",
                     (False, True): "the degrees given and the framework's rules",
                     (True, False): "the global batch and the framework's rules",
                     (True, True): "the global batch, the degrees given and the framework's rules"}
    assert no_layout_causes(None) == "the framework's rules"


def test_one_answer_asks_once_which_counts_have_no_layout(monkeypatch):
    """plan_report enumerates the counts given without a layout once, for the idle reason and the note alike (review
    w16 R3 S5: two calls that could drift apart)."""
    from gpuplan import PlanInputs, plan_report
    from gpuplan.jobs.plan import fallbacks_told

    calls = []
    real = fallbacks_told.has_layout  # what counts_without_layout asks of each count

    def counted(ev, count, *args, **kwargs):
        calls.append(count)
        return real(ev, count, *args, **kwargs)

    monkeypatch.setattr(fallbacks_told, "has_layout", counted)
    report = plan_report(PlanInputs(model="llama-3.1-8b", gpus=1000, global_batch=7))
    assert calls == [1000]
    assert [n for n in report.notes if n.startswith("no layout")]


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


def test_idle_reason_counts_the_ranked_rows_under_a_deadline():
    """Review w16 R3 M1: `plan llama-3-8b --gpus 1349 --days 5.3` answers 1,280 GPUs (4.9 days with failures); the 8
    layouts on 1,349 fit but take 16.4 to 70 days with failures, so the deadline dropped all 8 (none ranked). The
    line said they 'rank behind it'. At --days 20 some of them meet it: the reason counts those."""
    from gpuplan import PlanInputs
    from gpuplan.jobs.plan import search as plan_search

    line = _idle_line(model="llama-3-8b", gpus=1349, days=5.3)
    assert line.text == "69 of 1,349"  # 1,349 - 1,280
    assert line.formula == "8 layouts on all 1,349 fit and none meets the deadline (--days 5.3, with failures)"
    result = plan_search.search(PlanInputs(model="llama-3-8b", gpus=1349, days=20))
    ranked = int((result.table["gpus"] == 1349).sum())
    assert 0 < ranked < 8 and not (result.table["days_with_failures"] > 20).any()
    assert _idle_line(model="llama-3-8b", gpus=1349, days=20).formula == (
        f"ranked first on fewer: 8 layouts on all 1,349 fit, {ranked} meet the deadline (--days 20, with failures) "
        "and rank behind it")


def test_idle_reason_where_no_layout_on_the_count_completes():
    """No deadline, and the count asked's fitting layouts all dropped for never completing with failures (jobs.plan.
    completes): 'none completes with failures'. A stub search: 3 layouts on 16 fit, none ranked; 2 of 3, one ranked."""
    from types import SimpleNamespace

    from gpuplan import PlanInputs
    from gpuplan.jobs.plan.fallbacks_told import idle_reason

    ask = PlanInputs(model="llama-3.1-8b", gpus=16)
    every = {"gpus": np.array([8, 16, 16, 16]), "fits": np.array([True, True, True, True])}
    plan = SimpleNamespace(gpus_asked=16)
    result = SimpleNamespace(all=every, table={"gpus": np.array([8])})
    assert idle_reason(ask, result, plan, ()) == "3 layouts on all 16 fit and none completes with failures"
    result = SimpleNamespace(all=every, table={"gpus": np.array([8, 16])})
    assert idle_reason(ask, result, plan, ()) == ("faster on fewer: 3 layouts on all 16 fit, 1 completes with failures "
                                                "and rank behind it")


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


def test_both_weights_lines_name_the_mxfp4_padding():
    """gpt-oss-20b on one B300 under vLLM: 917,471,232 B (874.97 MiB) of MXFP4 expert padding (tests/test_mend_w14_c
    works it by hand). 'weights per GPU' named it and Memory per GPU's 'weights' did not: two lists (review w16 R3
    S2); one now (memory_report.weight_extras)."""
    from gpuplan.core.serving.memory import serving_memory_on
    from gpuplan.jobs.inference.memory_report import memory_section, weight_extras, weights_added
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.schema import InferenceInputs

    plan = resolve_plan(InferenceInputs(model="gpt-oss-20b", gpu="b300"))
    m = serving_memory_on(plan.spec, plan.groups, plan.setup, 1, 1, plan.gpu)
    named = "MXFP4 expert padding (vLLM's MoE layout)"
    assert [(round(v), name) for v, name in weight_extras(m)] == [(917_471_232, named)]
    assert weights_added(m) == f" + 0.92 GB (874.97 MiB) {named}"
    weights = [line for line in memory_section(plan, m, 1, 0.0).lines if line.key == "weights"]
    assert [line.formula for line in weights] == [f"incl. {named}: 0.92 GB (874.97 MiB)"]


def test_infer_spells_no_price_as_plan_and_budget_do():
    """infer's cost per million tokens on a GPU with no catalog price and no --price (H800) prints
    core.units.NO_PRICE_TEXT, as plan, budget and the serving sizes do (review w16 R3 N6: a fifth spelling, 'not
    available: no price known (give --price, USD per GPU-hour)')."""
    from gpuplan import InferenceInputs, estimate_inference
    from gpuplan.core.units import NO_PRICE_TEXT

    lines = [x for s in estimate_inference(InferenceInputs(model="llama-3-8b", gpu="h800")).sections for x in s.lines
             if x.key == "cost_per_million_tokens"]
    assert [(x.value, x.text) for x in lines] == [(None, NO_PRICE_TEXT)]
