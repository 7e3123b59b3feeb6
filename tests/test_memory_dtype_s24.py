"""`gpuplan memory --dtype` (helper MD, s24): memory takes train's and plan's precision fields (--dtype, --fp8-recipe,
--fsdp-float8-all-gather) and builds its settings with the builder plan's search calls (jobs.memory.settings), so
train's 'allocated peak ... `gpuplan memory` of this layout gives the same' holds at FP8 / FP4.

Before: `train --model llama-3.1-8b --tokens 1T --gpu h100 --gpus 64 --dtype fp8 --mfu predicted` printed an allocated
peak of 64.01 GiB on dp64 ZeRO-1 mb1, while memory (no --dtype) answered that layout 66.26 GiB (bf16 compute) and
`--recipe fp8` 79.26 GiB (another recipe)."""

import json

import pytest
from helpers import field_refusal

from gpuplan import MemoryInputs, TrainingInputs, estimate_memory, estimate_training

GiB = 2**30
FP8_CASE = dict(model="llama-3.1-8b", gpu="h100", gpus=64, dtype="fp8")
LAYOUT_FIELDS = ("tp", "pp", "vpp", "cp", "ep", "zero", "micro_batch", "recompute", "global_batch", "etp",
                 "shard_group")


def _train_and_memory(case: dict) -> tuple[float, float, dict]:
    """(train's allocated peak, memory's allocated peak of train's layout with the same fields, the layout)."""
    report = estimate_training(TrainingInputs(tokens="1T", mfu="predicted", **case))
    degrees = next(line.value for s in report.sections for line in s.lines if line.key == "mem_layout")
    layout = {k: degrees[k] for k in LAYOUT_FIELDS if k in degrees}
    asked = {k: v for k, v in case.items() if k != "recompute"} | layout | {"gpus": degrees["gpus"]}
    return report.value("mem_peak_allocated"), estimate_memory(MemoryInputs(**asked)).value("peak_allocated"), layout


def test_the_fp8_case_memory_gives_trains_peak(run_cli):
    """The defect's case, at the CLI: train's layout is dp64 ZeRO-1 micro-batch 1 without recompute; memory of that
    layout at --dtype fp8 prints train's 64.01 GiB (66.26 GiB at bf16, the old answer)."""
    want, got, layout = _train_and_memory(FP8_CASE)
    assert (layout["tp"], layout["pp"], layout["zero"], layout["micro_batch"], layout["recompute"]) == \
        (1, 1, 1, 1, "none")
    assert got == want and want / GiB == pytest.approx(64.01, abs=0.005)
    flags = ("memory", "--model", "llama-3.1-8b", "--gpu", "h100", "--dp", "64", "--zero", "1", "--micro-batch", "1")
    code, out, err = run_cli(*flags, "--dtype", "fp8", "--json")
    assert code == 0, err
    peak = next(line for s in json.loads(out)["sections"] for line in s["lines"] if line["key"] == "peak_allocated")
    assert peak["value"] == want
    code, out, _ = run_cli(*flags, "--json")  # bf16, the default: the number memory gave before
    bf16 = next(line for s in json.loads(out)["sections"] for line in s["lines"] if line["key"] == "peak_allocated")
    assert bf16["value"] / GiB == pytest.approx(66.26, abs=0.005)


def test_saved_linear_inputs_at_one_byte_worked_by_hand():
    """The one term --dtype fp8 moves here, by hand (core.memory.activations.layer_activations, Transformer Engine's
    linears under the megatron implementation): per layer and token the QKV input and the fc1 input go from 2 B to
    1 B an element (-h each), the down-projection input from 2 B to 1 B (-i), and the output projection keeps a 1 B
    copy of the attention output (+heads x head dim = +h): -(h + i) = -(4,096 + 14,336) = -18,432 B. Llama 3.1 8B,
    32 layers, 4,096 tokens a micro-batch, one micro-batch in flight (pp 1): 18,432 x 32 x 4,096 = 2,415,919,104 B
    = 2.25 GiB less at the start of backward."""
    base = dict(model="llama-3.1-8b", gpu="h100", dp=64, zero=1, micro_batch=1)
    bf16 = estimate_memory(MemoryInputs(**base))
    fp8 = estimate_memory(MemoryInputs(**base, dtype="fp8"))
    spec = MemoryInputs(**base).spec()
    assert (spec.hidden_size, spec.mlp.intermediate_size, spec.num_layers, MemoryInputs(**base).seq_len) == \
        (4096, 14336, 32, 4096)
    by_hand = (4096 + 14336) * 32 * 4096
    assert by_hand == 2_415_919_104
    assert bf16.value("peak_activations") - fp8.value("peak_activations") == pytest.approx(by_hand, rel=1e-12)
    assert bf16.value("peak_allocated") - fp8.value("peak_allocated") == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("case", [
    dict(FP8_CASE, framework="megatron", recompute="full"),
    dict(FP8_CASE, framework="megatron", recompute="selective"),
    dict(FP8_CASE, gpu="b200", fp8_recipe="mxfp8", framework="megatron"),
    dict(FP8_CASE, gpu="b200", fp8_recipe="mxfp8", framework="megatron", recompute="full"),
    dict(FP8_CASE, gpu="b200", dtype="fp4", framework="megatron"),
    dict(FP8_CASE, gpu="b200", framework="megatron", low_precision_weights="primary"),  # one copy on sm_100
    dict(FP8_CASE, framework="megatron", low_precision_weights="cached"),
    dict(FP8_CASE, framework="torchtitan"),
    dict(FP8_CASE, framework="torchtitan", recompute="full"),
    dict(FP8_CASE, framework="torchtitan", fsdp_float8_all_gather=True),
    dict(FP8_CASE, dtype="fp16", framework="megatron"),
    dict(FP8_CASE, recipe="fp8"),
    dict(FP8_CASE, model="llama-3.1-70b", gpus=256, framework="megatron"),
    dict(FP8_CASE, model="mixtral-8x7b", framework="megatron"),
])
def test_memory_of_trains_layout_gives_trains_peak(case):
    """memory == train, to the byte, over dtypes, FP8 recipes, recompute and frameworks."""
    want, got, layout = _train_and_memory(case)
    assert got == want, (case, layout)


def test_one_builder_for_plan_and_memory():
    """Plan's evaluator and memory's settings are the same MemorySettings for the same fields (jobs.memory.settings),
    FP8 fields included: the saved linear input at 1 + 1/32 B (MXFP8: an E8M0 scale per 32 elements)."""
    from gpuplan import PlanInputs
    from gpuplan.jobs.plan.search import evaluator_for

    fields = dict(model="llama-3.1-8b", gpu="b200", gpus=8, dtype="fp8", fp8_recipe="mxfp8", framework="megatron")
    plan = evaluator_for(PlanInputs(tokens="1T", **fields)).memory
    memory = MemoryInputs(**fields).settings()
    assert memory.linear_input_bytes == plan.linear_input_bytes == 1 + 1 / 32
    assert memory.fp8_any_layout_gemm and plan.fp8_any_layout_gemm  # B200: sm_100
    from dataclasses import replace
    assert replace(memory, recompute=plan.recompute) == plan


@pytest.mark.parametrize("flags, field, fragment", [
    (("--dtype", "bf16", "--recipe", "fp8"), "recipe", "which --dtype bf16 contradicts"),
    (("--dtype", "fp4", "--recipe", "fp8", "--gpu", "b200"), "recipe", "which --dtype fp4 contradicts"),
    (("--dtype", "fp8", "--recipe", "fp8", "--framework", "megatron", "--low-precision-weights", "cached"),
     "low_precision_weights", "which --recipe fp8 counts already"),
    (("--fp8-recipe", "mxfp8"), "fp8_recipe", "applies to --dtype fp8 (not bf16)"),
    (("--dtype", "fp8", "--fp8-recipe", "mxfp8"), "fp8_recipe", "no block-scaled (MX) tensor cores"),
    (("--dtype", "fp4"), "dtype", "no dense fp4 peak"),
    (("--dtype", "fp8", "--compare", "a100,h100"), "compare", "no fp8 path for --dtype fp8"),
    (("--low-precision-weights", "primary", "--framework", "megatron"), "low_precision_weights", "give --dtype fp8"),
    (("--fsdp-float8-all-gather", "--framework", "torchtitan"), "fsdp_float8_all_gather", "--dtype fp8 only"),
])
def test_memory_refuses_as_train_does(run_cli, flags, field, fragment):
    """One line naming the field, at memory as at train (the same rules: schema.precision_rules)."""
    gpu = () if "--gpu" in flags else ("--gpu", "h100")
    err = field_refusal(run_cli("memory", "--model", "llama-3.1-8b", "--dp", "8", *gpu, *flags), field, fragment)
    if "--compare" not in flags:
        train = field_refusal(run_cli("train", "--model", "llama-3.1-8b", "--tokens", "1T", "--gpus", "8", *gpu,
                                      *flags), field, fragment)
        assert train.split(";")[0] == err.split(";")[0]


# --recipe fp8 without --dtype computed in bf16 here (79.26 GiB); since session 25 it computes in fp8, the recipe's
# dtype (schema.precision_rules.follow_recipe): tests/test_memory_budget_s25.py.


def test_web_api_memory_takes_dtype():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    client = TestClient(create_app())
    body = {"model": "llama-3.1-8b", "gpu": "h100", "dp": 64, "zero": 1, "micro_batch": 1}
    answers = {d: client.post("/api/memory", json={**body, "dtype": d}) for d in ("bf16", "fp8")}
    assert all(r.status_code == 200 for r in answers.values()), answers["fp8"].text
    peaks = {d: next(line["value"] for s in r.json()["sections"] for line in s["lines"] if line["key"] ==
                     "peak_allocated") for d, r in answers.items()}
    assert peaks["fp8"] == estimate_memory(MemoryInputs(**body, dtype="fp8")).value("peak_allocated")
    assert peaks["bf16"] - peaks["fp8"] == pytest.approx((4096 + 14336) * 32 * 4096, rel=1e-12)
    bad = client.post("/api/memory", json={**body, "dtype": "bf16", "recipe": "fp8"})
    assert bad.status_code == 422 and "recipe" in bad.text
