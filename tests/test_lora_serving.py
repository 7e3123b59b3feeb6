"""Multi-LoRA serving: the adapter slots vLLM preallocates, worked out by hand from the tensor
shapes in vllm/lora/layers (create_lora_weights; core/serving/lora.py), and what they change."""

from __future__ import annotations

import pytest

from gpuplan.cli import main
from gpuplan.core.serving import lora as L
from gpuplan.errors import InputError
from gpuplan.jobs.inference.estimate import estimate_inference
from gpuplan.jobs.inference.resolve import resolve_plan
from gpuplan.jobs.inference.schema import InferenceInputs
from gpuplan.jobs.inference.serving import evaluate


def _spec(name):
    return InferenceInputs(model=name, gpu="h100", search=False).spec()


def test_llama_8b_slots_by_hand_tp1_and_tp2():
    """Llama-3.1-8B (h 4096, 32 heads, 8 KV heads of 128, I 14336, 32 layers), rank 64, one slot:
    tp 1: qkv A 3x64x4096 + B 64x(4096 + 2x1024) = 1,179,648; o_proj A 64x4096 + B 4096x64 = 524,288;
    gate_up A 2x64x4096 + B 2x14336x64 and down A 64x14336 + B 4096x64 = 3,538,944 -> 5,242,880 a layer.
    tp 2: qkv 786,432 + 64x(2048 + 2x512) = 983,040; o 64x2048 + 4096x64 = 393,216; MLP 524,288 +
    2x7168x64 + 64x7168 + 262,144 = 2,162,688 -> 3,538,944 a layer."""
    spec = _spec("llama-3.1-8b")
    assert L.slot_elements_per_layer(spec, 64, 1, False) == 5_242_880
    assert L.slot_elements_per_layer(spec, 64, 2, False) == 3_538_944
    four = L.LoraServing(max_loras=4, rank=64, cpu_loras=4)
    assert L.slot_bytes_per_gpu(spec, four, 1) == 4 * 2 * 32 * 5_242_880  # 1.342 GB
    assert L.slot_bytes_per_gpu(spec, four, 2) == 4 * 2 * 32 * 3_538_944
    assert L.slot_bytes_per_gpu(spec, four, 1, pp=2) == 4 * 2 * 16 * 5_242_880  # fullest of two stages
    assert L.adapter_bytes(spec, four) == 2 * 32 * 5_242_880  # host cache keeps one unsharded copy


def test_mixtral_slots_cover_every_expert():
    """Mixtral-8x7B (h 4096, 32/8 heads of 128, 8 experts of I 14336), rank 16, tp 1 a layer:
    qkv 3x16x4096 + 16x6144 = 294,912; o 131,072; experts 8 x (131,072 + 458,752 + 229,376 + 65,536)
    = 7,077,888 (vllm/lora/layers/fused_moe.py: [max_loras, local experts, ...]) -> 7,503,872."""
    spec = _spec("mixtral-8x7b")
    assert L.slot_elements_per_layer(spec, 16, 1, True) == 7_503_872
    one = L.LoraServing(1, 16, 1)
    assert L.slot_bytes_per_gpu(spec, one, 1) == 2 * 32 * 7_503_872
    # a token passes 2 of the 8 experts: FLOPs 2 x (294,912 + 131,072 + 2 x 884,736) a layer
    assert L.flops_per_token(spec, one) == 2 * 32 * (294_912 + 131_072 + 2 * 884_736)


def test_slots_come_out_of_the_kv_budget_and_are_read_per_step():
    base = InferenceInputs(model="llama-3.1-8b", gpu="h100", batch=8, search=False)
    lora = base.replace(max_loras=4, max_lora_rank=64)
    plan0, plan1 = resolve_plan(base), resolve_plan(lora)
    s0, s1 = (evaluate(p, p.gpu, 1, 1, 8) for p in (plan0, plan1))
    slots = 4 * 2 * 32 * 5_242_880
    assert s1.memory.lora_slots == slots
    assert s1.memory.weights - s0.memory.weights == slots
    assert s0.memory.kv_budget - s1.memory.kv_budget == pytest.approx(slots)
    # batch 8 decode is memory-bound: 4 active slots (min(batch, max_loras)) add their bytes
    extra = slots / (plan1.gpu.memory_bandwidth * plan1.setup.efficiency.bandwidth[0])
    assert s1.tpot[0].memory_s - s0.tpot[0].memory_s == pytest.approx(extra, rel=1e-9)


def test_report_lines_and_engine_defaults():
    report = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", enable_lora=True, search=False))
    # vLLM default: one slot at rank 16 -> 2 x 32 x rank-16 layer elements
    rank16 = L.slot_elements_per_layer(_spec("llama-3.1-8b"), 16, 1, False)
    assert report.value("lora_slots") == 2 * 32 * rank16
    sglang = estimate_inference(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="sglang",
                                                enable_lora=True, search=False))
    assert sglang.value("lora_slots") == 8 * 2 * 32 * rank16  # --max-loras-per-batch default 8
    assert sglang.value("lora_host_cache") == 8 * 2 * 32 * rank16


@pytest.mark.parametrize("kw, field", [
    (dict(max_lora_rank=64), "max_lora_rank"),  # needs --enable-lora
    (dict(max_loras=2, max_lora_rank=48), "max_lora_rank"),  # vLLM allocates only its listed ranks
    (dict(max_loras=4, max_cpu_loras=2), "max_cpu_loras"),
    (dict(enable_lora=True, engine="trtllm"), "enable_lora"),
])
def test_bad_lora_settings_name_the_field(kw, field):
    with pytest.raises(InputError) as err:
        resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", search=False, **kw))
    assert err.value.field == field


def test_sglang_takes_any_rank_and_mla_is_refused():
    ok = InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="sglang", max_loras=2, max_lora_rank=48,
                         search=False)
    assert resolve_plan(ok).setup.lora.rank == 48
    with pytest.raises(InputError, match="MLA"):
        resolve_plan(InferenceInputs(model="deepseek-v2-lite", gpu="h100", enable_lora=True, search=False))


def test_cli_lora_error_is_one_line(capsys):
    assert main(["infer", "llama-3.1-8b", "--gpu", "h100", "--max-loras", "2", "--max-lora-rank", "48"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_lora_rank" in err[0]


def test_api_and_cli_agree_on_lora_slots(run_cli):
    """One schema: the web API and the CLI give the same slots for the same request."""
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    import json

    from fastapi.testclient import TestClient

    from gpuplan.web import create_app

    body = {"model": "llama-3.1-8b", "gpu": "h100", "max_loras": "4", "max_lora_rank": "64", "search": False}
    api = TestClient(create_app()).post("/api/inference", json=body).json()
    code, out, _ = run_cli("infer", "llama-3.1-8b", "--gpu", "h100", "--max-loras", "4", "--max-lora-rank", "64",
                           "--no-search", "--json")
    assert code == 0
    cli = json.loads(out)
    assert api["results"] == cli["results"]
    assert cli["results"]["lora_slots"] == 4 * 2 * 32 * 5_242_880
