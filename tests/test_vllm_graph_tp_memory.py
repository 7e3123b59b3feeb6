"""vLLM 0.19's all-reduce inside CUDA graphs at TP > 1, read from the v0.19.0 wheel (issue 38): which
all-reduce each captured size runs (releases.graph_allreduce_path), the 'Registering N cuda graph
addresses' count it implies, checked against llm-d-planner's v0.19.0 H100 logs, and the
engine-log lines `infer --full` prints for it. The sizes are worked by hand from the code's tables
(allreduce_rms_fusion.py:54-59, all_reduce_utils.py:31-57, custom_all_reduce.py:59); none of the
paths allocates inside the CUDA-graph estimate's window (docs/inference.md, 'Tensor parallelism,
read from the code'), so the estimate itself does not move."""

from __future__ import annotations

import pytest

from gpuplan.core.serving.releases import (
    graph_allreduce_path,
    graph_capture_sizes,
    registered_graph_addresses,
)

LOGS = ("https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/"
        "accuracy/results/v0.19.0/logs/")

QWEN7B = (3584, 28)  # hidden, layers
LLAMA8B = (4096, 32)
DENSE80 = (8192, 80)  # Qwen2.5-72B / Kimi-Dev-72B / Llama-3.3-70B


@pytest.mark.parametrize("hidden, tp, tokens, path", [
    # TP 4, H100: fused up to 2 MiB // (hidden x 2 B) tokens: 2,097,152 // 7,168 = 292 (the log's
    # 'compile_ranges_endpoints': [292, 8192]); 296 x 7,168 = 2.02 MiB < min(8 MiB, 32 MiB): custom
    (3584, 4, 292, "fused"), (3584, 4, 296, "custom"), (3584, 4, 512, "custom"),
    # the 8,192-token profile forward: 56 MiB, not < 32 MiB (symmetric memory's sm90 TP 4 limit): NCCL
    (3584, 4, 8192, "nccl"),
    # TP 2: 64 MiB // 7,168 = 9,362 tokens >= 8,192: every size fused, NCCL never in the forward
    (3584, 2, 8192, "fused"), (4096, 2, 8192, "fused"),
    # hidden 8192, TP 4: 2 MiB // 16,384 = 128 fused; 512 x 16,384 = 8 MiB is not < 8 MiB: symmetric memory
    (8192, 4, 128, "fused"), (8192, 4, 136, "custom"), (8192, 4, 496, "custom"), (8192, 4, 512, "symm_mem"),
    # hidden 8192, TP 2: 64 MiB // 16,384 = 4,096 (the log's [4096, 8192]); 8,192 tokens = 128 MiB: NCCL
    (8192, 2, 4096, "fused"), (8192, 2, 4097, "nccl"),
    # TP 8: fused to 0.5 MiB // 16,384 = 32 tokens; 64 tokens = 1 MiB >= the custom kernel's 256 KiB
    (8192, 8, 32, "fused"), (8192, 8, 64, "symm_mem"),
    (4096, 1, 512, "none"),
])
def test_allreduce_path_by_size(hidden, tp, tokens, path):
    assert graph_allreduce_path(hidden, tp, tokens) == path


def test_symmetric_memory_takes_bf16_only():
    # symm_mem.py@v0.19.0 should_use_symm_mem: inp.dtype == torch.bfloat16; an fp16 model goes to NCCL
    assert graph_allreduce_path(8192, 4, 512, bf16=False) == "nccl"


# (model, tp, after the real capture, in the profile's sampled window), each as its log prints it
REGISTERED = [
    (QWEN7B, 4, 1596, 228, "qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192.log"),
    (LLAMA8B, 4, 2080, 260, "meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192.log"),
    (DENSE80, 4, 9982, 322, "moonshotai-kimi-dev-72b--h100-80gb--tp4pp1dp1--8192.log"),
    (DENSE80, 4, 9982, 322, "fp8dyn-llama-3-3-70b--h100-80gb--tp4pp1dp1--8192.log"),
    (QWEN7B, 2, 0, 0, "qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log"),
    (LLAMA8B, 2, 0, 0, "meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log"),
    (DENSE80, 2, 0, 0, "qwen-qwen2-5-72b-instruc--h100-80gb--tp2pp1dp1--8192.log"),
]


@pytest.mark.parametrize("shape, tp, captured, sampled, log", REGISTERED, ids=[r[-1][:30] for r in REGISTERED])
def test_registered_addresses_match_the_logs(shape, tp, captured, sampled, log):
    """LOGS + log: 'Registering N cuda graph addresses' twice per rank, after the estimate's window
    (PIECEWISE and FULL at 512 and 496) and after the real capture (51 sizes a mode at 1,024 sequences).
    By hand: Qwen2.5-7B TP 4, sizes 296-512 by 16 = 14 a mode, 28 x (2 x 28 + 1) = 1,596; the window
    4 x 57 = 228. Hidden 8192 TP 4: 136-248 by 8 and 256-496 by 16 = 31 a mode, 62 x 161 = 9,982;
    the window's two 496s, 2 x 161 = 322."""
    hidden, layers = shape
    piecewise, full = graph_capture_sizes(1024)
    assert (len(piecewise), len(full)) == (51, 51)
    assert registered_graph_addresses(hidden, layers, tp, piecewise + full) == captured
    assert registered_graph_addresses(hidden, layers, tp, [512, 496, 512, 496]) == sampled


def _engine_log(tp: int, engine: str = "vllm==0.19", gpu: str = "h100-sxm",
                model: str = "qwen2.5-7b") -> dict[str, object]:
    from gpuplan.jobs import JOBS

    job = JOBS["inference"]
    report = job.run(job.schema.parse({"model": model, "gpu": gpu, "tp": tp, "engine": engine,
                                       "context": 8192, "gpu_memory_utilization": 0.95}))
    section = next(s for s in report.sections if s.title.startswith("Engine start-up log"))
    return {line.key: line for line in section.lines}


def test_full_log_prints_the_registration_line_at_tp4():
    lines = _engine_log(4)
    assert lines["log_graph_allreduce"].text == "Registering 1596 cuda graph addresses"
    formula = lines["log_graph_allreduce"].formula
    # captured sizes 1-288 fused (<= 292), 304-512 by 16 custom (14 a mode); the window's 4 x 57 = 228
    assert "1-288 tokens FlashInfer all-reduce + RMSNorm, 304-512 tokens custom all-reduce;" in formula
    assert "fusion up to 292 tokens" in formula and "an earlier line prints 228 after the estimate's window" in formula
    assert "log_graph_allreduce" not in _engine_log(1)
    assert "log_graph_allreduce" not in _engine_log(4, "vllm==0.21")  # thresholds read in 0.19's code only


def test_registration_line_names_each_sizes_path():
    """Hidden 8192: at TP 8 fused to 0.5 MiB // 16,384 B = 32 tokens, and the next captured size (40 tokens,
    640 KiB) is over the custom kernel's 256 KiB: symmetric memory to 512, nothing registered. At TP 4
    fused to 128, custom 136-496, and 512 (8 MiB, not < 8 MiB) symmetric memory: 62 x 161 = 9,982."""
    tp8 = _engine_log(8, model="llama-3.1-70b")["log_graph_allreduce"]
    assert tp8.text == "Registering 0 cuda graph addresses"
    assert "1-32 tokens FlashInfer all-reduce + RMSNorm, 40-512 tokens symmetric memory;" in tp8.formula
    assert "no custom all-reduce captured" in tp8.formula and "custom all-reduce above" not in tp8.formula
    tp4 = _engine_log(4, model="llama-3.1-70b")["log_graph_allreduce"]
    assert tp4.text == "Registering 9982 cuda graph addresses"
    assert ("1-128 tokens FlashInfer all-reduce + RMSNorm, 136-496 tokens custom all-reduce, 512 tokens "
            "symmetric memory;") in tp4.formula


def test_registration_count_is_marked_dense_for_moe_models():
    formula = _engine_log(4, model="mixtral-8x7b")["log_graph_allreduce"].formula
    assert "the dense-decoder count" in formula
    assert "dense-decoder" not in _engine_log(4)["log_graph_allreduce"].formula


@pytest.mark.parametrize("tp", [2, 4])
def test_no_registration_line_on_pcie_only_gpus(tp):
    """custom_all_reduce.py@v0.19.0:150-157 returns before ``self.disabled = False`` when world_size > 2
    and the GPUs are not fully NVLink-connected, so capture() registers nothing and prints no
    'Registering' line at TP 4 on PCIe H100s; at TP 2 the thresholds and logs read are NVLink H100s
    only (FlashInfer's fusion over PCIe not read), so no line is printed for any PCIe-only group."""
    assert "log_graph_allreduce" not in _engine_log(tp, gpu="h100-pcie")


def test_graph_line_is_the_estimate_vllm_019_logs():
    """From 0.19 vLLM logs its estimate as 'Estimated CUDA graph memory: X GiB total'
    (gpu_model_runner.py@v0.19.0:5955); 'Graph capturing finished ... took' is the real capture
    (:6047), which the llm-d-planner logs also print as 'CUDA graph pool memory: 0.64 GiB (actual),
    0.69 GiB (estimated)' for Qwen2.5-7B TP 4: the two differ, so the line must say which."""
    graphs = _engine_log(4)["log_graphs"]
    assert graphs.text.startswith("Estimated CUDA graph memory: ") and graphs.text.endswith(" GiB total")
    assert "real capture, not modelled" in graphs.formula
    older = _engine_log(4, "vllm==0.18")["log_graphs"]
    assert older.text.startswith("Graph capturing finished, took ~")
