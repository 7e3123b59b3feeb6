"""More `gpuplan infer` input that was accepted and ignored or read as nonsense: contradictory LoRA
flags, one engine's options under another, TensorRT-LLM off NVIDIA, int4 groups that do not tile
the matrices, drafts no smaller than the target, errors naming the wrong field, suggestions that
were themselves refused. Each is one line naming the field (exit 2); the valid neighbours work."""

from __future__ import annotations

import json

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.inference.schema import InferenceInputs

BASE = ("infer", "--model", "llama-3.1-8b", "--no-search")


def _with_gpu(args: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments with --gpu h100 unless they name a GPU."""
    return args if "--gpu" in args else (*args, "--gpu", "h100")


def _refused(run_cli, *args: str, base=BASE) -> str:
    code, out, err = run_cli(*base, *_with_gpu(args))
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in out + err
    assert out == ""
    return err


def _estimate(**fields):
    from gpuplan.jobs.inference.estimate import estimate_inference

    return estimate_inference(InferenceInputs.parse({"model": "llama-3.1-8b", "gpu": "h100", "search": False,
                                                     **fields}))


@pytest.mark.parametrize("args, field", [
    # 1. LoRA switched off and on at once
    (("--max-loras", "4", "--no-enable-lora"), "max_loras"),
    (("--max-lora-rank", "32", "--no-enable-lora"), "max_lora_rank"),
    # 2. options another engine's memory rule reads, silently ignored
    (("--engine", "trtllm", "--gpu-memory-utilization", "0.5"), "gpu_memory_utilization"),
    (("--engine", "sglang", "--gpu-memory-utilization", "0.5"), "gpu_memory_utilization"),
    (("--engine", "trtllm", "--sampler", "torch-sort"), "sampler"),
    (("--engine", "sglang", "--sampler", "triton"), "sampler"),
    (("--engine", "sglang", "--cuda-graph-gib", "1"), "cuda_graph_gib"),
    (("--engine", "sglang", "--prefill-tokens", "4096"), "prefill_tokens"),
    (("--engine", "vllm", "--mem-fraction-static", "0.8"), "mem_fraction_static"),
    (("--engine", "sglang", "--free-gpu-memory-fraction", "0.8"), "free_gpu_memory_fraction"),
    # 3. TensorRT-LLM off NVIDIA
    (("--engine", "trtllm", "--gpu", "mi300x"), "engine"),
    (("--engine", "trtllm", "--gpu", "gaudi3"), "engine"),
    (("--engine", "trtllm", "--gpu", "tpu-v5p"), "gpu"),  # a TPU: no engine modelled there (tpu_serving)
    # 4. int4 groups that do not tile the matrices' input dimensions
    (("--quantization", "int4", "--group-size", "3"), "group_size"),
    (("--quantization", "int4", "--group-size", "96"), "group_size"),
    (("--quantization", "int4", "--group-size", "65536"), "group_size"),
    # 5. a draft model no smaller than the target
    (("--speculative", "draft", "--draft-model", "llama-3.1-405b"), "draft_model"),
    (("--speculative", "draft", "--draft-model", "llama-3.1-8b"), "draft_model"),
    # 6. a draft model's file named as the model's
    (("--speculative", "draft", "--draft-model", "/nonexistent/cfg.json"), "draft_model"),
    # 7. a format the accelerator lacks
    (("--gpu", "gaudi3", "--quantization", "int4"), "quantization"),
])
def test_refused_in_one_line_naming_the_field(run_cli, args, field):
    err = _refused(run_cli, *args)
    assert err.startswith(f"error: {field}: "), err


@pytest.mark.parametrize("body, field", [
    ({"max_loras": 4, "enable_lora": False}, "max_loras"),
    ({"engine": "trtllm", "gpu_memory_utilization": 0.5}, "gpu_memory_utilization"),
    ({"engine": "sglang", "gpu_memory_utilization": 0.5}, "gpu_memory_utilization"),
    ({"engine": "trtllm", "sampler": "torch-sort"}, "sampler"),
])
def test_api_body_refused_by_the_schema(body, field):
    with pytest.raises(InputError) as info:
        InferenceInputs.parse({"model": "llama-3.1-8b", "gpu": "h100", **body})
    assert info.value.field == field


@pytest.mark.parametrize("body, field", [
    ({"engine": "trtllm", "gpu": "mi300x"}, "engine"),
    ({"quantization": "int4", "group_size": 3}, "group_size"),
    ({"speculative": "draft", "draft_model": "llama-3.1-405b"}, "draft_model"),
    ({"speculative": "draft", "draft_model": "llama-3.1-8b"}, "draft_model"),
    ({"speculative": "draft", "draft_model": "nope"}, "draft_model"),
    ({"speculative": "draft", "draft_model": "/nonexistent/cfg.json"}, "draft_model"),
])
def test_api_body_refused_when_resolved(body, field):
    with pytest.raises(InputError) as info:
        _estimate(**body)
    assert info.value.field == field


@pytest.mark.parametrize("args", [
    ("--max-loras", "4"),
    ("--max-loras", "4", "--enable-lora"),
    ("--enable-lora", "--max-lora-rank", "32"),
    ("--no-enable-lora",),
    ("--gpu-memory-utilization", "0.5"),
    ("--engine", "vllm", "--sampler", "torch-sort", "--cuda-graph-gib", "0", "--prefill-tokens", "4096"),
    ("--engine", "sglang", "--mem-fraction-static", "0.8"),
    ("--engine", "sglang", "--max-num-seqs", "64", "--non-torch-gib", "0.5"),
    ("--engine", "trtllm", "--free-gpu-memory-fraction", "0.8", "--prefill-tokens", "4096"),
    ("--engine", "trtllm", "--gpu", "h100"),
    ("--engine", "vllm", "--gpu", "mi300x"),
    ("--engine", "sglang", "--gpu", "mi300x"),
    ("--engine", "vllm", "--gpu", "gaudi3"),
    ("--quantization", "int4", "--group-size", "32"),
    ("--quantization", "int4", "--group-size", "64"),
    ("--quantization", "int4", "--group-size", "-1"),
    ("--speculative", "draft", "--draft-model", "llama-3.2-1b"),
])
def test_valid_neighbours_still_work(run_json, args):
    data = run_json(*BASE, *_with_gpu(args))
    assert data["kind"] == "infer"


def test_lora_contradiction_says_what_to_drop(run_cli):
    err = _refused(run_cli, "--max-loras", "4", "--no-enable-lora")
    assert err == ("error: max_loras: got 4; contradicts enable_lora false (--no-enable-lora): max_loras turns "
                   "LoRA serving on; drop --no-enable-lora, or --max-loras to serve without adapters\n")


def test_engine_option_error_names_the_engine_and_its_own_share(run_cli):
    err = _refused(run_cli, "--engine", "trtllm", "--gpu-memory-utilization", "0.5")
    assert err == ("error: gpu_memory_utilization: got 0.5; applies to --engine vllm; TensorRT-LLM's memory rule "
                   "does not read it (its share is --free-gpu-memory-fraction)\n")
    err = _refused(run_cli, "--engine", "sglang", "--prefill-tokens", "4096")
    assert "applies to --engine vllm or trtllm" in err


def test_trtllm_off_nvidia_lists_the_engines_that_run(run_cli):
    err = _refused(run_cli, "--engine", "trtllm", "--gpu", "mi300x")
    assert err == ("error: engine: got 'trtllm'; TensorRT-LLM runs on NVIDIA GPUs only (AMD Instinct MI300X: vendor "
                   "AMD); use --engine vllm or sglang\n")


def test_trtllm_search_offers_nvidia_gpus_only():
    from gpuplan.catalog import hardware_entries
    from gpuplan.jobs.inference.resolve import resolve_plan
    from gpuplan.jobs.inference.serving import search_configurations

    vendors = {k: e.get("vendor") for k, e in hardware_entries().items()}
    plan = resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100", engine="trtllm"))
    rows = search_configurations(plan, 1)
    assert rows and {vendors[gpu.id] for gpu, *_ in rows} == {"NVIDIA"}
    vllm = search_configurations(resolve_plan(InferenceInputs(model="llama-3.1-8b", gpu="h100")), 1)
    assert {vendors[gpu.id] for gpu, *_ in vllm} > {"NVIDIA"}


def test_group_size_error_lists_the_dimensions_and_valid_sizes(run_cli):
    err = _refused(run_cli, "--quantization", "int4", "--group-size", "3")
    assert err == ("error: group_size: got 3; must divide the input size of every quantised matrix (llama-3.1-8b: "
                   "hidden_size 4,096, o_proj input 4,096, intermediate_size 14,336; vLLM's GPTQ / AWQ refuse a "
                   "layer otherwise), e.g. 32, 64, 128, 256 or -1 (per channel)\n")
    # a model whose hidden size 4,544 is not a multiple of 128: the default is noted, a given 128 refused
    falcon = ("infer", "--model", "falcon-7b", "--no-search")
    err = _refused(run_cli, "--quantization", "int4", "--group-size", "128", base=falcon)
    assert err.startswith("error: group_size: got 128;") and "e.g. 32, 64 or -1 (per channel)" in err
    code, out, err = run_cli(*falcon, "--gpu", "h100", "--quantization", "int4", "--json")
    assert code == 0, err
    assert any("int4 group size 128 (the default) does not divide" in n for n in json.loads(out)["notes"])
    code, _, err = run_cli(*falcon, "--gpu", "h100", "--quantization", "int4", "--group-size", "64")
    assert code == 0, err


def test_draft_not_smaller_than_the_target_is_refused(run_cli):
    err = _refused(run_cli, "--speculative", "draft", "--draft-model", "llama-3.1-405b")
    assert err == ("error: draft_model: got 'llama-3.1-405b'; has 405.85B parameters, not fewer than the target "
                   "llama-3.1-8b's 8.03B: a draft model must be smaller than the target (a small model of its "
                   "family sharing its tokenizer)\n")
    assert "(the target itself)" in _refused(run_cli, "--speculative", "draft", "--draft-model", "llama-3.1-8b")


# bf16 weights by hand, 2 B a parameter, from each model's HF config (hidden h, layers L, query heads of
# 128, 8 KV heads of 128, MLP width i, vocabulary 128,256, untied head): L x (2 h^2 + 2 h x 1024 + 3 h i + 2 h)
# + 2 x 128256 x h + h. Llama-3.1-405B (h 16384, L 126, i 53248): 405,853,388,800; Llama-3.1-70B (h 8192,
# L 80, i 28672): 70,553,706,496; Llama-3.1-8B (h 4096, L 32, i 14336): 8,030,261,248.
def _llama31_params(h: int, layers: int, i: int) -> int:
    return layers * (2 * h * h + 2 * h * 1024 + 3 * h * i + 2 * h) + 2 * 128256 * h + h


LLAMA_405B, LLAMA_70B, LLAMA_8B = _llama31_params(16384, 126, 53248), _llama31_params(8192, 80, 28672), \
    _llama31_params(4096, 32, 14336)


@pytest.mark.parametrize("args, weights", [
    (("--model", "llama-3.1-405b", "--gpu", "a100"), 2 * LLAMA_405B),
    (("--model", "llama-3.1-405b", "--gpu", "a100", "--engine", "trtllm"), 2 * LLAMA_405B),
    (("--model", "llama-3.1-405b", "--gpu", "a100", "--engine", "sglang"), 2 * LLAMA_405B),
    # the draft model's weights sit beside the target's on the one GPU
    (("--model", "llama-3.1-70b", "--gpu", "l4", "--speculative", "draft", "--draft-model", "llama-3.1-8b"),
     2 * (LLAMA_70B + LLAMA_8B)),
])
def test_no_memory_line_goes_negative_when_nothing_fits(run_json, args, weights):
    data = run_json("infer", *args, "--no-search")
    lines = {line["key"]: line for section in data["sections"] for line in section["lines"]}
    assert lines["kv_budget"]["value"] == 0 and "GB short" in lines["kv_budget"]["text"]
    assert lines["fits"]["value"] is False
    # the weights alone exceed the GPU: the case this test is for (rel 1e-9: exact arithmetic)
    assert lines["weights"]["value"] == pytest.approx(weights, rel=1e-9)
    assert lines["weights"]["value"] > lines["usable"]["value"]
    checked = 0
    for section in data["sections"]:
        for line in section["lines"]:
            if line.get("unit") == "bytes" and line.get("value") is not None:
                assert line["value"] >= 0, line
                checked += 1
            assert not str(line.get("text", "")).lstrip().startswith("-"), line
    assert checked >= 10  # the loop saw the memory lines (20 or more byte lines at ae3dfd8)


def test_draft_model_file_errors_name_draft_model(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model_type": "llama", "hidden_size": -5}')
    err = _refused(run_cli, "--speculative", "draft", "--draft-model", str(bad))
    # the file named as given (b2f4a40d: a .json config that is not called config.json is named by its own path)
    assert err.startswith(f"error: draft_model: {bad}: hidden_size: got -5;"), err
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"model: llama-3.1-8b\ngpu: h100\nsearch: false\nspeculative: draft\n"
                    f"draft_model: {tmp_path / 'cfg.json'}\n")
    code, _, err = run_cli("infer", str(plan))
    assert code == 2 and err.startswith(f"error: {plan}: draft_model: got "), err


def test_format_suggestions_all_run_on_the_accelerator(run_cli):
    err = _refused(run_cli, "--gpu", "gaudi3", "--quantization", "int4")  # a TPU is refused first (tpu_serving)
    assert err.endswith("; choose a format it runs: --quantization bf16 or fp8\n"), err
    for fmt in ("bf16", "fp8"):
        code, _, err = run_cli(*BASE, "--gpu", "gaudi3", "--quantization", fmt)  # the suggestions run
        assert code == 0, err
    err = _refused(run_cli, "--gpu", "gaudi3", "--quantization", "int8")
    assert err.endswith("choose a format it runs: --quantization bf16 or fp8\n"), err


def test_the_one_gpu_recommendation_only_names_gpus_the_engine_runs_on(run_cli):
    # 405B in int4 needs ~246-249 GB on one GPU: vLLM runs on AMD's 256 GB MI325X, TensorRT-LLM
    # (NVIDIA only) needs the next NVIDIA class (B300, 279 GB in the catalog)
    picks = {}
    for engine in ("vllm", "trtllm"):
        code, out, err = run_cli("infer", "llama-3.1-405b", "--quantization", "int4", "--engine", engine, "--json")
        assert code == 0, err
        picks[engine] = json.loads(out)["results"]["recommended_gpu_memory_gb"]
    assert picks == {"vllm": 256.0, "trtllm": 279.0}


@pytest.mark.parametrize(("model", "tp", "slice_text"), [
    ("llama-2-7b", "4", "intermediate_size 11,008 / 4 = 2,752"),  # 2,752 = 21.5 groups of 128
    ("qwen3-30b-a3b", "4", "moe_intermediate_size 768 / 4 = 192"),  # 1.5 groups
])
def test_int4_groups_must_tile_each_gpus_row_parallel_slice(run_cli, model, tp, slice_text):
    # vLLM's GPTQ / AWQ: "The input size is not aligned with the quantized weight shape. This can
    # be caused by too large tensor parallel size."
    code, _, err = run_cli("infer", model, "--quantization", "int4", "--tp", tp)
    assert code == 2 and err.startswith(f"error: tp: got {tp};") and slice_text in err and err.count("\n") == 1, err
    code, _, err = run_cli("infer", model, "--quantization", "int4", "--tp", "2")  # 5,504 = 43 groups; 384 = 3
    assert code == 0, err
