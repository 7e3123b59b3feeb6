"""What the second held-out GPU-hours set (issue 37 point 4) ran, as `train --mfu predicted` receives it
(jobs/validation/gpu_hours.py; training_runs.yaml; docs/training.md 'Why the second set is predicted fast')."""

import pytest

from gpuplan.catalog import reference_runs
from gpuplan.jobs.validation.gpu_hours import UNSTATED_VPP, end_to_end_gpu_hours, run_inputs

NEOX_V1_ROWS = ("pythia-160m", "pythia-410m", "pythia-1.4b", "pythia-2.8b", "pythia-6.9b", "pythia-12b")


def _runs():
    return {r["id"]: r for r in reference_runs()["runs"]}


def test_gpt_neox_v1_rows_hide_no_dp_or_tp_communication():
    """GPT-NeoX v1.0 trains pipe-parallel-size 1 through DeepSpeed's PipelineEngine, which all-reduces the
    gradients after the last backward (DeeperSpeed@eb7f5cff pipe/engine.py L234-246), and reduces TP outputs
    with a synchronous all_reduce (mpu/mappings.py L29-45): the rows pass --dp-overlap 0 --tp-overlap 0."""
    runs = _runs()
    for rid in NEOX_V1_ROWS:
        inputs = run_inputs(runs[rid])
        assert (inputs.dp_overlap, inputs.tp_overlap) == (0.0, 0.0), rid
        assert "DeeperSpeed@eb7f5cff" in runs[rid]["cluster_source"], rid


def test_unhidden_dp_communication_moves_gpu_hours_by_the_exposed_seconds_alone():
    """Pythia 2.8B on its stated dp64 ZeRO-1 mb16 layout: the row's --dp-overlap 0 leaves every DP collective on
    the critical path; the GPU-hours move by (step + extra exposed seconds) / step and nothing else (by hand
    at this commit: 4.199 s + (0.0790 - 0.0132) s = 4.265 s, x1.0157: 10,698 -> 10,865 GPU-hours; with the row's
    FlashAttention 1 at its measured speed (tests/test_flash_attention_1.py) 4.818 s + 0.0658 s, x1.0137:
    12,248 -> 12,415)."""
    from gpuplan.jobs.budget.estimate import estimate_budget

    run = _runs()["pythia-2.8b"]
    stated, default = run_inputs(run), run_inputs(run).model_copy(update={"dp_overlap": 0.9})
    rep_stated, rep_default = estimate_budget(stated), estimate_budget(default)
    exposed_stated, exposed_default = rep_stated.value("class_comm"), rep_default.value("class_comm")
    assert exposed_stated > 4 * exposed_default  # 90% hidden by default, none by the run's code
    steps = run["tokens"] / (run["global_batch"] * run["seq_len"])  # 143,000
    step = rep_default.value("gpu_hours_with_comm") * 3600 / run["gpus"] / steps  # seconds a step
    assert step == pytest.approx(4.82, abs=0.3)
    ratio = rep_stated.value("gpu_hours_with_comm") / rep_default.value("gpu_hours_with_comm")
    assert ratio == pytest.approx((step + exposed_stated - exposed_default) / step, rel=2e-3)


def test_a_stated_pipeline_without_virtual_stages_runs_one_chunk_per_stage():
    """StarCoderBase's paper states tp 4, pp 4, micro-batch 1 and no virtual stages: Megatron-LM's default
    (--num-layers-per-virtual-pipeline-stage unset) is one chunk a stage, so vpp is 1 (the planner had picked
    vpp 12, one layer a chunk); a run that names its vpp keeps it, and one without pp > 1 gets no vpp."""
    runs = _runs()
    inputs = run_inputs(runs["starcoderbase-15.5b"])
    assert (inputs.tp, inputs.pp, inputs.vpp, inputs.micro_batch) == (4, 4, UNSTATED_VPP, 1) == (4, 4, 1, 1)
    named = dict(runs["starcoderbase-15.5b"], degrees={"tp": 4, "pp": 4, "vpp": 2, "micro_batch": 1})
    assert run_inputs(named).vpp == 2
    assert run_inputs(runs["llama1-65b"]).vpp is None  # degrees {zero: 0}: the planner's schedule
    hours, basis = end_to_end_gpu_hours(runs["starcoderbase-15.5b"])
    assert "(no virtual stages named: --vpp 1): dp32 tp4 pp4 ZeRO-1 mb1" in basis  # the layout timed: no vpp


def test_starcoder_tokens_are_its_steps_times_its_batch():
    """The card's 250k pre-training steps x the paper's 512 sequences of 8,192 tokens = 1,048,576,000,000 tokens
    (the card's '1 trillion' rounded)."""
    assert _runs()["starcoderbase-15.5b"]["tokens"] == 250_000 * 512 * 8_192 == 1_048_576_000_000
