"""The sampler and the attention backend vLLM's own start-up picks, and what each holds
(core/serving/releases.py FLASHINFER, profile.sampler_bytes, attention_backend.py, profile.graph_bytes):
worked by hand from vLLM v0.10.1.1 / v0.19.0 and FlashInfer 0.2.11 code, checked on the logs that
name them (catalog/reference/serving_memory_logs.yaml, issue 38)."""

import pytest

from gpuplan.catalog import load_model
from gpuplan.core.serving import attention_backend as AB
from gpuplan.core.serving import profile as P
from gpuplan.core.serving import releases as REL
from gpuplan.errors import InputError
from gpuplan.jobs.validation import serving_memory as S

GiB, MiB = 2**30, 2**20
VOCAB, HIDDEN = 152_064, 3_584  # Qwen2.5-7B / Qwen2-7B


def _row(log_id: str) -> dict:
    return next(e for e in S.memory_logs() if e["id"] == log_id)


def test_flashinfer_sampler_bytes_by_hand():
    """bf16 logits 2 + fp32 upcast 4 + FlashInfer's top-k-masked fp32 logits 4 + their softmax 4 =
    14 B a logit, no sort and no Triton buffer; the torch sort is 38 B."""
    spec = load_model("qwen2.5-7b")
    assert (spec.vocab_size, spec.hidden_size) == (VOCAB, HIDDEN)
    v010, v019 = REL.vllm_rules((0, 10, 1)), REL.vllm_rules((0, 19, 0))
    hidden = 2048 * HIDDEN * 2  # the forward's output profile_run keeps while it samples
    assert P.sampler_bytes(spec, 256, 2048, v010, 1, "flashinfer") == 256 * VOCAB * 14 + hidden == 559_677_440
    assert P.sampler_bytes(spec, 256, 2048, v010, 1) == 256 * VOCAB * 38 + hidden == 1_493_958_656
    # 0.19 profiles the Triton kernel with its 132 x vocab fp32 buffer; FlashInfer has none
    big = 8192 * HIDDEN * 2
    assert P.sampler_bytes(spec, 1024, 8192, v019, 1, "flashinfer") == 1024 * VOCAB * 14 + big
    assert P.sampler_bytes(spec, 1024, 8192, v019, 1) == 1024 * VOCAB * 14 + big + 132 * VOCAB * 4
    assert P.sampler_name("auto", v010) == "torch-sort" and P.sampler_name("auto", v019) == "triton"


def test_flashinfer_rows_leave_what_their_logs_leave():
    """vLLM 0.10.1.1, Qwen2-7B on one A100 80GB at utilization 0.25: the log leaves 79.15 x 0.25 -
    14.2488 - 5.01 = 0.529 GiB for activations and non-torch memory. FlashInfer's step: 559,677,440 B
    + V1's 0.052 GiB workspace = 0.573 GiB, + 0.02 GiB non-torch = 0.593 (+0.064); the torch sort
    would be 1.47 GiB (+0.94)."""
    row = _row("dennis0101-qwen2-7b-a100-tp1-util025")
    assert row["sampler"] == "flashinfer" and "Using FlashInfer for top-p & top-k sampling" in row["source"]
    memory, _ = S.predicted_memory(row)
    assert memory.sampler == "flashinfer"
    assert memory.activations == pytest.approx(559_677_440 + 0.052 * GiB, rel=1e-9)
    left = 79.15 * 0.25 - 14.2488 - 5.01
    assert 0.0 < (memory.activations + memory.fixed) / GiB - left < 0.07
    sorted_row = {k: v for k, v in row.items() if k != "sampler"}
    sort, _ = S.predicted_memory(sorted_row)
    assert (sort.activations + sort.fixed) / GiB - left > 0.9


def test_a_misspelt_sampler_in_the_logs_is_one_clear_error():
    with pytest.raises(InputError) as err:
        S.checked_logs({"logs": [{"id": "x", "sampler": "flash-infer"}]})
    assert err.value.field == "serving_memory_logs.yaml: x.sampler"


def test_prefix_lm_from_the_checkpoint_config():
    """vLLM's ModelConfig.is_mm_prefix_lm: the config's own flag, else its model_type."""
    from gpuplan.adapters.resolve import model_config

    assert AB.is_mm_prefix_lm(model_config("gemma-3-4b")[0])  # Gemma3ForConditionalGeneration
    assert not AB.is_mm_prefix_lm(model_config("gemma-3-1b")[0])  # text-only, gemma3_text
    assert not AB.is_mm_prefix_lm({"model_type": "gemma3", "is_mm_prefix_lm": False})
    assert AB.is_mm_prefix_lm({"model_type": "llava", "is_mm_prefix_lm": True})
    assert not AB.is_mm_prefix_lm(model_config("gemma-2-9b")[0])


def test_backend_as_vllms_selector_picks_it():
    gemma, qwen, oss = load_model("gemma-3-4b"), load_model("qwen2.5-7b"), load_model("gpt-oss-20b")
    assert AB.vllm_attention_backend(gemma, 2, "hopper", True, (0, 19, 0))[0] == AB.TRITON_ATTN
    assert AB.vllm_attention_backend(gemma, 2, "hopper", True, (0, 10, 1))[0] == AB.FLASH_ATTN  # no rule yet
    assert AB.vllm_attention_backend(gemma, 2, "hopper", False, (0, 19, 0))[0] == AB.FLASH_ATTN
    assert AB.vllm_attention_backend(qwen, 4)[0] == AB.TRITON_ATTN  # fp32
    assert AB.vllm_attention_backend(oss, 2, "ampere")[0] == AB.TRITON_ATTN  # sinks below sm 9.0
    assert AB.vllm_attention_backend(oss, 2, "hopper")[0] == AB.FLASH_ATTN
    assert AB.vllm_attention_backend(load_model("deepseek-v2-lite"), 2)[0] == AB.FLASH_ATTN_MLA


def test_triton_graph_estimate_by_hand():
    """Gemma 3 4B (34 layers, hidden 2560, FFN 10240, 8 heads of 256, 4 KV heads) at 1,024
    sequences on an H100: the piecewise first capture 2 x 512 x 2 B x (3 x 10240 + 3 x 2560) = 75
    MiB + the 32 MiB cuBLAS workspace = 107 MiB; per graph 34 x 0.1656 = 5.6 -> 6 MiB, x (50 + 50 +
    1). TRITON_ATTN: 107 + 606 = 713 MiB (0.696 GiB; logged 0.70). FlashAttention would add its
    accumulators, 32 x 8 x 512 x 257 x 4 B = 128.5 MiB, as the larger first capture: 734.5 MiB."""
    spec = load_model("gemma-3-4b")
    cublas = 32 * MiB
    assert P.graph_bytes(spec, 1024, 1, 34, blas_workspace=cublas, backend=AB.TRITON_ATTN) == 713 * MiB
    assert P.graph_bytes(spec, 1024, 1, 34, blas_workspace=cublas, backend=AB.FLASH_ATTN) == 734.5 * MiB
    # Triton's split-decode buffers are allocated before the graph profile: S = the captured size
    # nearest 128 // 4 = 32; 32 x 8 x 16 x (256 + 2) x 4 B = 4.03 MiB, outside the estimate
    full = REL.graph_capture_sizes(1024)[1]
    assert AB.triton_softmax_segment_bytes(spec, 1, full) == 32 * 8 * 16 * 258 * 4


def test_the_logged_rows_get_their_backend_from_the_model():
    """Gemma 3 IT rows run TRITON_ATTN by their config; Gemma 2 IT rows of the same sweep FLASH_ATTN."""
    gemma3 = [e for e in S.memory_logs() if e["model"].startswith("gemma-3")]
    gemma2 = [e for e in S.memory_logs() if e["model"].startswith("gemma-2") and e["engine"] == "vllm==0.19"]
    assert len(gemma3) == 3 and gemma2
    assert all(S.predicted_memory(e)[0].attention_backend[0] == AB.TRITON_ATTN for e in gemma3)
    assert all(S.predicted_memory(e)[0].attention_backend[0] == AB.FLASH_ATTN for e in gemma2)


def test_full_report_names_the_sampler_and_backend(run_cli):
    code, out, _ = run_cli("infer", "--model", "qwen2.5-7b", "--gpu", "a100-sxm4-80gb", "--engine", "vllm==0.10.1",
                           "--sampler", "flashinfer", "--full")
    assert code == 0
    assert "Using FlashInfer for top-p & top-k sampling." in out and "Using FLASH_ATTN attention backend" in out
    assert "flashinfer sampler on 256 sequences 0.57 GiB" in out  # (559,677,440 B + 0.052 GiB) / GiB
    code, out, _ = run_cli("infer", "--model", "gemma-3-4b", "--gpu", "h100-sxm", "--engine", "vllm==0.19", "--full")
    assert code == 0 and "Using TRITON_ATTN attention backend" in out and "is_mm_prefix_lm" in out
    code, _, err = run_cli("infer", "--model", "qwen2.5-7b", "--gpu", "h100-sxm", "--sampler", "flash")
    assert code == 2 and "sampler" in err and "flashinfer" in err


def test_flash_attention_2_leaves_a_large_decode_batch_unsplit():
    """Compute capability 8.x runs FA2, which vLLM gives no split bound (max_num_splits 0): FA2's own
    heuristic runs a batch of >= 0.8 x 2 x 142 = 227.2 blocks unsplit. Llama-3.1-8B (32 heads, 8 KV
    heads): 512 x 8 = 4,096 blocks, no accumulators, so the piecewise first capture decides:
    2 x 512 x 2 B x (3 x 14336 + 3 x 4096) = 108 MiB + 101 x 6 MiB = 714 MiB; FA3 adds its 32-split
    accumulators (32 x 32 x 512 x 129 x 4 B = 258 MiB) as the larger first capture."""
    spec = load_model("llama-3.1-8b")
    assert AB.flash_attn_version("ampere") == 2 and AB.flash_attn_version("hopper") == 3
    assert not AB.fa2_splits_first_capture(spec, 512, 1)
    assert AB.fa2_splits_first_capture(spec, 16, 1)  # 16 x 8 = 128 blocks < 227.2
    assert not AB.fa2_splits_first_capture(load_model("gpt2"), 16, 1)  # MHA: no head swap, no split
    assert P.graph_bytes(spec, 1024, 1, 32, fa_version=2) == 714 * MiB
    assert P.graph_bytes(spec, 1024, 1, 32) == 32 * 32 * 512 * 129 * 4 + 606 * MiB
