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
    assert 0.0 <= step.comm_total - step.exposed_comm < step.total
