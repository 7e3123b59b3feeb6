"""scripts/hidden_comm_check.py (issue 37 diagnostic, docs/step.md 'Blackwell dense FP8 read again'):
its families are docs/accuracy.md's, and the breakdown it reads is the one behind the validation's own
prediction of the row."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def check(load_script):
    return load_script("hidden_comm_check")


def test_families_are_the_validation_kinds(check):
    """Every scored published row falls in the family validate scores it in (estimate.py's kind without
    'throughput: ' and ' (held out)'): 42 Blackwell dense FP8 rows, as docs/accuracy.md counts them."""
    from gpuplan.jobs.validation.estimate import published_throughput_validation

    cases, _ = published_throughput_validation()
    kinds = {c.id: c.kind.removeprefix("throughput: ").removesuffix(" (held out)") for c in cases
             if "newest release" not in c.kind}
    rows = check.family_rows()
    assert {rid: name for name, v in rows.items() for _, _, rid in v} == kinds
    assert len(rows["NeMo/Megatron-Bridge Blackwell dense FP8"]) == 42


def test_breakdown_is_the_prediction(check):
    """The captured step breakdown gives back the row's tokens/s by hand (GBS x sequence / step / GPUs:
    Llama 3.1 405B on 128 B200, GBS 64 x 8,192 tokens) and the wrapper leaves step_time as it was."""
    import gpuplan.jobs.validation.published_throughput as pt

    run = next(r for r in pt.published_throughput_rows()
               if r["id"] == "mbridge-25.11-llama-3.1-405b-b200-128g-fp8cs")
    before = pt.step_time
    tokens, step = check.predicted_with_breakdown(run)
    assert pt.step_time is before
    assert tokens == pytest.approx(pt.predict_tokens_per_gpu_s(run), rel=1e-12)
    assert tokens == pytest.approx(64 * 8192 / step.total / 128, rel=1e-12)
    # The captured breakdown's pipeline line by hand (layout tp4 pp8 vpp8 cp2 dp2 mb1, published_throughput.yaml):
    # interleaved 1F1B keeps 2 (pp x vpp - 1) = 126 transfers on the critical path (pipeline_schedule
    # .critical_path_transfers); each sends mb 1 x 8,192 / cp 2 = 4,096 tokens x h 16,384 x 2 B / tp 4 (sequence
    # parallel) = 33,554,432 B to the next stage, across nodes (tp x cp x dp = 16 ranks fill two 8-GPU B200 nodes
    # first) at 400 Gb/s x 0.90 = 45 GB/s + 15 us (catalog/hardware/b200.toml; core/comm/topology.py
    # DEFAULT_SCALE_OUT_EFFICIENCY / _LATENCY) = 0.76065 ms; 126 x 0.76065 ms = 95.842 ms, all of it exposed.
    pp_by_hand = 126 * (4096 * 16384 * 2 / 4 / 45e9 + 15e-6)
    assert pp_by_hand == pytest.approx(0.095842, rel=1e-5)
    assert step.pp_comm == pytest.approx(pp_by_hand, rel=1e-9)
    # what the script calls hidden: comm_total less the exposed tp + pp + dp lines (cp, ep 0 here); the pipeline's
    # 95.8 ms is in both, so the hidden seconds are the DP traffic's hidden part and the TP collectives' hidden part
    assert step.exposed_comm == pytest.approx(step.tp_comm + step.pp_comm + step.dp_comm, rel=1e-12)
    assert step.cp_comm == step.ep_comm == 0.0
    assert step.dp_comm < step.dp_traffic  # 0.292 of 0.441 s exposed
    assert 0.0 < step.comm_total - step.exposed_comm < step.total
