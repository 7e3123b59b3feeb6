"""Issue 37, the planner's own choice (wave 7): torchtitan runs at the kinds of layout the planner chooses.

The IBM / Meta PyTorch blog 'Supercharging Training using float8 and FSDP2' (2024-11-25,
https://pytorch.org/blog/training-using-float8-fsdp2/, pytorch/pytorch.github.io
_posts/2024-11-25-training-using-float8-fsdp2.md@1580429b) Table 3: torchtitan on 512 H100 of the IBM Cloud
cluster, sequence 8K, torch.compile, wps (tokens/s/GPU) 70B 960 BF16 / 1448 float8, 405B (TP4) 152 / 217. The
blog states the degrees (FSDP2; TP 4 for 405B) but not the batch or activation checkpointing, so the rows are
not timed by the step-time check and enter the planner check as degrees-only groups.
"""

from __future__ import annotations

import math

import pytest
from helpers import planner_choice_cases_once, published_rows_by_id

IBM = {  # id -> (tokens/s/GPU as printed, tp)
    "torchtitan-ibm-2411-llama-3.1-70b-512g-fsdp": (960, 1),
    "torchtitan-ibm-2411-llama-3.1-70b-512g-fsdp-float8": (1448, 1),
    "torchtitan-ibm-2411-llama-3.1-405b-512g-fsdp-tp4": (152, 4),
    "torchtitan-ibm-2411-llama-3.1-405b-512g-fsdp-tp4-float8": (217, 4),
}


@pytest.mark.parametrize("row_id", sorted(IBM))
def test_the_ibm_rows_quote_table_3_and_are_not_timed(row_id):
    from gpuplan.jobs.validation.published_throughput import why_not

    run = published_rows_by_id()[row_id]
    tps, tp = IBM[row_id]
    assert run["measured"]["tokens_per_s_per_gpu"] == tps
    assert f"= {tps}" in run["source"] and "Table 3" in run["source"]
    assert (run["gpu"], run["gpus"], run["model"]["seq_len"]) == ("h100-sxm", 512, 8192)
    lay = run["layout"]
    assert (lay["tp"], lay["dp"], lay["pp"], lay["zero"]) == (tp, 512 // tp, 1, 3)
    # not published: the blog "explored the best batch size and activation checkpointing schemes"
    assert lay["micro_batch"] is None and lay["global_batch"] is None and lay["recompute"] is None
    assert why_not(run) == "layout incomplete"


def test_four_degrees_only_groups_planned_as_their_release_ran():
    from gpuplan.jobs.validation.planner_choice import degrees_only_groups, planner_plan
    from gpuplan.jobs.validation.planner_releases import accumulates

    groups = degrees_only_groups()
    assert sorted((k[0], k[3]) for k in groups) == [("llama-3.1-405b", "bf16"), ("llama-3.1-405b", "fp8"),
                                                    ("llama-3.1-70b", "bf16"), ("llama-3.1-70b", "fp8")]
    assert all(k[1:3] == ("h100-sxm", 512) and k[4] == "torchtitan" for k in groups)
    run = published_rows_by_id()["torchtitan-ibm-2411-llama-3.1-70b-512g-fsdp-float8"]
    # published 2024-11-25, before torchtitan's gradient accumulation (8570415c3, 2025-06-05)
    assert not accumulates(run, "torchtitan")
    for runs in groups.values():  # each group's best run, as planner_choice_cases plans it
        best = max(runs, key=lambda r: r["measured"]["tokens_per_s_per_gpu"])
        plan = planner_plan(best, "torchtitan")
        assert plan.layout.pp > 1 or plan.global_batch == plan.layout.dp * plan.layout.micro_batch
        # no batch published: the planner's default, 4M tokens = 512 sequences of 8,192 (the line's label says so)
        assert plan.global_batch == 512


def test_the_check_splits_them_out_and_times_no_published_layout(monkeypatch):
    from gpuplan.jobs.validation import planner_choice
    from gpuplan.jobs.validation.estimate import planner_cases

    every = planner_choice_cases_once()
    monkeypatch.setattr(planner_choice, "planner_choice_cases", lambda: every)  # planner_cases: these, not again
    cases = [c for c in every if c.framework == "torchtitan"]
    new = [c for c in cases if not c.layout_stated]
    assert len(cases) == 17 and {c.id for c in new} == set(IBM)
    # 7 feature-demonstration groups and 6 others, as before; the new ones are neither
    assert sum(c.demonstration for c in cases) == 7 and sum(c.layout_stated and not c.demonstration
                                                            for c in cases) == 6
    for c in new:
        assert math.isnan(c.at_published) and c.measured == IBM[c.id][0]
        assert c.best_any_count == c.measured  # no other torchtitan count of these models on 700 W H100 80GB
    planner = planner_cases()
    # their line of its own (review wave 7 r2): the headline and any-count lines are at the run's batch, which
    # these rows do not publish; 13 torchtitan groups on each, as before the IBM rows came
    own = [c for c in planner if c.id in IBM]
    assert len(own) == 4 and all("states its degrees only: batch not published" in c.kind
                                 and "default 512 sequences" in c.kind and "not published" in c.note for c in own)
    headline = "planner: its own choice vs the best published run (torchtitan)"
    any_count = "at any GPU count (torchtitan)"
    assert sum(c.kind == headline for c in planner) == 13 and sum(c.kind.endswith(any_count) for c in planner) == 13
    assert sum("predicted advantage" in c.kind and "(torchtitan)" in c.kind for c in planner) == 13


def test_the_70b_bf16_row_sets_the_hopper_dense_bf16_mfu_ceiling():
    from gpuplan.jobs.validation.mfu_ceiling import ceiling

    # Llama 3.1 70B: 70,553,706,496 parameters less the input embedding (128,256 x 8,192 = 1,050,673,152) and the
    # norms (80 x 2 x 8,192 + 8,192 = 1,318,912): 69,501,714,432 matmul parameters, x 6 = 417,010,286,592; attention
    # 12 x 80 layers x 8,192 tokens x 8,192 hidden = 64,424,509,440 (no causal halving): 481,434,796,032 FLOPs a
    # token; x 960 / 989.4e12 (H100 SXM dense BF16) = 0.46713 (MPT-7B's 0.46378 before)
    best = ceiling("h100-sxm", False, "bf16")
    assert best.run == "torchtitan-ibm-2411-llama-3.1-70b-512g-fsdp"
    assert best.mfu == pytest.approx(481_434_796_032 * 960 / 989.4e12, rel=1e-4)
