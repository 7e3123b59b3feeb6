"""The one published-throughput row with the layout of core/time/moe_host.py's fit profile (Megatron-Bridge
SKILL.md@067f987: Qwen3-30B-A3B, 16 H100, BF16, HybridEP, EP 16) is not an independent check of it:
`gpuplan validate` says so beside the row, and its host term is 0 there (the overlap is on)."""

from __future__ import annotations

import pytest

ROW = "mbridge-skill-qwen3-30b-a3b-h100-16g-bf16-hybridep"


def test_the_profiled_layouts_row_carries_its_note_and_no_host_time(published_rows):
    import gpuplan.core.time.step as S
    from gpuplan.jobs.validation.estimate import published_throughput_validation
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    cases, _ = published_throughput_validation()
    notes = {c.note for c in cases if c.id == ROW}
    assert notes == {"mbridge-skill-h100; same layout as the moe_host fit profile (its host term is 0 here)"}
    run = published_rows[ROW]
    lay = run["layout"]
    assert (run["gpus"], lay["ep"], lay["micro_batch"], run["moe_comm"]["backend"]) == (16, 16, 1, "hybridep")
    with_host = predict_tokens_per_gpu_s(run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(S, "stage_exposed_host_seconds", lambda *args, **kwargs: 0.0)
        without = predict_tokens_per_gpu_s(run)
    assert with_host == pytest.approx(without, rel=1e-12)
    # no other row carries the profile's note (other notes cite NVIDIA's tracking of slow configurations)
    assert [c.id for c in cases if "moe_host fit profile" in c.note] == [ROW]
