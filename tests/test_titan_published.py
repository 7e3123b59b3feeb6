"""torchtitan's published H100 rows (held out: nothing in core/time/titan_ops.py is fitted on
them) timed with torchtitan's own op list, eager or compiled per row."""

import pytest

from gpuplan.jobs.validation.published_throughput import published_throughput_cases


@pytest.fixture(scope="module")
def titan_cases():
    cases, _ = published_throughput_cases()
    return {c.id: c for c in cases if c.family.startswith("torchtitan")}


@pytest.mark.parametrize("gpus", ["8g", "128g"])
def test_compile_over_eager_speed_up_is_near_the_published_one(titan_cases, gpus):
    # published (benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3): 6,667 / 5,762 = 1.157
    # and 6,514 / 5,605 = 1.162. The fused model before the op list predicted 1.03; the op list
    # predicts 1.18 (docs/step.md "torchtitan: eager and compiled"): within 0.04
    eager = titan_cases[f"torchtitan-2412-llama-3.1-8b-{gpus}-fsdp"]
    compiled = titan_cases[f"torchtitan-2412-llama-3.1-8b-{gpus}-fsdp-compile"]
    published = compiled.measured / eager.measured
    predicted = compiled.predicted / eager.predicted
    assert published == pytest.approx(1.16, abs=0.005)
    assert predicted > 1.0
    assert predicted == pytest.approx(published, abs=0.04)


def test_held_out_torchtitan_families_stay_within_their_recorded_accuracy(titan_cases):
    # docs/accuracy.md before the op list: BF16 9.4% mean |error| (8 rows), FP8 7.7% (20);
    # with it 6.8% and 7.5% (docs/step.md): neither may get worse than before. FSDP2's copies on the
    # compute stream (titan_ops.fsdp_copy_seconds, read from torch, not fitted) take BF16 to 5.6% and
    # FP8 to 7.9% (bias +1.0 -> +0.4%: the rows it moves further off were already predicted slow); FSDP2
    # under a pipeline (fp32 gradient accumulation, reductions after the stage's last backward; read from
    # torch, not fitted) takes FP8 to 7.7% (its six 405B PP rows move toward their measurements)
    by_precision = {"bf16": [], "fp8": []}
    for case in titan_cases.values():
        by_precision.setdefault(case.precision, []).append(abs(case.error))
    # torchtitan's Aug-2024 405B FSDP 16 x TP 8 rows (docs/performance.md@3faaa1a) add one BF16 row (+11.1%)
    # and two FP8 (-8.0%, +2.1%): BF16 5.6% -> 6.2% over 9, FP8 7.7% -> 7.5% over 22 (docs/step.md, Planner)
    assert len(by_precision["bf16"]) == 9
    assert sum(by_precision["bf16"]) / 9 <= 0.094
    assert len(by_precision["fp8"]) == 22
    assert sum(by_precision["fp8"]) / 22 <= 0.078
