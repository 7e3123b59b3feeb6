"""The layouts Megatron-Core refuses under --overlap-moe-expert-parallel-comm (the combined 1F1B
schedule, gpuplan --ep-a2a-overlap) and the interleaved schedule's micro-batch rule
(planner.framework_rules): a user's fixed degrees are refused in one line (exit 2), the search never
offers them. Sources: transformer_config.py@core_v0.15.0 L1446-1450 (pp > 1 needs a virtual
pipeline), L1452-1454 (ep > 1), L1460-1462 (no full recompute); schedules.py L975-993 (interleaved:
microbatch_group_size_per_vp_stage in [pp, m], m mod it 0 or >= pp; at the default size pp, the
order gpuplan's combined count was read off, m a multiple of pp)."""

import numpy as np
import pytest

from gpuplan.planner.framework_rules import combined_1f1b_runs, interleaved_runs

QWEN = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "16", "--ep-a2a-overlap"]


def test_rules_by_hand():
    # pp 4 vpp 2 in groups of pp: 8 micro-batches run (two groups of 4), 6 do not (last group 2 < pp),
    # nor 2 (< pp); with a group size of m (6) Megatron runs 6 too, never fewer than pp
    assert interleaved_runs(4, 2, 8, True) and not interleaved_runs(4, 2, 6, True)
    assert not interleaved_runs(4, 2, 2, True) and not interleaved_runs(4, 2, 2)
    assert interleaved_runs(4, 2, 6) and interleaved_runs(4, 1, 6, True)  # plain 1F1B takes any count
    assert list(interleaved_runs(np.array([4, 4]), np.array([2, 2]), np.array([12, 10]), True)) == [True, False]
    assert combined_1f1b_runs(1, 1, 8) and combined_1f1b_runs(2, 12, 8)
    assert not combined_1f1b_runs(2, 1, 8) and not combined_1f1b_runs(1, 1, 1) and not combined_1f1b_runs(2, 12, 1)


@pytest.mark.parametrize("extra, field", [
    (["--pp", "2", "--vpp", "1"], "vpp"),
    (["--recompute", "full"], "recompute"),
    (["--framework", "megatron", "--recompute-layers", "2"], "recompute_layers"),
    (["--ep", "1"], "ep_a2a_overlap"),
])
def test_fixed_degrees_megatron_refuses_are_one_line_exit_2(capsys, extra, field):
    from gpuplan.cli import main

    assert main(QWEN + extra) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {field}: got ") and "Traceback" not in err[0]


def test_fixed_combined_layout_without_whole_groups_is_one_line_exit_2(capsys):
    """Qwen3-30B-A3B on 32 H100, tp 1 pp 2 vpp 12 cp 1 ep 8 (dp 16), micro-batch 1: a 24-sequence batch is
    1.5 micro-batches at dp 16 and 3 on the next usable count (16 GPUs, dp 8), not a multiple of pp 2 (64
    sequences, 4, run). A 48-sequence batch runs on 16 GPUs (dp 8, 6 micro-batches), which fit since MoE rows
    keep no expert output (core.memory.activations.unsaved_expert_output_bytes)."""
    from gpuplan.cli import main

    args = ["plan", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "32", "--ep-a2a-overlap", "--tp", "1",
            "--pp", "2", "--vpp", "12", "--cp", "1", "--ep", "8", "--micro-batch", "1", "--global-batch"]
    assert main(args + ["24"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: global_batch: got 24; ") and "a multiple of pp micro-batches" \
        in err[0]  # the batch, as `memory` names it (session 25: it named gpus)
    assert main(args + ["64"]) == 0


@pytest.mark.parametrize("job", ["plan", "train", "budget"])
@pytest.mark.parametrize("degrees, rule", [
    # combined 1F1B: every dp a 45-sequence batch allows (1, 3, 5, 9, 15: m 45, 15, 9, 5, 3) leaves an odd
    # micro-batch count, never a multiple of pp 2, on any usable GPU count (with 48, dp 8 on 16 GPUs runs m 6
    # and fits since MoE rows keep no expert output: that smaller count is a valid answer)
    (["--ep-a2a-overlap", "--pp", "2", "--vpp", "12", "--global-batch", "45"], "a multiple of pp"),
    # plain interleaved Megatron: dp = 32 / 4 = 8, m = 24 / 8 = 3 < pp 4
    (["--pp", "4", "--vpp", "2", "--global-batch", "24"], "at least pp"),
])
def test_train_and_budget_give_plans_reason_when_no_layout_exists(capsys, job, degrees, rule):
    """train and budget blamed memory ('no layout fits ... 48 GPUs') where no layout exists at all on
    the 32 GPUs asked (memory says the layout fits): every job now names the micro-batch rule."""
    from gpuplan.cli import main

    args = [job, "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "32", "--tp", "1", "--cp", "1", "--ep", "8",
            "--micro-batch", "1", *degrees]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: global_batch: got {degrees[-1]}; ")  # memory's field (s25)
    assert f"needs {rule} micro-batches per step" in err[0] and "fits" not in err[0]


@pytest.mark.parametrize("framework", ["megatron", "generic"])
def test_search_offers_only_layouts_megatron_runs(framework):
    """Qwen3-30B-A3B (128 experts, 48 layers) on 16-64 H100: every layout considered has ep > 1, a
    virtual pipeline wherever pp > 1, a multiple of pp micro-batches when interleaved, and no full
    recompute; without the overlap the search does offer such layouts (the rules bite)."""
    from gpuplan.jobs.plan.schema import PlanInputs
    from gpuplan.jobs.plan.search import search
    from gpuplan.planner.space import RECOMPUTE_MODES

    def layouts(overlap):
        table = search(PlanInputs(model="qwen3-30b-a3b", gpu="h100", gpus="16,32,64", framework=framework,
                                  ep_a2a_overlap=overlap)).all
        return {k: np.asarray(table[k]) for k in ("pp", "vpp", "ep", "micro_batches", "recompute")}

    on, off = layouts(True), layouts(False)
    full = RECOMPUTE_MODES.index("full")
    interleaved = on["vpp"] > 1
    assert len(on["pp"]) > 1000 and (on["pp"] > 1).any() and interleaved.any()
    assert (on["ep"] > 1).all() and not ((on["pp"] > 1) & (on["vpp"] == 1)).any()
    assert (on["micro_batches"][interleaved] % on["pp"][interleaved] == 0).all()
    assert not (on["recompute"] == full).any()
    assert (off["ep"] == 1).any() and ((off["pp"] > 1) & (off["vpp"] == 1)).any() and (off["recompute"] == full).any()
