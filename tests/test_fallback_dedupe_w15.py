"""Each layout once in `plan`'s table (wave 15 W5). Asked counts no layout uses fall back on the smaller counts
that have one (planner.fallback.with_fallbacks); every such count copied the same smaller counts' rows, once per
count asked, and a deadline's counts between the common sizes were searched again where a fallback had brought
them in already. `plan qwen3-30b-a3b --gpu h100 --tokens 2T --global-batch 1000 --days 120` weighed 3,068,613
rows, 2.88 M of them copies (its top-10 table listed each 24-GPU layout four times); now 976,059, each layout on
each GPU count once, and 'searched' (plan's note, its --json, the web API's, which are the one Report) counts
those distinct layouts. The answers are the ones the code before gave (the numbers pinned below are its
--json's; `gpuplan validate --json` byte-identical; docs/performance.md 'Slow asks')."""

import numpy as np
import pytest

from gpuplan.jobs.plan import estimate, search as plan_search
from gpuplan.jobs.plan.schema import PlanInputs

LAYOUT = ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute", "global_batch")


def _answer(**asked):
    """(report, the PlanSearch it was made from) of `plan` on ``asked`` in this process."""
    found, search = [], plan_search.search

    def keep(inputs, progress=None):
        found.append(search(inputs, progress))
        return found[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(estimate.plan_search, "search", keep)
        report = estimate.plan_report(PlanInputs(**asked))
    return report, found[0]


def _repeated_rows(table) -> int:
    """Rows whose (GPU count, layout) an earlier row of ``table`` has."""
    rows = np.stack([np.asarray(table[k], dtype=np.int64) for k in LAYOUT], axis=1)
    return len(rows) - len(np.unique(rows, axis=0))


@pytest.fixture(scope="module")
def shared_groups():
    """`plan gpt2-xl --gpu h100 --tokens 20B --global-batch 7 --days 1` (W4's ask: 13 asked counts no layout uses,
    waiting on 74 fallback groups of 26 distinct; ~0.4 s)."""
    return _answer(model="gpt2-xl", gpu="h100", tokens="20B", global_batch=7, days=1)


def test_the_table_holds_each_layout_once_and_searched_counts_them(shared_groups):
    report, found = shared_groups
    assert _repeated_rows(found.all) == 0 and _repeated_rows(found.table) == 0
    assert found.searched == len(found.all) == 1_857  # 24,107 before: the same rows once per asked count
    assert report.value("searched") == 1_857
    assert "search: 1,857 distinct layouts in " in " ".join(report.notes)


def test_the_answer_is_the_one_before(shared_groups):
    # the code before wave 15 W5 printed dp7 tp1 pp1 cp2 on 14 GPUs, 0.9175854534867792 days, 1,230.15 USD (its
    # --json; tests/test_slow_asks_w15.py pins them from before W4). Since issue 37's straddle model (d8bc6048 /
    # dd054a5a) dp 7 at stride cp 2 splits 4 + 3 over two 8-GPU nodes and its all-reduce crosses the network:
    # that layout's step 28.4 -> 36.4 ms, 0.919 -> 1.176 days with failures (train ... --gpus 14 --cp 2), past the
    # 1-day deadline, so the cheapest layout that meets it is now this one (plan's --json at f25d721c)
    report, _ = shared_groups
    assert report.value("best_layout") == "dp7 tp1 pp4 cp4 ZeRO-1 mb1, no recompute"
    assert (report.value("best_gpus"), report.value("idle_gpus")) == (112, 0)
    assert report.value("best_days") == pytest.approx(0.9799630568159798, rel=1e-12)
    assert report.value("best_cost") == pytest.approx(10510.221379918203, rel=1e-12)


def test_three_counts_on_one_fallback_group_bring_its_rows_once():
    """65,536, 98,304 and 131,072 GPUs asked, a batch of 7: no layout uses any, all three fall back on the same
    counts; their rows were in the table three times (14,172 = 3 x 4,724), once for each count asked. Now once,
    carrying the first count asked (the idle GPUs the answer told before: 65,536 - 7,616)."""
    report, found = _answer(model="llama-3.1-8b", gpu="h100", tokens="1T", global_batch=7, gpus="65536,98304,131072")
    assert found.searched == 4_724 and _repeated_rows(found.all) == 0
    assert set(found.all["gpus_asked"].tolist()) == {65_536}
    assert report.value("best_layout") == "dp7 tp8 pp17 cp8 ZeRO-1 mb1, no recompute"
    assert (report.value("best_gpus"), report.value("idle_gpus")) == (7_616, 57_920)
    # 14.403561207015281 before 31278dd5 charged tp 8's embedding / output-layer exchanges a micro-batch (same layout)
    assert report.value("best_days") == pytest.approx(14.433294436774137, rel=1e-12)


def test_a_deadline_does_not_search_again_the_counts_a_fallback_brought():
    """`plan llama-3.1-8b --global-batch 999 --days 3`: the counts between the two common sizes that bracket the
    answer were searched again (628 repeated rows) where the fallbacks of the counts no layout uses had brought
    them in; 299,738 rows before, 51,105 now, the same answer."""
    report, found = _answer(model="llama-3.1-8b", gpu="h100", tokens="1T", global_batch=999, days=3)
    assert found.searched == 51_105 and _repeated_rows(found.all) == 0
    assert report.value("best_layout") == "dp111 tp1 pp1 cp4 ZeRO-3 mb9, no recompute"
    assert (report.value("best_gpus"), report.value("idle_gpus")) == (444, 0)
    # 2.442044088834235 days / 103,829.46 USD before the straddle model (d8bc6048): 444 GPUs end half-way through
    # a node, so a dp-111 group (stride cp 4) holds 1 member on the last node and its all-reduce runs at one GPU's
    # NIC share; same layout, slower step (plan's --json at f25d721c)
    assert report.value("best_days") == pytest.approx(2.523471904935274, rel=1e-12)
    assert report.value("best_cost") == pytest.approx(107291.56530977122, rel=1e-12)
