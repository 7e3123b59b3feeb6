"""Serving-engine profiles: how an engine splits GPU memory between weights, the KV cache and
what it keeps outside them. vLLM's split lives in core/inference.py (``gpu_memory_utilization``
of the device after a profiled activation peak); this module holds the engines whose rule is
different. Units: bytes (the engines' own MiB arithmetic where they use it).

- SGLang (python/sglang/srt/server_args.py, model_executor/model_runner.py): weights + KV pool
  = mem_fraction_static x device memory; activations and CUDA graphs live in the rest.
- TensorRT-LLM (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, calculateFreeMemBytes;
  KvCacheConfig::kDefaultGpuMemFraction = 0.9): KV = free_gpu_memory_fraction x the memory still
  free once the engine (weights), its execution context (activations sized for max_num_tokens)
  and the runtime buffers are allocated.
"""

from __future__ import annotations

ENGINES = ("vllm", "sglang", "trtllm")
DEFAULT_ENGINE = "vllm"
MIB = 2**20


def sglang_defaults(total_bytes: float, tp: int) -> tuple[int, int]:
    """SGLang's (chunked_prefill_size, cuda_graph_max_bs) for a GPU of ``total_bytes``
    (sgl-project/sglang python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings:
    tiers at 20, 35, 60, 90 and 160 GB of device memory)."""
    gpu_mem = total_bytes / MIB
    if gpu_mem < 20 * 1024:
        return 2048, 8
    if gpu_mem < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if gpu_mem < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mem < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def sglang_mem_fraction_static(total_bytes: float, tp: int, pp: int = 1) -> float:
    """SGLang's default ``mem_fraction_static`` — (weights + KV pool) / device memory — from the
    same function: reserve 512 MiB + 1.5 MiB per chunked-prefill token + 2 MiB per CUDA-graph batch
    size + tp·pp/8 GiB, at least 10 GiB on GPUs above 60 GB, and round to 0.001."""
    gpu_mem = total_bytes / MIB
    if gpu_mem <= 0:
        return 0.88  # SGLang's fallback when it cannot read the device memory
    chunked, graph_bs = sglang_defaults(total_bytes, tp)
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mem - reserved) / gpu_mem, 3)


TRTLLM_FREE_FRACTION = 0.9
"""TensorRT-LLM's default free_gpu_memory_fraction (KvCacheConfig::kDefaultGpuMemFraction)."""
TRTLLM_MAX_NUM_TOKENS = 8192
"""trtllm-build / trtllm-serve default max_num_tokens: the execution context is sized for it."""
TRTLLM_RUNTIME_BUFFERS = (43.29 + 180.30) * 2**20
"""Runtime buffers + decoder state: 43.29 MB + 180.30 MB in TensorRT-LLM's memory guide
(docs/source/reference/memory.md, the 'Allocated ... for runtime buffers / for decoder' lines)."""
