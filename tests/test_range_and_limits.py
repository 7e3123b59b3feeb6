"""Wave 9 hostile-input sweep: what a --gpus range searches, what a refusal may suggest, and where a sequence
outruns a learned position table — each agreed by every door (CLI, plan files, web API, Python API: one schema).

1. `plan --gpus 100-120` searched 100 alone (a range with no power of two fell back to its low end) and said
   nothing of 101-120: a range now searches its powers of two and both ends (planner.space.power_counts).
"""

import time

import pytest
from helpers import field_refusal


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from gpuplan.web.app import create_app

    return TestClient(create_app())


# ---- 1. a --gpus range: its powers of two and both ends -------------------------------------------------------

@pytest.mark.parametrize("typed, counts", [
    ("100-120", (100, 120)),  # no power of two inside: both ends (was (100,))
    ("100-300", (100, 128, 256, 300)),  # 2^7, 2^8 and the ends (was (128, 256))
    ("512-4096", (512, 1024, 2048, 4096)),  # ends that are powers of two: unchanged
    ("7-7", (7,)),
    ("1-10000000", tuple(2**k for k in range(24)) + (10_000_000,)),  # 2^23 = 8,388,608 <= 10^7 < 2^24
])
def test_a_range_stands_for_its_powers_of_two_and_both_ends(typed, counts):
    from gpuplan.jobs.plan.schema import PlanInputs

    assert PlanInputs(model="llama-3.1-8b", gpus=typed).gpu_counts == counts


def test_a_range_without_a_power_of_two_searches_both_ends_at_every_door(run_json, client, tmp_path):
    """100-120 on llama-3.1-8b / H100: the 120-GPU end is searched and wins on time (dp120 against dp100, the
    same per-GPU batch and step: days scale as 100 / 120, 20.1 -> 16.8 days, within 2%)."""
    from gpuplan import plan_report

    cli = run_json("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "100-120")
    assert cli["inputs"]["gpu_counts"] == "100,120"
    assert cli["results"]["best_gpus"] == 120
    alone = run_json("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "100")
    days = cli["results"]["best_days"] / alone["results"]["best_days"]
    assert days == pytest.approx(100 / 120, rel=0.02)
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": "100-120"}
    assert client.post("/api/plan", json=body).json()["results"]["best_gpus"] == 120
    assert plan_report(body).value("best_gpus") == 120
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text("model: llama-3.1-8b\ngpu: h100\ngpus: 100-120\n")
    assert run_json("plan", str(plan_file))["results"]["best_gpus"] == 120


def test_the_range_note_names_both_ends():
    from gpuplan import plan_report

    notes = plan_report({"model": "llama-3.1-8b", "gpu": "h100", "gpus": "100-300", "days": 10}).notes
    assert any("--gpus 100-300 searched 4 GPU counts (100, 128, 256, 300: a range stands for its powers of two "
               "and both ends)" in note for note in notes), notes


def test_the_widest_range_keeps_its_answer_and_stays_quick():
    """docs/training.md: `plan llama-3.1-405b --gpu h100 --gpus 1-10000000` answers 131,072 GPUs (2.06 days
    with failures). 25 counts (24 powers of two and 10,000,000) not millions: the search took 0.26 s before
    and 0.14-0.15 s after on the shared 2-core box; 10 s is a hang, not noise."""
    from gpuplan import plan_report

    start = time.perf_counter()
    answer = plan_report({"model": "llama-3.1-405b", "gpu": "h100", "gpus": "1-10000000"})
    assert time.perf_counter() - start < 10
    assert answer.value("best_gpus") == 131_072
    assert answer.value("fail_wall_seconds") / 86_400 == pytest.approx(2.06, abs=0.01)
