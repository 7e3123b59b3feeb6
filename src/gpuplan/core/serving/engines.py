"""Serving engines: their names, the options each one's memory rule reads, the vendors each runs
on, the NCCL communicators their KV sizing sees, and the SGLang / TensorRT-LLM rules (vLLM's
release-by-release rules: core/serving/releases.py; what its profile measures:
core/serving/profile.py; the split itself: core/serving/memory.py). Units: bytes (the engines' own
MiB arithmetic where they use it).

- SGLang (python/sglang/srt/server_args.py, model_executor/model_runner.py): weights + KV pool
  = mem_fraction_static x device memory; activations and CUDA graphs live in the rest.
- TensorRT-LLM (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, calculateFreeMemBytes;
  KvCacheConfig::kDefaultGpuMemFraction = 0.9): KV = free_gpu_memory_fraction x the memory still
  free once the engine (weights), its execution context (activations sized for max_num_tokens)
  and the runtime buffers are allocated.
"""

from __future__ import annotations

# NCCL communicators of one tensor-parallel group whose buffers an engine's KV sizing sees.
# vLLM (V0 0.6+ and V1; vllm/distributed/device_communicators/cuda_communicator.py at v0.10.0): the
# TP group's PyNcclCommunicator (created and warmed up at start-up; large all-reduces) and the
# group's torch ProcessGroupNCCL, which NCCL initialises at its first collective, the logits
# all-gather / gather of the profile run (base_device_communicator.all_gather -> torch.distributed
# on device_group): 2. vLLM 0.2.5 likewise had 2 (the default group's warm-up all-reduce in
# worker._init_distributed_environment and the TP group's). SGLang sizes its pool from the memory
# free before the weights load, when only the eagerly created PyNccl communicator exists (the torch
# group's comes later, out of the reserve): 1. TensorRT-LLM: its NCCL plugin's one communicator: 1.
ENGINE_COMMUNICATORS = {"vllm": 2, "sglang": 1, "trtllm": 1}
# Without NVLink (PCIe cards) NCCL opens few channels (memory is linear in channels, NVIDIA/nccl#986):
# the per-communicator anchor above does not apply. 0.25 GiB for all of them, a gpuplan assumption
# next to vllm#15815's logged 0.30 GiB of non-torch memory at TP 2 on L40s (context included) and
# vllm#16570's 0.34-0.43 GiB per rank at TP 4. The NVLink anchor presumes GPU P2P, which NVLink-connected
# GPUs always report; where the driver reports none (vLLM logs 'Custom allreduce is disabled because
# your platform lacks GPU P2P capability', v0.10.1.1 custom_all_reduce.py:147) NCCL asks the same
# question (cudaDeviceCanAccessPeer, NCCL 2.26.2 src/transport/p2p.cc:164) and connects the ranks
# through SHM, whose FIFOs live in host memory (shm.cc:104-146; NCCL_SHM_USE_CUDA_MEMCPY off): this
# rule, not the NVLink one, applies (an input: Runtime.p2p, ``infer --no-p2p``, which an SXM part
# without P2P in a VM needs as much as a PCIe card). dennislee22's 0.10.1.1 A100 pair (no P2P) puts what TP 2 adds
# over TP 1 at 0.12-0.13 GiB (docs/inference.md, 'NCCL at TP > 1, from the code').
PCIE_COMM_BYTES = 0.25 * 2**30
# Scale-up links faster than PCIe Gen5 x16 (128 GB/s both directions) are NVLink-class.
NVLINK_MIN_BANDWIDTH = 200e9


def comm_rule(gpus: int, given: float | None, scale_up_bandwidth: float | None, p2p: bool = True) -> str:
    """Which rule sizes the NCCL buffers of tp x pp = ``gpus`` GPUs: 'none' (one GPU), 'given'
    (the user's figure), 'pcie' (PCIE_COMM_BYTES: no NVLink, or GPUs without peer-to-peer access,
    ``p2p`` False, whose NCCL connects through SHM whatever the link) or 'nvlink' (communicators x
    per-communicator)."""
    if gpus <= 1:
        return "none"
    if given is not None:
        return "given"
    if not p2p:
        return "pcie"
    return "nvlink" if scale_up_bandwidth and scale_up_bandwidth >= NVLINK_MIN_BANDWIDTH else "pcie"


def comm_basis(rule: str, engine: str) -> str:
    """The source of the NCCL-buffer figure a comm_rule gives, for the report's assumptions."""
    return {"none": "one GPU: no communicator", "given": "given",
            "pcie": "without NVLink or GPU P2P: 0.25 GiB, a gpuplan assumption (vllm#15815 logs 0.30 GiB non-torch at TP 2)",
            "nvlink": f"{ENGINE_COMMUNICATORS[engine]} NCCL communicator(s) the {engine} KV sizing sees x NCCL's "
                      "per-communicator buffers (688 MB on 4x A100 NVLink, NVIDIA/nccl#964, x channel scale; "
                      "core/serving/engines.py, core/memory/device_memory.py)"}[rule]


ENGINES = ("vllm", "sglang", "trtllm")
DEFAULT_ENGINE = "vllm"
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}

# The options of `gpuplan infer` only some engines' memory rules read, and which (the rest of the
# runtime, the driver reserve, non-torch memory and NCCL buffers, every rule reads):
# - gpu_memory_utilization, the sampler profile and CUDA graphs counted before the KV cache: vLLM's
#   rule (core/serving/memory.py); SGLang keeps activations and graphs in its reserve outside
#   mem_fraction_static, TensorRT-LLM sizes its KV from what is still free.
# - mem_fraction_static: SGLang; free_gpu_memory_fraction: TensorRT-LLM.
# - prefill_tokens: vLLM's profiled forward (max_num_batched_tokens) and TensorRT-LLM's execution
#   context (max_num_tokens); SGLang's reserve is sized from its own chunked_prefill_size default.
ENGINE_OPTIONS = {"gpu_memory_utilization": ("vllm",), "sampler": ("vllm",), "cuda_graph_gib": ("vllm", "trtllm"),
                  "mem_fraction_static": ("sglang",), "free_gpu_memory_fraction": ("trtllm",),
                  "prefill_tokens": ("vllm", "trtllm")}
# What each engine reads instead of another engine's memory share.
ENGINE_SHARE = {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static",
                "trtllm": "--free-gpu-memory-fraction"}


def option_refusal(option: str, engine: str) -> str | None:
    """Why ``option`` does nothing under ``engine`` (None when the engine reads it)."""
    readers = ENGINE_OPTIONS.get(option)
    if readers is None or engine in readers:
        return None
    why = f"applies to --engine {' or '.join(readers)}; {ENGINE_NAMES[engine]}'s memory rule does not read it"
    if option in ("gpu_memory_utilization", "mem_fraction_static", "free_gpu_memory_fraction"):
        why += f" (its share is {ENGINE_SHARE[engine]})"
    return why


# Accelerator vendors an engine runs on; an engine not listed runs on every vendor in the catalog
# (vLLM: CUDA, ROCm and the Gaudi / Ascend plugins; SGLang: CUDA, ROCm, Ascend). On a TPU infer models no
# engine (vLLM's TPU worker has its own memory rule; SGLang's TPU port is sglang-jax): jobs/inference/tpu_serving.py.
# TensorRT-LLM builds TensorRT engines from CUDA kernels: NVIDIA GPUs only (its README, "optimize
# inference on NVIDIA GPUs"; the support matrix lists NVIDIA architectures only).
ENGINE_VENDORS = {"trtllm": ("NVIDIA",)}


def engines_on(vendor: str) -> tuple[str, ...]:
    """The engines that run on accelerators of ``vendor`` (catalog ``vendor`` field)."""
    return tuple(e for e in ENGINES if e not in ENGINE_VENDORS or vendor in ENGINE_VENDORS[e])


def runs_on(engine: str, vendor: str) -> bool:
    """Whether ``engine`` runs on ``vendor``'s accelerators (an accelerator of no stated vendor: yes)."""
    return not vendor or engine in engines_on(vendor)


MIB = 2**20


def sglang_defaults(total_bytes: float, tp: int) -> tuple[int, int]:
    """SGLang's (chunked_prefill_size, cuda_graph_max_bs) for a GPU of ``total_bytes``
    (sgl-project/sglang python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings:
    tiers at 20, 35, 60, 90 and 160 GB of device memory; @v0.5.6:725-802 the same on NVIDIA parts). The one
    source of both the memory split's reserve and the decode graph limit (kernels.graph_max_tokens_of)."""
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


SGLANG_GENERAL_RESERVE = (0, 5, 3)
"""sgl-project/sglang PR 10975 ('Use more general heuristics to set the default value of
--mem-fraction-static', merged 2025-09-27): the reserve rule below; earlier releases used a
table by tensor-parallel size."""


def sglang_mem_fraction_static(total_bytes: float, tp: int, pp: int = 1,
                               version: tuple[int, int, int] = SGLANG_GENERAL_RESERVE) -> float:
    """SGLang's default ``mem_fraction_static`` — (weights + KV pool) / device memory. From 0.5.3
    (ServerArgs._handle_gpu_memory_settings): reserve 512 MiB + 1.5 MiB per chunked-prefill token
    + 2 MiB per CUDA-graph batch size + tp·pp/8 GiB, at least 10 GiB on GPUs above 60 GB, round to
    0.001. Before it (server_args.py __post_init__, 0.3-0.5.2): 0.88 at 1 GPU, 0.87 at 2-3, 0.85
    at 4-7, 0.81 at 8-15, 0.79 at 16 and more (tp, later tp x pp)."""
    if version < SGLANG_GENERAL_RESERVE:
        world = tp * pp
        return 0.79 if world >= 16 else 0.81 if world >= 8 else 0.85 if world >= 4 else 0.87 if world >= 2 else 0.88
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
