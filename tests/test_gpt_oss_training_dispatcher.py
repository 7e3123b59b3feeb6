"""GPT-OSS 120B on Blackwell: the MoE dispatcher choice is not the gap (docs/step.md, "GPT-OSS 120B, seventh pass").

Two NVIDIA measurements switch only the token dispatcher at one GPT-OSS BF16 layout, and the step model
(nothing fitted on either) reproduces both:

* NVIDIA-NeMo/Megatron-Bridge#3561 (merged 2026-04-28): 64 GB200, ep 64, micro-batch 4, global batch 1,280,
  s 4,096, recompute layernorm + moe_act, moe_a2a_overlap on: BF16 'alltoall' 423.6 TFLOP/s/GPU against
  HybridEP 406.6, 423.6 / 406.6 = 1.04181. The published pair at that layout (26.04 HybridEP 15,938
  tokens/s/GPU, 26.04.01 'alltoall' 16,640) measures 16,640 / 15,938 = 1.04405.
* NVIDIA-NeMo/Megatron-Bridge#3387 ('GPT-OSS BF16 B200 regression', 26.04.01 label): switching the B200
  preset back to 'alltoall' recovers the 26.04 loss; the published pair (ep 8, micro-batch 4) is 13,568 /
  13,045 = 1.04009.

The model gives 22,798 / 21,884 = 1.0418 (GB200) and 17,772 / 17,232 = 1.0313 (B200), and the same ratio
when only the 26.04.01 row's dispatcher is switched, so the release pair differs by the dispatcher alone in
the model as in NVIDIA's A/B. Both predictions stay 30-37% above their measurements: the GPT-OSS gap is
common to both dispatchers. Tolerance: 1.5 points on the ratio (the three measured figures span 1.040-1.044).
"""

from __future__ import annotations

import pytest

from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

from helpers import published_rows_by_id

PR_3561_ALLTOALL_OVER_HYBRIDEP = 423.6 / 406.6  # = 1.04181, TFLOP/s/GPU, 64 GB200 BF16
PAIRS = {  # gpu: (26.04.01 'alltoall' row, 26.04 HybridEP row, measured alltoall / HybridEP)
    "gb200": ("mbridge-26.04.01-gpt-oss-120b-gb200-64g-bf16", "mbridge-26.04-gpt-oss-120b-gb200-64g-bf16",
              16640 / 15938),
    "b200": ("mbridge-26.04.01-gpt-oss-120b-b200-64g-bf16", "mbridge-26.04-gpt-oss-120b-b200-64g-bf16",
             13568 / 13045),
}


def _rows(gpu: str) -> tuple[dict, dict]:
    rows = published_rows_by_id()
    alltoall, hybridep = PAIRS[gpu][:2]
    return rows[alltoall], rows[hybridep]


def test_the_pairs_are_the_dispatcher_switch():
    """The two rows of each pair differ in the dispatcher (the fields the model reads), nothing else."""
    for gpu in PAIRS:
        alltoall, hybridep = _rows(gpu)
        assert alltoall["layout"] == hybridep["layout"], gpu
        assert alltoall["moe_comm"]["dispatcher"] == "alltoall" and hybridep["moe_comm"]["dispatcher"] == "flex"
        assert hybridep["moe_comm"]["backend"] == "hybridep"
        rest = ("a2a_overlap", "cuda_graph")
        assert [alltoall["moe_comm"][k] for k in rest] == [hybridep["moe_comm"][k] for k in rest], gpu
        assert alltoall["recipe_recompute"] == hybridep["recipe_recompute"], gpu


@pytest.mark.parametrize("gpu", sorted(PAIRS))
def test_predicted_dispatcher_ratio_matches_the_measured_one(gpu):
    alltoall, hybridep = _rows(gpu)
    predicted = predict_tokens_per_gpu_s(alltoall) / predict_tokens_per_gpu_s(hybridep)
    assert predicted == pytest.approx(PAIRS[gpu][2], abs=0.015), (gpu, predicted)
    if gpu == "gb200":
        assert predicted == pytest.approx(PR_3561_ALLTOALL_OVER_HYBRIDEP, abs=0.015), predicted


@pytest.mark.parametrize("gpu", sorted(PAIRS))
def test_switching_only_the_dispatcher_gives_the_release_pair(gpu):
    """The 26.04.01 row with HybridEP is the 26.04 row's prediction (within 0.1%): nothing else moves."""
    alltoall, hybridep = _rows(gpu)
    switched = predict_tokens_per_gpu_s(alltoall, ep_dispatcher="flex", flex_backend="hybridep")
    assert switched == pytest.approx(predict_tokens_per_gpu_s(hybridep), rel=1e-3)

