"""Three consistency rules from wave 15's readers (helper X1, wave 15c).

1. FlashAttention 1 is refused wherever transformers' own modules run the model (core.time.attention_core.
   runs_transformers_modules: --framework hf, or --implementation hf under any framework), the rule runs_eager_only
   already used: `--framework megatron|generic --implementation hf --attention-kernel flash1` was answered (llama-3-8b
   on 8 A100: 1,117.10 days, as flash). transformers 5.25.0's AttentionInterface maps flash_attention_2 / 3 / 4,
   flex_attention, sdpa and eager (modeling_utils.py L5323-5330): no FlashAttention 1.
2. --dp-overlap where the stated layout leaves dp 1 (every GPU in tp x pp, cp 1) is refused as --tp-overlap at tp 1
   is (schema.layout_rules): llama-3.1-8b on 8 A100 at --tp 8 answered 1,239.44 days with --dp-overlap 0.9 and
   without (the whole --json identical); at --tp 4 --cp 2 the gradient reduce over the 2 cp ranks moves it (945.18
   days at 0.5, 945.14 without), so that stays answered, as does any count the planner lays out.
3. A GPU count asked with no layout (for the global batch, the degrees given) says so once in plan's and train's
   notes, naming the count and the smaller counts answering for it (jobs.plan.fallbacks_told.fallback_note).
"""

import pytest
from helpers import four_door_refusal

pytestmark = pytest.mark.usefixtures("time_box")  # conftest: a hang fails the case, not the suite


# ---- 1. FlashAttention 1 under transformers' modules, whatever the framework -----------------------------------------

@pytest.mark.parametrize("job, route, framework", [("train", "training", "megatron"), ("plan", "plan", "generic")])
def test_flash1_under_transformers_modules_is_refused_at_every_door(run_cli, client, tmp_path, job, route, framework):
    web = four_door_refusal(run_cli, client, tmp_path, job, route,
                            {"model": "llama-3-8b", "gpus": 8, "gpu": "a100", "framework": framework,
                             "implementation": "hf", "attention_kernel": "flash1"},
                            "attention_kernel", f"transformers' modules (--framework {framework} with --implementation hf)")
    assert web.endswith("give flash or eager, or leave --implementation hf out")


def test_one_rule_decides_eager_only_and_flash1():
    """runs_eager_only (gemma2 / gpt_oss under transformers) and fa1_refusal ask the same question."""
    from gpuplan.catalog import load_model
    from gpuplan.core.time.attention_core import fa1_refusal, runs_eager_only, runs_transformers_modules

    spec = load_model("llama-3-8b")
    for framework in ("megatron", "generic", "deepspeed", "hf", "torchtitan"):
        for implementation in ("hf", "megatron", "megatron-local", "torchtitan", None):
            modules = runs_transformers_modules(framework, implementation)
            assert modules == (framework == "hf" or implementation == "hf")
            assert runs_eager_only("gemma2", framework, implementation) == modules
            why = fa1_refusal(spec, framework, None, False, implementation) or ""
            assert ("transformers' modules" in why) == modules, (framework, implementation, why)
    # Megatron-DeepSpeed (--implementation megatron) runs FlashAttention 1: still answered
    assert fa1_refusal(spec, "deepspeed", None, False, "megatron") is None


# ---- 2. --dp-overlap with no data-parallel communication ------------------------------------------------------------

@pytest.mark.parametrize("job, route, ask", [("train", "training", {"tp": 8}), ("plan", "plan", {"tp": 4, "pp": 2})])
def test_a_dp_overlap_at_dp_1_is_refused_at_every_door(run_cli, client, tmp_path, job, route, ask):
    web = four_door_refusal(run_cli, client, tmp_path, job, route,
                            {"model": "llama-3.1-8b", "gpus": 8, **ask, "dp_overlap": 0.9}, "dp_overlap", "there is none")
    assert f"every GPU in tp {ask['tp']} x pp {ask.get('pp', 1)} (dp 1, cp 1)" in web


def test_a_dp_overlap_where_data_ranks_exist_or_the_planner_chooses_answers():
    """cp 2 at dp 1 (the data group is dp x cp: core.comm.dp_costs), tp 4 on 8 (pp left to the planner), no --gpus
    (a deadline's search), several counts, and 0 (claims nothing) are all answered."""
    from gpuplan import PlanInputs, TrainingInputs

    for ask in ({"gpus": 8, "tp": 4, "cp": 2}, {"gpus": 8, "tp": 4}, {"days": 30, "tp": 8}, {"gpus": 8, "tp": 8,
                                                                                                "dp_overlap": 0}):
        assert TrainingInputs(model="llama-3.1-8b", **{"dp_overlap": 0.9, **ask})
    assert PlanInputs(model="llama-3.1-8b", gpus="8,16", tp=8, dp_overlap=0.9)


# ---- 3. a count asked with no layout says what answered for it -------------------------------------------------------

def test_plan_and_train_say_once_which_counts_answer_a_count_with_no_layout():
    """llama-3.1-8b's 7-sequence batch on 1,000 A100s: dp divides 7 (1 or 7), tp up to 8, and cp x pp = 125 has no
    cp (5, 25, 125) that halves 4,096 tokens evenly: no layout. The counts in both notes, from the rules:

    plan weighs the counts an exact batch allows below 1,000 (planner.fallback.exact_batch_counts): dp x tp x cp x pp
    with dp in {1, 7}, tp in {1, 2, 4, 8} (divides the 32 heads, at most the 8-GPU node), cp a power of two to 32
    (4,096 % 2cp == 0, max_cp 32) and pp 1 to 32 (the layers): 162 counts, 1 to 992 (= 8 x 4 x 31). 1 and 2 hold no
    layout that fits: dp is 1 there (7 divides neither), so one or two GPUs hold the whole training state, 8.03 B
    parameters x 16 B (BF16 weights and grads, FP32 master and two Adam moments) = 128.5 GB, 64.2 GB a GPU on 2
    before activations; the planner's fit check refuses both: the least total it finds on 2 is 78.6 GiB > 76.0 GiB
    (80 GiB less the 5% margin; review w16 R3 M2: this line compared 84.4 GB with 80 GB, GB with GiB, though the
    part holds 85.9 GB), and the test asks plan_search.search on each. 162 - 2 = 160, 3 to 992.

    train at its article MFU weighs the same counts (s24, helper PL: it weighed 1,000's alternatives alone,
    planner.plan.alternative_counts 960 and 768, and ran on 768) and answers plan's count: 704 = tp 8 x pp 11 x
    cp 8 at dp 1, one of the 160."""
    from gpuplan import PlanInputs, TrainingInputs, estimate_training, plan_report
    from gpuplan.errors import InputError
    from gpuplan.jobs.plan import search as plan_search
    from gpuplan.planner.plan import alternative_counts

    rule = {d * t * c * p for d in (1, 7) for t in (1, 2, 4, 8) for c in (1, 2, 4, 8, 16, 32) for p in range(1, 33)}
    below = sorted(n for n in rule if n < 1000)
    ask = {"model": "llama-3.1-8b", "gpus": 1000, "global_batch": 7}
    refused = []  # the smallest counts, up to the first the planner answers: each refused by the fit check alone
    for n in below:
        try:
            found = plan_search.search(PlanInputs(**{**ask, "gpus": n}))
        except InputError as refusal:
            assert refusal.field == "gpus" and refusal.value == n, (n, refusal)  # the input to change, not 'memory'
            refused.append((n, refusal))
            continue
        assert len(found.table)
        break
    assert [n for n, _ in refused] == [1, 2]
    words, margin = refused[-1][1].expected, found.evaluator.overheads.margin  # on 2: 'at best 78.6 GiB a GPU' > 76.0
    part = found.evaluator.cluster.gpu.memory_bytes / 2**30  # the A100 80GB's 80 GiB
    least = float(words.split("(at best ")[1].split(" GiB a GPU)")[0].replace(",", ""))
    assert least > (1 - margin) * part
    held = [n for n in below if n not in dict(refused)]
    planned_report = plan_report(PlanInputs(**ask))
    plan = [n for n in planned_report.notes if n.startswith("no layout")]
    assert plan == ["no layout runs a 7-sequence global batch on 1,000 GPUs: the layouts answering for it run on "
                    f"{len(held)} smaller counts ({held[0]} to {held[-1]} GPUs), the rest left idle (GPU-hours and cost "
                    "count the GPUs used)"]
    assert len(held) == 160
    assert alternative_counts(1000, 8) == (1000 - 1000 % 64, 1000 - 1000 % 256) == (960, 3 * 256)
    planned = planned_report.value("best_gpus")
    assert planned == 8 * 11 * 8 and planned in held
    train = [n for n in estimate_training(TrainingInputs(**ask)).notes if n.startswith("no layout")]
    assert train == [f"no layout runs a 7-sequence global batch on 1,000 GPUs: the layout answering for it runs on "
                     f"{planned} GPUs, the rest left idle (GPU-hours and cost count the GPUs used)"]


def test_idle_gpus_by_choice_get_no_fallback_note():
    """The article's 1,349 GPUs: layouts exist on 1,349, the answer runs on 1,344 (faster there): no such note."""
    from gpuplan import TrainingInputs, estimate_training

    report = estimate_training(TrainingInputs(model="llama-3-8b", gpus=1349))
    assert not [n for n in report.notes if n.startswith("no layout")]


def test_the_fallback_note_names_five_counts_then_how_many_more():
    """256 odd counts with no layout made a 2,496-character note (review w15 R5 S2): the first five by size are named,
    then 'and 251 more counts' (256 - 5)."""
    from gpuplan.jobs.plan.fallbacks_told import fallback_note

    note = fallback_note(tuple(range(1001, 1513, 2)), (64, 128, 1000), 7, None)
    assert note.startswith("no layout exists on 1,001 / 1,003 / 1,005 / 1,007 / 1,009 GPUs and 251 more counts: ")
    assert len(note) < 300, len(note)
    assert fallback_note((65536, 98304, 131072), (24,), 7, None).startswith(
        "no layout exists on 65,536 / 98,304 / 131,072 GPUs: the layout answering for them runs on 24 GPUs")
