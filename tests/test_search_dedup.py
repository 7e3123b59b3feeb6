"""Issue 39 (speed): the layout search costs each distinct data-parallel group once
(core.row_groups.group_rows) and broadcasts its collectives back to every layout that shares it;
the TP collectives and the layout uncertainty group their rows the same way. The answer must be the
per-row answer exactly: hand-picked layouts (ZeRO 0-3, ep > 1, cp > 1, a pipeline, HSDP) under each
data-parallel schedule, costed as one batch and one by one, with rows that differ in one key column only
(they must stay apart); whole searches with every grouping on and off, column by column; spies that the
grouped path ran. The data-parallel batch passes no vpp (1): data_parallel_costs reads it only in
_exposed, outside the grouping."""

from __future__ import annotations

import warnings
from dataclasses import fields

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core import row_groups as R
from gpuplan.core.comm import dp_costs as D
from gpuplan.core.comm.topology import cluster_for
from gpuplan.core.time.step import StepSettings

# (dp, tp, pp, cp, ep, zero) of Mixtral 8x7B's layouts on 32-256 H100s (8 experts: ep divides dp x cp)
LAYOUTS = (
    (8, 2, 2, 1, 1, 1),   # ZeRO-1 (distributed optimizer) under a pipeline
    (4, 2, 1, 2, 1, 3),   # ZeRO-3 with context parallelism
    (8, 1, 2, 1, 8, 1),   # every expert on its own rank
    (16, 1, 1, 1, 4, 3),  # ZeRO-3 with expert parallelism
    (4, 4, 2, 2, 2, 0),   # ZeRO-0 (all-reduce), cp 2, ep 2
    (32, 8, 1, 1, 8, 2),  # ZeRO-2 across four NVLink domains
    (2, 8, 4, 1, 2, 1),
    (8, 2, 2, 1, 1, 0),   # the first layout's group under ZeRO-0 and ZeRO-3: other collectives
    (8, 2, 2, 1, 1, 3),
    (16, 1, 1, 1, 8, 3),  # the fourth with ep 8
    (8, 4, 2, 1, 2, 0),   # the fifth's data group (dp x cp = 8, tp 4, pp 2, ep 2) without cp: one group
    (16, 2, 2, 1, 1, 1),  # the first with dp x cp doubled and nothing else: its own group (a wider ring)
)
GROUPS = 11
"""Distinct (tp, pp, ep, dp x cp, ZeRO) of LAYOUTS: the collectives of a data group see dp x cp only."""
ROWS = len(LAYOUTS) * 5 * 2
MICRO_BATCHES = (1, 2, 4, 8, 16)  # the search's rows differ in these, the groups do not
SCHEDULES = ({"dp_schedule": "megatron"}, {"dp_schedule": "fsdp2", "grad_comm_bytes": 4.0},
             {"dp_schedule": "deepspeed"}, {"dp_schedule": "ddp"}, {"dp_schedule": "megatron", "grad_all_reduce": True})


def _batch():
    """Every layout x micro-batch count, the layouts' rows interleaved, twice over (ROWS = 120: past
    GROUP_MIN_ROWS), as the search passes them (float degrees)."""
    rows = [layout + (m,) for m in MICRO_BATCHES for layout in LAYOUTS] * 2
    columns = np.array(rows, dtype=float).T
    return dict(zip(("dp", "tp", "pp", "cp", "ep", "zero", "micro_batches"), columns))


def _costs(spec, cluster, settings, g, shard_group=None):
    layers = spec.num_layers / g["pp"]
    trained = D.params_per_gpu(spec, g["tp"], g["pp"], g["ep"])
    compute = 0.05 * g["micro_batches"] * layers / g["tp"]
    return D.data_parallel_costs(spec, cluster, settings, dp=g["dp"], tp=g["tp"], pp=g["pp"], cp=g["cp"], ep=g["ep"],
                                 zero=np.asarray(g["zero"]).astype(np.int64), micro_batches=g["micro_batches"],
                                 shard_group=shard_group, layers=layers, trained_params=trained,
                                 t_bwd_gemm_mb=compute / g["micro_batches"] / 3, compute=compute)


def _numbers(cost, row=None):
    """The numeric fields of one CollectiveCost (at ``row`` of a batch), as float64."""
    out = {}
    for f in fields(cost):
        value = getattr(cost, f.name)
        if isinstance(value, (int, float, np.ndarray, np.number)) and not isinstance(value, bool):
            value = np.broadcast_to(np.asarray(value, dtype=float), (ROWS,))[row] if row is not None else value
            out[f.name] = float(value) if np.ndim(value) == 0 else value
    return out


def _spy_on_collectives(monkeypatch) -> list[int]:
    """Rows (1 for a scalar) of each core.comm.collectives.collective_seconds call from here on."""
    from gpuplan.core.comm import collectives as K

    calls, real = [], K.collective_seconds

    def spy(kind, size, links):
        calls.append(max([np.size(size)] + [np.size(getattr(links, f.name)) for f in fields(links)]))
        return real(kind, size, links)
    monkeypatch.setattr(K, "collective_seconds", spy)
    return calls


def test_the_distinct_groups_are_the_hand_counted_ones():
    g = _batch()
    layers = 32 / g["pp"]
    first, inverse = R.group_rows(g["tp"], g["pp"], g["ep"], g["dp"] * g["cp"], g["zero"], layers)
    assert len(first) == GROUPS  # 120 rows, 11 groups (the micro-batch counts are not in the key)
    for column in (g["tp"], g["pp"], g["ep"], g["dp"] * g["cp"], g["zero"]):
        assert np.array_equal(column[first][inverse], column)
    # fewer rows than GROUP_MIN_ROWS, scalars, non-integer degrees: every row costed
    assert R.group_rows(g["tp"][:10], g["pp"][:10]) is None
    assert R.group_rows(8, 2) is None
    assert R.group_rows(g["tp"] + 0.5) is None
    with warnings.catch_warnings():  # NaN, inf, past int64: no cast warning (an error under -W error), None
        warnings.simplefilter("error")
        for bad in (np.nan, np.inf, -np.inf, 2.0**63, 1e300):
            assert R.group_rows(np.where(np.arange(ROWS) == 7, bad, g["tp"])) is None, bad
    # a float that the integer key does not determine (here it differs within a group): every row costed
    assert R.group_rows(g["tp"], floats=(g["micro_batches"],)) is None
    assert R.group_rows(g["tp"], floats=(g["tp"] * 1.5,)) is not None
    # seconds_by_rows takes sizes and links one value a row (or one for all): a grouped array is refused
    cluster = cluster_for(load_accelerator("h100-sxm"))
    groups = R.group_rows(g["tp"])
    assert D.seconds_by_rows("all_reduce", g["tp"] * 1e6, cluster.group(g["tp"]), groups).shape == (ROWS,)
    with pytest.raises(ValueError, match="one value for each of 120 rows"):
        D.seconds_by_rows("all_reduce", g["tp"][groups[0]] * 1e6, cluster.group(g["tp"]), groups)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_a_batch_costed_by_groups_equals_each_layout_costed_alone(schedule, monkeypatch):
    # LAYOUTS' last row differs from the first in dp x cp alone: a key without it would give it the first's
    # ring of 8 (caught below, row by row); the spy shows the batch is costed on its GROUPS rows, not all ROWS
    spec = load_model("mixtral-8x7b")
    cluster = cluster_for(load_accelerator("h100-sxm"))
    settings = StepSettings(seq_len=4096, dp_overlap=0.9, **schedule)
    g = _batch()
    costed = _spy_on_collectives(monkeypatch)
    batch = _costs(spec, cluster, settings, g)
    assert costed and max(costed) == GROUPS
    assert len(R.group_rows(g["tp"], g["pp"], g["ep"], g["dp"] * g["cp"], g["zero"])[0]) == GROUPS
    assert any(np.any(np.asarray(c.total) > 0) for c in batch)
    for row in range(ROWS):
        alone = _costs(spec, cluster, settings, {k: v[row] for k, v in g.items()})
        for one, many in zip(alone, batch):
            assert _numbers(one) == _numbers(many, row), (row, one.collective)


def test_hsdp_replicas_by_groups_equal_every_row(monkeypatch):
    # HSDP (FSDP2 HYBRID_SHARD): ZeRO-3 within 2 or 4 ranks (alternate rows: the shard group is in the key),
    # the all-reduce across the rest; the same batch costed without the grouping (GROUP_MIN_ROWS past its
    # length) gives the same arrays, bit for bit, and so does each row alone
    spec = load_model("mixtral-8x7b")
    cluster = cluster_for(load_accelerator("h100-sxm"))
    settings = StepSettings(seq_len=4096, dp_overlap=0.9, dp_schedule="fsdp2")
    g = _batch()
    g["zero"] = np.full(ROWS, 3.0)
    shard = np.minimum(np.where(np.arange(ROWS) % 2, 2.0, 4.0), g["dp"] * g["cp"])
    grouped = _costs(spec, cluster, settings, g, shard_group=shard)
    across = next(c for c in grouped if c.collective == "HSDP all-reduce")
    replicated = g["dp"] * g["cp"] > shard  # dp x cp = 2 (and 4 in rows sharded by 4): no replica to reduce across
    assert np.all(np.asarray(across.total)[replicated] > 0) and np.all(np.asarray(across.total)[~replicated] == 0)
    for row in (0, 1, 7, 8):
        alone = _costs(spec, cluster, settings, {k: v[row] for k, v in g.items()}, shard_group=shard[row])
        for one, many in zip(alone, grouped):
            assert _numbers(one) == _numbers(many, row), (row, one.collective)
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**9)
    every_row = _costs(spec, cluster, settings, g, shard_group=shard)
    for a, b in zip(grouped, every_row):
        assert _numbers(a).keys() == _numbers(b).keys()
        for name, value in _numbers(a).items():
            assert np.array_equal(value, _numbers(b)[name]), (a.collective, name)


def test_tp_collectives_by_groups_equal_every_row(monkeypatch):
    # core.comm.step_comm._tp_cost costs each distinct (tp, activation bytes) once: 96 rows of tp 1-8 x 3
    # micro-batch sizes (4,096 tokens x hidden 4,096 x 2 B each), rows with the same tp and other bytes kept
    # apart (a key without the bytes would give them the first's buffer), each row as costed alone
    from gpuplan.core.comm.step_comm import _tp_cost

    spec = load_model("mixtral-8x7b")
    cluster = cluster_for(load_accelerator("h100-sxm"))
    settings = StepSettings(seq_len=4096)
    tp, tokens = (np.tile(np.repeat(c, 3 if i == 0 else 1), 8).astype(float)
                  for i, c in enumerate(((1, 2, 4, 8), np.tile((4096, 8192, 16384), 4))))
    act_bytes, micro_batches, layers = tokens * spec.hidden_size * 2.0, np.full(len(tp), 8.0), np.full(len(tp), 16.0)
    costed = _spy_on_collectives(monkeypatch)
    grouped = _tp_cost(spec, cluster, settings, tp, micro_batches, layers, act_bytes)
    assert len(tp) == 96 and costed and max(costed) == 12  # 4 tp x 3 buffers
    total = np.asarray(grouped.total)
    assert np.all(total[tp == 1] == 0) and np.all(np.diff(total[:12].reshape(4, 3)[1:], axis=1) > 0)
    for row in range(12):
        alone = _tp_cost(spec, cluster, settings, tp[row], micro_batches[row], layers[row], act_bytes[row])
        assert _numbers(alone) == {k: float(np.asarray(v)[row]) for k, v in _numbers(grouped).items()}, row
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**9)
    every_row = _tp_cost(spec, cluster, settings, tp, micro_batches, layers, act_bytes)
    assert max(costed) == 96 and np.array_equal(every_row.total, grouped.total)
    assert np.array_equal(every_row.exposed, grouped.exposed)


def test_layout_uncertainty_by_distinct_degrees_equals_every_row(monkeypatch):
    # a search table's rows repeat a layout across recompute modes (here: each of 19 layouts 8 times, 152 rows;
    # the first and the tenth differ only in vpp 2 / 4 and ZeRO 1 / 2: one point and kind, 17 groups); the
    # answer measured once per distinct (tp, pp, cp, dp, ep, micro-batch, interleaved, ZeRO-3) equals
    # nearest_distance's own deduplication of every row, bit for bit, and its hand-worked value at a known
    # layout. The last seven differ from a published one in one key column each (micro-batch, vpp 1, ep, dp,
    # cp; ZeRO 2 / 3 with dp x tp past the domain): a key without that column would give them its answer
    from gpuplan.planner import uncertainty as U

    base = np.array([(8, 4, 2, 1, 1, 1, 4, 1), (4, 4, 2, 1, 1, 1, 8, 1), (8, 4, 4, 2, 1, 2, 2, 1),
                     (8, 1, 1, 1, 1, 3, 16, 2), (2, 2, 1, 1, 1, 3, 32, 4), (8, 8, 1, 1, 1, 1, 2, 1),
                     (4, 2, 1, 1, 1, 0, 16, 2), (1, 1, 1, 1, 1, 3, 128, 1), (8, 2, 2, 2, 1, 1, 4, 1),
                     (8, 4, 4, 1, 1, 2, 4, 1), (4, 1, 1, 2, 1, 3, 16, 8), (8, 1, 1, 1, 1, 1, 16, 2),
                     # (tp, pp, vpp, cp, ep, zero, dp, micro_batch): one column from the first, or (last) the tenth
                     (8, 4, 2, 1, 1, 1, 4, 2), (8, 4, 1, 1, 1, 1, 4, 1), (8, 4, 2, 1, 2, 1, 4, 1),
                     (8, 4, 2, 1, 1, 1, 2, 1), (8, 4, 2, 2, 1, 1, 4, 1), (8, 4, 2, 1, 1, 2, 4, 1),
                     (8, 4, 4, 1, 1, 3, 4, 1)])
    n = len(base)
    table = np.tile(base, (8, 1))
    columns = dict(zip(U.POINT_COLUMNS, table.T))
    known_columns = dict(zip(U.POINT_COLUMNS, base[[0, 11]].T))  # the first and the twelfth are published
    known = U.KnownLayouts(rms=0.08, growth=0.0143, points=U.layout_points(known_columns, 8e9),
                           kinds=U.layout_kinds(known_columns, 8, False), groups=("a", "b"))
    grouped = U.layout_uncertainty(columns, 8e9, 8, False, known, widest=0.45)
    assert len(R.group_rows(*(table[:, i] for i in (0, 1, 3, 6, 4, 7)), table[:, 2] > 1, table[:, 5] >= 3)[0]) == 17
    # the second layout: tp halved and dp doubled from the first, same kind: sqrt(0.08^2 + (0.0143 x sqrt 2)^2);
    # the third runs cp 2, a kind nothing published has: the widest figure (rows n apart are the same layout)
    assert grouped[1] == pytest.approx(0.0825, abs=1e-4) and grouped[0] == grouped[9] == pytest.approx(0.08)
    assert grouped[2] == grouped[n + 2] == 0.45
    # the fourth is the last under ZeRO-3 (its gathers cross domains: a kind nothing published has)
    assert grouped[11] == pytest.approx(0.08) and grouped[3] == 0.45
    # one doubling from the first, same kind: sqrt(0.08^2 + 0.0143^2) (micro-batch, ep, dp halved); vpp 1 leaves
    # the interleaved kind, cp 2 enters the context-parallel one: nothing published there; ZeRO 2 is the first's
    # point (0.08: one group), ZeRO-3 of the tenth gathers across 4 x 8 ranks: its own kind
    one_doubling = pytest.approx(np.hypot(0.08, 0.0143), abs=1e-12)
    assert [grouped[i] for i in (12, 14, 15)] == [one_doubling] * 3 and grouped[n + 12] == grouped[12]
    assert grouped[13] == grouped[16] == grouped[18] == 0.45 and grouped[17] == grouped[0]
    layout_points, sizes = U.layout_points, []
    monkeypatch.setattr(U, "layout_points", lambda columns, params: sizes.append(len(columns["tp"]))
                        or layout_points(columns, params))
    assert np.array_equal(U.layout_uncertainty(columns, 8e9, 8, False, known, widest=0.45), grouped)
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**9)
    assert np.array_equal(U.layout_uncertainty(columns, 8e9, 8, False, known, widest=0.45), grouped)
    assert sizes == [17, 8 * n]  # measured on the 17 distinct layouts, then (grouping off) on every row


def test_one_precision_class_read_from_the_uncertainty_file_equals_the_whole_file(monkeypatch):
    # the search decodes only its class and the widest figure of layout_uncertainty.json (issue 39: a third
    # to a half of the file's parse): the same values the whole file gives, for each class; an absent one None.
    # json.loads (the whole-file fallback) fails while it reads: the answers come from the one-class path
    import json

    from gpuplan.catalog.paths import CATALOG
    from gpuplan.jobs.plan.search import _uncertainty_class

    data = json.loads((CATALOG / "reference" / "layout_uncertainty.json").read_text("utf-8"))

    def whole_file(*args, **kwargs):
        raise AssertionError("the whole file was parsed")
    monkeypatch.setattr(json, "loads", whole_file)
    _uncertainty_class.cache_clear()
    try:
        for cls in ("bf16", "fp8", "moe"):
            widest, entry = _uncertainty_class(cls)
            assert widest == data["widest"] and entry == data[cls] and len(entry["points"]) > 10
        assert _uncertainty_class("fp4") == (data["widest"], None)
    finally:
        _uncertainty_class.cache_clear()


def test_the_zero_stages_of_a_structure_follow_its_key():
    # enumerate_layouts answers the ZeRO stages once per space.zero_choice_key; every framework's
    # zero_allowed must give one answer per key over the degrees a search lays out
    from itertools import product

    from gpuplan.planner.framework_rules import RULES, zero_allowed
    from gpuplan.planner.space import zero_choice_key

    degrees = (1, 2, 3, 4, 8, 64)
    for rules in RULES.values():
        answers: dict = {}
        for dp, tp, pp, cp, ep, zero in product(degrees, degrees, degrees, (1, 2, 8), (1, 2, 8), (0, 1, 2, 3)):
            answer = zero_allowed(rules, zero, dp=dp, tp=tp, pp=pp, cp=cp, ep_max=ep)
            assert answers.setdefault((zero_choice_key(dp, tp, pp, cp, ep), zero), answer) == answer
        assert len(answers) == 24  # 6 keys (a pipeline is a model-parallel degree: 2 of 8 cannot occur) x 4 stages


@pytest.mark.parametrize("seed", range(6))
def test_the_front_of_a_large_table_is_the_front_without_the_prefilter(seed):
    # from PREFILTER_MIN_ROWS rows, pareto_front drops the rows their own first objective's best row equals or
    # beats before its sweep (planner.pareto): the same indices, in the same order, as the sweep over every row
    # (its own tests check it against the definition); cost ~ GPUs x days as in a plan table, with ties,
    # repeated rows and a few NaN
    from gpuplan.planner.pareto import PREFILTER_MIN_ROWS, _beaten_in_group, _front
    from gpuplan.planner.search import LayoutTable, pareto_front

    rng = np.random.default_rng(seed)
    n = PREFILTER_MIN_ROWS + int(rng.integers(0, 3000))
    gpus = rng.choice([8.0, 16.0, 64.0, 256.0, 1024.0], size=n)
    days = np.round(rng.uniform(1, 50, n) * 64 / gpus, 1)
    cost = np.round(gpus * days * rng.uniform(0.9, 1.1, n))
    cost[rng.integers(0, n, 5)] = np.nan
    values = np.stack([gpus, days, cost], axis=1)
    values[rng.integers(0, n, 200)] = values[rng.integers(0, n, 200)]  # repeated rows: the first is kept
    for k in (2, 3):
        table = LayoutTable({f"o{i}": values[:, i] for i in range(k)})
        front = pareto_front(table, tuple(f"o{i}" for i in range(k)))
        assert np.array_equal(front, _front(values[:, :k])) and len(front) >= 5
        assert _beaten_in_group(values[:, :k]).mean() > 0.5  # most rows never reach the sweep


SEARCHES = (dict(model="mixtral-8x7b", gpu="h100", gpus="64-256"),  # ep 1-8, ZeRO 0 / 1 / 3, cp up to 32, vpp
            dict(model="llama-3.1-70b", gpu="h100", gpus="512"),  # dense: cp 1-32, vpp up to 40, ZeRO 0 / 1 / 3
            dict(model="llama-3.1-8b", gpu="h100", gpus="16-128", framework="torchtitan"))  # FSDP2's schedule


@pytest.mark.parametrize("asked", SEARCHES, ids=lambda a: f"{a['model']}-{a['gpus']}")
def test_the_search_table_is_the_same_without_deduplication(asked, monkeypatch):
    # jobs.plan.search.search end to end, once as it runs and once with every grouping off (the distinct-row
    # key and the front's prefilter past any table; the ZeRO stages asked per structure): every column of the
    # fitting table and of every layout considered, bit for bit, and the (GPUs, days, cost) front. A key
    # column dropped from any grouping (dp x cp, activation bytes, micro-batch, vpp > 1...) changes some rows
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.planner import pareto as P
    from gpuplan.planner import space as S
    from gpuplan.planner.search import pareto_front

    costed = _spy_on_collectives(monkeypatch)
    grouped = search(PlanInputs(**asked))
    grouped_rows = sum(costed)
    front = pareto_front(grouped.table, ("gpus", "days", "cost"))
    monkeypatch.setattr(R, "GROUP_MIN_ROWS", 10**15)
    monkeypatch.setattr(P, "PREFILTER_MIN_ROWS", 10**15)
    monkeypatch.setattr(S, "zero_choice_key", lambda dp, tp, pp, cp, ep: (dp, tp, pp, cp, ep))
    costed.clear()
    every_row = search(PlanInputs(**asked))
    # the grouped search costed its collectives on a fraction of the rows the ungrouped one did
    assert grouped_rows * 4 < sum(costed), (grouped_rows, sum(costed))
    for name, a, b in (("table", grouped.table, every_row.table), ("all", grouped.all, every_row.all)):
        assert list(a.columns) == list(b.columns) and len(a) == len(b) > 200, name
        for column in a.columns:
            x, y = np.asarray(a[column]), np.asarray(b[column])
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), (name, column)
    assert np.array_equal(front, pareto_front(every_row.table, ("gpus", "days", "cost")))
    assert {int(z) for z in grouped.all["zero"]} >= {0, 3} and np.any(grouped.all["vpp"] > 1)
