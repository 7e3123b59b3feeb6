"""The planner's own choice for torchtitan, held to what each published row's release runs (issue 37,
point 3): gradient accumulation only from torchtitan 8570415c3 (2025-06-05), torch.distributed.pipelining's
micro-batch rules for torchtitan's pipelines, and the split of the planner check by what the group's
published layout was for (jobs/validation/planner_choice.py; docs/step.md, Planner)."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from helpers import published_rows_by_id

from gpuplan.catalog import load_model
from gpuplan.planner.framework_rules import torch_pipeline_runs
from gpuplan.planner.space import SpaceLimits, divisors, enumerate_layouts, structures


@pytest.mark.parametrize("row_id, release, accumulates", [
    ("torchtitan-2412-llama-3.1-8b-8g-fsdp-compile", "9dec370", False),
    ("torchtitan-2408-llama-3.1-405b-128g-fsdp-tp", "3faaa1a", False),
    ("torchtitan-2506-llama-3.1-70b-256g-bf16-async-tp", "820504e", True),
    ("torchtitan-2506-trainy-llama-3.1-8b-h200-32g-fp8", "e7c0cae", True),
])
def test_the_rows_release_says_whether_it_accumulates(row_id, release, accumulates):
    # torchtitan train.py at 9dec370 / 3faaa1a: one next(data_iterator) and one loss.backward() a step;
    # 820504e / e7c0cae (after 8570415c3 'Support gradient accumulation'): gradient_accumulation_steps
    from gpuplan.jobs.validation import planner_choice as C

    run = published_rows_by_id()[row_id]
    assert C.release_of(run) == release
    assert C.accumulates(run, "torchtitan") is accumulates
    assert C.accumulates(run, "megatron")  # the rule is torchtitan's releases only


def test_without_accumulation_the_local_batch_is_the_micro_batch():
    """8B on 8 H100 at 9dec370, global batch 16: FSDP 8 runs 2 sequences in one forward / backward. Today's
    torchtitan would split them (the free search takes micro-batch 1, no recompute); the release could not,
    and micro-batch 2 without recompute does not fit the fit rule, so the check's choice is the published
    layout itself (FSDP 8, micro-batch 2, selective)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import best_index, search
    from gpuplan.jobs.validation.planner_choice import planner_plan, release_runs

    run = published_rows_by_id()["torchtitan-2412-llama-3.1-8b-8g-fsdp-compile"]
    plan = planner_plan(run, "torchtitan")
    assert (plan.layout.dp, plan.layout.tp, plan.layout.micro_batch, plan.recompute) == (8, 1, 2, "selective")
    assert plan.layout.dp * plan.layout.micro_batch == run["layout"]["global_batch"]  # one micro-batch a step
    result = search(PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu=run["gpu"], gpus=8, seq_len=8192,
                               global_batch=16, dtype="bf16", framework="torchtitan", compile=True))
    today = best_index(result, "time")
    assert result.table["micro_batches"][today] == 2  # what the rule removes
    kept = release_runs(result, run, "torchtitan").table
    assert len(kept) < len(result.table)
    assert ((kept["micro_batches"] == 1) | (kept["pp"] > 1)).all()
    trainy = published_rows_by_id()["torchtitan-2506-trainy-llama-3.1-8b-h200-32g-fp8"]
    assert release_runs(result, trainy, "torchtitan") is result


@pytest.mark.parametrize("pp, vpp, micro_batches, runs", [
    (1, 1, 1, True),    # no pipeline
    (4, 1, 3, False),   # Schedule1F1B: 3 micro-batches < 4 stages raises
    (4, 1, 4, True),
    (4, 2, 3, True),    # interleaved: rounds = max(1, 3 // 4) = 1
    (4, 2, 9, False),   # rounds = 2, 9 % 2 = 1 raises
    (4, 2, 8, True),    # rounds = 2
    (8, 2, 12, True),   # rounds = 1
    (8, 4, 20, True),   # rounds = 2
    (8, 4, 25, False),  # rounds = 3, 25 % 3 = 1
])
def test_torch_pipelining_rules(pp, vpp, micro_batches, runs):
    # torch 2.13 torch/distributed/pipelining/schedules.py: Schedule1F1B L1020-1024, ScheduleInterleaved1F1B L2935-2942
    assert bool(torch_pipeline_runs(pp, vpp, micro_batches)) is runs


def test_torchtitans_space_keeps_only_the_pipelines_torch_runs():
    spec = load_model("llama-3-8b")  # 32 layers
    counts, seq, target = (32, 64), 4096, 96.0
    titan = enumerate_layouts(spec, counts, seq, target, 8, SpaceLimits(framework="torchtitan"))
    generic = enumerate_layouts(spec, counts, seq, target, 8, SpaceLimits(framework="generic"))
    piped = titan["pp"] > 1
    assert piped.any()
    assert bool(np.all(torch_pipeline_runs(titan["pp"][piped], titan["vpp"][piped], titan["micro_batches"][piped])))
    loose = (generic["pp"] > 1) & ~torch_pipeline_runs(generic["pp"], generic["vpp"], generic["micro_batches"])
    assert loose.any()  # the generic space has pipelines torch would refuse; torchtitan's does not
    # every structure keeps each micro-batch torch runs (the cache keyed by pp and interleaving loses none)
    expected = 0
    for gpus in counts:
        for tp, cp, pp, vpp, dp in structures(spec, gpus, seq, 8, SpaceLimits(framework="torchtitan")):
            if dp > target:
                continue
            per_rank = dp * max(1, round(target / dp)) // dp
            zeros = [z for z in (0, 3) if (z == 0 or dp * cp > 1) and not (z == 0 and dp * cp > 1 and (tp > 1 or pp > 1 or cp > 1))]
            mbs = [m for m in divisors(per_rank) if pp == 1 or torch_pipeline_runs(pp, vpp, per_rank // m)]
            expected += len(list(product(zeros, mbs)))
    assert len(titan["pp"]) == expected


def test_the_check_splits_torchtitans_groups_by_what_their_published_layout_was_for():
    """Async-TP tables (2025-06 benchmark, the Aug-2024 405B page's Float8 + Async TP row, Dec-2024 Table 4)
    and the pipeline-schedule table (Dec-2024 Table 5) publish one layout to show the feature: 7 of the 13
    groups. The FSDP-only 8B tables (Dec-2024 Tables 1 and 3, Trainy's H200) are the other 6."""
    from gpuplan.jobs.validation.planner_choice import _groups, demonstrates_a_layout_feature

    groups = _groups()
    titan = {k: demonstrates_a_layout_feature(groups, k) for k in groups if k[4] == "torchtitan"}
    shown = sorted((k[0], k[2], k[3]) for k, v in titan.items() if v)
    assert shown == [("llama-3.1-405b", 128, "bf16"), ("llama-3.1-405b", 128, "fp8"), ("llama-3.1-405b", 512, "fp8"),
                     ("llama-3.1-70b", 256, "bf16"), ("llama-3.1-70b", 256, "fp8"),
                     ("llama-3.1-8b", 64, "bf16"), ("llama-3.1-8b", 64, "fp8")]
    assert len(titan) == 13
    assert not any(demonstrates_a_layout_feature(groups, k) for k in groups if k[4] == "megatron")


@pytest.mark.parametrize("framework, offered", [("torchtitan", False), ("megatron", True)])
def test_torchtitans_free_search_leaves_context_parallelism_out(framework, offered):
    """torchtitan at b5bcd76 runs CP only with FlexAttention (models/common/decoder.py L173-183), which gpuplan
    does not time and no published run checks: its free search leaves CP out, as a stated --cp > 1 is refused
    (schema/layout_rules.py; review wave 6: before, its CP layouts were offered with the widest class RMS and the
    8B-on-64 BF16 choice was dp32 cp2, a layout the user could not then state). Megatron's CP layouts stay, under
    the distance rule (none takes the widest)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search

    inputs = PlanInputs(model="llama-3.1-8b", tokens=1e12, gpu="h100-sxm-96gb-500w", gpus=8, seq_len=8192,
                        global_batch=16, dtype="fp8", framework=framework)
    result = search(inputs)
    t, widest = result.table, result.evaluator.uncertainty.widest
    cp = t["cp"] > 1
    assert bool(cp.any()) is offered and (~cp).any()
    # catalog/reference/layout_uncertainty.json's 'widest' (its MoE class RMS, the model's own fitted figure, docs/step.md,
    # Planner; regenerated with the model, so read from the packaged file rather than pinned): 0.2278 at ffd599e
    import json
    from pathlib import Path

    import gpuplan.catalog

    packaged = Path(gpuplan.catalog.__file__).parent / "reference" / "layout_uncertainty.json"
    fitted = json.loads(packaged.read_text(encoding="utf-8"))
    assert widest == pytest.approx(fitted["widest"])
    assert 0.1 < widest < 0.4  # a class RMS of the step model's held-out error, not a default
    # what 'widest' is: the MoE class's held-out RMS, the largest of the classes' (fails if the file's figure drifts
    # from its own per-class fit)
    class_rms = {name: entry["rms"] for name, entry in fitted.items() if isinstance(entry, dict) and "rms" in entry}
    assert widest == pytest.approx(class_rms["moe"]) == pytest.approx(max(class_rms.values())), class_rms
    assert (t["uncertainty"] < widest).any()


def test_the_terms_table_names_the_405b_bubble_and_the_published_8b_layouts():
    """`planner_choice --terms`: GPU-seconds a sequence by step term. The published 405B-on-512 layout runs
    interleaved 1F1B, pp 8, 2 virtual stages, 8 micro-batches (local batch 32 in micro-batches of 4: 9dec370's
    default pipeline_parallel_microbatches = pp), one round: its bubble is (pp - 1) / (v m) = 7/16 of the
    compute; the planner's FSDP 256 x TP 2 has none, so the bubble is the term that changes most."""
    from gpuplan.jobs.validation.planner_choice import terms_table
    from gpuplan.jobs.validation.published_throughput import predicted_step

    rows = terms_table()
    assert len(rows) == 2 + 2 * 13
    i = next(k for k, r in enumerate(rows) if r.startswith("| llama-3.1-405b 512 "))
    assert rows[i + 1].rstrip().endswith("| bubble |")
    step = predicted_step(published_rows_by_id()["torchtitan-2412-llama-3.1-405b-512g-interleaved-1f1b"])
    assert step.bubble / step.compute == pytest.approx(7 / 16, rel=0.02)  # 0.431 in the model
    same = [r for r in rows if r.rstrip().endswith("| none: the published layout |")]
    assert len(same) == 4  # 8B on 8 and 128 H100, BF16 and FP8 (release_runs)


@pytest.mark.parametrize("args, code", [
    (("--framework", "torchtitan", "--tp-comm-overlap"), 2),  # async TP without torch.compile: torchtitan raises
    (("--framework", "torchtitan", "--tp-comm-overlap", "--compile"), 0),
    (("--framework", "megatron", "--tp-comm-overlap"), 0),  # TE's userbuffers need no compile
])
def test_torchtitans_async_tp_needs_compile(run_cli, args, code):
    # torchtitan config/configs.py@b5bcd76 L306-313 (CompileConfig.__post_init__): "Async TP requires 'model' in
    # --compile.components and --compile.enable"; the same check at 3faaa1a / 9dec370 parallelize_llama.py
    status, out, err = run_cli("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "16", "--tokens", "1e10", *args)
    assert status == code
    if code:
        assert err.count("\n") == 1 and "tp_comm_overlap" in err and "--compile" in err and not out


def test_torchtitan_gives_a_tied_embedding_model_no_pipeline():
    # torchtitan models/common/decoder.py@b5bcd76 L168-170: "Weight tying is not supported with Pipeline Parallel."
    # (its Llama 3.2 3B config ties, models/llama3/__init__.py L203); a pp the user fixes is evaluated as asked
    spec = load_model("llama-3.2-3b")  # tie_word_embeddings, 28 layers
    assert spec.tie_embeddings
    titan = enumerate_layouts(spec, (32,), 4096, 64.0, 8, SpaceLimits(framework="torchtitan"))
    megatron = enumerate_layouts(spec, (32,), 4096, 64.0, 8, SpaceLimits(framework="megatron"))
    fixed = enumerate_layouts(spec, (32,), 4096, 64.0, 8, SpaceLimits(framework="torchtitan", fixed={"pp": 4}))
    assert len(titan["pp"]) and (titan["pp"] == 1).all()
    assert (megatron["pp"] > 1).any()
    assert len(fixed["pp"]) and (fixed["pp"] == 4).all()
