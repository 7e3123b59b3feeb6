"""`gpuplan infer` options that were silently accepted, ignored or turned into infinity: each is
now one line naming the field (exit 2); the valid neighbours still work."""

from __future__ import annotations

import json
import math

import pytest

from gpuplan.errors import InputError
from gpuplan.jobs.inference.schema import InferenceInputs

BASE = ("infer", "--model", "llama-3.1-8b", "--gpu", "h100", "--no-search")


def _refused(run_cli, *args: str) -> str:
    code, out, err = run_cli(*BASE, *args)
    assert code == 2, (code, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in out + err
    assert out == ""
    return err


def _finite(data) -> bool:
    if isinstance(data, float):
        return math.isfinite(data)
    if isinstance(data, dict):
        return all(_finite(v) for v in data.values())
    if isinstance(data, list):
        return all(_finite(v) for v in data)
    return True


@pytest.mark.parametrize("args, field", [
    # 3. denormals that reached the JSON output as infinity
    (("--json", "--rps", "5e-324"), "rps"),
    (("--json", "--rps", "0"), "rps"),
    (("--json", "--gpu-memory-utilization", "5e-324"), "gpu_memory_utilization"),
    (("--json", "--gpu-memory-utilization", "0.001"), "gpu_memory_utilization"),
    (("--json", "--engine", "sglang", "--mem-fraction-static", "5e-324"), "mem_fraction_static"),
    (("--json", "--engine", "trtllm", "--free-gpu-memory-fraction", "5e-324"), "free_gpu_memory_fraction"),
    # 4. a zero latency target meant "no limit"
    (("--rps", "1", "--ttft-p99", "0"), "ttft_p99"),
    (("--rps", "1", "--ttft-p99", "0s"), "ttft_p99"),
    (("--rps", "1", "--ttft-p99", "0ms"), "ttft_p99"),
    (("--rps", "1", "--tpot", "0"), "tpot"),
    (("--rps", "1", "--tpot", "5e-324"), "tpot"),
    # 5. options that were silently ignored
    (("--spec-acceptance", "0.5"), "spec_acceptance"),
    (("--spec-tokens", "5"), "spec_tokens"),
    (("--quantization", "fp16", "--group-size", "64"), "group_size"),
    (("--group-size", "64"), "group_size"),  # auto: the checkpoint's own
    (("--quantization", "fp8", "--group-size", "-1"), "group_size"),
    # 6. more sequences than the engine schedules
    (("--batch", "512", "--max-num-seqs", "8"), "batch"),
    # 7. block sizes no engine takes
    (("--block-size", "7"), "block_size"),
    (("--block-size", "65536"), "block_size"),
    (("--block-size", "0"), "block_size"),
    (("--block-size", "512"), "block_size"),
    (("--block-size", "4"), "block_size"),  # a power of two, but not one of vLLM's
    # 8. the draft model's error names draft_model
    (("--speculative", "draft", "--draft-model", "nonexistent"), "draft_model"),
])
def test_refused_in_one_line_naming_the_field(run_cli, args, field):
    err = _refused(run_cli, *args)
    assert err.startswith(f"error: {field}: "), err


def test_draft_model_error_keeps_the_suggestions(run_cli):
    err = _refused(run_cli, "--speculative", "draft", "--draft-model", "llama-3.2-1")
    assert err.startswith("error: draft_model: got 'llama-3.2-1'; not in the catalog") and "llama-3.2-1b" in err


@pytest.mark.parametrize("body, field", [
    ({"rps": 1, "ttft_p99": 0}, "ttft_p99"),
    ({"rps": 1, "tpot": 0.0}, "tpot"),
    ({"rps": 5e-324}, "rps"),
    ({"gpu_memory_utilization": 5e-324}, "gpu_memory_utilization"),
    ({"spec_tokens": 5}, "spec_tokens"),
    ({"spec_acceptance": 0.5}, "spec_acceptance"),
    ({"quantization": "fp16", "group_size": 64}, "group_size"),
    ({"batch": 512, "max_num_seqs": 8}, "batch"),
    ({"block_size": 7}, "block_size"),
    ({"block_size": True}, "block_size"),
])
def test_api_body_refused_the_same(body, field):
    with pytest.raises(InputError) as info:
        InferenceInputs.parse({"model": "llama-3.1-8b", "gpu": "h100", **body})
    assert info.value.field == field


@pytest.mark.parametrize("args", [
    ("--rps", "1e-6"),
    ("--rps", "1e7", "--ttft-p99", "1h", "--tpot", "60s"),
    # the smallest target (0.001ms), which nothing meets, is refused naming it: test_hostile_w15
    ("--gpu-memory-utilization", "0.01"),
    ("--gpu-memory-utilization", "1"),
    ("--engine", "sglang", "--mem-fraction-static", "0.01"),
    ("--engine", "trtllm", "--free-gpu-memory-fraction", "0.01"),
    ("--price", "1e-4"),  # the floor (core/economics/cost.py MIN_USD_PER_GPU_HOUR, wave 12: 1e-300 priced a $0 answer)
    ("--speculative", "ngram", "--spec-acceptance", "1e-300"),
    ("--speculative", "eagle", "--spec-tokens", "5", "--spec-acceptance", "1"),
    ("--quantization", "int4", "--group-size", "64"),
    ("--quantization", "int4", "--group-size", "-1"),
    ("--batch", "8", "--max-num-seqs", "8"),
    ("--block-size", "1"),
    ("--block-size", "256"),
    ("--engine", "sglang", "--block-size", "4"),
    ("--engine", "trtllm", "--block-size", "2"),
    ("--speculative", "draft", "--draft-model", "llama-3.2-1b"),
])
def test_valid_neighbours_still_work_and_stay_finite(run_cli, args):
    code, out, err = run_cli(*BASE, "--json", *args)
    assert code == 0, err
    assert "Infinity" not in out and "NaN" not in out
    assert _finite(json.loads(out))


def test_zero_target_is_not_no_limit_but_omitting_it_is(run_cli):
    code, out, err = run_cli(*BASE, "--rps", "1")
    assert code == 0, err
    assert "target no limit" in out  # no target given: no limit, said so


def test_batch_above_the_default_max_num_seqs_is_noted(run_json):
    data = run_json(*BASE, "--batch", "2000", "--context", "1K")
    assert any("exceeds vLLM's default max_num_seqs 1,024" in note for note in data["notes"])
    data = run_json(*BASE, "--batch", "1000", "--context", "1K")
    assert not any("max_num_seqs" in note for note in data["notes"])
