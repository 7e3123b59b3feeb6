"""Megatron's data-parallel exposure under the interleaved 1F1B schedule, chunk by chunk
(core.comm.dp_overlap.interleaved_exposed; docs/step.md, 'DP traffic across B200 nodes', wave 12 H11)."""

import numpy as np
import pytest

from gpuplan.core.comm import dp_overlap as O
from gpuplan.jobs.validation import published_throughput as PT


def test_one_chunk_is_the_bucketed_rule():
    # vpp 1: every row without an interleaved pipeline keeps Megatron's last-backward / first-forward rule
    for after_last in (False, True):
        assert O.interleaved_exposed(0.8, 80, 0.4, 0.1, 1, 4, after_last) == pytest.approx(
            O.bucketed_exposed(0.8, 80, 0.4, 0.1), rel=1e-12)


def test_hand_worked_chunks():
    # 0.8 s in 80 buckets, a micro-batch's pass 0.4 s, s = 0.1, vpp 8, pp 4: 0.1 s and 10 buckets a chunk.
    # chunk 0 (bucketed over 0.4 / 8 = 0.05 s): 0.01 + max(0.09 - 0.05, 0.009) = 0.05;
    # the 7 others, each beside pp x 0.05 = 0.2 s: 7 x max(0.1 - 0.2, 0.01) = 0.07
    assert O.interleaved_exposed(0.8, 80, 0.4, 0.1, 8, 4) == pytest.approx(0.12, abs=1e-12)
    # align_grad_reduce: chunk 0's reductions after its last backward, 0.1 s whole + 0.07
    assert O.interleaved_exposed(0.8, 80, 0.4, 0.1, 8, 4, True) == pytest.approx(0.17, abs=1e-12)
    # pp 1 (a chunk's group of passes 0.05 s): 7 x max(0.1 - 0.05, 0.01) = 0.35 spill over, + 0.05
    assert O.interleaved_exposed(0.8, 80, 0.4, 0.1, 8, 1) == pytest.approx(0.40, abs=1e-12)
    # arrays (the planner's search): one value a layout
    got = O.interleaved_exposed(np.array([0.8, 0.8]), 80, 0.4, 0.1, np.array([1, 8]), 4, True)
    assert got == pytest.approx([O.bucketed_exposed(0.8, 80, 0.4, 0.1), 0.17], abs=1e-12)


def test_405b_b200_twin_ratio(published_rows):
    # Megatron-Bridge 25.09, Llama 3.1 405B MXFP8, 128 GPUs, tp4 pp8 vpp8 cp2 dp2 on both: measured GB200 / B200
    # tokens/s 0.929 (published_throughput.yaml); the model put 0.278 s of B200's DP traffic (0.441 s) on the
    # critical path, as if one micro-batch's pass hid each whole step's reduce-scatter / gather, and gave 1.101.
    # Chunk by chunk the B200 DP exposure is under 0.1 s and the modelled ratio under 1.08 (1.065)
    b200 = published_rows["mbridge-25.09-llama-3.1-405b-b200-128g-mxfp8"]
    gb200 = published_rows["mbridge-25.09-llama-3.1-405b-gb200-128g-mxfp8"]
    measured = gb200["measured"]["tokens_per_s_per_gpu"] / b200["measured"]["tokens_per_s_per_gpu"]
    assert measured == pytest.approx(0.929, abs=0.001)
    step = PT.predicted_step(b200)
    # by hand: a GPU's 12,682,918,400 parameters (tp 4, pp 8) in ceil(12.68e9 / 128 Mi) = 95 of Bridge's buckets,
    # 2 B gradients (the recipe's grad_dtype): 267.0 MB a call; the DP group (dp 2 x cp 2 = 4 ranks, 2 a B200 domain)
    # crosses 2 domains at 2 x 45 = 90 GB/s, so a ring reduce-scatter or all-gather moves 3/4 of it in
    # 0.75 x 267.0e6 / 90e9 = 2.225 ms + its latencies: 95 x 2 x 2.225 ms = 0.4228 s; the model 0.428 s (1.3% of
    # latencies, ~29 us a call)
    per_call = 0.75 * 12_682_918_400 * 2 / 95 / 90e9
    assert step.dp_traffic == pytest.approx(2 * 95 * per_call, rel=0.02) and step.dp_traffic > 2 * 95 * per_call
    # Megatron-Core's default 40M-parameter buckets: more calls, more latencies (0.441 s; W2-A)
    assert PT.predicted_step(b200, dp_bucket_params=None).dp_traffic > step.dp_traffic
    assert step.dp_comm < 0.1
    modelled = PT.predict_tokens_per_gpu_s(gb200) / PT.predict_tokens_per_gpu_s(b200)
    assert measured < modelled < 1.08
