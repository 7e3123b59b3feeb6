"""SGLang's tokenising of the prompt before the scheduler sees the request (core/serving/prompt_tokenize.py,
issue 38): the TokenizerManager calls the Hugging Face tokenizer on the text (tokenizer_manager.py@v0.5.6:663)
and sends the request on only then (L524-525), so the time to first token grows by 1.4 us a prompt token
(timed on the build host: prompt_tokenize.TOKENIZE_PER_TOKEN_S), on every door and in validate.
"""

import re

import pytest

from gpuplan.core.serving import prompt_tokenize as PT
from gpuplan.core.serving import request_path as RP
from gpuplan.core.serving import setup as SU
from gpuplan.core.serving.releases import parse_release

ISSUE = 94 * 20 * 41.957e-6 + 16.6e-3
"""Qwen3-235B-A22B's eager prefill host time on 8 x B200 (first_token_path): 94 layers x 20 launches (the q
reshape's copy included: layer_kernels.qk_reshape_copies) x 41.957 us = 78.88 ms + 16.6 ms a forward outside the
layers = 95.48 ms (tests/test_sglang_speed_rows.py works it)."""
GPU_7936 = 104.576e-3 + 0.274e-3  # + the embedding all-reduce and logits all-gather (outside_layers, wave 17)
# (262.3 us: the embedding's all-reduce of the prefill's 7,936 x 4,096 x 2 B = 65,011,712 B, the message of each of
# the layers' 188; + 11.74 us: one row of 151,936 bf16 logits gathered over 8 B200s; both worked in
# tests/test_sglang_speed_rows.py: 274.0 us)
"""The 7,936-token prefill's GPU work on one rank of 8 B200s, worked by hand in tests/test_sglang_speed_rows.py:
GEMMs 23.191 + attention 8.982 + elementwise 23.085 (of it 14.379 the MoE's per-expert rows, moe_combine) +
all-reduces 49.318 ms."""


def test_sglang_and_vllm_tokenise_at_one_rate_and_trtllm_adds_nothing():
    """8,000 tokens x 1.4 us = 11.2 ms on SGLang 0.5.6 (and 0.4.9, same TokenizerManager call) and on vLLM, whose
    API server makes the same Hugging Face call before the engine sees the request (0.11.0 / 0.23.0 after the
    batch window, async_utils.py@v0.23.0:116-132; 0.9.1 through make_async; V0 0.2-0.5 in AsyncLLMEngine.add_request;
    review w11 r3 M2: 0 on the parent); TensorRT-LLM 0 (not read); no prompt, 0."""
    sglang = parse_release("sglang==0.5.6")
    assert PT.tokenize_seconds(sglang, 8000) == pytest.approx(11.2e-3, rel=1e-12)
    assert PT.tokenize_seconds(parse_release("sglang==0.4.9"), 1000) == pytest.approx(1.4e-3, rel=1e-12)
    assert PT.tokenize_seconds(sglang, 0) == 0.0
    for vllm in ("vllm==0.2.0", "vllm==0.6.4", "vllm==0.9.1", "vllm==0.11.0", "vllm==0.23.0"):
        assert PT.tokenize_seconds(parse_release(vllm), 8000) == pytest.approx(11.2e-3, rel=1e-12)
    assert PT.tokenize_seconds(parse_release("trtllm==1.0"), 8000) == 0.0
    # the server hold every door reads: SGLang's is the tokenising alone, vLLM 0.11's its 2 ms window + the same
    # tokenising; vLLM 0.9.1 (no window) the tokenising alone
    sglang_rt = SU.Runtime(engine="sglang", version=(0, 5, 6))
    vllm_rt = SU.Runtime(engine="vllm", version=(0, 11, 0))
    assert RP.server_hold_seconds(sglang_rt, 5057) == pytest.approx(5057 * 1.4e-6, rel=1e-12)
    assert RP.server_hold_seconds(sglang_rt) == 0.0
    assert RP.server_hold_seconds(vllm_rt) == pytest.approx(2e-3)
    assert RP.server_hold_seconds(vllm_rt, 5057) == pytest.approx(2e-3 + 5057 * 1.4e-6, rel=1e-12)
    assert RP.server_hold_seconds(SU.Runtime(engine="vllm", version=(0, 9, 1)), 5057) == pytest.approx(
        5057 * 1.4e-6, rel=1e-12)


def _door_ttft(prompt: int, run_json) -> float:
    return run_json("infer", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--gpus", "8", "--tp", "8",
                    "--engine", "sglang==0.5.6", "--quantization", "bf16", "--context", str(prompt + 1000),
                    "--output-tokens", "1000", "--batch", "1", "--no-search")["results"]["ttft"]


def test_door_ttft_grows_with_the_prompt_as_the_code_says(run_json):
    """gpuplan infer --engine sglang==0.5.6, Qwen3-235B-A22B BF16 TP 8 on B200, by hand:
    1,000 tokens: host-bound (~10 ms of GPU work under the 78.88 ms of layer issue): 95.48 + 1,000 x 1.4 us
    = 96.88 ms. 7,936 tokens: the GPU work, 104.58 ms, passes the issue time, so F + G + tokenising =
    16.6 + 104.58 + 7,936 x 1.4 us (11.11) = 132.29 ms. Between them the prompt adds 35.41 ms, of which the
    tokenising is 9.71 ms."""
    short, long = _door_ttft(1000, run_json), _door_ttft(7936, run_json)
    assert short == pytest.approx(ISSUE + 1000 * 1.4e-6, rel=2e-3)
    assert long == pytest.approx(16.6e-3 + GPU_7936 + 7936 * 1.4e-6, rel=2e-3)
    assert long - short == pytest.approx(35.41e-3, rel=1e-2)


def test_triton_moe_combine_bytes_by_hand():
    """SGLang's Triton MoE runner (fused_moe.py@v0.5.6:455-458, 581-638) writes a hidden row per (token, chosen
    expert) and sums them: 2 x top-k x hidden x 2 B beyond a dense MLP. Qwen3-235B-A22B (top-k 8, hidden 4,096,
    every layer MoE): 131,072 B a token a layer; at 7,936 tokens on a B200 rank (8 TB/s x 0.85) 7,936 x 94 x
    131,072 B / 6.8e12 = 14.379 ms. DeepSeek-V3 (58 of 61 layers MoE, top-k 8, hidden 7,168) in BF16: 2 x 8 x 7,168
    x 2 x 58 / 61 = 218,095 B with no GPU given (no shared-expert fusion, capability unknown); in FP8 on a B200
    (flashinfer's TensorRT-LLM MoE on sm100, another kernel): 0. Dense models and vLLM: 0."""
    from gpuplan.catalog import load_model
    from gpuplan.core.serving import moe_combine as MC

    sglang = parse_release("sglang==0.5.6")
    qwen = load_model("qwen3-235b-a22b")
    assert MC.combine_bytes_per_token(qwen, sglang, "bf16") == 131_072
    assert 7936 * 94 * MC.combine_bytes_per_token(qwen, sglang, "bf16") / 6.8e12 == pytest.approx(14.379e-3, rel=1e-4)
    deepseek = load_model("deepseek-v3")
    assert MC.combine_bytes_per_token(deepseek, sglang, "bf16") == pytest.approx(2 * 8 * 7168 * 2 * 58 / 61, rel=1e-12)
    assert MC.combine_bytes_per_token(deepseek, sglang, "fp8", gpu=_gpu("b200")) == 0.0
    assert MC.combine_bytes_per_token(load_model("llama-3.1-70b"), sglang, "bf16") == 0.0
    assert MC.combine_bytes_per_token(qwen, parse_release("vllm==0.11.0"), "bf16") == 0.0


def _gpu(name: str):
    from gpuplan.catalog import load_accelerator
    return load_accelerator(name)


def test_moe_rows_follow_the_runner_sglang_picks_not_the_format():
    """SGLang 0.5.6 picks the MoE kernel by runner (review w11 r3 M3; moe_combine's docstring cites each line):
    FP8 runs the Triton runner (fp8.py@v0.5.6:1008-1016) off sm100, with the same bf16 per-expert rows as BF16, and
    INT4 runs Marlin's (fused_marlin_moe.py@v0.5.6:135-136, 177-207): 2 x top-k x hidden x 2 B. On sm100
    flashinfer_trtllm takes DeepSeek-V3 in fp8 / bf16 (served as fp8) and Qwen3-MoE in fp8, 0; Qwen3-MoE BF16 or INT4
    and DeepSeek INT8 keep the rows there. DeepSeek-V3 fuses its shared expert at capability >= 8.0 (deepseek_v2.py
    @v0.5.6:3412-3452): top-k + 1 = 9 rows, 2 x 9 x 7,168 x 2 x 58 / 61 = 245,357 B; at 8,000 tokens on an H200
    (4.8 TB/s x 0.85) 8,000 x 61 x that / 4.08e12 = 29.3 ms (the reviewer's ~29 ms). All of it 0 on the parent
    for FP8 and INT4; GPT-OSS (flashinfer_mxfp4 / triton_kernels) 0 everywhere."""
    from gpuplan.catalog import load_model
    from gpuplan.core.serving import moe_combine as MC

    sglang = parse_release("sglang==0.5.6")
    qwen, deepseek = load_model("qwen3-235b-a22b"), load_model("deepseek-v3")
    h100, h200, a100, b200 = _gpu("h100"), _gpu("h200"), _gpu("a100-sxm4-80gb"), _gpu("b200")
    for gpu in (h100, a100):
        for fmt in ("bf16", "fp8", "int4-g128", "int8"):
            assert MC.combine_bytes_per_token(qwen, sglang, fmt, gpu=gpu) == 131_072, (gpu.id, fmt)
    assert MC.combine_bytes_per_token(qwen, sglang, "fp8", gpu=b200) == 0.0
    assert MC.combine_bytes_per_token(qwen, sglang, "bf16", gpu=b200) == 131_072
    assert MC.combine_bytes_per_token(qwen, sglang, "int4-g128", gpu=b200) == 131_072
    nine = 2 * 9 * 7168 * 2 * 58 / 61
    assert MC.triton_rows_per_token(deepseek, sglang, "fp8", h200) == 9
    assert MC.combine_bytes_per_token(deepseek, sglang, "fp8", gpu=h200) == pytest.approx(nine, rel=1e-12)
    assert 8000 * 61 * nine / (4.8e12 * 0.85) == pytest.approx(29.3e-3, rel=2e-3)
    assert MC.combine_bytes_per_token(deepseek, sglang, "bf16", gpu=b200) == 0.0  # served as fp8 on sm100
    assert MC.combine_bytes_per_token(deepseek, sglang, "int8", gpu=b200) == pytest.approx(nine, rel=1e-12)
    assert MC.triton_rows_per_token(qwen, sglang, "fp8", h200) == 8  # no shared expert to fuse
    assert MC.combine_bytes_per_token(load_model("gpt-oss-120b"), sglang, "bf16", gpu=h100) == 0.0


def test_full_answer_names_the_moe_rows_and_the_ttft_parts_sum(run_cli):
    """infer --full, Qwen3-235B-A22B BF16 TP 8 on B200, 7,936 tokens (review w11 r3 S1): the TTFT by part names the
    MoE per-expert rows inside elementwise, 14.38 ms of 23.09 ms (by hand above: 7,936 x 94 x 131,072 B / 6.8e12),
    and the parts (GEMMs 23.19 + attention 8.98 + elementwise 23.09 + host 27.71 + all-reduce 49.32) sum to the
    TTFT, 132.29 ms (0.01 ms a part of rounding). No such line on the parent."""
    code, out, err = run_cli("infer", "--model", "qwen3-235b-a22b", "--gpu", "b200", "--gpus", "8", "--tp", "8",
                             "--engine", "sglang==0.5.6", "--quantization", "bf16", "--context", "8936",
                             "--output-tokens", "1000", "--batch", "1", "--no-search", "--full")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("time to first token (by part)"))
    assert "elementwise 23.09 ms (of it SGLang's MoE per-expert rows, moe_combine, 14.38 ms)" in line
    value = re.sub(r" \(of it [^)]*\)", "", line.split("(by part)")[1].split("kernels in sequence")[0])
    parts = [float(part.split()[-2]) for part in value.strip().split(", ")]
    assert len(parts) == 5 and sum(parts) == pytest.approx(132.29 + 0.27, abs=0.06)  # + 0.27 ms outside the layers
