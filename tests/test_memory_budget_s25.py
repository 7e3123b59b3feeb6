"""Session 25 (helper BG): the memory and budget jobs' items left by session 24.

1. `--recipe fp8` without `--dtype` computed in bf16 at every door (the FP8 weight caches counted, the bf16 peak and
   2-byte linear inputs): an FP8 ask given a BF16 answer. The recipe now sets the compute dtype it names
   (schema.precision_rules.follow_recipe), as Megatron-Core's --fp8-format and torchtitan's float8 converter are the
   one FP8 switch; a --dtype stated otherwise is refused naming recipe, as before.
2. `--ep-a2a-overlap` was a train / plan / budget option only, so `gpuplan memory` could not give the MoE peak train
   printed as "`gpuplan memory` of this layout gives the same". memory takes it (the one field and rules,
   schema.training_fields.EpA2aOverlap / check_combined_1f1b): one layer's activations more, with a pipeline or not
   (the warm-up's extra chunk is the one a plain 1F1B holds at its first backward; core.memory.activations).
3. train's "`gpuplan memory` of this layout gives the same" held only at train's batch: memory's default is one
   micro-batch a rank, train's 4M tokens (llama-3.1-8b on 64 H100, dp32 pp2 vpp8: 42.76 GiB at 1,024 sequences,
   35.31 GiB at memory's 32). The note names the batch (--global-batch N), and memory's answer states its batch and,
   where train's default gives another peak, both (jobs.memory.batch_note).
4. `budget --contingency 0` (a bare share replaces the named ones, the failures line too) priced the failure-free
   hours: a budget below the expected cost of the run it budgets. The contingency lines are now at least the failure
   model's expected overrun (core.economics.cost.with_expected_floor: a line 'up to the expected cost').
5. A key that is no text and a field given no value were refused in other words at each door: a YAML plan file's
   `1: 2` 'is not valid YAML (line 3): keys must be names (text), got 1' where Python's {1: 2} said 'is not a field
   name (an int)', and a Python None 'got no value; expected a number ...' where files and bodies said 'give a
   value, or leave the key out for the default'. One wording (schema.base.key_refusal, errors.null_refusal).
"""

import json

import pytest
from helpers import field_refusal, report_lines

from gpuplan import (BudgetInputs, MemoryInputs, PlanInputs, TrainingInputs, estimate_budget, estimate_memory,
                     estimate_training, plan_report)

GiB = 2**30
H100_FP8_PEAK = 1978.9e12  # FLOP/s dense fp8, the catalog's H100 SXM (twice its 989.45 TFLOP/s bf16)
LLAMA_8B_MATRIX_PARAMS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
"""Llama 3.1 8B's linear weights: 32 layers of q, o (4,096 x 4,096), k, v (4,096 x 1,024: 8 KV heads of 128) and the
gated MLP's three 4,096 x 14,336 = 6,979,321,856 (the embedding and head are not FP8 linears)."""


# ---- 1. --recipe fp8 computes in fp8 ----------------------------------------------------------------------------

MEMORY_ASK = dict(model="llama-3.1-8b", gpu="h100", dp=64, zero=1, micro_batch=1)


def test_recipe_fp8_alone_is_recipe_fp8_at_dtype_fp8_by_hand():
    """memory: `--recipe fp8` alone answers what `--recipe fp8 --dtype fp8` answers (77.01 GiB; it answered 79.26 at
    bf16 compute), and its peak is the megatron recipe's at fp8 (64.01 GiB) plus TE's FP8 weight and transpose caches,
    2 B per linear weight: 2 x 6,979,321,856 = 13,958,643,712 B = 13.0 GiB, worked by hand."""
    alone = estimate_memory(MemoryInputs(**MEMORY_ASK, recipe="fp8"))
    both = estimate_memory(MemoryInputs(**MEMORY_ASK, recipe="fp8", dtype="fp8"))
    megatron = estimate_memory(MemoryInputs(**MEMORY_ASK, recipe="megatron", dtype="fp8"))
    assert LLAMA_8B_MATRIX_PARAMS == 6_979_321_856
    assert alone.value("peak_allocated") == both.value("peak_allocated")
    assert alone.value("peak_allocated") - megatron.value("peak_allocated") == pytest.approx(
        2 * LLAMA_8B_MATRIX_PARAMS, rel=1e-12)
    assert alone.value("peak_allocated") / GiB == pytest.approx(64.008 + 13.0, abs=0.005)
    assert MemoryInputs(**MEMORY_ASK, recipe="fp8").dtype == "fp8"
    assert "dtype" not in MemoryInputs(**MEMORY_ASK, recipe="fp8").given  # the recipe's, not the user's


def test_train_recipe_fp8_alone_times_at_the_fp8_peak_by_hand(run_cli):
    """train: the wall-clock at the article's MFU 0.4 of the fp8 peak, by hand: 6 x 8,030,261,248 x 1e12 =
    4.8182e22 FLOPs / (64 x 1,978.9 TFLOP/s x 0.4 = 5.0660e16 FLOP/s) = 951,080 s = 11.008 days (at bf16 it said
    22.02 days); the dtype line says whose the fp8 is."""
    report = estimate_training(TrainingInputs(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64, recipe="fp8"))
    flops = 6 * 8_030_261_248 * 1e12
    assert report.value("flops_used") == pytest.approx(flops, rel=1e-12)
    assert report.value("peak_flops") == H100_FP8_PEAK
    assert report.value("wall_days") == pytest.approx(flops / (64 * H100_FP8_PEAK * 0.4) / 86400, rel=1e-9)
    assert report.value("wall_days") == pytest.approx(11.008, abs=0.001)
    code, out, err = run_cli("train", "--model", "llama-3.1-8b", "--tokens", "1T", "--gpu", "h100", "--gpus", "64",
                             "--recipe", "fp8", "--full")
    assert code == 0, err
    assert "compute dtype    fp8 (--recipe fp8's)" in out and "MFU (fp8 basis)" in out


@pytest.mark.parametrize("job, ask", [
    ("memory", dict(MEMORY_ASK)),
    ("train", dict(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64)),
    ("budget", dict(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64)),
    ("plan", dict(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64)),
])
def test_every_door_answers_recipe_fp8_as_dtype_fp8(run_cli, client, tmp_path, job, ask):
    """CLI, plan file, web API and Python API: `recipe: fp8` alone gives `recipe: fp8, dtype: fp8`'s numbers (train's
    CLI and web answers carry the budget's lines beside estimate_training's)."""
    inputs, estimate = {"train": (TrainingInputs, estimate_training), "budget": (BudgetInputs, estimate_budget),
                        "plan": (PlanInputs, plan_report), "memory": (MemoryInputs, estimate_memory)}[job]
    python = {k: v for k, v in estimate(inputs(**ask, recipe="fp8")).to_dict().get("results", {}).items()
              if not k.startswith("search")}
    wanted = {k: v for k, v in estimate(inputs(**ask, recipe="fp8", dtype="fp8")).to_dict().get(
        "results", {}).items() if not k.startswith("search")}
    assert python and python == wanted
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in ask.items()]
    code, out, err = run_cli(job, *flags, "--recipe", "fp8", "--json")
    assert code == 0, err
    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in (ask | {"recipe": "fp8"}).items()), encoding="utf-8")
    code, planned, err = run_cli(job, str(plan), "--json")
    assert code == 0, err
    web = client.post(f"/api/{'training' if job == 'train' else job}", json=ask | {"recipe": "fp8"})
    assert web.status_code == 200, web.text[:300]
    for report in (json.loads(out), json.loads(planned), web.json()):
        got = {k: v for k, v in report["results"].items() if not k.startswith("search")}
        common = got.keys() & wanted.keys()
        assert len(common) >= 0.9 * len(wanted) and all(got[k] == pytest.approx(wanted[k], rel=1e-12) if isinstance(
            wanted[k], float) else got[k] == wanted[k] for k in common), job


@pytest.mark.parametrize("job", ["memory", "train", "budget", "plan"])
def test_recipe_fp8_on_a_part_without_fp8_is_refused_naming_recipe(run_cli, job):
    """An A100 has no fp8 path: `--recipe fp8` is refused naming recipe (the option typed), not 'dtype: got fp8'."""
    run = ("--tokens", "1T", "--gpus", "8") if job != "memory" else ()
    field_refusal(run_cli(job, "--model", "llama-3-8b", "--gpu", "a100", "--recipe", "fp8", *run), "recipe",
                  "computes in fp8, which NVIDIA A100 80GB SXM4 has no path for")


# ---- 2. memory takes --ep-a2a-overlap ---------------------------------------------------------------------------

MOE_ASK = dict(model="qwen3-30b-a3b", gpu="h100", gpus=16, ep=8, pp=2, vpp=2, cp=2, zero=1, micro_batch=1,
               global_batch=48)
LAYOUT_FIELDS = ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute", "global_batch", "etp",
                 "shard_group")


def _trains_layout(ask: dict) -> tuple[float, dict]:
    """train's allocated peak for ``ask`` and the memory fields of its layout (as test_memory_dtype_s24 reads them)."""
    report = estimate_training(TrainingInputs(tokens="1T", mfu="predicted", **ask))
    degrees = report.value("mem_layout")
    layout = {k: degrees[k] for k in LAYOUT_FIELDS if k in degrees} | {"gpus": degrees["gpus"]}
    fixed = {k: v for k, v in ask.items() if k not in LAYOUT_FIELDS and k != "gpus"}
    return report.value("mem_peak_allocated"), fixed | layout


def test_memory_ep_a2a_overlap_one_layer_more_by_hand():
    """pp 2 x vpp 2 on stage 0: Megatron-Core's warm-up runs w = 2 (pp - 1) + (v - 1) pp = 4 chunks and holds w + 1 =
    5 at the first backward, 5 / v = 2.5 micro-batches' worth; the combined 1F1B warms up 5 and then runs each
    forward beside a backward layer by layer (model_chunk_schedule_plan.py@d98e8a64 L553-586): 5 chunks and one of
    the stage's 48 / 2 = 24 layers, 2.5 + 1 / 24 (it counted 6 / 2 = 3: 50.23 GiB where 48.02 now, 47.82 without).
    At pp 1 (8 GPUs, cp 2, dp 4: 12 micro-batches) one micro-batch and one of 48 layers. Nothing else moves."""
    on = estimate_memory(MemoryInputs(**MOE_ASK, ep_a2a_overlap=True))
    off = estimate_memory(MemoryInputs(**MOE_ASK))
    assert on.value("peak_activations") / off.value("peak_activations") == pytest.approx((2.5 + 1 / 24) / 2.5,
                                                                                         rel=1e-12)
    assert on.value("peak_allocated") - off.value("peak_allocated") == pytest.approx(
        on.value("peak_activations") - off.value("peak_activations"), rel=1e-12)
    flat = dict(MOE_ASK, gpus=8, pp=1, vpp=1)
    on, off = estimate_memory(MemoryInputs(**flat, ep_a2a_overlap=True)), estimate_memory(MemoryInputs(**flat))
    assert on.value("peak_activations") / off.value("peak_activations") == pytest.approx(49 / 48, rel=1e-12)
    assert on.value("peak_allocated") - off.value("peak_allocated") == pytest.approx(
        on.value("peak_activations") - off.value("peak_activations"), rel=1e-12)


@pytest.mark.parametrize("ask", [
    dict(model="qwen3-30b-a3b", gpu="h100", gpus=16, ep=8, pp=2, vpp=2, cp=2, micro_batch=1, global_batch=48),
    dict(model="qwen3-30b-a3b", gpu="h100", gpus=16, ep=8),  # the planner's layout (pp 1 or interleaved)
    dict(model="mixtral-8x7b", gpu="h100", gpus=64, ep=8, pp=4, vpp=4),
])
def test_memory_of_trains_layout_gives_trains_peak_with_ep_a2a_overlap(run_cli, client, tmp_path, ask):
    """train's allocated peak under --ep-a2a-overlap, to the byte, from memory at every door: flags, a plan file,
    the web API and the Python API (before: 'ep-a2a-overlap: not an option of gpuplan memory')."""
    want, fields = _trains_layout(ask | {"ep_a2a_overlap": True})
    assert estimate_memory(MemoryInputs(**fields)).value("peak_allocated") == want
    flags = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in fields.items()]
    code, out, err = run_cli("memory", *flags, "--json")
    assert code == 0, err
    plan = tmp_path / "memory.yaml"
    plan.write_text("".join(f"{k}: {str(v).lower() if v is True else v}\n" for k, v in fields.items()), "utf-8")
    code, planned, err = run_cli("memory", str(plan), "--json")
    assert code == 0, err
    web = client.post("/api/memory", json=fields)
    assert web.status_code == 200, web.text[:300]
    for report in (json.loads(out), json.loads(planned), web.json()):
        assert report_lines(report)["peak_allocated"]["value"] == want


@pytest.mark.parametrize("flags, field, fragment", [
    (("--model", "qwen3-30b-a3b", "--gpus", "16"), "ep_a2a_overlap", "needs expert parallelism (--ep > 1)"),
    (("--model", "qwen3-30b-a3b", "--gpus", "16", "--ep", "8", "--pp", "2"), "ep_a2a_overlap",
     "runs a pipeline only interleaved"),  # --vpp not given: the option typed is named (session 25, M2)
    (("--model", "qwen3-30b-a3b", "--gpus", "16", "--ep", "8", "--recompute", "full"), "recompute",
     "refuses full recompute under --ep-a2a-overlap"),
    (("--model", "qwen3-30b-a3b", "--gpus", "16", "--ep", "8", "--framework", "torchtitan"), "ep_a2a_overlap",
     "is Megatron-Core's combined 1F1B schedule"),
    (("--model", "qwen3-30b-a3b", "--gpus", "16", "--ep", "8", "--pp", "2", "--vpp", "2", "--cp", "2",
      "--global-batch", "12"), "global_batch", "needs a multiple of pp micro-batches"),
])
def test_memory_refuses_ep_a2a_overlap_where_megatron_does(run_cli, flags, field, fragment):
    """The layouts Megatron-Core refuses under the combined 1F1B, refused by memory naming the field, as train."""
    field_refusal(run_cli("memory", "--gpu", "h100", *flags, "--ep-a2a-overlap"), field, fragment)


# ---- 5. one wording for a key that is no text and a field given no value ---------------------------------------

KEY_WORDS = "is not a field name (an int); field names are text, e.g. 'model'"
NULL_WORDS = "give a value, or leave the key out for the default"


@pytest.mark.parametrize("job", ["memory", "budget"])
def test_a_key_that_is_no_text_in_the_schemas_words(run_cli, tmp_path, job):
    """A YAML plan file's `1: 2` and a Python caller's {1: 2}: the same line, the file's prefixed with its name (a
    JSON body's keys are always text: its "1" is an unknown field)."""
    from gpuplan import InputError

    plan = tmp_path / "ask.yaml"
    plan.write_text("model: llama-3-8b\ntokens: 1T\n1: 2\n" if job == "budget" else "model: llama-3-8b\n1: 2\n",
                    encoding="utf-8")
    err = field_refusal(run_cli(job, str(plan)), f"{plan}: 1", KEY_WORDS)
    with pytest.raises(InputError) as python:
        (estimate_budget if job == "budget" else estimate_memory)({"model": "llama-3-8b", "tokens": "1T", 1: 2}
                                                                  if job == "budget" else {"model": "llama-3-8b", 1: 2})
    assert err.strip() == f"error: {plan}: {python.value}" == f"error: {plan}: 1: got 2; {KEY_WORDS}"
    plan.write_text("model: llama-3-8b\n1: null\n", encoding="utf-8")  # no value either: the key is named first
    field_refusal(run_cli("memory", str(plan)), f"{plan}: 1", f"got 'null'; {KEY_WORDS}")


def test_a_top_level_list_key_in_the_schemas_words(run_cli, tmp_path):
    """`[1, 2]: 2` cannot be a mapping key in Python: the YAML refusal, in the schema's words."""
    plan = tmp_path / "ask.yaml"
    plan.write_text("model: llama-3-8b\n[1, 2]: 2\n", encoding="utf-8")
    field_refusal(run_cli("memory", str(plan)), "plan file", "(line 2): [] is not a field name (a list)")


@pytest.mark.parametrize("job, route, ask, field", [
    ("memory", "memory", dict(model="llama-3-8b", gpu="h100"), "seq_len"),
    ("budget", "budget", dict(model="llama-3-8b", tokens="1T"), "contingency"),
])
def test_a_field_given_no_value_in_one_wording(run_cli, client, tmp_path, job, route, ask, field):
    """null in a plan file and a web body, None from Python: 'give a value, or leave the key out for the default'
    (Python's None said 'got no value; expected a number or its text ...')."""
    from gpuplan import InputError

    plan = tmp_path / "ask.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in ask.items()) + f"{field}: null\n", encoding="utf-8")
    planned = field_refusal(run_cli(job, str(plan)), f"{plan}: {field}", NULL_WORDS)
    web = client.post(f"/api/{route}", json=ask | {field: None})
    assert web.status_code == 422 and web.json()["message"] == f"{field}: got 'null'; {NULL_WORDS}"
    with pytest.raises(InputError) as python:
        (BudgetInputs if job == "budget" else MemoryInputs)(**ask, **{field: None})
    assert str(python.value) == f"{field}: got None; {NULL_WORDS}"
    assert planned.strip() == f"error: {plan}: {web.json()['message']}"


def test_none_for_a_field_that_takes_it_is_the_default():
    """A field whose default is None takes None from Python (dp, vpp); a rule naming such a field is its own."""
    assert MemoryInputs(model="llama-3-8b", dp=None, vpp=None) == MemoryInputs(model="llama-3-8b")


# ---- 4. a budget is never below the expected cost ---------------------------------------------------------------

BUDGET_ASK = dict(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64)


@pytest.mark.parametrize("shares", [
    dict(contingency=0),
    dict(contingency_restarts=0, contingency_tuning=0, contingency_evaluation=0, contingency_failures=0),
])
def test_contingency_zero_budgets_the_expected_cost_by_hand(shares):
    """llama-3.1-8b, 1T tokens, 64 H100 at the median $3.99/GPU-h: failure-free 64 x 26.4202 days x 24 = 40,581.5
    GPU-h; the failure model's expected wall-clock 2,290,687 s, 64 x 2,290,687 / 3,600 = 40,723.3 GPU-h; so the
    shares of 0 leave a 141.8 GPU-h line up to it and the budget is the expected cost, 40,723.3 x $3.99 = $162,486
    (it was 40,581.5 x $3.99 = $161,920, $566 below the 'cost, on-demand' line above it). The spot budget likewise
    is the spot cost."""
    report = estimate_budget(BudgetInputs(**BUDGET_ASK, **shares))
    failure_free = 64 * report.value("wall_days_with_comm") * 24
    expected = 64 * report.value("fail_wall_seconds") / 3600
    assert failure_free == pytest.approx(40_581.5, abs=0.1) and expected == pytest.approx(40_723.3, abs=0.1)
    assert report.value("contingency_expected_floor") == pytest.approx(expected - failure_free, rel=1e-9)
    assert report.value("budget_gpu_hours") == pytest.approx(expected, rel=1e-12)
    assert report.value("budget_usd_on_demand") == pytest.approx(expected * 3.99, rel=1e-12)
    assert report.value("budget_usd_on_demand") == pytest.approx(162_486, abs=1)
    assert report.value("budget_usd_on_demand") >= report.value("cost_on_demand_usd") * (1 - 1e-12)
    assert report.value("budget_usd_spot") >= report.value("cost_spot_usd") * (1 - 1e-12)


def test_a_contingency_above_the_expected_overrun_is_as_before():
    """--contingency 0.2: 20% of the 40,581.5 failure-free GPU-hours = 8,116.3 is above the 141.8 the failure model
    expects, so no floor line and the budget is 40,581.5 x 1.2 = 48,697.8 GPU-h (the named defaults likewise)."""
    report = estimate_budget(BudgetInputs(**BUDGET_ASK, contingency=0.2))
    failure_free = 64 * report.value("wall_days_with_comm") * 24
    assert report.value("budget_gpu_hours") == pytest.approx(1.2 * failure_free, rel=1e-12)
    assert report.value("budget_gpu_hours") == pytest.approx(48_697.8, abs=0.1)
    assert "contingency_expected_floor" not in report.to_dict()["results"]
    assert "contingency_expected_floor" not in estimate_budget(BudgetInputs(**BUDGET_ASK)).to_dict()["results"]


def test_contingency_zero_at_every_door(run_cli, client, tmp_path):
    """flags, a plan file, the web API and Python: the same budget, the expected cost."""
    want = estimate_budget(BudgetInputs(**BUDGET_ASK, contingency=0)).value("budget_usd_on_demand")
    code, out, err = run_cli("budget", *(f"--{k}={v}" for k, v in BUDGET_ASK.items()), "--contingency", "0", "--json")
    assert code == 0, err
    plan = tmp_path / "budget.yaml"
    plan.write_text("".join(f"{k}: {v}\n" for k, v in BUDGET_ASK.items()) + "contingency: 0\n", encoding="utf-8")
    code, planned, err = run_cli("budget", str(plan), "--json")
    assert code == 0, err
    web = client.post("/api/budget", json=BUDGET_ASK | {"contingency": 0})
    assert web.status_code == 200, web.text[:300]
    for report in (json.loads(out), json.loads(planned), web.json()):
        assert report_lines(report)["budget_usd_on_demand"]["value"] == pytest.approx(want, rel=1e-12)
        assert report_lines(report)["contingency_expected_floor"]["label"] == "up to the expected cost"


# ---- 3. the batch "gives the same" holds at -----------------------------------------------------------------------

def test_trains_note_names_the_batch_memory_gives_the_same_at(run_cli, client):
    """llama-3.1-8b, 1T tokens, 64 H100: train's layout dp32 tp1 pp2 vpp8 ZeRO-1 mb1 at its default batch, 4M tokens
    / 4,096 = 1,024 sequences (a multiple of dp 32); its note names --global-batch 1024, at which memory gives its
    42.76 GiB to the byte. Memory's own default, 32 x 1 = 32 sequences, one micro-batch a rank, holds one micro-batch
    in flight on the pipeline (35.31 GiB), and its note says both and the option."""
    report = estimate_training(TrainingInputs(model="llama-3.1-8b", tokens="1T", gpu="h100", gpus=64))
    layout = report.value("mem_layout")
    assert (layout["dp"], layout["pp"], layout["vpp"], layout["micro_batch"], layout["global_batch"]) == \
        (32, 2, 8, 1, 4 * 2**20 // 4096)
    note = next(line.formula for s in report.sections for line in s.lines if line.key == "mem_peak_allocated")
    assert "`gpuplan memory` of this layout with --global-batch 1024 gives the same" in note
    ask = dict(model="llama-3.1-8b", gpu="h100", gpus=64, pp=2, vpp=8, zero=1, micro_batch=1)
    at_trains = estimate_memory(MemoryInputs(**ask, global_batch=1024))
    assert at_trains.value("peak_allocated") == report.value("mem_peak_allocated")
    assert at_trains.value("peak_allocated") / GiB == pytest.approx(42.76, abs=0.005)
    own = estimate_memory(MemoryInputs(**ask))
    assert own.value("peak_allocated") / GiB == pytest.approx(35.31, abs=0.005)
    assert not any("global batch:" in n for n in at_trains.notes)
    said = "global batch: 32 sequences, one micro-batch a rank (memory's default): 35.31 GiB allocated; at train / " \
           "budget / plan's default, 4M tokens (1,024 sequences on this layout), 42.76 GiB: give --global-batch 1024"
    assert any(n.startswith(said) for n in own.notes)
    code, out, err = run_cli("memory", *(f"--{k.replace('_', '-')}={v}" for k, v in ask.items()))
    assert code == 0 and said in out.replace("\n", " "), err
    web = client.post("/api/memory", json=ask)
    assert web.status_code == 200 and any(n.startswith(said) for n in web.json()["notes"])
    code, out, err = run_cli("memory", *(f"--{k.replace('_', '-')}={v}" for k, v in ask.items()), "--full")
    assert "32 sequences (one micro-batch a rank, the default here" in out


def test_no_batch_note_where_the_batch_moves_nothing():
    """dp 64 without a pipeline under megatron: the peak is the same at 64 and 1,024 sequences, so no note."""
    own = estimate_memory(MemoryInputs(**MEMORY_ASK))
    assert own.value("peak_allocated") == estimate_memory(MemoryInputs(**MEMORY_ASK, global_batch=1024)).value(
        "peak_allocated")
    assert not any("global batch:" in n for n in own.notes)


@pytest.mark.parametrize("job", ["memory", "train"])
def test_recipe_fp8_under_llmc_is_refused_naming_recipe(run_cli, job):
    """llm.c runs bf16 only: --recipe fp8 is refused by its fixed-options rule naming recipe, as before the recipe
    set the dtype (it read 'dtype: got 'fp8'; --framework llmc is modelled in bf16 only', a field never typed)."""
    run = ("--tokens", "1T") if job == "train" else ()
    field_refusal(run_cli(job, "--model", "llama-3-8b", "--gpu", "h100", "--gpus", "8", "--framework", "llmc",
                          "--recipe", "fp8", *run), "recipe", "--framework llmc keeps bf16 weights")


def test_a_campaign_stage_key_that_is_no_text_in_the_schemas_words():
    """A Python caller's campaign stage {1: 2} said 'stages[0].1: got 2; unknown field; a campaign takes ...'."""
    from gpuplan import InputError, estimate_campaign

    with pytest.raises(InputError) as python:
        estimate_campaign({"stages": [{"model": "llama-3-8b", "tokens": "1T", 1: 2}]})
    assert str(python.value) == f"stages[0].1: got 2; {KEY_WORDS}"
