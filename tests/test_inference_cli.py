"""`gpuplan infer`: the article's default, formats, plan files, and one-line bad input (exit 2)."""

import json

import pytest

from gpuplan import cli


@pytest.fixture
def infer(capsys):
    """Run `gpuplan infer ...` through cli.main."""

    def run(*args: str):
        code = cli.main(["infer", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_default_is_the_articles_7b(infer):
    code, out, err = infer("--json", "--no-search")
    assert code == 0, err
    data = json.loads(out)
    assert data["results"]["weights_total"] == pytest.approx(14e9)
    assert data["results"]["recommended_gpu_memory_gb"] == 24
    assert data["inputs"]["quantization"] == "fp16"


def test_table_and_markdown(infer):
    code, out, _ = infer("llama-3.1-8b", "--gpu", "l4", "--context", "8K", "--no-search", "--full")
    assert code == 0 and "KV cache" in out and "Speed (roofline" in out and "Traceback" not in out
    code, out, _ = infer("llama-3.1-8b", "--gpu", "l4", "--context", "8K", "--no-search")
    assert code == 0 and "time per output token" in out and "--full:" in out  # the answer first
    code, out, _ = infer("--model", "mixtral-8x7b", "--gpus", "2", "--gpu", "h100", "--format", "markdown")
    assert code == 0 and out.startswith("# Serving mixtral-8x7b on 2 x") and "| smallest configuration |" in out


def test_allreduce_latency_flag(infer):
    code, out, err = infer("llama-3.1-70b", "--gpu", "h100", "--tp", "4", "--allreduce-latency-us", "20", "--json",
                           "--no-search")
    assert code == 0, err
    # 160 all-reduces of 8,192 x 2 B at batch 1: 160 x (20 us + 1.5 x 16,384 B / (450 GB/s x 0.8)), + vLLM's embedding
    # all-reduce (the same) and its logits all-gather, NCCL's ring LL whatever the flag: 6.6 + 3 x 0.6 us + 3/4 x
    # 256,512 B / 141 GB/s = 9.7644 us (outside_layers, review w17 ME S2)
    gather = 6.6e-6 + 3 * 0.6e-6 + 0.75 * 128_256 * 2 / 141e9
    assert json.loads(out)["results"]["allreduce_per_token"] == pytest.approx(161 * (20e-6 + 1.5 * 16384 / 360e9)
                                                                               + gather)


def test_context_k_means_1024_and_gpus_sets_tp(infer):
    code, out, err = infer("llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--context", "32K", "--json",
                           "--no-search")
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["context"] == 32768
    assert data["inputs"]["layout"] == "tp 4 x pp 1"


def test_unbounded_context_is_json_null(infer):
    # every Mistral-7B-v0.1 layer slides (window 4,096): no memory limit on the context
    code, out, err = infer("mistral-7b-v0.1", "--json", "--no-search")
    assert code == 0, err
    assert json.loads(out)["results"]["max_context"] is None


def test_plan_file(infer, tmp_path):
    plan = tmp_path / "serve.yaml"
    plan.write_text("model: llama-3.1-8b\ngpu: h100\ncontext: 16384\nbatch: 32\nquantization: fp8\n"
                    "kv_dtype: fp8\nsearch: false\n")
    code, out, err = infer(str(plan), "--json")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert results["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 1  # fp8 KV
    assert results["bits_per_weight"] == 8


def test_context_beyond_the_maximum_warns_with_rope_scaling(infer):
    code, out, _ = infer("llama-2-7b", "--context", "8192", "--json", "--no-search", "--engine", "sglang")  # vLLM refuses
    notes = " ".join(json.loads(out)["notes"])
    assert code == 0 and "exceeds the model's maximum of 4,096" in notes and "YaRN factor 2" in notes
    code, out, _ = infer("deepseek-v2-lite", "--context", "200K", "--json", "--no-search", "--engine", "sglang")
    notes = " ".join(json.loads(out)["notes"])
    assert "already extended by yarn rope_scaling (factor 40)" in notes


def test_model_quantization_config_is_used(infer, tmp_path):
    from gpuplan.catalog import model_entry

    config = dict(model_entry("llama-3.1-8b")["config"])
    config["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, out, err = infer(str(path), "--json", "--no-search")
    assert code == 0, err
    data = json.loads(out)
    assert data["results"]["bits_per_weight"] == pytest.approx(4.15625)
    assert data["inputs"]["quantization"] == "int4-g128"
    # 6.98e9 layer weights x 4.15625 / 8 = 3.63 GB + 2 x 128,256 x 4,096 embeddings/LM head x 2 B = 2.10 GB
    assert data["results"]["weights_total"] == pytest.approx(3.626e9 + 2.101e9, rel=0.002)


@pytest.mark.parametrize("args, fragment", [
    (("--model", "llama-3.1-8b", "--gpu", "v100", "--quantization", "fp8"),
     "quantization: got 'fp8'; NVIDIA Tesla V100"),  # sm70: below FP8 Marlin's sm80 (an A100 serves it: issue 38)
    (("--model", "qwen2.5-7b", "--tp", "7"), "tp: got 7; must divide the 4 key/value heads"),
    (("--model", "llama-3.1-8b", "--context", "lots"), "context: got 'lots'"),
    (("--model", "llama-3.1-8b", "--batch", "0"), "batch: got '0'"),
    (("--model", "llama-3.1-8b", "--gpu", "h1000"), "gpu: got 'h1000'; not in the catalog"),
    (("--model", "llama-3.1-8b", "--quantization", "int3"), "quantization: got 'int3'"),
    (("--model", "llama-3.1-8b", "--kv-dtype", "int2"), "kv_dtype: got 'int2'"),
    (("--model", "llama-3.1-8b", "--gpus", "3", "--tp", "2"), "gpus: got 3"),
    (("--model", "llama-3.1-8b", "--gpu-memory-utilization", "1.5"), "gpu_memory_utilization: got '1.5'"),
    (("--model", "llama-3.1-8b", "--context", "4096", "--output-tokens", "4096"), "output_tokens: got 4096"),
])
def test_bad_input_one_line_exit_2(infer, args, fragment):
    code, out, err = infer(*args)
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_bad_quantization_config(infer, tmp_path):
    from gpuplan.catalog import model_entry

    config = dict(model_entry("llama-3.1-8b")["config"], quantization_config={"quant_method": "hqq"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    code, _, err = infer(str(path))
    assert code == 2 and "quantization_config.quant_method: got 'hqq'" in err


@pytest.mark.parametrize("qcfg, bits, compute", [
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}, 4.15625, "fp16"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": False}, 4.125, "fp16"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, 8, "fp8"),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True}, 4.5, "bf16"),  # NF4 + fp32 absmax per 64
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
        "input_activations": {"num_bits": 8, "type": "float"}}}}, 8, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
        "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": True}}}},
     4.125, "fp16"),
])
def test_quantization_config_formats(qcfg, bits, compute):
    from gpuplan.jobs.inference.resolve import weight_format_from_hf

    fmt = weight_format_from_hf(qcfg)
    assert fmt.bits_per_weight == pytest.approx(bits) and fmt.compute_dtype == compute
