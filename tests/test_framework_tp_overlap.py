"""`--framework megatron` takes TE's hidden TP share by default (core.frameworks FrameworkProfile.tp_overlap =
core.time.megatron_ops.TE_HIDDEN_TP_SHARE): `gpuplan plan` times a published Megatron-Bridge layout as the
validation mapping does, the share follows the recompute mode, and --tp-overlap goes with --tp-comm-overlap."""

from __future__ import annotations

import pytest

from gpuplan.core.frameworks import FRAMEWORKS
from gpuplan.core.time.megatron_ops import TE_HIDDEN_TP_SHARE

NVFP4 = "mbridge-26.04.01-llama-3-70b-gb200-64g-nvfp4"  # tp 2, no userbuffers (NVFP4 recipes switch them off)
FP8_UB = "mbridge-26.04.01-llama-3-70b-h100-sxm-64g-fp8cs"  # tp 4 with userbuffers (--tp-comm-overlap)


def _plan(run, recompute: str = "none", **extra):
    """`gpuplan plan` (Python API) held to the row's own layout, as a user would type it."""
    from gpuplan.core.parallel import ParallelLayout
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for
    from gpuplan.jobs.validation.published_throughput import PRECISION, tp_comm_overlapped
    from gpuplan.planner.plan import evaluate_layout

    lay = run["layout"]
    degrees = dict(tp=lay["tp"], pp=lay["pp"], vpp=lay.get("vpp") or 1, cp=lay.get("cp") or 1, ep=1,
                   zero=lay.get("zero") or 0, micro_batch=lay["micro_batch"])
    fields = dict(model=run["model"]["catalog"], tokens=1e12, gpu=run["gpu"], gpus=run["gpus"],
                  seq_len=run["model"]["seq_len"], global_batch=lay["global_batch"], dtype=PRECISION[run["precision"]],
                  framework="megatron", recompute=recompute, **degrees) | extra
    if tp_comm_overlapped(run):
        fields["tp_comm_overlap"] = True
    evaluator = evaluator_for(PlanInputs(**fields))
    layout = ParallelLayout(dp=lay["dp"], global_batch=lay["global_batch"], **degrees)
    return evaluate_layout(evaluator, layout, recompute, lay["global_batch"])


@pytest.mark.parametrize("row", [NVFP4, FP8_UB])
def test_plan_times_a_megatron_row_as_the_validation_does(published_rows, row):
    """Same row, same layout: the plan's tokens/s/GPU is the validation mapping's (it was 0.75x slower
    on TP before: the planner charged all 8 collectives a layer, the mapping 6)."""
    from gpuplan.jobs.validation.published_throughput import predict_tokens_per_gpu_s

    run = published_rows[row]
    plan = _plan(run)
    assert plan.tokens_per_second / plan.gpus_asked == pytest.approx(predict_tokens_per_gpu_s(run), rel=1e-9)


@pytest.mark.parametrize(("row", "exposed"), [(NVFP4, 0.75), (FP8_UB, 0.75 / 4)])
def test_the_default_leaves_three_quarters_of_the_tp_time_exposed(published_rows, row, exposed):
    """2 of the 8 collectives a layer is charged hidden: 0.75 of the TP time exposed; with userbuffers
    one chunk in tp of that, (1 - 0.25) / 4 at tp 4."""
    run = published_rows[row]
    default, all_exposed = _plan(run).step.tp_comm, _plan(run, tp_overlap=0.0).step.tp_comm
    total = all_exposed * (run["layout"]["tp"] if row == FP8_UB else 1)  # --tp-overlap 0: 1 or 1/tp of it exposed
    assert total > 0 and default == pytest.approx(exposed * total, rel=1e-9)


def test_full_recompute_keeps_the_same_two_collectives_hidden(published_rows):
    """Full recompute adds the re-run forward's 2 blocking pairs a layer (12 counted, not 8): TE still hides
    the same 2, so 10/12 of the TP time is exposed (a fixed 0.25 would have left 9/12)."""
    run = published_rows[NVFP4]
    full, all_exposed = _plan(run, "full").step.tp_comm, _plan(run, "full", tp_overlap=0.0).step.tp_comm
    assert full == pytest.approx(10 / 12 * all_exposed, rel=1e-9)
    assert FRAMEWORKS["megatron"].tp_overlap_for("full") == pytest.approx(2 / 12)


def test_tp_overlap_goes_with_tp_comm_overlap(published_rows):
    """Both given: (1 - tp_overlap) / tp of the TP time exposed (tp 4: 0.5 / 4)."""
    run = published_rows[FP8_UB]
    half, none = _plan(run, tp_overlap=0.5).step.tp_comm, _plan(run, tp_overlap=0.0).step.tp_comm
    assert half == pytest.approx(0.5 * none, rel=1e-9)


def test_only_megatron_hides_tp_by_default():
    """TE's async dgrad reduce-scatter is Megatron-Core + TE's; the other profiles' code does not run it."""
    assert FRAMEWORKS["megatron"].tp_overlap == TE_HIDDEN_TP_SHARE == 0.25
    assert {name: p.tp_overlap for name, p in FRAMEWORKS.items() if name != "megatron"} == {
        "generic": 0.0, "torchtitan": 0.0, "deepspeed": 0.0, "hf": 0.0}


def test_the_cli_takes_both_overlaps(capsys):
    from gpuplan.cli import main

    code = main(["train", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "16", "--tokens", "1e9", "--tp", "4",
                 "--tp-overlap", "0.5", "--tp-comm-overlap"])
    assert code == 0, capsys.readouterr().err
