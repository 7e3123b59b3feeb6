"""The planner at the heart of every answer (issue 13): any GPU count, uneven stages, a sound
pruned search, one memory function with `gpuplan memory`, dtype in the step model, layouts the
user fixes, ranges, fine-tuning and generic shapes."""

import numpy as np
import pytest

from gpuplan.catalog import load_model
from gpuplan.core.memory.training import stage_layer_counts
from gpuplan.core.parallel import check_model_degrees
from gpuplan.errors import InputError
from gpuplan.jobs.plan.schema import PlanInputs
from gpuplan.jobs.plan.search import evaluator_for, max_tp, space_limits
from gpuplan.planner.plan import alternative_counts, best_plan, larger_counts, smallest_fitting_count
from gpuplan.planner.search import search_layouts
from gpuplan.planner.space import (
    SpaceLimits,
    batch_target,
    divisors,
    enumerate_layouts,
    interleaving_buildable,
    interleaving_options,
    is_common_size,
    range_counts,
)


def test_divisors_and_ranges():
    assert divisors(1113) == (1, 3, 7, 21, 53, 159, 371, 1113)
    assert divisors(96) == (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96)
    assert range_counts(512, 4096) == (512, 768, 1024, 1536, 2048, 3072, 4096)


@pytest.mark.parametrize("layers, pp", [(80, 32), (80, 3), (126, 16), (7, 7), (32, 5)])
def test_uneven_stages_are_never_negative(layers, pp):
    counts = stage_layer_counts(layers, pp)
    assert sum(counts) == layers and min(counts) >= layers // pp and max(counts) - min(counts) <= 1
    assert counts == sorted(counts, reverse=True)  # the last stage (with the LM head) never has more


@pytest.mark.parametrize("model", ["llama-3.1-405b", "llama-3.1-70b"])
@pytest.mark.parametrize("gpus", [96, 768, 1113, 1152, 1536, 3072, 24576, 100000])
def test_any_gpu_count_plans(model, gpus):
    # 405B on 96 x H100 is at the edge (Megatron: 405e9 x 18 B / 96 = 76 GB of states; FSDP2's
    # 16 B sharded = 67.6 GB before activations): planned here on H200 (141 GB); the next tests
    # hold H100
    gpu = "h200" if (model, gpus) == ("llama-3.1-405b", 96) else "h100"
    inputs = PlanInputs(model=model, tokens="15T", gpu=gpu, gpus=gpus)
    ev = evaluator_for(inputs)
    plan, _ = best_plan(ev, gpus, inputs.target_batch(inputs.seq_len), max_tp(ev))
    assert plan.fits and 0 <= plan.idle_gpus < gpus and plan.gpus + plan.idle_gpus == gpus
    assert plan.layout.dp * plan.layout.tp * plan.layout.pp * plan.layout.cp == plan.gpus
    assert plan.global_batch % plan.layout.dp == 0
    if gpus in (96, 768, 1152, 1536, 3072, 24576):
        assert plan.idle_gpus == 0  # multiples of the 8-GPU node: every GPU used


def test_1113_gpus_weighs_all_of_them_against_the_counts_just_below():
    inputs = PlanInputs(params="7B", tokens="2T", gpu="a100", gpus=1113)
    ev = evaluator_for(inputs)
    target = inputs.target_batch(inputs.seq_len)  # 4M tokens / 4,096 = 1,024 sequences
    # 1,113 = 3 x 7 x 53 and 32 heads: tp 1, cp 1 (4,096 % 6 != 0), so dp x pp = 1,113 with dp <= 1,024
    alone = search_layouts(ev, (1113,), target, max_tp(ev))
    assert set(alone["dp"].tolist()) <= {371, 159, 53, 21, 7, 3, 1} and (alone["dp"] * alone["pp"] == 1113).all()
    assert alternative_counts(1113, 8) == (1112, 1088, 1024)  # node multiple, 64 (and 256 = 2^10) below
    plan, _ = best_plan(ev, 1113, target, max_tp(ev))
    assert plan.gpus in (1113, 1112, 1088, 1024) and plan.idle_gpus == 1113 - plan.gpus
    fitting = alone.take(alone["fits"])
    fastest_on_all = float((fitting["step_seconds"] / fitting["global_batch"]).min())
    assert plan.step_seconds / plan.global_batch <= fastest_on_all  # never slower than using all 1,113
    assert plan.global_batch % plan.layout.dp == 0 and abs(plan.batch_difference) < 0.5


def test_a_batch_in_sequences_is_kept_exactly_and_one_in_tokens_is_a_target():
    exact = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=16384, seq_len=8192, global_batch=2048)
    ev = evaluator_for(exact)
    plan, table = best_plan(ev, 16384, exact.target_batch(exact.seq_len), max_tp(ev), space_limits(exact))
    assert plan.global_batch == 2048 and (table["global_batch"] == 2048).all() and (2048 % table["dp"] == 0).all()
    loose = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=16384, seq_len=8192,
                       global_batch_tokens=2048 * 8192)
    _, table = best_plan(ev, 16384, loose.target_batch(loose.seq_len), max_tp(ev), space_limits(loose))
    # every dp rank has a sequence (dp <= 2,048) and B = dp x round(2,048 / dp)
    assert (table["dp"] <= 2048).all()
    assert (table["global_batch"] == table["dp"] * np.round(2048 / table["dp"])).all()


def test_the_default_batch_grows_past_4096_gpus_and_a_given_one_holds():
    """No batch given: 4M tokens (Llama 2), at least 1,024 tokens per GPU (Llama 3 405B's 16M on
    16,384 H100, Table 4; MegaScale's 12.6M on 12,288). Hand: 16,384 x 1,024 / 8,192 = 2,048
    sequences; 1,024 x 4,096 / 4,096 = 1,024 = the 4M default, so 1,024 GPUs keep it."""
    big = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=16384, seq_len=8192)
    limits = space_limits(big)
    assert limits.batch_per_gpu == pytest.approx(1024 / 8192)
    assert batch_target(big.target_batch(8192), 16384, limits) == pytest.approx(2048)
    assert batch_target(big.target_batch(8192), 1024, limits) == pytest.approx(512)  # 4M / 8,192
    ev = evaluator_for(big)
    plan, table = best_plan(ev, 16384, big.target_batch(8192), max_tp(ev), limits)
    assert plan.global_batch == 2048 and (table["global_batch"] == table["dp"] * np.round(2048 / table["dp"])).all()
    assert plan.batch_difference == pytest.approx(0.0)
    # a batch the user gives is kept at every count: 4M tokens on 16,384 GPUs = 512 sequences
    given = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=16384, seq_len=8192,
                       global_batch_tokens=4 * 2**20)
    assert space_limits(given).batch_per_gpu == 0
    plan, _ = best_plan(ev, 16384, given.target_batch(8192), max_tp(ev), space_limits(given))
    assert plan.global_batch <= 512


def test_the_default_batch_gives_llama3_405b_its_published_mfu(run_json):
    """Llama 3.1 405B on 16,384 H100 at 8K with no batch given: the default (2,048 sequences) is
    the paper's 16M tokens, and the predicted MFU lands in Table 4's 38-43% (+ the 10% band);
    with the bare 4M tokens the planner could only fill the GPUs with deep pipelines (29%)."""
    out = run_json("train", "--model", "llama-3.1-405b", "--tokens", "15.6T", "--gpu", "h100", "--gpus", "16384",
                   "--seq-len", "8192", "--mfu", "predicted")
    lines = {line["key"]: line for section in out["sections"] for line in section["lines"]}
    assert 0.38 <= lines["mfu"]["value"] <= 0.47
    assert lines["mem_global_batch"]["value"] == 2048


@pytest.mark.parametrize("framework, allocator", [("megatron", None), ("torchtitan", "caching")])
def test_405b_on_96_h100_is_refused_in_one_line(framework, allocator):
    # Megatron: 76 GB of states > 0.95 x 85.5 GB - runtime; torchtitan with the default caching
    # allocator: >= 67.6 GB of states x 1.10 reserve + 1.25 GiB runtime > 81.2 GB
    inputs = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=96, framework=framework,
                        allocator=allocator)
    ev = evaluator_for(inputs)
    with pytest.raises(InputError, match="no layout fits"):
        best_plan(ev, 96, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))


def test_the_refusal_names_the_smallest_cluster_that_fits():
    # common sizes above 96 up to 64 x 96: 2^k and 3 x 2^k
    assert larger_counts(96) == (128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144)
    inputs = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=96, framework="megatron")
    ev = evaluator_for(inputs)
    target, limits = inputs.target_batch(inputs.seq_len), space_limits(inputs)
    with pytest.raises(InputError, match=r"the smallest common cluster size that fits is 128 GPUs \(--gpus 128\)"):
        best_plan(ev, 96, target, max_tp(ev), limits)
    # and it does fit there: at most 18 B/param x 405.9e9 / 128 = 57 GB of Megatron model states
    # (76 GB on 96), which leaves room for recomputed activations within 0.95 x 79.6 GiB
    plan, _ = best_plan(ev, 128, target, max_tp(ev), limits)
    assert plan.gpus == 128 and plan.fits and plan.total_bytes <= plan.budget_bytes
    # nothing fits anywhere up to 64x: the hint says so instead of naming a count
    tiny = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="a100-40gb", gpus=8, seq_len="1M")
    ev = evaluator_for(tiny)
    assert smallest_fitting_count(ev, 8, tiny.target_batch(tiny.seq_len), max_tp(ev), space_limits(tiny)) is None


def test_405b_on_h100_with_torchtitan_keeps_its_published_reserve_free():
    # torchtitan's launcher sets expandable segments (reserve x 1.03); the fit rule takes a ZeRO-3 layout's
    # reserved peak as FSDP2's stream pools and keeps 9% beyond them and the model states free (the median
    # of its published reserved peaks, planner/framework_rules.py). 80 H100 80GB cannot hold 405B: its
    # 16 B/param of fp32 weights, Adam moments and gradients are 405e9 x 16 / 80 = 75.4 GiB a GPU, beyond
    # 95% of 79.6 GiB = 75.7 GiB with anything else. 96 do, ZeRO-3 + full recompute, with the gap kept
    # free (at the 27% share of before, computed with the wrong row's model states, 96 were refused)
    inputs = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=80, framework="torchtitan")
    ev = evaluator_for(inputs)
    with pytest.raises(InputError, match="smallest common cluster size that fits is 96 GPUs"):
        best_plan(ev, 80, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))
    plan, _ = best_plan(ev, 96, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))
    assert plan.fits and plan.layout.zero == 3 and plan.recompute == "full" and plan.fit_excess_bytes > 0
    # by hand: the budget is 95% of the 81,559 MiB nvidia-smi reports (catalog/hardware/h100-sxm.toml,
    # 85,520,809,984 B) = 81,244,769,484.8 B. Llama-3.1-405B (its HF config): 126 layers of matrices
    # 2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 and norms 2 x 16384, embeddings + head
    # 2 x 128256 x 16384, a final norm 16384: 405,853,388,800 parameters. ZeRO-3 over the 12 data-parallel
    # ranks of tp 8 keeps torchtitan's fp32 weights, fp32 gradients and two fp32 Adam moments (16 B a
    # parameter) of matrices / 96 and of the norms / 12 (a tensor-parallel group holds every norm whole):
    # 67,647,067,477.3 B = 63.0 GiB a GPU. At 80 GPUs the states alone are 75.6 GiB of the 75.67 GiB budget.
    hand_budget = 0.95 * 81559 * 2**20
    norms = 126 * 2 * 16384 + 16384
    matrices = 126 * (2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248) + 2 * 128256 * 16384
    assert plan.budget_bytes == pytest.approx(hand_budget, rel=1e-9)  # exact arithmetic
    states = plan.memory.weights + plan.memory.grads + plan.memory.optimizer + plan.memory.master
    assert states == pytest.approx(16 * (matrices / 96 + norms / 12), rel=1e-9)
    assert plan.total_bytes + plan.fit_excess_bytes <= hand_budget
    # (ZeRO-3 held: free, the ranking now prefers dp1 tp4 pp32, its FSDP traffic beyond any published
    # torchtitan run's widening ZeRO-3's uncertainty, planner.uncertainty.fsdp_traffic_uncertainty)
    inputs = PlanInputs(model="llama-3.1-405b", tokens="15T", gpu="h100", gpus=128, framework="torchtitan", zero=3)
    plan, _ = best_plan(ev, 128, inputs.target_batch(inputs.seq_len), max_tp(ev), space_limits(inputs))
    assert plan.fits and plan.layout.zero == 3 and plan.recompute == "full"
    assert plan.reserved_bytes == pytest.approx(plan.memory.allocated * 1.03)
    assert plan.total_bytes + plan.fit_excess_bytes <= hand_budget and plan.fit_excess_bytes > 0


def test_a_common_size_has_no_alternatives():
    assert alternative_counts(1024, 8) == alternative_counts(1536, 8) == alternative_counts(8, 8) == ()
    assert is_common_size(3072) and is_common_size(1) and not is_common_size(1113) and not is_common_size(0)


@pytest.mark.parametrize("model, seq_len, gpus", [
    ("llama-2-7b", 4096, (64, 128)),  # dense, multi-head attention
    ("llama-3.1-70b", 4096, (256, 512)),  # grouped-query attention
    ("mixtral-8x7b", 4096, (64, 128)),  # mixture of experts
    ("deepseek-v2-lite", 4096, (32, 64)),  # multi-head latent attention (and MoE)
    ("llama-3.1-8b", 65536, (64, 128)),  # long context: context parallelism
])
def test_pruned_search_finds_the_exhaustive_best(model, seq_len, gpus):
    inputs = PlanInputs(model=model, tokens="1T", gpu="h100", gpus=",".join(map(str, gpus)), seq_len=seq_len)
    ev = evaluator_for(inputs)
    target = inputs.target_batch(seq_len)
    pruned = search_layouts(ev, gpus, target, max_tp(ev))
    full = search_layouts(ev, gpus, target, max_tp(ev), exhaustive=True)
    per_token = {}
    for name, table in (("pruned", pruned), ("full", full)):
        fits = table.take(table["fits"])
        per_token[name] = float(np.min(fits["step_seconds"] / fits["global_batch"]))
    assert per_token["pruned"] == pytest.approx(per_token["full"], rel=1e-12)
    assert len(full) > len(pruned.take(~np.isnan(pruned["step_seconds"])))  # it did prune


def test_the_space_has_vpp_over_divisors_cp_up_to_32_and_every_micro_batch():
    spec = load_model("llama-3.1-70b")  # 80 layers
    grid = enumerate_layouts(spec, (1024,), 8192, 1024, 8)
    pp4 = grid["pp"] == 4
    assert set(grid["vpp"][pp4]) == set(divisors(20))  # 80 / 4 = 20 layers per stage
    assert set(grid["cp"]) == {1, 2, 4, 8, 16, 32}
    dp8 = (grid["dp"] == 8)
    assert set(grid["micro_batch"][dp8]) == set(divisors(1024 // 8))


@pytest.mark.parametrize("model, experts", [("mixtral-8x7b", 8), ("llama-3-8b", 1)])
def test_each_row_follows_the_rules_its_structure_was_asked_once(model, experts):
    """enumerate_layouts answers each distinct expert / ZeRO / micro-batch question once and reuses
    the answer across structures (issue 39): every row of a Megatron space still satisfies the
    rules worked out for its own degrees, and the rows of each structure are all its combinations.
    The dense case catches a ZeRO answer keyed without tp (with ep_max > 1, Mixtral's never is)."""
    from itertools import product

    from gpuplan.planner.framework_rules import rules_for, zero_allowed
    from gpuplan.planner.space import structures

    spec = load_model(model)  # Mixtral: 8 experts, 32 layers; Llama 3 8B: dense, 32 layers
    limits = SpaceLimits(framework="megatron", interleaved_needs_pp_micro_batches=True, max_zero_with_pp=1)
    counts, seq, target = (32, 64, 96), 4096, 512.0
    grid = enumerate_layouts(spec, counts, seq, target, 8, limits)
    expected = []
    for gpus in counts:
        for tp, cp, pp, vpp, dp in structures(spec, gpus, seq, 8, limits):
            if dp > target:
                continue
            per_rank = round(target / dp)
            eps = [e for e in divisors(experts) if (dp * cp) % e == 0]
            zeros = [z for z in limits.zero if (z == 0 or dp * cp > 1) and (pp == 1 or z <= 1)
                     and zero_allowed(rules_for("megatron"), z, dp=dp, tp=tp, pp=pp, cp=cp, ep_max=max(eps))]
            mbs = [m for m in divisors(per_rank) if vpp == 1 or per_rank // m >= pp]
            expected += [(gpus, dp, tp, pp, vpp, cp, e, z, m) for e, z, m in product(eps, zeros, mbs)]
    got = list(zip(*(grid[k].tolist() for k in ("gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch"))))
    assert got == expected and len(got) > 1000
    interleaved = grid["vpp"] > 1
    assert interleaved.any() and (grid["micro_batches"][interleaved] >= grid["pp"][interleaved]).all()


def test_fixed_degrees_narrow_the_space():
    spec = load_model("llama-3.1-70b")
    grid = enumerate_layouts(spec, (1024,), 4096, 1024, 8, SpaceLimits(fixed={"tp": 8, "pp": 4, "vpp": 2}))
    assert set(grid["tp"]) == {8} and set(grid["pp"]) == {4} and set(grid["vpp"]) == {2}


def test_a_fixed_vpp_megatron_builds_with_the_embedding_and_loss_split_is_checked():
    """Megatron-Bridge runs Llama 3.1 405B (126 layers) as PP 16 x VP 8: with the embedding and
    the loss counted as a layer each, (126 + 2) / (16 x 8) = 1 layer per virtual stage, the first
    and last building none (megatron/core/transformer/transformer_block.py). The free search keeps
    Megatron's even split (126 % 16 != 0: no interleaving at pp 16); a --vpp the user fixes is
    evaluated if it can be built (pp x vpp <= layers, or = layers + 2 dividing it)."""
    assert interleaving_options(126, 16) == (1,)
    assert interleaving_options(80, 4) == (1, 2, 4, 5, 10, 20)
    assert interleaving_buildable(126, 16, 8) and interleaving_buildable(126, 16, 3)  # 48 <= 126: uneven
    assert not interleaving_buildable(126, 16, 9) and not interleaving_buildable(126, 1, 2)
    spec = load_model("llama-3.1-405b")
    grid = enumerate_layouts(spec, (16384,), 8192, 2048, 8, SpaceLimits(fixed={"tp": 8, "pp": 16, "vpp": 8, "cp": 1}))
    assert len(grid["vpp"]) and set(grid["vpp"]) == {8} and set(grid["dp"]) == {128}
    free = enumerate_layouts(spec, (16384,), 8192, 2048, 8, SpaceLimits(fixed={"tp": 8, "pp": 16}))
    assert set(free["vpp"]) == {1}
    check_model_degrees(spec, tp=8, pp=16, vpp=8)  # 128 virtual stages for 126 layers: accepted
    with pytest.raises(InputError, match="cannot exceed the 126 layers"):
        check_model_degrees(spec, tp=8, pp=16, vpp=9)


def test_fp8_is_faster_than_bf16_and_train_agrees_with_plan(run_json):
    common = ("llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024")
    bf16 = run_json("plan", *common)
    fp8 = run_json("plan", *common, "--dtype", "fp8")
    assert fp8["results"]["best_days"] < bf16["results"]["best_days"]
    # MFU on each dtype's own peak: fp8's basis is twice bf16's, so its MFU is lower
    assert fp8["results"]["best_mfu"] < bf16["results"]["best_mfu"]
    train = run_json("train", *common, "--dtype", "fp8", "--mfu", "predicted")
    assert train["results"]["gpu_hours"] == pytest.approx(fp8["results"]["best_gpu_hours"], rel=1e-6)
    assert train["results"]["mfu"] == pytest.approx(fp8["results"]["best_mfu"], rel=1e-9)


def test_check_my_layout(run_json):
    data = run_json("plan", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024", "--tp", "8",
                    "--pp", "4", "--vpp", "2")
    r = data["results"]
    assert r["best_layout"].startswith("dp32 tp8 pp4 vpp2")
    assert any(s["title"].startswith("Your layout: dp32 tp8 pp4 vpp2") for s in data["sections"])
    # derived comparisons: 'loses by' is the layout's step over the free search's best step less 1
    # (plan/explain.py), so it is ranked below that best; the step is the sum of its parts, and the
    # GPU holds reserved (allocated x (1 + fragmentation)) + the CUDA context and NCCL buffers
    free = run_json("plan", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024")["results"]
    assert r["check_loses_by"] == pytest.approx(r["best_step_seconds"] / free["best_step_seconds"] - 1, rel=1e-9)
    assert r["check_loses_by"] > 0 and r["check_rank"] > 1
    parts = ("compute", "bubble", "tp_comm", "pp_comm", "dp_comm", "optimizer")
    assert sum(r[f"mine_step_{p}"] for p in parts) == pytest.approx(r["best_step_seconds"], rel=1e-9)
    assert r["mine_mem_total"] == pytest.approx(r["mine_mem_reserved"] + r["mine_mem_fixed"], rel=1e-9)
    assert r["mine_mem_total"] == pytest.approx(r["best_peak_bytes"], rel=1e-9)


def test_train_stands_on_the_planners_layout(run_json):
    data = run_json("train", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024")
    r = data["results"]
    assert r["mem_fits"] is True and r["mem_layout"]["tp"] * r["mem_layout"]["pp"] > 1  # not tp1 pp1: a 70B needs model parallelism
    more = run_json("train", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "1024",
                    "--contingency", "0.5")
    assert more["results"]["budget_gpu_hours"] > r["budget_gpu_hours"]


def test_the_bare_article_example_is_unchanged(run_json):
    r = run_json("train")["results"]
    assert r["flops_used"] == pytest.approx(8.4e22) and round(r["gpus_compute_only"], 1) == 1112.9
    assert r["mfu"] == 0.4 and r["gpu_days"] == pytest.approx(8.4e22 / (312e12 * 0.4 * 86400))


def test_mfu_range_gives_low_expected_high(run_json):
    data = run_json("train", "--mfu", "30-50%", "--gpus", "1024")
    lines = {line["key"]: line for s in data["sections"] for line in s["lines"]}
    days = lines["wall_days"]
    assert days["value"] == pytest.approx(8.4e22 / (312e12 * 0.4 * 1024) / 86400)
    assert days["low"] == pytest.approx(8.4e22 / (312e12 * 0.5 * 1024) / 86400)
    assert days["high"] == pytest.approx(8.4e22 / (312e12 * 0.3 * 1024) / 86400)
    assert lines["gpu_days"]["low"] < lines["gpu_days"]["value"] < lines["gpu_days"]["high"]


def test_predicted_mfu_carries_the_validation_band(run_json):
    data = run_json("train", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64", "--mfu", "predicted")
    mfu = next(line for s in data["sections"] for line in s["lines"] if line["key"] == "mfu")
    assert mfu["low"] < mfu["value"] < mfu["high"]


def test_lora_frozen_base_flops():
    from gpuplan.core.model.flops import training_flops_per_token

    spec = load_model("llama-2-7b")
    full, lora = training_flops_per_token(spec, 4096), training_flops_per_token(spec, 4096, finetune="lora")
    weights = full.layer_matmuls_forward + full.lm_head_forward
    # frozen base: 2 x forward for weights (no weight gradients) instead of 3; attention unchanged
    assert full.model - lora.model == pytest.approx(weights - 3 * lora.adapter_forward)


def test_lora_plan_is_faster_per_token(run_json):
    common = ("llama-3.1-8b", "--tokens", "10B", "--gpu", "h100", "--gpus", "8")
    full = run_json("plan", *common)["results"]
    lora = run_json("plan", *common, "--finetune", "lora")["results"]
    assert lora["best_days"] < full["best_days"]


def test_generic_70b_has_llama2_70b_shape_and_tensor_parallelism():
    from gpuplan.adapters.generic_shape import generic_dense_spec

    spec = generic_dense_spec(70e9)
    a = spec.attention
    assert (spec.num_layers, spec.hidden_size, a.num_heads, a.num_kv_heads) == (80, 8192, 64, 8)
    assert a.num_heads % 8 == 0 and a.num_kv_heads % 8 == 0


def test_a_bare_70b_plans_with_tensor_parallelism(run_json):
    r = run_json("plan", "--params", "70B", "--tokens", "2T", "--gpu", "h100", "--days", "30")["results"]
    assert " tp1 " not in f" {r['best_layout']} " and r["best_mfu"] > 0.25
