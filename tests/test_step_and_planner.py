"""Communication, step time and the layout planner."""

import numpy as np
import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.comm import volumes as C
from gpuplan.core.memory import training as M
from gpuplan.core.parallel import ParallelLayout, check_layout
from gpuplan.core.time.step import StepSettings, gemm_efficiency, step_time
from gpuplan.core.comm.topology import cluster_for
from gpuplan.errors import InputError
from gpuplan.jobs.plan.estimate import plan_report
from gpuplan.jobs.plan.search import PlanInputs
from gpuplan.planner.search import LayoutTable, pareto_front


def test_ring_collectives_by_hand():
    # all-reduce of 1 GB over 8 GPUs at 100 GB/s: 2 x 7/8 x 1e9 / 1e11 = 17.5 ms, + 14 steps x 5 us
    assert C.all_reduce_time(1e9, 8, 100e9, 5e-6) == pytest.approx(0.0175 + 14 * 5e-6)
    assert C.reduce_scatter_time(1e9, 8, 100e9) == pytest.approx(0.00875)
    assert C.all_gather_time(1e9, 1, 100e9) == 0  # a group of one moves nothing
    # exposed: at least (1 - overlap) of it, and whatever does not fit in the window
    assert C.exposed(10.0, 100.0, 0.9) == pytest.approx(1.0)
    assert C.exposed(10.0, 4.0, 0.9) == pytest.approx(6.0)


def test_nvlink_inside_a_node_network_across():
    cluster = cluster_for(load_accelerator("h100"))
    inside, _ = cluster.link(8)
    across, _ = cluster.link(16)
    assert inside == pytest.approx(900e9 / 2 * 0.82)  # NVLink 4: 450 GB/s per direction x 82% (370 of 450 busbw)
    assert across == pytest.approx(400e9 / 8 * 0.90)  # one 400 Gb/s NIC per GPU x 90%


def test_gemm_efficiency_saturates_at_mamf():
    assert gemm_efficiency("a100-sxm4-80gb", 1e9, 512) == pytest.approx(0.869, rel=1e-6)
    assert gemm_efficiency("a100-sxm4-80gb", 512, 512) == pytest.approx(0.869 / 2)


def test_step_time_parts():
    spec, cluster = load_model("llama-2-70b"), cluster_for(load_accelerator("h100"))
    single = step_time(spec, cluster, StepSettings(seq_len=4096), dp=1, micro_batch=1, micro_batches=8)
    assert single.tp_comm == single.dp_comm == single.pp_comm == single.bubble == 0
    piped = step_time(spec, cluster, StepSettings(seq_len=4096), dp=1, tp=8, pp=4, micro_batch=1, micro_batches=16)
    # 1F1B bubble = t_microbatch x (p - 1) = compute x 3 / 16 (Narayanan et al. 2021)
    assert piped.bubble == pytest.approx(piped.compute * 3 / 16)
    interleaved = step_time(spec, cluster, StepSettings(seq_len=4096), dp=1, tp=8, pp=4, vpp=2, micro_batch=1,
                            micro_batches=16)
    assert interleaved.bubble == pytest.approx(piped.bubble / 2)
    assert piped.tp_comm > 0 and piped.dp_comm == 0


def test_full_recompute_costs_about_a_third_more_compute():
    spec, cluster = load_model("llama-2-7b"), cluster_for(load_accelerator("a100"))
    none = step_time(spec, cluster, StepSettings(seq_len=4096), micro_batch=1, micro_batches=4).compute
    full = step_time(spec, cluster, StepSettings(seq_len=4096, recompute="full"), micro_batch=1,
                     micro_batches=4).compute
    assert full / none == pytest.approx(4 / 3, abs=0.05)


@pytest.mark.parametrize("layout", [
    ParallelLayout(dp=8, zero=3, micro_batch=2), ParallelLayout(dp=4, tp=2, zero=1), ParallelLayout(dp=2, tp=4, pp=4,
    micro_batch=1, global_batch=64), ParallelLayout(dp=16, pp=2, vpp=2, zero=2, global_batch=256),
    ParallelLayout(dp=2, cp=4, tp=8, zero=3),
])
@pytest.mark.parametrize("recompute", ["none", "full"])
def test_planner_memory_equals_the_single_estimate(layout, recompute):
    spec = load_model("llama-3.1-70b")
    settings = M.MemorySettings(seq_len=8192, recipe="megatron", implementation="megatron", recompute=recompute)
    check_layout(spec, layout)
    scalar = M.peak_memory(spec, layout, settings).allocated
    a = lambda v: np.array([v, v])  # noqa: E731 - the same layout twice, as arrays
    arrays = ParallelLayout(dp=a(layout.dp), tp=a(layout.tp), pp=a(layout.pp), vpp=a(layout.vpp), cp=a(layout.cp),
                            ep=a(layout.ep), zero=a(layout.zero), micro_batch=a(layout.micro_batch),
                            global_batch=a(layout.batch))
    bulk = M.peak_allocated(spec, arrays, settings)
    assert bulk.tolist() == pytest.approx([scalar, scalar], rel=1e-12)  # one function: the same number


def test_pareto_front():
    table = LayoutTable({"gpus": np.array([8, 8, 16, 16, 32]), "days": np.array([10.0, 12.0, 6.0, 7.0, 6.0])})
    assert sorted(pareto_front(table, ("gpus", "days")).tolist()) == [0, 2]


@pytest.mark.parametrize("model, tokens, gpu, gpus", [
    ("llama-2-7b", 2e12, "a100", (1024,)),          # the article's 7B, ~1,000 A100s
    ("llama-3.1-70b", 15e12, "h100", (1024, 2048)),
    ("llama-3.1-405b", 15.6e12, "h100", (16384,)),
    ("mixtral-8x7b", 1e12, "h100", (256,)),
])
def test_planner_recommends_layouts_that_exist_and_fit(model, tokens, gpu, gpus):
    report = plan_report(PlanInputs(tokens=tokens, model=model, gpu=gpu, gpus=gpus, top=3,
                                    price=2.0))
    spec = load_model(model)
    rows = report.tables[0].records()
    assert rows, "at least one layout"
    best = report.value("best_gpus")
    # within the span of measured BF16 MFUs in the reference set (throughput_runs.yaml: 0.26-0.64),
    # with a margin for models and scales it does not cover
    assert best in gpus and 0.2 < report.value("best_mfu") < 0.75
    # the fit rule: reserved + runtime within capacity x (1 - the 5% margin) (core/memory/device_memory.py)
    assert report.value("best_peak_bytes") <= load_accelerator(gpu).memory_bytes * 0.95
    assert report.value("best_cost") == pytest.approx(report.value("best_gpu_hours") * 2.0)
    # explained in the article's terms: headroom, the communication ratio, the bubble
    assert 0 <= report.value("comm_ratio_exposed") <= report.value("comm_ratio_total") < 1
    assert 0 <= report.value("bubble_share") < 1
    # headroom = the budget, capacity x 0.95, less what the GPU holds (megatron: no fit-rule excess); was '> 0'
    headroom = load_accelerator(gpu).memory_bytes * 0.95 - report.value("best_peak_bytes")
    assert report.line("why_headroom").value == pytest.approx(headroom, rel=1e-9) and headroom > 0
    # the recommended layout passes the single-layout checks
    layout = rows[0]["layout"].split()
    degrees = {part.rstrip("0123456789"): int(part[len(part.rstrip("0123456789")):]) for part in layout[:-3]}
    check_layout(spec, ParallelLayout(**{k: v for k, v in degrees.items() if k in ("dp", "tp", "pp", "vpp", "cp", "ep")}),
                 gpus=best)


def test_planner_bad_input():
    # 6 x 70e9 x 2e12 = 8.4e23 FLOPs; 131,072 H100s (the largest count a deadline search takes,
    # planner.space.DEADLINE_COUNTS_MAX) x 989.4 TFLOP/s x 8,640 s = 1.12e24 at 100%: 0.1 day would
    # need an MFU of 75%, which no layout reaches
    with pytest.raises(InputError, match="days"):
        plan_report(PlanInputs(tokens=2e12, params=70e9, gpu="h100", days=0.1))
    with pytest.raises(InputError, match="no layout fits"):
        plan_report(PlanInputs(tokens=2e12, model="llama-3.1-405b", gpu="a10", gpus=(8,)))
    with pytest.raises(InputError, match="fp8"):
        plan_report(PlanInputs(tokens=2e12, model="llama-2-7b", gpu="a100", dtype="fp8"))


def _pareto_by_definition(values: np.ndarray) -> list[int]:
    """The front by its definition: a point is kept unless an earlier one (lexicographic order) is
    <= on every objective (so of identical points the first stays)."""
    order, front = np.lexsort(values.T[::-1]), []
    for i in order:
        if not any(np.all(values[j] <= values[i]) for j in front):
            front.append(int(i))
    return sorted(front)


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_pareto_front_equals_the_definition(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 80)), int(rng.integers(2, 4))
    values = rng.integers(0, 6, size=(n, k)).astype(float)  # small integers: many ties
    table = LayoutTable({f"o{i}": values[:, i] for i in range(k)})
    assert sorted(pareto_front(table, tuple(f"o{i}" for i in range(k))).tolist()) == _pareto_by_definition(values)


def test_tp_overlap_has_one_default_per_recompute_mode():
    """jobs.plan.step_settings.tp_overlap_by_recompute is the one source of StepSettings.tp_overlap: under megatron TE
    hides 2 of the 8 TP collectives a layer counts (0.25), 2 of 12 under full recompute
    (core.time.megatron_ops.te_hidden_tp_share); --tp-overlap 0.5 holds in every mode. The evaluator's step
    carries the no-recompute share and each layout's mode gets its own."""
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.plan.step_settings import tp_overlap_by_recompute

    fields = {"model": "llama-3.1-8b", "tokens": 1e12, "gpu": "h100", "gpus": 8, "framework": "megatron"}
    shares = dict(tp_overlap_by_recompute(PlanInputs(**fields)))
    assert shares == pytest.approx({"none": 0.25, "selective": 0.25, "full": 2 / 12}, rel=1e-12)
    assert dict(tp_overlap_by_recompute(PlanInputs(**fields, tp_overlap=0.5))) == {
        "none": 0.5, "selective": 0.5, "full": 0.5}
    evaluator = evaluator_for(PlanInputs(**fields))
    assert evaluator.step.tp_overlap == 0.25
    assert evaluator.step_settings("full").tp_overlap == pytest.approx(2 / 12, rel=1e-12)
