"""The pipeline bubble when an interleaved schedule has fewer micro-batches than stages.

core.time.pipeline_schedule.pipeline_bubble_fraction: (pp - 1) / vpp when m >= pp (Narayanan et al. 2021,
Sec. 2.2.2); (pp - m) + (m - 1) / vpp when m < pp. The second case is checked against a
dependency simulation of the schedule: every chunk's forward waits for the previous chunk, every
backward for the next one, a device runs one chunk at a time, backward 2x forward.
"""

import pytest

from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.time.pipeline_schedule import pipeline_bubble_fraction
from gpuplan.core.time.step import StepSettings, step_time
from gpuplan.core.comm.topology import cluster_for


def simulated_bubble(pp: int, vpp: int, m: int) -> float:
    """Idle time per step / one micro-batch's forward + backward on a stage, from list
    scheduling (earliest start first, backward before forward on a tie) of m micro-batches
    over pp x vpp chunks, chunk c on device c mod pp; forward 1/vpp, backward 2/vpp."""
    chunks, fwd, bwd = pp * vpp, 1.0 / vpp, 2.0 / vpp
    done: dict[tuple[str, int, int], float] = {}
    free = [0.0] * pp
    todo = {("F", i, c) for i in range(m) for c in range(chunks)} | {("B", i, c) for i in range(m) for c in range(chunks)}
    while todo:
        best = None
        for kind, i, c in todo:
            dep = (0.0 if c == 0 else done.get(("F", i, c - 1))) if kind == "F" else \
                done.get(("F", i, c) if c == chunks - 1 else ("B", i, c + 1))
            if dep is None:
                continue
            key = (max(dep, free[c % pp]), kind != "B", i)
            if best is None or key < best[0]:
                best = (key, (kind, i, c))
        (start, _, _), task = best
        done[task] = free[task[2] % pp] = start + (fwd if task[0] == "F" else bwd)
        todo.discard(task)
    return (max(done.values()) - m * 3.0) / 3.0


def test_bubble_with_enough_micro_batches_is_narayanans():
    assert pipeline_bubble_fraction(4, 1, 16) == pytest.approx(3.0)
    assert pipeline_bubble_fraction(4, 2, 16) == pytest.approx(1.5)
    assert pipeline_bubble_fraction(8, 4, 8) == pytest.approx(7 / 4)


def test_bubble_by_hand_with_fewer_micro_batches_than_stages():
    # one micro-batch over 2 devices x 40 chunks runs the chunks one after another: the step
    # takes 2 micro-batch times for 1 of work, a bubble of 1 (the m >= pp formula says 1/40)
    assert pipeline_bubble_fraction(2, 40, 1) == pytest.approx(1.0)
    # 2 micro-batches over 4 devices x 4 chunks: (4 - 2) + (2 - 1) / 4
    assert pipeline_bubble_fraction(4, 4, 2) == pytest.approx(2.25)
    # plain 1F1B keeps (pp - 1) for any m
    assert pipeline_bubble_fraction(4, 1, 2) == pytest.approx(3.0)


@pytest.mark.parametrize("pp,vpp,m", [(2, 2, 1), (4, 2, 2), (4, 4, 2), (8, 2, 4), (8, 4, 2), (4, 1, 2), (4, 1, 8)])
def test_bubble_matches_a_dependency_simulation(pp, vpp, m):
    assert pipeline_bubble_fraction(pp, vpp, m) == pytest.approx(simulated_bubble(pp, vpp, m), rel=1e-9)


def test_step_time_charges_the_starved_interleaved_pipeline():
    spec, cluster = load_model("llama-2-70b"), cluster_for(load_accelerator("h100"))
    kw = {"dp": 1, "tp": 8, "pp": 4, "micro_batch": 1, "micro_batches": 2}
    interleaved = step_time(spec, cluster, StepSettings(seq_len=4096), vpp=4, **kw)
    plain = step_time(spec, cluster, StepSettings(seq_len=4096), vpp=1, **kw)
    t_mb = plain.compute / 2
    assert plain.bubble == pytest.approx(3 * t_mb)
    assert interleaved.bubble == pytest.approx(2.25 * t_mb, rel=1e-6)


def test_megatron_search_offers_no_starved_interleaved_layout():
    """Megatron-Core raises for interleaved 1F1B with fewer than pp micro-batches (schedules.py);
    the megatron profile's search leaves those layouts out, torchtitan's keeps (and prices) them."""
    from gpuplan.planner.space import SpaceLimits, enumerate_layouts

    spec = load_model("llama-2-70b")
    for needs, expect_starved in ((True, False), (False, True)):
        rows = enumerate_layouts(spec, (64,), 4096, 16, 8, SpaceLimits(interleaved_needs_pp_micro_batches=needs))
        starved = (rows["vpp"] > 1) & (rows["micro_batches"] < rows["pp"])
        assert bool(starved.any()) is expect_starved
        assert bool(((rows["vpp"] > 1) & (rows["micro_batches"] >= rows["pp"])).any())


def test_fixed_starved_interleaving_under_megatron_says_why_gpus_idle():
    """tp 8 pp 4 vpp 2 on 64 GPUs with a 4-sequence batch leaves 2 micro-batches per rank at dp 2:
    Megatron-Core cannot run that, so the plan takes 32 GPUs (dp 1, 4 micro-batches) and says why."""
    from gpuplan.jobs.plan.estimate import plan_report
    from gpuplan.jobs.plan.schema import PlanInputs

    common = {"model": "llama-3-70b", "gpu": "h100", "gpus": 64, "tp": 8, "pp": 4, "vpp": 2, "cp": 1,
              "micro_batch": 1, "global_batch": 4}
    report = plan_report(PlanInputs(**common))
    idle = report.line("idle_gpus")
    assert idle.value == 32 and "needs at least pp micro-batches" in idle.formula
    titan = plan_report(PlanInputs(**common, framework="torchtitan"))
    assert titan.line("idle_gpus").value == 0  # PyTorch's schedule runs it, at its bubble
