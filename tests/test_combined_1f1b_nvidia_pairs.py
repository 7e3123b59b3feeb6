"""NVIDIA's own step times for Qwen3-235B-A22B on 64 B200 with and without the EP all-to-all overlap
(NVIDIA-NeMo/Megatron-Bridge PR #1760, 'Improving Qwen3-235B-A22B B200 performance', merged as a6e92de5f,
first in v0.3.0): "MXFP8 step time improved from 20.1s to 16.9s. BF16 step time improved from 17.2s to 16s.
Disable moe_a2a_overlap due to CPU overhead for BF16 and MXFP8. Disable VP for mxfp8."

The presets it changed (scripts/performance/configs/qwen/qwen3_workload_base_configs.py@a6e92de5f L123-144):
64 GPUs, PP 8, EP 8, global batch 1,024, micro-batch 1 (WorkloadBaseConfig default, utils/utils.py L45), the
alltoall dispatcher (no flex backend in the preset). Before: VP 4 and moe_a2a_overlap=True for both precisions;
after: overlap off, VP 4 kept for BF16, VP dropped for FP8 (FP8_MX = FP8_CS, L144). 20.1 s is the held-out
row mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8 (1,024 x 4,096 / 64 / 3,269 tokens/s = 20.05 s).

What these pin (docs/step.md, 'The halving rows against NVIDIA's own tracking'): gpuplan's step without the
overlap is within the row family's held-out mean error (12.9%) of NVIDIA's measured step for both precisions
(17.31 s vs 16.9 s, 14.87 s vs 16.0 s since the row reads its preset's missing CUDA graphs: 16.00 / 14.36 s before);
with the overlap it is not (12.44 s vs 20.1 s, 12.36 s vs 17.2 s), which is not asserted: the model has
the overlap saving 14-19% where NVIDIA measured it costing 7.5% (BF16, same VP) and is left documented, not
fitted (one pair).
"""

from __future__ import annotations

import pytest
from helpers import published_rows_by_id

ROW = "mbridge-25.11-qwen3-235b-a22b-b200-64g-mxfp8"


def _predicted_step_seconds(precision: str, vpp: int, overlap: bool) -> float:
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows_by_id()[ROW]  # a fresh copy: the edits below stay in this run
    assert (run["gpus"], run["layout"]["pp"], run["layout"]["ep"], run["layout"]["micro_batch"],
            run["layout"]["global_batch"], run["moe_comm"]["dispatcher"]) == (64, 8, 8, 1, 1024, "alltoall")
    run["precision"] = precision
    run["layout"]["vpp"] = vpp
    run["moe_comm"]["a2a_overlap"] = overlap
    tokens_per_gpu_s = predict_tokens_per_gpu_s(run)
    return 1024 * 4096 / 64 / tokens_per_gpu_s


FAMILY_MEAN_ERROR = 0.129
"""The bound: the step model's held-out mean |error| on the published row's own family (its validation kind,
NeMo/Megatron-Bridge Blackwell MoE FP8: 12.9% on 65 rows in docs/accuracy.md at 3abebc5), pinned so that a
regression of the model cannot loosen it. A run the model explains should miss by no more than the model's typical
miss on its family. Both runs of the pair take it: the BF16 run is this row's layout at the other precision, and
the BF16 family's own mean (31.0%) would pass nearly anything."""


@pytest.mark.parametrize(("precision", "vpp", "measured_s"), [("mxfp8", 1, 16.9), ("bf16", 4, 16.0)])
def test_step_without_the_overlap_is_within_the_familys_mean_error_of_nvidias(precision, vpp, measured_s):
    predicted = _predicted_step_seconds(precision, vpp, overlap=False)
    assert predicted == pytest.approx(measured_s, rel=FAMILY_MEAN_ERROR)  # +2.4% and -7.1% at the time of writing


def test_the_published_row_is_the_pairs_overlap_run(published_rows):
    run = published_rows[ROW]
    assert run["moe_comm"]["a2a_overlap"] is True
    step = 1024 * 4096 / 64 / run["measured"]["tokens_per_s_per_gpu"]
    assert step == pytest.approx(20.1, abs=0.06)  # PR #1760's 'from 20.1s'
