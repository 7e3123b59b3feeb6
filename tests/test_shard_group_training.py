"""--shard-group (HSDP) in the training jobs (schema.shard_group, planner.framework_rules.HSDP_ZERO_STAGES): the model
states sharded within the group, the HSDP all-reduce of each gradient shard across the replicas, the planner keeping
the layouts the group divides, and one-line refusals at the four doors (CLI, plan file, web API, Python API).

The numbers are Llama 3.2 1B's: 1,235,814,400 parameters (tied embeddings; 16 layers), 64 H100 (8 nodes of 8),
dp 64 tp 1 pp 1 ZeRO-3, micro-batch 1, 64 sequences: the generic framework's recipe, bf16 weights (2 B), fp32
gradients on the wire and in memory (4 B), fp32 master (4 B) and two Adam moments (8 B)."""

import pytest
from helpers import four_door_refusal

import gpuplan
from gpuplan.core.comm import collectives as K
from gpuplan.core.parallel import ParallelLayout
from gpuplan.jobs.plan.search import evaluator_for, search
from gpuplan.planner.plan import evaluate_layout

pytestmark = pytest.mark.usefixtures("time_box")

PARAMS = 1_235_814_400
LAYERS = 16
ASK = {"model": "llama-3.2-1b", "gpu": "h100", "gpus": 64, "tokens": 1e9, "global_batch": 64}
FIXED = {"tp": 1, "pp": 1, "zero": 3, "micro_batch": 1, "recompute": "none"}


def _plan(shard_group=None, **more):
    inputs = gpuplan.PlanInputs(**ASK, **FIXED, shard_group=shard_group, **more)
    ev = evaluator_for(inputs)
    return evaluate_layout(ev, ParallelLayout(dp=64, zero=3, micro_batch=1, global_batch=64), "none", 64), ev


def _dp_rows(plan) -> dict:
    return {c.collective: c for c in plan.step.collectives if c.parallelism == "DP" and float(c.calls) > 0}


def test_the_catalog_model_has_the_parameters_the_numbers_use():
    assert gpuplan.count_parameters(gpuplan.resolve_model("llama-3.2-1b")).total == PARAMS


def test_model_states_per_gpu_are_sharded_within_the_group():
    """ZeRO-3 over all 64 ranks: weights 2 B x P / 64 = 38,619,200 B; within 8: 2 B x P / 8 = 308,953,600 B; the
    gradients (4 B), master (4 B) and moments (8 B) the same 8 times more (exact: P divides by 64)."""
    hsdp, _ = _plan(8)
    full, _ = _plan()
    for name, per_param in (("weights", 2), ("grads", 4), ("master", 4), ("optimizer", 8)):
        assert getattr(hsdp.memory, name) == per_param * PARAMS / 8 == 8 * getattr(full.memory, name), name
    assert hsdp.memory.weights == 308_953_600 and full.memory.weights == 38_619_200
    assert hsdp.layout.shard_group == 8 and hsdp.degrees()["shard_group"] == 8 and "shard_group" not in full.degrees()


def test_a_group_of_every_data_parallel_rank_is_plain_sharding():
    """shard_group = dp x cp = 64: the same memory and step as no group (one replica: no HSDP all-reduce)."""
    whole, _ = _plan(64)
    full, _ = _plan()
    assert whole.memory.allocated == full.memory.allocated and float(whole.step.total) == float(full.step.total)
    assert "HSDP all-reduce" not in _dp_rows(whole) and "HSDP" not in whole.text()


def test_the_step_all_reduces_each_gradient_shard_across_the_replicas():
    """Per layer (16 FSDP units): the gradient reduce-scatter 4 B x P / 16 = 308,953,600 B and the parameter
    all-gather 2 B x P / 16 = 154,476,800 B (forward and backward: 32 calls) within the 8 ranks of a node; the HSDP
    all-reduce of each unit's shard, 308,953,600 / 8 = 38,619,200 B, 16 calls across the 8 replicas (one GPU a node,
    tp x shard = 8 apart), each timed as one NCCL all-reduce on that group. Three DP collectives; two without it."""
    hsdp, ev = _plan(8)
    rows = _dp_rows(hsdp)
    assert set(rows) == {"grad reduce-scatter / all-reduce", "param all-gather", "HSDP all-reduce"}
    grads, gather, across = rows["grad reduce-scatter / all-reduce"], rows["param all-gather"], rows["HSDP all-reduce"]
    assert float(grads.bytes_per_call) == 4 * PARAMS / LAYERS == 308_953_600 and float(grads.calls) == LAYERS
    assert float(gather.bytes_per_call) == 2 * PARAMS / LAYERS and float(gather.calls) == 2 * LAYERS
    assert float(across.bytes_per_call) == 4 * PARAMS / LAYERS / 8 == 38_619_200 and float(across.calls) == LAYERS
    assert across.span == 64 and grads.span == 8 == gather.span  # the whole data group; the shard group
    assert float(across.group.ranks) == 8 and float(across.group.nodes) == 8  # one GPU on each of 8 nodes
    assert float(grads.group.ranks) == 8 and float(grads.group.nodes) == 1  # a node's NVLink
    one = float(K.collective_seconds("all_reduce", 38_619_200, ev.cluster.group(8, 8)))
    assert float(across.total) == pytest.approx(LAYERS * one, rel=1e-12)
    assert 0 <= float(across.exposed) <= float(across.total)
    full, _ = _plan()
    assert set(_dp_rows(full)) == {"grad reduce-scatter / all-reduce", "param all-gather"}
    assert float(full.step.dp_comm) < float(hsdp.step.dp_comm)  # 45 GB/s a GPU across nodes against 8 NICs a ring


def test_the_planner_keeps_the_shard_group_on_every_candidate():
    """A free search on 64 GPUs with --shard-group 16: every layout's dp x cp is a multiple of 16, ZeRO >= 1, and the
    chosen plan carries the group (its text says HSDP)."""
    result = search(gpuplan.PlanInputs(**ASK, shard_group=16))
    table = result.all
    assert len(table) and all((table["dp"] * table["cp"]) % 16 == 0) and all(table["zero"] >= 1)
    free = search(gpuplan.PlanInputs(**ASK)).all
    assert any((free["dp"] * free["cp"]) % 16 != 0) and any(free["zero"] == 0)  # what the group leaves out
    assert result.evaluator.shard_group == 16
    report = gpuplan.plan_report(gpuplan.PlanInputs(**ASK, shard_group=16))
    assert "(HSDP: shard 16)" in report.line("best_layout").text
    (top,) = [t for t in report.tables if t.title.startswith("top ")]
    assert top.rows and all("(HSDP: shard 16)" in row[1] for row in top.rows if "dp16 tp" not in row[1]), top.rows


def test_the_search_keeps_the_frameworks_stages():
    """Under deepspeed only ZeRO-3 (MiCS) carries a group; under megatron 1 and 3 (its search's stages within 1-3)."""
    for framework, allowed in (("deepspeed", {3}), ("megatron", {1, 3})):
        table = search(gpuplan.PlanInputs(**ASK, framework=framework, shard_group=8)).all
        assert set(int(z) for z in table["zero"]) <= allowed and set(int(z) for z in table["zero"]) & allowed


def test_explain_names_the_hsdp_collectives(run_cli):
    code, out, err = run_cli("plan", "--model", "llama-3.2-1b", "--gpu", "h100", "--gpus", "64", "--tokens", "1B",
                             "--global-batch", "64", "--tp", "1", "--pp", "1", "--zero", "3", "--micro-batch", "1",
                             "--recompute", "none", "--shard-group", "8", "--explain")
    assert code == 0, err
    table = out[out.index("Communication per step"):]
    assert "HSDP all-reduce" in table and "36.83 MiB" in table  # 38,619,200 B
    assert "param all-gather" in table and "147.32 MiB" in table and "NVLink (8 GPUs)" in table
    assert "dp64 tp1 pp1 ZeRO-3 mb1 (HSDP: shard 8)" in out


def test_train_and_budget_take_it():
    train = gpuplan.estimate_training(gpuplan.TrainingInputs(**ASK, **FIXED, mfu="predicted", shard_group=8))
    assert "(HSDP: shard 8)" in train.line("mem_layout").text
    assert any(a.key == "shard_group" and a.user_set for a in train.assumptions)
    budget = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ASK, **FIXED, mfu="predicted", shard_group=8))
    assert "(HSDP: shard 8)" in budget.line("mem_layout").text


@pytest.mark.parametrize("job,route", [("train", "training"), ("plan", "plan"), ("budget", "budget")])
def test_zero_0_is_refused_at_every_door(run_cli, client, tmp_path, job, route):
    ask = {**ASK, "zero": 0, "shard_group": 8}
    four_door_refusal(run_cli, client, tmp_path, job, route, ask, "shard_group", "give --zero 1, 2 or 3")


@pytest.mark.parametrize("framework,zero,fragment", [
    ("deepspeed", 1, "runs a shard group with ZeRO 3 only (not 1): give --zero 3"),
    ("torchtitan", 1, "ZeRO 2 or 3 only (not 1)"),
    ("llmc", 1, "has no hybrid sharding")])
def test_a_stage_the_framework_does_not_run_it_with_is_refused(run_cli, client, tmp_path, framework, zero, fragment):
    ask = {"model": "gpt2", "gpu": "h100", "gpus": 8, "tokens": 1e9, "framework": framework, "zero": zero,
           "shard_group": 4}
    four_door_refusal(run_cli, client, tmp_path, "plan", "plan", ask, "shard_group", fragment)


def test_a_group_that_divides_no_layout_is_refused_naming_dp_x_cp(run_cli, client, tmp_path):
    """dp 64 (tp 1, pp 1, cp 1 fixed): 3 divides no dp x cp; the one line names the ranks that shard."""
    ask = {**ASK, **FIXED, "shard_group": 3}
    line = four_door_refusal(run_cli, client, tmp_path, "train", "training", ask, "shard_group",
                             "must divide the data-parallel ranks that shard (dp x cp = 64")
    assert line.startswith("shard_group: got 3;")


def test_memory_takes_the_shared_field_with_the_same_checks(run_cli):
    """`memory --shard-group` is the shared vocabulary's field: ZeRO 0 refused as before, and the framework's stages."""
    assert gpuplan.MemoryInputs.model_fields["shard_group"] is gpuplan.PlanInputs.model_fields["shard_group"] or \
        gpuplan.MemoryInputs.model_fields["shard_group"].description == gpuplan.PlanInputs.model_fields[
            "shard_group"].description
    code, _, err = run_cli("memory", "--model", "llama-3.2-1b", "--gpus", "64", "--zero", "0", "--shard-group", "8")
    assert code == 2 and err.startswith("error: shard_group: got 8; shards model states within groups (HSDP)"), err
    code, _, err = run_cli("memory", "--model", "llama-3.2-1b", "--gpus", "64", "--framework", "deepspeed",
                           "--shard-group", "8")  # its default stage, ZeRO-1, has no shard group there
    assert code == 2 and "ZeRO 3 only (its default ZeRO 1): give --zero 3" in err and err.count("\n") == 1, err
    code, _, err = run_cli("memory", "--model", "llama-3.2-1b", "--gpus", "64", "--zero", "3", "--shard-group", "6")
    assert code == 2 and err.startswith("error: shard_group: got 6; must divide the data-parallel ranks that shard (dp x cp = 64): "), err


def test_a_group_whose_stages_the_layouts_cannot_run_says_so(run_cli):
    """DeepSpeed runs a shard group under ZeRO-3 only (MiCS) and its pipeline engine ZeRO 0-1 only: with --pp 2 the
    group divides dp x cp = 32, and the one line names the stages instead of the division."""
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T",
                             "--framework", "deepspeed", "--pp", "2", "--shard-group", "8")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: shard_group: got 8; --framework deepspeed runs a shard group with ZeRO 3 only, and "
                          "the layouts it divides among those searched run ZeRO 0, 1"), err


def test_counts_it_cannot_use_are_dropped_not_refused(run_cli):
    """On 8, 64 and 512 GPUs a group of 64 divides no layout on 8 (dp x cp <= 8): that count drops out, the answer
    is one it divides; refused only where no asked count has such a layout (8 alone)."""
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8,64,512", "--tokens", "1T",
                             "--shard-group", "64", "--json")
    assert code == 0, err
    import json

    layout = json.loads(out)["results"]["best_layout"]
    assert "HSDP: shard 64" in layout or " dp64 " in f" {layout}", layout
    code, _, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--tokens", "1T",
                           "--shard-group", "64")
    assert code == 2 and err.startswith("error: shard_group: got 64; must divide the data-parallel ranks that shard "
                                        "(dp x cp = 1, 2, 4, 8 in the layouts searched)"), err


README_HSDP = ("plan", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "512", "--framework", "torchtitan")
"""The README's HSDP example (the line after 'HSDP: model states sharded within each node's 8 GPUs')."""


def test_the_readme_hsdp_example_makes_sense(run_json):
    """Through the user's door: the answer keeps the group in its layout, its MFU is a fraction, and it fits. Llama 3.1
    8B's 8,030,261,248 parameters, torchtitan's FSDP2 keeping them sharded in fp32 (4 B) with two fp32 Adam moments
    (8 B): 4 B x P / 8 = 4,015,130,624 B of weights a GPU within the node's group, against 4 B x P / 512 = 62,736,416 B
    over every rank; the step pays the HSDP all-reduce on top (never faster than the plain ZeRO-3 layout)."""
    params = 8_030_261_248
    hsdp = run_json(*README_HSDP, "--shard-group", "8")["results"]
    full = run_json(*README_HSDP)["results"]
    assert "(HSDP: shard 8)" in hsdp["best_layout"] and "HSDP" not in full["best_layout"]
    assert 0 < hsdp["best_mfu"] < 1 and hsdp["best_mem_fits"] and hsdp["best_gpus"] == 512
    assert hsdp["best_mem_weights"] == 4 * params / 8 and full["best_mem_weights"] == 4 * params / 512
    assert hsdp["best_mem_optimizer"] == 8 * params / 8
    # the same layout either way (dp512 tp1 pp1 ZeRO-3 mb2, no recompute), the HSDP one with its all-reduce on top
    assert hsdp["best_layout"].replace(" (HSDP: shard 8)", "") == full["best_layout"]
    assert hsdp["best_step_seconds"] > full["best_step_seconds"]


# --- R1's review mends (M1-M4, S1) ---


def test_the_optimizer_step_updates_the_groups_states_only():
    """M1: each GPU updates P / shard of the states: 2 x 16 B x 1,235,814,400 / 8 / (3.35e12 B/s x 0.75 of HBM)
    = 1.96747e-3 s (read and write weights, grads, master, two moments), 8 times the 64-rank ZeRO-3's."""
    hsdp, _ = _plan(8)
    full, _ = _plan()
    assert float(hsdp.step.optimizer) == pytest.approx(1.96747e-3, rel=1e-5)
    assert float(full.step.optimizer) == pytest.approx(1.96747e-3 / 8, rel=1e-5)


MOE = {"model": "deepseek-v2-lite", "gpu": "h100", "gpus": 64, "tokens": 1e9, "global_batch": 64}


def _moe_plan(shard_group, framework="megatron"):
    inputs = gpuplan.PlanInputs(**MOE, tp=1, pp=1, ep=8, zero=1, micro_batch=1, recompute="full",
                                framework=framework, shard_group=shard_group)
    ev = evaluator_for(inputs)
    layout = ParallelLayout(dp=64, ep=8, zero=1, micro_batch=1, global_batch=64, etp=ev.step.expert_tp)
    return evaluate_layout(ev, layout, "full", 64)


@pytest.mark.parametrize("shard,across", [(8, 7_853_242_112), (16, 3_926_621_056)])
def test_expert_gradients_all_reduce_across_sharded_over_the_expert_group(shard, across):
    """M2b: DeepSeek-V2-Lite, Megatron ZeRO-1, dp 64 ep 8 tp 1: a GPU holds 1,311,632,896 dense trained parameters
    (embedding and head 2 x 209,715,200, attention 371,602,944, dense MLP 67,239,936, shared experts 449,839,104,
    router 3,407,872, norms 112,640) and 14,394,851,328 / 8 = 1,799,356,416 routed ones, 4 B gradients each. The
    dense shard is / shard; the experts' / (shard x tp / ep): shard 8 -> 655,816,448 + 7,197,425,664 B, shard 16 ->
    327,908,224 + 3,598,712,832 B a step, once (Megatron all-reduces across the instances once a step)."""
    rows = _dp_rows(_moe_plan(shard))
    row = rows["HSDP all-reduce"]
    assert float(row.calls) * float(row.bytes_per_call) == pytest.approx(across, rel=1e-12)
    assert float(row.calls) == float(rows["grad reduce-scatter / all-reduce"].calls)  # each bucket once


@pytest.mark.parametrize("framework", ["torchtitan", "megatron"])
def test_a_group_the_experts_cannot_split_over_is_refused(run_cli, client, tmp_path, framework):
    """M2a: ep 8 with a group of 4 (tp 1): torchtitan needs ep | dp_shard x cp x tp = 4, Megatron-Core asserts the
    expert data-parallel size 8 divides by the 16 optimizer instances. One line naming shard_group."""
    ask = {**MOE, "framework": framework, "ep": 8, "tp": 1, "shard_group": 4}
    four_door_refusal(run_cli, client, tmp_path, "train", "training", ask, "shard_group",
                      "the experts are sharded within it: shard group x tp must be a multiple of etp x ep (ep 8 ")
    code, _, err = run_cli("memory", "--model", "deepseek-v2-lite", "--gpus", "64", "--ep", "8", "--zero", "3",
                           "--shard-group", "4", "--framework", framework)
    assert code == 2 and err.startswith("error: shard_group: got 4; the experts are sharded within it: shard group "
                                        "x tp = 4 must be a multiple of etp x ep = 8"), err


def test_the_search_keeps_only_expert_layouts_the_group_splits():
    """M2a: every layout of a free DeepSeek-V2-Lite search with a group of 2 has 2 x tp a multiple of etp x ep
    (Megatron: etp = tp, so ep | 2); without the group some have ep 4 or 8 at tp 1."""
    table = search(gpuplan.PlanInputs(**MOE, framework="megatron", shard_group=2)).all
    assert len(table) and all((2 * table["tp"]) % (table["tp"] * table["ep"]) == 0)
    free = search(gpuplan.PlanInputs(**MOE, framework="megatron")).all
    assert any(free["ep"] > 2)


def test_deepspeed_runs_no_mics_with_experts(run_cli, client, tmp_path):
    """M2c: DeepSpeed refuses MiCS with MoE (engine.py@edaa722 L1904-1907): --ep 8 with a group refused; a free
    search keeps ep 1 only."""
    ask = {**MOE, "framework": "deepspeed", "ep": 8, "shard_group": 8}
    four_door_refusal(run_cli, client, tmp_path, "train", "training", ask, "shard_group",
                      "DeepSpeed runs no MiCS shard group with expert parallelism: give --ep 1, or leave the shard "
                      "group out")
    table = search(gpuplan.PlanInputs(**MOE, framework="deepspeed", shard_group=8)).all
    assert len(table) and set(int(e) for e in table["ep"]) == {1}


def test_fsdp2_all_reduces_across_every_micro_batch_with_the_embedding_unit():
    """M3: torchtitan, 256 sequences on 64 ranks at micro-batch 1: 4 micro-batches. FSDP2 all-reduces each
    block's shard after every reduce-scatter: 16 blocks x 4 = 64 calls of (1,235,814,400 - 262,668,288) x 4 B / 8 /
    16 = 30,410,816 B; the embedding unit (262,668,288 parameters) its own 4 calls of 262,668,288 x 4 / 8 =
    131,334,144 B, exposed whole."""
    inputs = gpuplan.PlanInputs(**{**ASK, "global_batch": 256}, **FIXED, framework="torchtitan", shard_group=8)
    ev = evaluator_for(inputs)
    plan = evaluate_layout(ev, ParallelLayout(dp=64, zero=3, micro_batch=1, global_batch=256), "none", 64)
    rows = _dp_rows(plan)
    across, emb = rows["HSDP all-reduce"], rows["embedding unit HSDP all-reduce (FSDP2)"]
    assert float(across.calls) == 64 == float(rows["grad reduce-scatter / all-reduce"].calls)
    assert float(across.bytes_per_call) == 30_410_816
    assert float(emb.calls) == 4 and float(emb.bytes_per_call) == 131_334_144
    one = float(K.collective_seconds("all_reduce", 131_334_144, ev.cluster.group(8, 8)))
    assert float(emb.total) == float(emb.exposed) == pytest.approx(4 * one, rel=1e-12)


def test_megatron_hides_the_reduce_scatter_and_the_all_reduce_as_one_stream():
    """S1: Megatron ZeRO-1, seq 1,024, 64 sequences on 64 ranks, a group of 8: the reduce-scatter and the
    inter-instance all-reduce run one after the other on one stream, so together they hide behind at most one
    micro-batch's backward (2/3 of its compute; 1% for the window's extras)."""
    inputs = gpuplan.PlanInputs(**ASK, seq_len=1024, tp=1, pp=1, zero=1, micro_batch=1, recompute="none",
                                framework="megatron", shard_group=8)
    plan = evaluate_layout(evaluator_for(inputs), ParallelLayout(dp=64, zero=1, micro_batch=1, global_batch=64),
                           "none", 64)
    rows = _dp_rows(plan)
    pair = (rows["grad reduce-scatter / all-reduce"], rows["HSDP all-reduce"])
    hidden = sum(float(r.total) - float(r.exposed) for r in pair)
    assert 0 < hidden <= 1.01 * 2 / 3 * float(plan.step.compute)
    assert float(rows["HSDP all-reduce"].calls) == float(pair[0].calls)  # once a step, each bucket


def test_memory_names_each_frameworks_stages_without_zero(run_cli):
    """M4: hf's memory default is ZeRO 0; the refusal names the Trainer's HYBRID_SHARD stages, 2 or 3, and those
    run; ZeRO 1 is refused with the same list."""
    base = ("memory", "--model", "llama-3.2-1b", "--gpus", "64", "--framework", "hf", "--shard-group", "8")
    code, _, err = run_cli(*base)
    assert code == 2 and err == ("error: shard_group: got 8; shards model states within groups (HSDP): give --zero "
                                 "2 or 3; ZeRO 0 replicates them on every rank\n"), err
    code, _, err = run_cli(*base, "--zero", "1")
    assert code == 2 and "runs a shard group with ZeRO 2 or 3 only (not 1): give --zero 2 or 3" in err, err
    assert run_cli(*base, "--zero", "2")[0] == 0


# --- R1's S2-S4, S7, N2, N6 ---


def test_memory_names_the_group_in_its_layout_and_assumptions():
    """S2: memory's layout line and its assumptions say the group, as train / plan do."""
    report = gpuplan.estimate_memory(gpuplan.MemoryInputs(model="llama-3.2-1b", gpus=64, zero=3, shard_group=8))
    assert report.line("layout").value.endswith("ZeRO-3, micro-batch 1 (HSDP: shard 8)"), report.line("layout")
    (group,) = [a for a in report.assumptions if a.key == "shard_group"]
    assert "8 replicas of dp x cp = 64" in group.value and group.user_set


def test_train_states_the_replicas_of_its_layout():
    """N2: train's assumption names the layout's dp x cp (64 / 8 = 8 replicas), not 'dp x cp / shard group'."""
    train = gpuplan.estimate_training(gpuplan.TrainingInputs(**ASK, **FIXED, mfu="predicted", shard_group=8))
    (group,) = [a for a in train.assumptions if a.key == "shard_group"]
    assert "8 replicas of dp x cp = 64" in group.value, group.value


def test_a_count_no_layout_answers_for_is_not_told_smaller_counts(run_cli):
    """S3: on 8, 64 and 512 GPUs a group of 64 leaves 8 without a layout and no smaller count stands in for it: the note
    names the group as the cause and says the answer is on the other counts asked."""
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8,64,512", "--tokens", "1T",
                             "--shard-group", "64")
    assert code == 0, err
    assert ("note: no layout exists on 8 GPUs (the shard group of 64 and the framework's rules allow none there), and "
            "no smaller count answers for it: the answer is on the other counts asked") in out, out
    assert "run on smaller counts" not in out


def test_a_group_that_sets_the_count_says_so(run_cli):
    """S7: a group of 3 on 64 GPUs: the answer runs 63 and the note names the group; a group that is the answer's whole
    dp x cp says one replica, no HSDP (64 on 64 GPUs given)."""
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T",
                             "--shard-group", "3")
    assert code == 0 and "note: no layout with the shard group of 3 exists on 64 GPUs: " in out, err + out
    code, out, err = run_cli("plan", "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "64", "--tokens", "1T",
                             "--tp", "1", "--pp", "1", "--shard-group", "64")
    assert code == 0 and ("note: the shard group of 64 is all of the answer's data-parallel ranks (dp x cp = 64 on 64 "
                          "GPUs): one replica, plain sharding, no HSDP") in out, err + out


def test_mics_checkpoints_are_written_by_the_first_shard_group():
    """S4: DeepSpeed MiCS saves ZeRO state where the shard-group rank equals the data-parallel rank (engine.py@edaa722
    L1591-1596): 8 of 64 ranks (tp 1, pp 1) write, each total / 8; torchtitan's DCP spreads over all 64."""
    from gpuplan.core.economics.checkpoint import checkpoint_writers, mics_writer_group

    assert checkpoint_writers(512, 3, 2, mics_writer_group("deepspeed", 128)) == 256  # 128 x tp 2
    assert mics_writer_group("torchtitan", 8) is None and mics_writer_group("deepspeed", None) is None
    ask = {**ASK, **FIXED, "mfu": "predicted", "shard_group": 8}
    mics = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask, framework="deepspeed"))
    titan = gpuplan.estimate_budget(gpuplan.BudgetInputs(**ask, framework="torchtitan"))
    assert mics.value("ckpt_writers") == 8 and titan.value("ckpt_writers") == 64
    assert mics.value("ckpt_shard_bytes") == pytest.approx(mics.value("ckpt_bytes_total") / 8, rel=1e-12)


@pytest.mark.parametrize("job,route", [("train", "training"), ("plan", "plan"), ("budget", "budget")])
def test_a_group_of_one_is_refused_as_ddp(run_cli, client, tmp_path, job, route):
    """N6: a group of 1 shards nothing (DDP): refused at every door naming --zero 0."""
    four_door_refusal(run_cli, client, tmp_path, job, route, {**ASK, "shard_group": 1}, "shard_group",
                      "a group of 1 shards nothing (every rank keeps whole states and all-reduces the gradients: DDP): "
                      "give --zero 0 without a shard group, or a group of 2 or more")


def test_megatron_distributed_optimizer_instances_by_hand():
    """S6: Megatron ZeRO-1 with 8 instances of 8 on 64 ranks, 4 micro-batches a step: bf16 weights 2 B and fp32 grads
    4 B a parameter whole, master 4 / 8 = 0.5 B and moments 8 / 8 = 1 B; the gradients reduce-scattered within an
    instance (4 B x P = 4,943,257,600 B in 10 buckets) and each rank's shard all-reduced across the 8 instances once a
    step, not once a micro-batch: 4 B x P / 8 = 617,907,200 B."""
    inputs = gpuplan.PlanInputs(**{**ASK, "global_batch": 256}, tp=1, pp=1, zero=1, micro_batch=1, recompute="none",
                                framework="megatron", shard_group=8)
    plan = evaluate_layout(evaluator_for(inputs), ParallelLayout(dp=64, zero=1, micro_batch=1, global_batch=256),
                           "none", 64)
    m = plan.memory
    assert (m.weights, m.grads, m.master, m.optimizer) == (2 * PARAMS, 4 * PARAMS, 4 * PARAMS / 8, 8 * PARAMS / 8)
    rows = _dp_rows(plan)
    grads, across = rows["grad reduce-scatter / all-reduce"], rows["HSDP all-reduce"]
    assert float(grads.calls) * float(grads.bytes_per_call) == 4 * PARAMS == 4_943_257_600
    assert float(across.calls) * float(across.bytes_per_call) == 4 * PARAMS / 8 == 617_907_200
    assert float(across.calls) == float(grads.calls) == 10  # each bucket once a step (4 micro-batches)


def test_train_and_budget_say_when_the_group_is_the_whole_data_parallel_group(run_cli):
    """Review s21 R2 S2: plan's note where the group is all of dp x cp, in train and budget too, and the assumption
    says one replica. budget llama-3-8b, 100B tokens in 3 days on H100 with --shard-group 64: the deadline's count is
    64 GPUs, dp 64 (the note says the group set it); train deepseek-v2-lite on 32 GPUs, tp 2: dp 16 = the group."""
    code, out, err = run_cli("budget", "--model", "llama-3-8b", "--gpu", "h100", "--tokens", "100B", "--days", "3",
                             "--shard-group", "64", "--mfu", "predicted", "--full")
    assert code == 0, err
    assert ("note: the shard group of 64 set the GPU count: it is all of the answer's data-parallel ranks (dp x cp = "
            "64 on 64 GPUs): one replica, plain sharding, no HSDP") in out
    assert "shard group 64 = dp x cp: one replica, plain sharding, no HSDP all-reduce" in out
    code, out, err = run_cli("train", "deepseek-v2-lite", "--framework", "torchtitan", "--ep", "8", "--tp", "2",
                             "--shard-group", "16", "--tokens", "10B", "--gpu", "h100", "--gpus", "32")
    assert code == 0, err
    assert "note: the shard group of 16 is all of the answer's data-parallel ranks (dp x cp = 16 on 32 GPUs)" in out
